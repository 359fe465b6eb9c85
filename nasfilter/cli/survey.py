"""``nasfilter survey --out DIR``: the study's §3 CNN survey on timm's models."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "survey",
        help="the study's CNN survey (§3): intensity, utilization, fronts and folding",
        description="Analyse timm's CNNs layer by layer (on the meta device: no weights, no "
        "download), compare their FP16 arithmetic intensity with the device's compute-to-"
        "memory ratio, compute utilization from measured throughput where a measurement "
        "exists (else from the predicted one), find the three Pareto fronts of accuracy, "
        "throughput and utilization, and fold the CNNs below the CMR (FoldedCNNs). Writes "
        "survey.csv, layers.csv, summary.json, fig1/fig2a/fig2b and report.html. Needs the "
        "survey extra (timm).",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (new or empty)")
    p.add_argument(
        "--models",
        metavar="LIST",
        help="comma-separated timm models, each NAME or NAME@SIZE (default: every timm "
        "architecture with a published ImageNet result)",
    )
    p.add_argument(
        "--models-file", metavar="FILE", help="a file of models, one NAME or NAME@SIZE a line"
    )
    p.add_argument(
        "--device",
        default="v100",
        help="built-in device (v100, a100, h100, h200, rtx3090, rtx4090), "
        "name:peak_tflops:bandwidth_tbs, or a JSON device file (default v100)",
    )
    p.add_argument("--layout", default="nchw", help="nchw or nhwc (default nchw)")
    p.add_argument(
        "--batch",
        default="max",
        help="images per batch, or max: the measured batch, else the largest that fits "
        "(default max)",
    )
    p.add_argument(
        "--measured",
        metavar="CSV",
        help="measured throughputs in timm's benchmark.py format; 'shipped' takes the shipped "
        "file of --device (rtx3090, rtx4090) and --layout",
    )
    p.add_argument(
        "--fold", type=int, default=4, help="FoldedCNN fold factor, a perfect square (default 4)"
    )
    p.add_argument("--jobs", type=int, default=1, help="worker processes for new analyses")
    p.add_argument(
        "--cache",
        metavar="DIR",
        help="layer-table cache folder (default $NASFILTER_CACHE/survey or "
        "~/.cache/nasfilter/survey)",
    )
    p.add_argument("--force", action="store_true", help="write into a non-empty --out folder")
    p.add_argument("--quiet", action="store_true", help="no progress and no summary lines")
    p.set_defaults(func=run)


def parse_models(text: str, origin: str) -> list[tuple[str, int | None]]:
    """``NAME`` or ``NAME@SIZE`` entries separated by commas or lines; ValueError naming one."""
    out: list[tuple[str, int | None]] = []
    for raw in text.replace("\n", ",").split(","):
        entry = raw.split("#", 1)[0].strip()
        if not entry:
            continue
        name, _, size = entry.partition("@")
        if not name:
            raise ValueError(f"{origin}: empty model name in {entry!r}")
        if size:
            if not size.isdigit() or int(size) < 8:
                raise ValueError(f"{origin}: image size in {entry!r} must be an integer >= 8")
            out.append((name, int(size)))
        else:
            out.append((name, None))
    if not out:
        raise ValueError(f"{origin}: no model given")
    return out


def _batch(text: str) -> int | None:
    if text == "max":
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"--batch must be 'max' or a positive integer, got {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    from nasfilter.oracle.devices import get_device
    from nasfilter.survey.fold import check_fold
    from nasfilter.survey.output import check_out_dir, write_survey
    from nasfilter.survey.survey import SurveySettings, run_survey
    from nasfilter.survey.timm_data import read_benchmark, shipped_benchmark

    if args.layout not in ("nchw", "nhwc"):
        raise ValueError(f"--layout must be nchw or nhwc, got {args.layout!r}")
    try:
        check_fold(args.fold)
    except ValueError as exc:
        raise ValueError(f"--fold: {exc}") from None
    if args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    batch = _batch(args.batch)
    device = get_device(args.device)
    models = None
    if args.models and args.models_file:
        raise ValueError("give --models or --models-file, not both")
    if args.models:
        models = parse_models(args.models, "--models")
    elif args.models_file:
        path = Path(args.models_file)
        if not path.is_file():
            raise ValueError(f"--models-file {str(path)!r} does not exist or is not a file")
        models = parse_models(path.read_text(encoding="utf-8"), f"--models-file {path}")
    measured, label = None, ""
    if args.measured == "shipped":
        source = shipped_benchmark(device.name, args.layout)
        measured, label = read_benchmark(source), source.name
    elif args.measured:
        measured, label = read_benchmark(args.measured), Path(args.measured).name
    out = check_out_dir(args.out, args.force)
    settings = SurveySettings(
        device=device,
        layout=args.layout,
        batch=batch,
        measured=measured,
        measured_label=label,
        models=models,
        fold=args.fold,
        jobs=args.jobs,
        cache_root=args.cache,
    )

    def progress(stage: str, k: int, n: int) -> None:
        if not args.quiet and (k == n or k % 50 == 0):
            print(f"{stage}: {k}/{n}", file=sys.stderr)

    result = run_survey(settings, progress)
    write_survey(result, out)
    if not args.quiet:
        s = result.summary
        med = s["median_measured_utilization_cnn"]
        print(
            f"{s['n_cnn_rows']} CNN rows ({s['n_cnn_models']} models) on {s['device']} "
            f"{s['layout']}; median measured utilization "
            f"{'n/a' if med is None else f'{100 * med:.1f} %'}; {s['n_cnn_below_cmr']} below "
            f"the CMR {s['cmr']:.0f}; on all three fronts: "
            f"{', '.join(s['on_all_three_fronts']) or 'none'}; {len(s['not_analysed'])} not "
            f"analysed; wrote {out}"
        )
    return 0
