"""``nasfilter run``: a grid of searchers x filters x seeds into a results database.

Searchers and filters are written ``NAME`` or ``NAME[key=value,...]`` (quote brackets in a
shell), or as plugin paths ``package.module:Class[...]``; several may be given after one
flag or comma-separated. Running again on the same database resumes: (spec, seed) pairs
already stored are skipped.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nasfilter.bench.fidelity import curves_for
from nasfilter.cli.args import (
    ORACLE_FLAGS,
    add_inputs,
    apply_space,
    check_database,
    int_at_least,
    naming,
    seconds,
)
from nasfilter.defaults import DEFAULT_BUDGET
from nasfilter.filters import FILTERS
from nasfilter.oracle.measured import is_measured_spec
from nasfilter.oracle.registry import check_spec, default_device
from nasfilter.registry import split_top_level
from nasfilter.runs.experiment import (
    WorkerDied,
    check_seeds,
    default_jobs,
    grid,
    inputs,
    run_experiment,
)
from nasfilter.runs.inputs import RunInputs, input_key, input_part
from nasfilter.runs.results import empty_run_warning, evaluated_nothing
from nasfilter.runs.runner import MAX_WORKERS
from nasfilter.runs.storage.sqlite_store import Store
from nasfilter.searchers import SEARCHERS, make_searcher
from nasfilter.sim.problem import DEFAULT_PROXY_COST

if TYPE_CHECKING:  # pragma: no cover
    from nasfilter.runs.experiment import RunSpec


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
                f"cannot read --seeds {text!r}: write a range such as 0-8, a list such as "
                "0,3,5, or both (0-2,7); seeds are integers >= 0"
            ) from None
        except OverflowError:
            raise ValueError(
                f"--seeds {text!r} names more than {MAX_SEEDS:,} seeds; give a shorter range"
            ) from None
    if not seeds:
        raise ValueError(f"--seeds {text!r} is empty; give at least one seed, e.g. 0-8")
    if max(seeds) >= 2**63:
        raise ValueError(f"--seeds {text!r}: seeds must be below 2**63 (9223372036854775808)")
    return seeds


def split_specs(values: list[str]) -> list[str]:
    """Flatten ``["a,b[x=1,y=2]", "c"]`` into ``["a", "b[x=1,y=2]", "c"]``."""

    return [spec for value in values for spec in split_top_level(value, ",")]


def add_common(p: argparse.ArgumentParser) -> None:
    """Options shared by ``run`` and ``demo``: budget, table, dataset, oracle, jobs."""
    p.add_argument(
        "--budget",
        type=seconds(positive=True),
        default=DEFAULT_BUDGET,
        help=f"simulated seconds per run (default {DEFAULT_BUDGET:g}, the study's)",
    )
    add_inputs(
        p,
        "oracle device (default: v100 for calibrated and roofline, cpu for onnxruntime, "
        "the cache's only device for torch-cuda and tensorrt)",
    )
    p.add_argument(
        "--proxy-cost",
        type=seconds(positive=False),
        default=None,
        help="simulated seconds per proxy query (default 2, see nasfilter.sim.problem)",
    )
    add_jobs(p)
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="K",
        help="simulated parallel workers per run: K evaluations at a time on a simulated "
        "wall clock (default 1: one at a time); results do not depend on --jobs",
    )
    p.add_argument(
        "--budget-clock",
        choices=("worker", "wall"),
        default="worker",
        help="what --budget counts: worker-seconds, all workers together (default: the same "
        "compute for every K), or simulated wall-clock seconds",
    )
    p.add_argument(
        "--charging",
        choices=("retrain", "resume"),
        default="retrain",
        help="how multi-fidelity searchers' evaluations at fewer epochs are charged: "
        "retrain from scratch each time (default, as NATS-Bench), or resume from the last "
        "epoch this run trained for that architecture, with its seed",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def add_jobs(p: argparse.ArgumentParser) -> None:
    """``--jobs``, the same default (the CPUs) for every command that runs searches."""
    p.add_argument(
        "--jobs",
        type=int_at_least(1),
        default=None,
        help="worker processes (default: the CPUs this process may use)",
    )


def resolve_device(args: argparse.Namespace) -> None:
    """Set ``args.device`` to the oracle's default device when none was given."""

    if args.device is None and not is_measured_spec(args.oracle):
        with naming("--oracle"):
            args.device = default_device(check_spec(args.oracle)[0])


def plan_jobs(requested: int | None, n_tasks: int) -> tuple[int, str]:
    """``(processes, why)``: ``requested`` (default: the CPUs) capped at the CPUs this
    process may use and at the ``n_tasks`` runs; ``why`` says what capped it ("" if none)."""

    cpus = default_jobs()
    wanted = cpus if requested is None else requested
    jobs = max(1, min(wanted, cpus, n_tasks))
    if jobs == wanted or requested is None:
        return jobs, ""
    limits = []
    if jobs == cpus and wanted > cpus:
        limits.append(f"the {cpus} CPU(s) this process may use")
    if jobs == n_tasks and wanted > n_tasks:
        limits.append(f"the {n_tasks} run(s)")
    return jobs, f" (--jobs {wanted} capped at {' and '.join(limits)})"


def plugin_listing() -> str:
    """The registered searchers and filters, one line each, for ``--help``."""

    lines = []
    for title, registry in (("searchers", SEARCHERS), ("filters", FILTERS)):
        described = registry.describe()
        width = max(len(n) for n in described)
        lines.append(f"{title}:")
        lines += [f"  {name.ljust(width)}  {text}" for name, text in described.items()]
    lines.append(
        "Settings go in brackets, e.g. 'reinforce[reward=mnas,lr=0.01]'; a wrong one lists "
        "the valid ones. Plugins: package.module:Class or path/to/file.py:Class."
    )
    return "\n".join(lines)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run searchers x filters x seeds into a results database",
        description=textwrap.fill(
            "Run every searcher x filter x seed and store the results in an SQLite "
            "database; an interrupted run resumes when run again on the same database. "
            "Without --table the real table (NATS-Bench's real hp-90 validation accuracies, "
            "seed 777, with modelled times) is used; --table synthetic picks the embedded "
            "surrogate. A run ends when its "
            "budget is spent, or earlier when it has nothing new to evaluate "
            "(docs/searchers.md).",
            width=88,
        ),
        epilog=plugin_listing(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--searchers",
        nargs="+",
        required=True,
        metavar="SPEC",
        help="searcher names or specs, e.g. random 'reinforce[reward=mnas]' "
        "examples.custom_searcher:GreedyNeighbours (the list below)",
    )
    p.add_argument(
        "--filters",
        nargs="+",
        default=["none"],
        metavar="SPEC",
        help="filter names or specs (default: none; the list below)",
    )
    p.add_argument("--seeds", default="0-8", help="seeds, e.g. 0-8 or 0,3,5 (default 0-8)")
    p.add_argument(
        "--db",
        required=True,
        help="the SQLite results database (created in an existing folder, or added to)",
    )
    add_common(p)
    p.set_defaults(func=run)


def build_specs(
    args: argparse.Namespace, searchers: list[str], filters: list[str]
) -> list[RunSpec]:
    """The run specs of the command line; raises ValueError before anything runs."""

    if not 1 <= args.workers <= MAX_WORKERS:
        raise ValueError(
            f"--workers must be from 1 to {MAX_WORKERS} simulated workers, got {args.workers}"
        )
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
        workers=args.workers,
        budget_clock=args.budget_clock,
        charging=args.charging,
    )


INPUT_FLAGS = {"table": "--table", "oracle": ORACLE_FLAGS}  # input_part -> its flags


def resolve_inputs(specs: Sequence[RunSpec]) -> RunInputs:
    """Resolve the inputs of ``specs`` once per distinct input
    (:func:`nasfilter.runs.inputs.inputs`, the same resolution, cached per process, that
    the runs made here read), each error naming the flag at fault (:data:`INPUT_FLAGS`).

    Returns the first spec's inputs."""
    resolved: dict[tuple[Any, ...], RunInputs] = {}
    for spec in specs:
        key = input_key(spec)
        if key in resolved:
            continue
        try:
            resolved[key] = inputs(spec)
        except (ValueError, LookupError) as exc:
            with naming(INPUT_FLAGS[input_part(exc) or "table"]):
                raise
    return resolved[input_key(specs[0])]


def curves_line(specs: Sequence[Any], table: Any) -> str:
    """The ``curves`` line of the header when a searcher of ``specs`` evaluates at lower
    fidelities (``uses_fidelities``) or charging is ``resume`` (both read the curves), else
    ""; NoCurvesError, naming the conversion that adds them, when ``table`` has none."""

    if not any(
        s.charging == "resume" or getattr(make_searcher(s.searcher), "uses_fidelities", False)
        for s in specs
    ):
        return ""
    curves = curves_for(table)
    what = (
        "SYNTHETIC learning curves (not NATS-Bench data)"
        if curves.synthetic
        else "learning curves of the benchmark"
    )
    return f"\ncurves  {what}, hp {', '.join(curves.hps())}"


def empty_run_lines(records: Sequence[Any]) -> list[str]:
    """A warning per method among ``records`` (RunRecords) with runs that evaluated
    nothing, worded and decided by :mod:`nasfilter.runs.results` from the runs' events."""

    by_label: dict[str, list[Any]] = {}
    for record in records:
        by_label.setdefault(record.spec.label, []).append(record)
    return [
        empty_run_warning(label, n_empty, len(mine), mine[0].spec.budget.seconds)
        for label, mine in by_label.items()
        if (n_empty := sum(evaluated_nothing(r.summary) for r in mine))
    ]


def worker_died(command: str, exc: Exception) -> int:
    """Report a dead worker process (the completed runs are stored); exit status 1."""
    print(f"nasfilter {command}: error: {exc}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:

    apply_space(args)
    check_database(args.db, "--db", {"--table": args.table, "--oracle-cache": args.oracle_cache})
    seeds = check_seeds(parse_seeds(args.seeds))
    for flag, values in (("--searchers", args.searchers), ("--filters", args.filters)):
        if not split_specs(values):
            raise ValueError(f"{flag} names nothing; give at least one name, e.g. random")
    resolve_device(args)
    specs = build_specs(args, split_specs(args.searchers), split_specs(args.filters))
    table, proxy, _ = resolve_inputs(specs)  # fail on a bad table or oracle before the database
    with naming("--table"):
        curves = curves_line(specs, table)  # NoCurvesError for a table without curves
    total = len(specs) * len(seeds)
    jobs, capped = plan_jobs(args.jobs, total)
    with Store(args.db) as store:
        before = len(store.completed())
        print(
            f"table   {table.label}{curves}\noracle  {proxy.label}\n"
            f"runs    {len(specs)} specs x {len(seeds)} seeds = {total}, "
            f"{args.budget:g} simulated {args.budget_clock}-seconds each, "
            f"{args.workers} simulated worker(s) per run, {jobs} process(es){capped}",
            file=sys.stderr,
        )
        try:
            records = run_experiment(
                specs, seeds, store=store, jobs=jobs, progress=not args.no_progress
            )
        except WorkerDied as exc:
            return worker_died("run", exc)
        for line in empty_run_lines(records):
            print(line, file=sys.stderr)
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
