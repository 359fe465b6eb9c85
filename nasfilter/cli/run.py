"""``nasfilter run``: a grid of searchers x filters x seeds into a results database.

Searchers and filters are written ``NAME`` or ``NAME[key=value,...]`` (quote brackets in a
shell), or as plugin paths ``package.module:Class[...]``; several may be given after one
flag or comma-separated. Running again on the same database resumes: (spec, seed) pairs
already stored are skipped.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from nasfilter.datasets import DATASETS

if TYPE_CHECKING:  # pragma: no cover
    from nasfilter.experiment import RunSpec


MAX_SEEDS = 100_000  # a longer seed list is almost surely a typo (and would fill memory)


def parse_seeds(text: str) -> list[int]:
    """``"0-8"``, ``"0,3,5"``, ``"0-2,7"`` -> a list of seeds; ValueError when empty or bad,
    or longer than :data:`MAX_SEEDS`."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        lo, dash, hi = part.partition("-")
        try:
            if dash:
                first, last = int(lo), int(hi)
                if last < first:
                    raise ValueError
                if last - first + 1 + len(seeds) > MAX_SEEDS:
                    raise OverflowError
                seeds.extend(range(first, last + 1))
            else:
                seeds.append(int(part))
        except ValueError:
            raise ValueError(
                f"cannot read seeds {text!r}: write a range such as 0-8, a list such as "
                "0,3,5, or both (0-2,7); seeds are integers >= 0"
            ) from None
        except OverflowError:
            raise ValueError(
                f"seeds {text!r} name more than {MAX_SEEDS:,} seeds; give a shorter range"
            ) from None
    if not seeds:
        raise ValueError(f"the seed list {text!r} is empty; give at least one seed, e.g. 0-8")
    return seeds


def split_specs(values: list[str]) -> list[str]:
    """Flatten ``["a,b[x=1,y=2]", "c"]`` into ``["a", "b[x=1,y=2]", "c"]``."""
    from nasfilter.registry import split_top_level

    return [spec for value in values for spec in split_top_level(value, ",")]


def add_common(p: argparse.ArgumentParser) -> None:
    """Options shared by ``run`` and ``demo``: budget, table, dataset, oracle, jobs."""
    p.add_argument(
        "--budget",
        type=float,
        default=110_000.0,
        help="simulated seconds per run (default 110000, the study's)",
    )
    p.add_argument("--table", help="a table converted with `nasfilter convert` (default: embedded)")
    p.add_argument("--dataset", default="cifar10", help=f"one of {', '.join(DATASETS)}")
    p.add_argument("--oracle", default="roofline", help="proxy backend (default roofline)")
    p.add_argument("--device", default="v100", help="oracle device (default v100)")
    p.add_argument(
        "--oracle-cache", help="measurement cache or exported .npz for a measured oracle"
    )
    p.add_argument(
        "--proxy-cost",
        type=float,
        default=None,
        help="simulated seconds per proxy query (default 2, see nasfilter.problem)",
    )
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: CPUs)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run searchers x filters x seeds into a results database",
        description="Run every searcher x filter x seed and store the results in an SQLite "
        "database; an interrupted run resumes when run again on the same database. "
        "Without --table the embedded SYNTHETIC surrogate is used.",
    )
    p.add_argument(
        "--searchers",
        nargs="+",
        required=True,
        metavar="SPEC",
        help="searcher names or specs, e.g. random 'reinforce[reward=mnas]' "
        "examples.custom_searcher:GreedyNeighbours",
    )
    p.add_argument(
        "--filters",
        nargs="+",
        default=["none"],
        metavar="SPEC",
        help="filter names or specs (default: none)",
    )
    p.add_argument("--seeds", default="0-8", help="seeds, e.g. 0-8 or 0,3,5 (default 0-8)")
    p.add_argument("--db", required=True, help="the SQLite results database (created)")
    add_common(p)
    p.set_defaults(func=run)


def build_specs(
    args: argparse.Namespace, searchers: list[str], filters: list[str]
) -> list[RunSpec]:
    """The run specs of the command line; raises ValueError before anything runs."""
    from nasfilter.experiment import grid
    from nasfilter.problem import DEFAULT_PROXY_COST

    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    return grid(
        searchers,
        filters,
        [args.dataset],
        budget=args.budget,
        proxy_cost=DEFAULT_PROXY_COST if args.proxy_cost is None else args.proxy_cost,
        table=args.table,
        oracle=args.oracle,
        device=args.device,
        oracle_cache=args.oracle_cache,
    )


def empty_runs(records: list[Any]) -> dict[str, int]:
    """Method label -> number of ``records`` (RunRecords) that evaluated nothing."""
    out: dict[str, int] = {}
    for record in records:
        if not record.summary["n_evaluations"]:
            out[record.spec.label] = out.get(record.spec.label, 0) + 1
    return out


def worker_died(command: str, exc: Exception) -> int:
    """Report a dead worker process (the completed runs are stored); exit status 1."""
    print(f"nasfilter {command}: error: {exc}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    from nasfilter.experiment import (
        WorkerDied,
        check_seeds,
        default_jobs,
        inputs,
        run_experiment,
    )
    from nasfilter.store import Store

    seeds = check_seeds(parse_seeds(args.seeds))
    specs = build_specs(args, split_specs(args.searchers), split_specs(args.filters))
    table, proxy, _ = inputs(specs[0])  # fail on a bad table or oracle before the database
    jobs = args.jobs or default_jobs()
    total = len(specs) * len(seeds)
    with Store(args.db) as store:
        before = len(store.completed())
        print(
            f"table   {table.label}\noracle  {proxy.label}\n"
            f"runs    {len(specs)} specs x {len(seeds)} seeds = {total}, "
            f"{args.budget:g} simulated s each, {jobs} worker(s)",
            file=sys.stderr,
        )
        try:
            records = run_experiment(
                specs, seeds, store=store, jobs=jobs, progress=not args.no_progress
            )
        except WorkerDied as exc:
            return worker_died("run", exc)
        for label, count in empty_runs(records).items():
            print(
                f"warning: {label} evaluated nothing in {count} run(s): the budget of "
                f"{args.budget:g} s went to proxy queries (see docs/searchers.md, smallest "
                "budgets); its metrics are not a result",
                file=sys.stderr,
            )
        skipped = total - len(records)
        # Another process writing the same database may have stored some of these first.
        wrote = len(records) - store.duplicates
        after = len(store.completed())
        print(
            f"wrote {wrote} runs to {args.db}"
            + (f" (skipped {skipped} already stored)" if skipped else "")
            + (
                f" ({store.duplicates} computed here were stored by another process first)"
                if store.duplicates
                else ""
            )
            + f"; the database holds {after} runs (it held {before}). "
            f"Summarize with: nasfilter compare --db {args.db}",
            file=sys.stderr,
        )
    return 0
