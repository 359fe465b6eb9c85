"""``nasfilter survey --out DIR``: the study's §3 CNN survey on timm's models.

Flags are checked while parsing where they can be (device, layout, batch, fold, jobs), and
paths by the shared rules of :mod:`nasfilter.cli.args` before any analysis starts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from nasfilter.bench.timm_data import read_benchmark, shipped_benchmark
from nasfilter.cli.args import (
    check_input_file,
    check_not_input,
    check_parent,
    check_writable_folder,
    int_at_least,
    naming,
)
from nasfilter.oracle.calibrated import load_calibration
from nasfilter.oracle.devices import get_device
from nasfilter.survey import figure_cache
from nasfilter.survey.cache import Workers, cache_folder
from nasfilter.survey.draw_process import DrawingProcess
from nasfilter.survey.fold import check_fold
from nasfilter.survey.output import FIGURES, OUTPUTS, write_survey
from nasfilter.survey.survey import SurveySettings, run_survey
from nasfilter.survey.timm_models import check_names


def _device(text: str) -> Any:
    """An argparse ``type``: a device the survey's GPU model can use (named on error)."""

    try:
        device = get_device(text)
        device.require("sm_count")  # the calibrated GPU model's tile and wave quantization
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return device


def _fold(text: str) -> int:
    """An argparse ``type``: a FoldedCNN fold factor, a perfect square >= 1."""

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a perfect square >= 1, got {text!r}") from None
    try:
        return check_fold(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _batch(text: str) -> int | None:
    """An argparse ``type``: ``max`` (None) or a positive integer."""
    if text == "max":
        return None
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected 'max' or a positive integer, got {text!r}")
    return int(text)


def register(sub: Any) -> None:

    p = sub.add_parser(
        "survey",
        help="the study's CNN survey (§3): intensity, utilization, fronts and folding",
        description="Analyse timm's CNNs layer by layer (on the meta device: no weights, no "
        "download), compare their FP16 arithmetic intensity with the device's compute-to-"
        "memory ratio, compute utilization from measured throughput where a measurement "
        "exists (else from the calibrated GPU model's prediction), find the three Pareto "
        "fronts of accuracy, throughput and utilization, and fold the CNNs below the CMR "
        "(FoldedCNNs). Writes survey.csv, layers.csv, summary.json, fig1/fig2a/fig2b and "
        "report.html. Needs the survey extra (timm).",
    )
    _add_selection(p)
    _add_settings(p)
    _add_running(p, int_at_least)
    p.set_defaults(func=run)


def _add_selection(p: Any) -> None:
    """--out, --models, --models-file."""
    p.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="output folder, new or empty (its parent folder must exist)",
    )
    p.add_argument(
        "--models",
        metavar="LIST",
        help="comma-separated timm models, each NAME or NAME@SIZE (default: every timm "
        "architecture with a published ImageNet result)",
    )
    p.add_argument(
        "--models-file", metavar="FILE", help="a file of models, one NAME or NAME@SIZE a line"
    )


def _add_settings(p: Any) -> None:
    """--device, --layout, --batch, --measured, --calibration, --fold."""
    p.add_argument(
        "--device",
        default="v100",
        type=_device,
        help="built-in device (v100, a100, h100, h200, rtx3090, rtx4090, rtx2080ti, gtx1080ti, "
        "titanx, titanxp) or a JSON device "
        "file with the SM count (and, for --batch max, the memory size) that the calibrated "
        "GPU model needs (default v100)",
    )
    p.add_argument(
        "--layout", default="nchw", choices=("nchw", "nhwc"), help="data layout (default nchw)"
    )
    p.add_argument(
        "--batch",
        default=None,
        type=_batch,
        metavar="{max,N}",
        help="images per batch, or max: the measured batch, else the largest power of two "
        "<= 1024 that fits the device memory (default max)",
    )
    p.add_argument(
        "--measured",
        metavar="CSV",
        help="measured throughputs in timm's benchmark.py format; 'shipped' takes the shipped "
        "file of --device (rtx3090, rtx4090) and --layout",
    )
    p.add_argument(
        "--calibration",
        metavar="FILE",
        help="the GPU model's fitted figures: a calibration written by `nasfilter calibrate "
        "--out FILE` (default: the shipped fit on timm's RTX 3090 and RTX 4090 files); the "
        "outputs name the fit used",
    )
    p.add_argument(
        "--fold",
        type=_fold,
        default=4,
        help="FoldedCNN fold factor, a perfect square up to 1024; 1: no folding (default 4)",
    )


def _add_running(p: Any, int_at_least: Any) -> None:
    """--jobs, --cache, --force, --quiet."""
    p.add_argument(
        "--jobs",
        type=int_at_least(1),
        default=1,
        help="processes for new analyses (the survey's own and N - 1 workers); above 1, the "
        "figures to draw are also drawn by a second process while the tables are written",
    )
    p.add_argument(
        "--cache",
        metavar="DIR",
        help="layer-table cache folder (default $NASFILTER_CACHE/survey or "
        "~/.cache/nasfilter/survey)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a non-empty --out folder (never over one of the command's inputs)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress and no summary lines")


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


def check_cache(path: str) -> Path:
    """The ``--cache`` folder: its parent exists and it is not a file."""

    if not path.strip():
        raise ValueError("--cache '': give a folder name, or leave --cache out for the default")
    folder = check_parent(path, "--cache")
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(
            f"--cache {path!r} is a file, not a folder; give a folder for the layer-table cache"
        )
    return folder


def read_models_file(path: str) -> str:
    """The text of a ``--models-file``; ValueError naming it when it is not UTF-8 text."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"--models-file {path!r} is not UTF-8 text (byte {exc.start}); give a text file "
            "of model names, one NAME or NAME@SIZE a line"
        ) from None


def check_out(args: argparse.Namespace) -> Path:
    """The ``--out`` folder, checked by the shared rules (:mod:`nasfilter.cli.args`) before
    any analysis: its parent exists, it is a folder, none of the files the survey writes
    there is one of the command's inputs, it is writable, and it is new or empty unless
    ``--force``."""

    out = check_parent(args.out, "--out")
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {args.out!r} is a file; give a folder name")
    measured = None if args.measured == "shipped" else args.measured
    inputs = {"--measured": measured, "--models-file": args.models_file, "--cache": args.cache}
    check_not_input(out, "--out", inputs)
    for name in (*OUTPUTS, *(f"{f}.{ext}" for f in FIGURES for ext in ("png", "svg"))):
        check_not_input(out / name, "--out", inputs)
    check_writable_folder(out if out.is_dir() else (out.parent or Path(".")), "--out", out)
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise FileExistsError(
            f"--out {str(out)!r} exists and is not empty; choose a new folder or pass --force "
            "to overwrite the files the survey writes there"
        )
    return out


def run(args: argparse.Namespace) -> int:

    calibration = _check_inputs(args)
    out = check_out(args)

    def progress(stage: str, k: int, n: int) -> None:
        if not args.quiet and (k == n or k % 50 == 0):
            print(f"{stage}: {k}/{n}", file=sys.stderr)

    with DrawingProcess() as drawing:
        with Workers(args.jobs - 1) as workers:
            # On an empty cache the workers start (importing torch and timm) before the model
            # names are checked against the timm index, which this process then builds.
            workers.start_if_cold(cache_folder(args.cache))
            settings = _settings(args, calibration)
            figures, inputs = _start_drawing(args, settings, drawing)
            beside = drawing if args.jobs > 1 else None  # --jobs 1: everything in this process
            result = run_survey(settings, progress, workers)
        out.mkdir(exist_ok=True)
        # Figures drawn before from the same rows are copied from the cache (figure_cache.py);
        # the others are drawn by the drawing process (started late when they were expected
        # kept) while this one writes the tables.
        write_survey(result, out, figure_cache=figures, drawing=beside, inputs=inputs)
    if not args.quiet:
        print(_summary_line(result.summary, out))
    return 0


def _start_drawing(args: argparse.Namespace, settings: Any, drawing: Any) -> tuple[Path, str]:
    """The figure cache and the key of the survey's inputs; with ``--jobs`` > 1, the drawing
    process started now (importing matplotlib while this process computes the rows) unless
    the figures of these inputs are probably all kept (copied: none to draw)."""
    from dataclasses import replace


    tables = cache_folder(settings.cache_root)
    inputs = figure_cache.inputs_key(repr(replace(settings, jobs=1)), tables)
    figures = tables / "figures"
    if args.jobs > 1 and not figure_cache.expects_kept(figures, inputs, FIGURES):
        drawing.start()
    return figures, inputs


def _check_inputs(args: argparse.Namespace) -> Any:
    """Check the flags that name inputs before any analysis; the calibration (or None)."""

    if args.batch is None:
        with naming("--device"):
            args.device.require("memory_bytes")  # --batch max: the largest batch that fits
    if args.models is not None and args.models_file is not None:
        raise ValueError("give --models or --models-file, not both")
    if args.models_file is not None:
        check_input_file(args.models_file, "--models-file", "model list")
    if args.measured is not None and args.measured != "shipped":
        check_input_file(args.measured, "--measured", "measured CSV")
    if args.cache is not None:
        check_cache(args.cache)
    if not args.calibration:
        return None
    check_input_file(args.calibration, "--calibration", "calibration JSON")
    with naming("--calibration"):
        return load_calibration(args.calibration)


def _models(args: argparse.Namespace) -> list[tuple[str, int | None]] | None:
    """The requested (model, size) pairs, names checked; None for every model."""

    if args.models is not None:
        models = parse_models(args.models, "--models")
    elif args.models_file is not None:
        text = read_models_file(args.models_file)
        models = parse_models(text, f"--models-file {args.models_file}")
    else:
        return None
    with naming("--models" if args.models is not None else "--models-file"):
        check_names([name for name, _ in models], cache_folder(args.cache))  # no timm import
    return models


def _settings(args: argparse.Namespace, calibration: Any) -> Any:
    """The :class:`~nasfilter.survey.survey.SurveySettings` of the flags."""

    models = _models(args)
    measured, label = None, ""
    with naming("--measured"):
        if args.measured == "shipped":
            source = shipped_benchmark(args.device.name, args.layout)
            measured, label = read_benchmark(source), source.name
        elif args.measured is not None:
            measured, label = read_benchmark(args.measured), Path(args.measured).name
    return SurveySettings(
        device=args.device,
        layout=args.layout,
        batch=args.batch,
        measured=measured,
        measured_label=label,
        models=models,
        fold=args.fold,
        jobs=args.jobs,
        cache_root=args.cache,
        calibration=calibration,
    )


def _summary_line(s: dict[str, Any], out: Path) -> str:
    med = s["median_measured_utilization_cnn"]
    return (
        f"{s['n_cnn_rows']} CNN rows ({s['n_cnn_models']} models) on {s['device']} "
        f"{s['layout']}; median measured utilization "
        f"{'n/a' if med is None else f'{100 * med:.1f} %'}; {s['n_cnn_below_cmr']} below "
        f"the CMR {s['cmr']:.0f}; on all three fronts: "
        f"{', '.join(s['on_all_three_fronts']) or 'none'}; {len(s['not_analysed'])} not "
        f"analysed; wrote {out}"
    )
