"""``nasfilter demo``: the study's comparison on the real table (or ``--table``).

Approximate filtering (evaluate only the throughput–utilization Pareto front) against
REINFORCE with the MnasNet reward, random search and regularized evolution, on nine seeds
of 110000 simulated seconds each, and the peers (model-based search with and without
utilization features; Optuna NSGA-II and random search when Optuna is installed) on the
first three of those seeds (``--peer-seeds``); the metrics table, mean ± standard error
over seeds, says how many seeds each method ran.

Speed (the goal: ``make demo`` within 15 s on 2 cores, ``benchmarks/bench_demo.py``): the
peers take nearly all the time (a model refit or an Optuna trial per proposal), so they run
first, spread over the processes, on fewer seeds; the processes are forked where that is
safe (:func:`~nasfilter.runs.worker_process.pool_context`) once the inputs are loaded, so that they
start with them; each worker process uses one BLAS thread (the processes fill the CPUs; the
runs' results are the same, as they are for any ``--jobs``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from nasfilter.cli.args import apply_space, int_at_least
from nasfilter.cli.run import (
    add_common,
    build_specs,
    parse_seeds,
    plan_jobs,
    resolve_device,
    resolve_inputs,
    worker_died,
)
from nasfilter.defaults import DEFAULT_BUDGET
from nasfilter.runs.experiment import (
    WorkerDied,
    check_seeds,
    pool_context,
    run_grids,
    start_pool,
)
from nasfilter.runs.metrics import accuracy_words
from nasfilter.runs.results import format_mean_se, load_results, mean_se
from nasfilter.runs.storage.base import InMemoryStorage, Storage
from nasfilter.study.methods import LEFT_OUT_PEERS, PEER_METHODS, STUDY_SEARCHERS
from nasfilter.study.metrics_table import format_summary, summarize, text_table

FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # of the budget, for the hypervolume-over-time table
# FRACTIONS are the ticks of a curve of len(FRACTIONS) points (nasfilter.runs.results.tick_times),
# and of the default DEFAULT_TICKS = 100: a run scored at those ticks only gives the table the
# values that the default ticks give (tests/cli/test_demo.py).
PEER_SEEDS = 3  # the peers run on the first three seeds by default
BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def register(sub: Any) -> None:

    p = sub.add_parser(
        "demo",
        help="run the study's comparison on the real table",
        description="Approximate filtering vs REINFORCE (MnasNet reward) vs random search vs "
        f"regularized evolution, nine seeds, {DEFAULT_BUDGET:g} simulated seconds, against "
        "the peers, model-based search (and Optuna NSGA-II and random search when Optuna is "
        f"installed) on the first {PEER_SEEDS} seeds, on the real table (NATS-Bench's real "
        "hp-90 validation accuracies, seed 777, with modelled times) or --table.",
    )
    p.add_argument("--seeds", default="0-8", help="seeds (default 0-8: nine)")
    p.add_argument(
        "--peer-seeds",
        type=int_at_least(1),
        default=PEER_SEEDS,
        metavar="N",
        help=f"run the peers on the first N of --seeds (default {PEER_SEEDS}; more than "
        "there are: all of them)",
    )
    p.add_argument("--db", help="also keep the results in this SQLite database")
    add_common(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    apply_space(args)
    try:
        return _demo(args)
    except WorkerDied as exc:
        return worker_died("demo", exc)


def _demo(args: argparse.Namespace) -> int:

    if args.db is not None:
        from nasfilter.cli.args import check_database

        check_database(
            args.db, "--db", {"--table": args.table, "--oracle-cache": args.oracle_cache}
        )
    seeds = check_seeds(parse_seeds(args.seeds))
    peer_seeds = seeds[: args.peer_seeds]
    resolve_device(args)
    study = build_specs(args, list(STUDY_SEARCHERS), ["none"])
    peers = build_specs(args, [m.searcher for m in PEER_METHODS], ["none"])
    if args.db is None:  # nothing but the tables below reads the curves: score at FRACTIONS
        study, peers = _at_fractions(study), _at_fractions(peers)
    jobs, capped = plan_jobs(args.jobs, len(study) * len(seeds) + len(peers) * len(peer_seeds))
    with _pool(jobs, study[0], lambda: resolve_inputs(study)) as (pool, loaded):
        table, proxy, ref = loaded
        print(f"nasfilter demo: the comparison of arXiv 2212.07936 on {table.dataset.name}")
        print(f"  table : {table.provenance.label}")
        print(f"  oracle: {proxy.label}; a proxy query costs {study[0].proxy_cost:g} simulated s")
        print(
            f"  true accuracy-throughput front: {len(ref.true_front)} architectures; "
            f"{len(seeds)} seeds x {args.budget:g} simulated {args.budget_clock}-seconds "
            f"(the peers: the first {len(peer_seeds)}); {args.workers} simulated worker(s) "
            f"per run; {jobs} process(es){capped}\n"
        )
        # The slow peers first, so that the processes share them and none waits at the end.
        grids = [(peers, peer_seeds), (study, seeds)] if peers else [(study, seeds)]
        results = _run(args, grids, jobs, pool)
    accuracy = accuracy_words(table.provenance.scored, table.seeds)
    print(format_summary(summarize([r.row() for r in results]), accuracy))
    print("\nhypervolume ratio over simulated time (mean ± standard error over seeds):")
    print("\n".join(_hv_table(results, args.budget)))
    _notes(table, len(peer_seeds), len(seeds))
    return 0


def _at_fractions(specs: list[Any]) -> list[Any]:
    """``specs`` with metric curves of one point at each of :data:`FRACTIONS` of the budget
    (a run's scoring computes the front at every tick: a tenth of the time of the default
    ticks, for the same printed numbers)."""
    return [dataclasses.replace(spec, n_ticks=len(FRACTIONS)) for spec in specs]


@contextmanager
def _pool(jobs: int, preload: Any, load: Callable[[], Any]) -> Iterator[tuple[Any, Any]]:
    """(the worker processes of the runs, what ``load`` returns): None for one job (the
    runs are made in this process). Forked workers
    (:func:`~nasfilter.runs.worker_process.pool_context`) start once this process has loaded
    the inputs, which they inherit; spawned ones start first and load ``preload``'s inputs
    while this one loads them too. Each worker uses one
    BLAS thread (:func:`_one_blas_thread`)."""

    if jobs == 1:
        yield None, load()
        return
    forks = pool_context().get_start_method() == "fork"
    loaded = load() if forks else None
    with _one_blas_thread(jobs), start_pool(jobs, None if forks else preload) as pool:
        yield pool, (loaded if forks else load())


@contextmanager
def _one_blas_thread(jobs: int) -> Iterator[None]:
    """With several worker processes, each uses one BLAS thread (they fill the CPUs; more
    threads only contend); a thread count the user set is kept."""
    unset = [name for name in BLAS_THREADS if name not in os.environ] if jobs > 1 else []
    for name in unset:
        os.environ[name] = "1"
    try:
        yield
    finally:
        for name in unset:
            os.environ.pop(name, None)


def _run(
    args: argparse.Namespace,
    grids: Sequence[tuple[list[Any], list[int]]],
    jobs: int,
    pool: Any,
) -> list[Any]:
    """Run every (specs, seeds) grid into one storage, with one ``pool`` of ``jobs``
    processes for them all (None: in this process); the scored runs, study's first."""

    storage: Storage
    if args.db is not None:
        from nasfilter.runs.storage.sqlite_store import Store

        storage = Store(args.db)
    else:
        storage = InMemoryStorage()
    with storage:
        run_grids(grids, store=storage, jobs=jobs, progress=not args.no_progress, pool=pool)
        # The runs of this command line: any plugin in them was named by the user here.
        # Shown in the order of the searchers: the study's (the last grid), then the peers.
        shown = [(s.key(), seed) for specs, seeds in grids[::-1] for s in specs for seed in seeds]
        results = load_results(storage, select=shown, trust_plugins=True)
    rank = {pair: n for n, pair in enumerate(shown)}
    return sorted(results, key=lambda r: rank[(r.spec.key(), r.seed)])


SCANNING = "†"  # marks a cell where every run was still querying the proxy
SCAN_NOTE = (f"{SCANNING}: the proxy scan had not finished by this time in any run, so nothing "
             "was evaluated yet (HV 0 says nothing of the method's front)")


def _scanning(run: Any, budget: float) -> list[bool]:
    """Per fraction of the budget: whether ``run`` queried the proxy and had evaluated
    nothing by then (its scan was still going)."""
    if not run.summary.get("n_proxy"):
        return [False] * len(FRACTIONS)
    done = _hv_at(run.curves["clock"], run.curves["n_evaluations"], budget)
    return [not n for n in done]


def _hv_table(results: Sequence[Any], budget: float) -> list[str]:
    """The hypervolume ratio at each of :data:`FRACTIONS` of the budget, per searcher; a
    cell where every run was still scanning the proxy is marked (:data:`SCAN_NOTE`)."""

    searchers = list(dict.fromkeys(r.spec.searcher for r in results))
    header = ["method", *(f"{f * budget:,.0f} s" for f in FRACTIONS)]
    lines, marked = [], False
    for name in searchers:
        runs = [r for r in results if r.spec.searcher == name]
        hv = [_hv_at(r.curves["clock"], r.curves["hv_ratio"], budget) for r in runs]
        scanning = [all(col) for col in zip(*(_scanning(r, budget) for r in runs), strict=True)]
        stats = [mean_se([h[i] for h in hv]) for i in range(len(FRACTIONS))]
        cells = [format_mean_se(s.mean, s.se, 3) + (SCANNING if scan else "")
                 for s, scan in zip(stats, scanning, strict=True)]
        marked = marked or any(scanning)
        lines.append([name, *cells])
    return text_table(header, lines) + ([SCAN_NOTE] if marked else [])


def _notes(table: Any, n_peer_seeds: int, n_seeds: int) -> None:
    print(
        f"\nutilization-pareto = approximate filtering: query the proxy for all "
        f"{table.space.size} architectures, evaluate only the throughput-utilization Pareto "
        "front. Metrics compare each run's accuracy-throughput front with the true one "
        "(docs/searchers.md).",
    )

    for extra in dict.fromkeys(extra for _, extra in LEFT_OUT_PEERS):
        names = ", ".join(m.label for m, e in LEFT_OUT_PEERS if e == extra)
        print(
            f"Left out: {names}, because the {extra!r} extra is not installed "
            f"(pip install 'nasfilter[{extra}]' runs them too)."
        )
    if n_peer_seeds < n_seeds:
        print(
            f"The peers ran on the first {n_peer_seeds} of the {n_seeds} seeds (the seeds "
            "column); --peer-seeds runs them on more."
        )
    if not table.synthetic and table.provenance.modelled and table.space.name == "tss":
        print(
            f"NOTE: the tables' numbers are {table.provenance.real}: the simulated seconds "
            "are the measured training epochs plus a modelled validation pass per evaluation; "
            "the scored accuracy is a validation accuracy, no real test accuracy ships "
            "(docs/tss.md)."
        )
    elif not table.synthetic and table.provenance.modelled:
        print(
            f"NOTE: the accuracies above are {table.provenance.real}: searches observe them "
            "and they score every run, since no real test accuracy ships; the simulated "
            "seconds come from modelled times (docs/real-results.md)."
        )
    if table.synthetic:
        print(
            f"NOTE: every accuracy above comes from the {table.provenance.label}: a smooth "
            "model calibrated to a few real records, which illustrates the method; these are "
            "not NATS-Bench results (omit --table for the real table)."
        )


def _hv_at(clock: Any, hv: Any, budget: float) -> list[float | None]:
    """The hypervolume ratio at each fraction of the budget, from a curve: its value at the
    last tick at or before that time (None before the first tick)."""
    out: list[float | None] = []
    for f in FRACTIONS:
        t = f * budget
        k = max((i for i, c in enumerate(clock) if c <= t + 1e-9), default=None)
        out.append(None if k is None else float(hv[k]))
    return out
