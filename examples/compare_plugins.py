"""Compare the example plugins with built-ins over several seeds, from Python.

    python examples/compare_plugins.py                 # 3 seeds, 50000 simulated s each
    python examples/compare_plugins.py --seeds 5 --budget 110000 --db plugins.db

Runs local search (``custom_searcher.py``), random search and random search through the
throughput floor (``custom_filter.py``) on the real table (real accuracies, modelled times)
with the default oracle (the calibrated GPU model on a V100), then prints each method's
metrics, mean ± standard error over seeds.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nasfilter.runs.experiment import grid, run_experiment
from nasfilter.runs.results import load_results
from nasfilter.runs.storage.base import InMemoryStorage, Storage
from nasfilter.runs.storage.sqlite_store import Store
from nasfilter.study.metrics_table import describe_inputs, format_summary, summarize

HERE = Path(__file__).resolve().parent
LOCAL_SEARCH = f"{HERE / 'custom_searcher.py'}:LocalSearch"
FAST_ENOUGH = f"{HERE / 'custom_filter.py'}:FastEnough[min_throughput=4e5]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default 3)")
    parser.add_argument("--budget", type=float, default=50_000.0, help="simulated s per run")
    parser.add_argument("--db", help="also keep the results in this SQLite database")
    args = parser.parse_args(argv)

    specs = grid([LOCAL_SEARCH, "random"], budget=args.budget) + grid(
        ["random"], [FAST_ENOUGH], budget=args.budget
    )
    seeds = range(args.seeds)
    storage: Storage = Store(args.db) if args.db else InMemoryStorage()
    with storage:
        run_experiment(specs, seeds, store=storage)
        rows = [r.row() for r in load_results(storage)]
    for row in rows:  # short method names for the table
        row["searcher"] = row["searcher"].rsplit("/", 1)[-1]
        row["filter"] = row["filter"].rsplit("/", 1)[-1]
    summary = summarize(rows)
    print(describe_inputs(summary))
    print(format_summary(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
