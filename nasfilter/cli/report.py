"""``nasfilter report --db DB --out DIR``: figures and ``report.html`` for any results
database (:mod:`nasfilter.study.runs_report`), plugin searchers and filters included."""

from __future__ import annotations

import argparse
from typing import Any

from nasfilter.bench.datasets import get_dataset
from nasfilter.cli.args import add_force, check_input_file
from nasfilter.cli.score_with import add_score_with, score_with_files
from nasfilter.runs.storage.sqlite_store import Store
from nasfilter.study.reproduce import check_out_dir
from nasfilter.study.runs_report import write_runs_report


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="write figures and report.html for a results database",
        description="Read every run of a results database (written by `nasfilter run`, "
        "run_experiment, `demo --db`; plugin searchers and filters included) and write, per "
        "comparison (runs on one table, oracle, dataset and budget): the hypervolume ratio "
        "over simulated time per method (mean ± standard error over seeds), each method's "
        "fronts per seed against the true front, and the metrics table, as PNG and SVG "
        "figures and one self-contained report.html. Needs matplotlib (the plot extra).",
    )
    p.add_argument("--db", required=True, help="the SQLite results database")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (new or empty)")
    add_force(p, "--out folder's files")
    p.add_argument(
        "--trust-plugins",
        action="store_true",
        help="let scoring a run import the oracle plugin its database names (only for a "
        "database you trust)",
    )
    add_score_with(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    check_input_file(args.db, "--db", "results database")
    out = check_out_dir(args.out, args.force, {"--db": args.db})
    with Store(args.db, create=False, readonly=True) as store:
        rescoring = None
        if args.score_with:
            datasets = {get_dataset(r.spec.dataset).name for r in store.stored_runs() if r.spec}
            rescoring = score_with_files(args.score_with, datasets, args.trust_plugins)
        path = write_runs_report(store, out, trust_plugins=args.trust_plugins,
                                 rescoring=rescoring)  # fmt: skip
    print(f"wrote {path} and its figures under {out}")
    return 0
