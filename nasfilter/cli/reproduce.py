"""``nasfilter reproduce --out DIR``: the study's NAS analysis, figures and an HTML report."""

from __future__ import annotations

import argparse
from typing import Any

from nasfilter.cli.args import TABLE_HELP, add_dataset, seconds
from nasfilter.cli.run import add_jobs
from nasfilter.defaults import DEFAULT_BUDGET
from nasfilter.proxy import DEFAULT_ORACLE


def register(sub: Any) -> None:
    p = sub.add_parser(
        "reproduce",
        help="regenerate the study's figures, summary.json and report.html",
        description="Regenerate the NAS analysis of arXiv 2212.07936 for a table and an "
        "oracle: Fig. 3 (throughput vs utilization), Fig. 5 (approximate filtering vs the "
        "true front), Fig. 6 (REINFORCE fronts per seed), the comparison of every built-in "
        "searcher and filter (hypervolume ratio over simulated time, final metrics; when the "
        "table has learning curves, e.g. --table synthetic, the multi-fidelity searchers and "
        "'which cheap signal pays': each method's condition and hypervolume ratio at 20000, "
        "55000 and 110000 s, the 0.99 goal and the ablation of low-fidelity accuracy), "
        "summary.json and a self-contained report.html. Without --table the real table "
        "(NATS-Bench's real hp-90 validation accuracies, seed 777, with modelled times) is "
        f"used; the default oracle is the {DEFAULT_ORACLE} model on a "
        "V100 (docs/gpu-model.md compares it with the plain roofline, which the report sets "
        "beside it).",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (new or empty)")
    p.add_argument("--table", help=TABLE_HELP)
    add_dataset(p)
    p.add_argument(
        "--backend",
        "--oracle",
        dest="backend",
        default=DEFAULT_ORACLE,
        help=f"oracle backend (default {DEFAULT_ORACLE}; or roofline, the plain baseline, or a "
        "measured one)",
    )
    p.add_argument("--device", default="v100", help="oracle device (default v100)")
    p.add_argument(
        "--oracle-cache",
        metavar="PATH",
        help="measurement cache or exported .npz for a measured backend",
    )
    p.add_argument("--seeds", default="0-8", help="seeds, e.g. 0-8 or 0,3,5 (default 0-8)")
    p.add_argument(
        "--budget",
        type=seconds(positive=True),
        default=DEFAULT_BUDGET,
        help=f"simulated seconds per run (default {DEFAULT_BUDGET:g}, the study's)",
    )
    p.add_argument(
        "--workers",
        default="1,4,16",
        metavar="K,...",
        help="numbers of simulated parallel workers to compare, e.g. 1,4,16 (the default); "
        "the first is the one of the metrics table and Figs. 5 and 6",
    )
    p.add_argument(
        "--peers-every-k",
        action="store_true",
        help="run the peers (model-based search with and without utilization features; "
        "Optuna NSGA-II and random) at every K of --workers, not only the first (each "
        "of their runs fits a model or runs an Optuna trial per proposal: minutes more)",
    )
    add_jobs(p)
    p.add_argument("--force", action="store_true", help="write into a non-empty --out folder")
    p.add_argument("--quiet", action="store_true", help="no progress bars and no summary lines")
    p.set_defaults(func=run)


def parse_workers(text: str) -> list[int]:
    """``"1,4,16"`` -> [1, 4, 16]; ValueError naming --workers and the valid range."""
    from nasfilter.runner import MAX_WORKERS

    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = []
    if not values or any(not 1 <= k <= MAX_WORKERS for k in values):
        raise ValueError(
            f"--workers {text!r}: give numbers of simulated workers from 1 to {MAX_WORKERS}, "
            "comma-separated, e.g. 1,4,16"
        )
    return values


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from nasfilter.cli.args import check_not_input, check_parent, check_writable_folder
    from nasfilter.cli.run import check_inputs, parse_seeds, worker_died
    from nasfilter.experiment import WorkerDied, default_jobs
    from nasfilter.files import check_path_text
    from nasfilter.reproduce import check_out_dir, reproduce

    check_path_text(args.out, "--out")
    out = check_parent(args.out, "--out")
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {args.out!r} is a file; give a folder name")
    inputs = {"--table": args.table, "--oracle-cache": args.oracle_cache}
    check_not_input(out, "--out", inputs)
    check_out_dir(out, args.force, inputs)  # no input inside --out, where files are written
    check_writable_folder(out if out.is_dir() else (out.parent or Path(".")), "--out", out)
    check_inputs(
        argparse.Namespace(
            table=args.table,
            dataset=args.dataset,
            oracle=args.backend,
            device=args.device,
            oracle_cache=args.oracle_cache,
        )
    )
    try:
        summary = reproduce(
            args.out,
            table=args.table,
            backend=args.backend,
            device=args.device,
            dataset=args.dataset,
            seeds=parse_seeds(args.seeds),
            budget=args.budget,
            force=args.force,
            quiet=args.quiet,
            jobs=args.jobs or default_jobs(),
            oracle_cache=args.oracle_cache,
            workers=parse_workers(args.workers),
            peers_every_k=args.peers_every_k,
        )
    except WorkerDied as exc:
        return worker_died("reproduce", exc)
    if not args.quiet:
        fig3 = summary["fig3"]
        print(f"table : {summary['table_label']}")
        print(f"oracle: {summary['oracle_label']}")
        print(
            f"throughput-utilization Pareto set: {fig3['pareto_throughput_utilization']} of "
            f"{fig3['n_architectures']}; Spearman(utilization, accuracy) = "
            f"{fig3['spearman_utilization_accuracy']:.3f}"
        )
        for row in summary["metrics_table"]:
            hv = row["hv_ratio"]
            mean = "n/a" if hv["mean"] is None else f"{hv['mean']:.3f}"
            se = "" if hv["se"] is None else f" ± {hv['se']:.3f}"
            print(f"  {row['method']:<46} HV ratio {mean}{se}")
        print(f"wrote {args.out}/report.html, summary.json and the figures (PNG and SVG)")
    return 0
