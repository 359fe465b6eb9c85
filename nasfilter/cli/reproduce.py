"""``nasfilter reproduce --out DIR``: the study's NAS analysis, figures and an HTML report."""

from __future__ import annotations

import argparse
from typing import Any

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.proxy import DEFAULT_ORACLE
from nasfilter.cli.args import (
    TABLE_HELP,
    add_space,
    check_database,
    check_not_input,
    check_parent,
    check_writable_folder,
    dataset_name,
    seconds,
)
from nasfilter.cli.run import add_jobs, parse_seeds, resolve_inputs, worker_died
from nasfilter.cli.score_with import accuracy_files, add_score_with
from nasfilter.defaults import DEFAULT_BUDGET
from nasfilter.files import check_path_text
from nasfilter.runs.experiment import RunSpec, WorkerDied, default_jobs
from nasfilter.runs.runner import MAX_WORKERS
from nasfilter.study.reproduce import check_out_dir, reproduce
from nasfilter.study.tss import DATASETS

SCORE_WITH_KEPT = (
    "tss only: results.json and the cells files keep the tables' scores, so with --resume an "
    "earlier tss study in --out is scored on the file without running it again (results.md, "
    "summary.json and report.html are rewritten; run --resume without --score-with to write "
    "them back)"
)


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
        "beside it). With --space tss: the study on the NATS topology space with real data "
        "(docs/tss.md): every method on the real tss tables under the measured oracle at "
        "20,000 and 55,000 s, the ablation of cheap signals, Fig. 3 per dataset and GPU, "
        "results.md, summary.json and report.html.",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (new or empty)")
    add_space(p)
    p.add_argument("--table", help=TABLE_HELP + " (sss only)")
    _add_inputs(p)
    p.add_argument("--seeds", default="0-8", help="seeds, e.g. 0-8 or 0,3,5 (default 0-8)")
    p.add_argument(
        "--budget",
        type=seconds(positive=True),
        default=None,
        help=f"simulated seconds per run (default {DEFAULT_BUDGET:g}, the study's; sss only: "
        "the tss study compares at 20,000 and 55,000 s)",
    )
    p.add_argument(
        "--workers",
        default=None,
        metavar="K,...",
        help="numbers of simulated parallel workers to compare, e.g. 1,4,16 (the default); "
        "the first is the one of the metrics table and Figs. 5 and 6 (sss only)",
    )
    p.add_argument(
        "--peers-every-k",
        action="store_true",
        help="run the peers (model-based search with and without utilization features; "
        "Optuna NSGA-II and random) at every K of --workers, not only the first (each "
        "of their runs fits a model or runs an Optuna trial per proposal: minutes more; sss "
        "only)",
    )
    add_jobs(p)
    _add_kept(p)
    p.add_argument("--force", action="store_true", help="write into a non-empty --out folder")
    p.add_argument("--quiet", action="store_true", help="no progress bars and no summary lines")
    p.set_defaults(func=run)


def _add_kept(p: argparse.ArgumentParser) -> None:
    """What the study keeps of its runs: ``--resume`` and ``--score-with`` (tss), ``--db``
    (sss)."""
    p.add_argument(
        "--resume",
        action="store_true",
        help="tss only: keep the (dataset, GPU) blocks that an earlier run with the same seeds, "
        "batch and methods left in --out's results.json, and run the rest",
    )
    add_score_with(p, kept=SCORE_WITH_KEPT)
    p.add_argument(
        "--db",
        metavar="FILE",
        help="sss only: keep every run of the study in this SQLite results database (new, or "
        "one nasfilter wrote); the runs it holds already are not run again, so a study cut "
        "short resumes, and compare --db FILE (--score-with) reads them",
    )


def _add_inputs(p: argparse.ArgumentParser) -> None:
    """``--dataset``, ``--oracle`` (``--backend``), ``--device`` and ``--oracle-cache``."""
    p.add_argument(
        "--dataset",
        action="extend",
        nargs="+",
        type=dataset_name,
        default=None,
        help="the dataset (sss: one, default cifar10); tss: one or more (default all three: "
        "cifar10 cifar100 ImageNet16-120)",
    )
    p.add_argument(
        "--backend",
        "--oracle",
        dest="backend",
        default=None,
        help=f"oracle backend (sss: default {DEFAULT_ORACLE}; or roofline, the plain baseline, "
        "or a measured one; tss: measured, batch 256, or 'measured[batch=1]' or 32)",
    )
    p.add_argument(
        "--device",
        action="extend",
        nargs="+",
        default=None,
        help="oracle device (sss: one, default v100); tss: one or more measured GPUs "
        "(default 2080ti titanxp; also 1080ti, titanx)",
    )
    p.add_argument(
        "--oracle-cache",
        metavar="PATH",
        help="measurement cache or exported .npz for a measured backend",
    )


def parse_workers(text: str) -> list[int]:
    """``"1,4,16"`` -> [1, 4, 16]; ValueError naming --workers and the valid range."""

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


def _one(values: list[str] | None, flag: str, default: str) -> str:
    """The single value of an sss ``flag`` (``default`` when not given); ValueError for
    several (they are for --space tss)."""
    if not values:
        return default
    if len(values) > 1:
        raise ValueError(
            f"{flag} {' '.join(values)}: the sss study takes one; several are for --space tss"
        )
    return values[0]


def _check_out(args: argparse.Namespace) -> None:
    """--out checked: a folder (or a new name) in a writable parent, holding no input."""
    from pathlib import Path


    check_path_text(args.out, "--out")
    out = check_parent(args.out, "--out")
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {args.out!r} is a file; give a folder name")
    inputs = {"--table": args.table, "--oracle-cache": args.oracle_cache, "--db": args.db}
    check_not_input(out, "--out", inputs)
    try:
        check_out_dir(out, args.force or args.resume, inputs)  # no input inside --out
    except FileExistsError as exc:
        if args.space == "tss" and (out / "results.json").is_file():  # an earlier tss study
            raise FileExistsError(f"{exc}; or --resume to keep the blocks it finished (and "
                                  "score them with --score-with)") from None  # fmt: skip
        raise
    check_writable_folder(out if out.is_dir() else (out.parent or Path(".")), "--out", out)


def run(args: argparse.Namespace) -> int:
    _check_out(args)
    return run_tss(args) if args.space == "tss" else run_sss(args)


def run_tss(args: argparse.Namespace) -> int:
    """``reproduce --space tss``; ValueError naming each sss-only flag given."""

    sss_only = {"--table": args.table, "--oracle-cache": args.oracle_cache,
                "--budget": args.budget, "--workers": args.workers, "--jobs": args.jobs,
                "--peers-every-k": args.peers_every_k or None, "--db": args.db}  # fmt: skip
    given = [flag for flag, value in sss_only.items() if value is not None]
    if given:
        raise ValueError(
            f"{', '.join(given)}: sss only; the tss study runs the real tss tables under the "
            "measured oracle, in one process, at 20,000 and 55,000 s (docs/tss.md)"
        )
    score_with = None
    if args.score_with:
        datasets = {get_dataset(d).name for d in args.dataset or DATASETS}
        score_with = accuracy_files(args.score_with, datasets)
    summary = reproduce(
        args.out, backend=args.backend, device=args.device, dataset=args.dataset,
        seeds=parse_seeds(args.seeds), force=args.force, quiet=args.quiet, space="tss",
        resume=args.resume, score_with=score_with,
    )  # fmt: skip
    if not args.quiet:
        for gpu, label in summary["oracles"].items():
            print(f"oracle {gpu}: {label}")
        for b in summary["blocks"]:
            f = b["fig3"]
            print(
                f"{b['dataset']} {b['device']}: throughput-utilization Pareto set "
                f"{f['pareto_set_size']} of 15625; Spearman(measured utilization, hp-200 "
                f"validation accuracy, seed mean) = {f['spearman_utilization_accuracy']:.3f}"
            )
        if "scored_with" in summary:
            print(summary["labels"]["scored_accuracy"])
        print(f"wrote {args.out}/report.html, results.md, summary.json, Fig. 3 (PNG, SVG) and "
              "the cells each run evaluated (cells-*.npz)")
    return 0


def run_sss(args: argparse.Namespace) -> int:
    """``reproduce`` on the size space (the default)."""

    _check_sss_flags(args)
    args.dataset = _one(args.dataset, "--dataset", "cifar10")
    args.device = _one(args.device, "--device", "v100")
    args.backend = args.backend or DEFAULT_ORACLE
    resolve_inputs(  # the inputs every run of the study shares, each error naming its flag
        [
            RunSpec(
                "random",
                dataset=args.dataset,
                table=args.table,
                oracle=args.backend,
                device=args.device,
                oracle_cache=args.oracle_cache,
            )
        ]
    )
    try:
        summary = reproduce(
            args.out,
            table=args.table,
            backend=args.backend,
            device=args.device,
            dataset=args.dataset,
            seeds=parse_seeds(args.seeds),
            budget=DEFAULT_BUDGET if args.budget is None else args.budget,
            force=args.force,
            quiet=args.quiet,
            jobs=args.jobs or default_jobs(),
            oracle_cache=args.oracle_cache,
            workers=parse_workers(args.workers or "1,4,16"),
            peers_every_k=args.peers_every_k,
            db=args.db,
        )
    except WorkerDied as exc:
        return worker_died("reproduce", exc)
    if not args.quiet:
        _print_sss(args, summary)
    return 0


def _check_sss_flags(args: argparse.Namespace) -> None:
    """ValueError naming a tss-only flag; --db checked as a database to add to."""
    if args.resume:
        raise ValueError("--resume is for --space tss; the sss study reruns from scratch")
    if args.score_with:
        raise ValueError("--score-with is for --space tss; score stored sss runs on other "
                         "accuracies with compare --score-with")  # fmt: skip
    if args.db is not None:
        inputs = {"--table": args.table, "--oracle-cache": args.oracle_cache}
        check_database(args.db, "--db", inputs)


def _print_sss(args: argparse.Namespace, summary: dict[str, Any]) -> None:
    """The sss study's summary lines."""
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
    if args.db is not None:
        print(f"every run is kept in {args.db}: nasfilter compare --db {args.db}")
