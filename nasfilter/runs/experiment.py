"""Experiments across seeds: a grid of searcher x filter (x dataset) x seed, in parallel.

Each (spec, seed) pair runs as a pure function of the two (:func:`run_one`): the table, the
proxy and the searcher and filter are rebuilt from the spec (its strings, or the factories
of in-process plugins), and every generator comes from ``np.random.SeedSequence(seed)``
(:func:`nasfilter.runs.runner.seed_streams`). Results are therefore identical whatever the
number of worker processes and whichever worker runs which pair. With a
:class:`~nasfilter.runs.storage.base.Storage`, results are written in grid order, one transaction
per run, and pairs already stored are skipped (resume).

The pipeline runs one way: the runner makes a :class:`~nasfilter.runs.records.RunRecord` of
events, :mod:`nasfilter.runs.results` scores it (:func:`~nasfilter.runs.results.score_record`) and
hands it to the storage with its scores (:func:`~nasfilter.runs.results.store_run`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np
from tqdm import tqdm

from nasfilter.bench.proxy import SPACE_DEFAULT_ORACLE, ProxyTable
from nasfilter.bench.table import BenchmarkTable
from nasfilter.filters import Filter, make_filter
from nasfilter.runs.fronts import SearchRun, score_search
from nasfilter.runs.inputs import (
    FileIdentity,
    RunInputs,
    content_digest,
    file_identity,
    gone,
    inputs,
    provenance,
    spec_proxy,
    table_identity,
)
from nasfilter.runs.records import (
    BUDGET_CLOCKS,
    DEFAULT_BUDGET,
    DEFAULT_MAX_IDLE,
    DEFAULT_TICKS,
    FilterArg,
    RunRecord,
    RunSpec,
    ScoredRun,
    SearcherArg,
)
from nasfilter.runs.results import score_record, store_run
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.runs.storage.base import Storage
from nasfilter.runs.worker_process import (
    WorkerDied,
    default_jobs,
    fork_blocker,
    pool_context,
    worker_init,
)
from nasfilter.runs.worker_start import MainGuardError, check_picklable, main_reimport
from nasfilter.searchers import Searcher, make_searcher
from nasfilter.sim.problem import DEFAULT_PROXY_COST, Budget, Problem


def grid(
    searchers: Sequence[SearcherArg],
    filters: Sequence[FilterArg] = ("none",),
    datasets: Sequence[str] = ("cifar10",),
    **common: Any,
) -> list[RunSpec]:
    """Every searcher x filter x dataset as a :class:`RunSpec` (``common`` fills the rest).
    A searcher or filter is a spec string, an instance or a factory (:meth:`RunSpec.of`).

    Raises ValueError, before anything runs, for an empty list, an unknown name or a bad
    parameter.
    """
    for what, values in (("searchers", searchers), ("filters", filters), ("datasets", datasets)):
        if isinstance(values, str) or not values:
            raise ValueError(f"{what} must be a non-empty list, got {values!r}")
    specs = [
        RunSpec.of(s, f, dataset=d, **common)
        for d in datasets
        for s in searchers
        for f in filters
    ]
    for spec in specs:
        spec.validate()
    return list(dict.fromkeys(specs))  # drop duplicates, keep order


def check_seeds(seeds: Iterable[int]) -> list[int]:
    """``seeds`` as a list of distinct integers in [0, 2**63) (what the results database
    holds); ValueError if empty or bad."""
    out = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 0 <= s < 2**63:
            raise ValueError(f"seeds must be integers >= 0 and < 2**63, got {s!r}")
        out.append(int(s))
    if not out:
        raise ValueError("the seed list is empty; give at least one seed, e.g. 0-8")
    return list(dict.fromkeys(out))


# ------------------------------------------------------------------------------- one run
def search(
    searcher: str | Searcher,
    table: BenchmarkTable,
    budget: float | Budget,
    *,
    seed: int | np.random.SeedSequence,
    filter: str | Filter | None = None,
    proxy: ProxyTable | None = None,
    proxy_cost: float = DEFAULT_PROXY_COST,
    workers: int = 1,
    max_idle: int = DEFAULT_MAX_IDLE,
    charging: str = "retrain",
) -> SearchRun:
    """One run of ``searcher`` (through ``filter``) on ``table`` within ``budget`` simulated
    seconds, with the seed given once: it seeds the problem, the searcher and the filter
    (:func:`~nasfilter.runs.runner.make_problem` and :func:`~nasfilter.runs.runner.run_search`).
    ``charging``: how evaluations at a fidelity are charged (``"retrain"``, NATS-Bench's, or
    ``"resume"``). ValueError for a ``proxy`` of another dataset than the table's, naming
    both.

    Returns the run scored, with its front (:class:`~nasfilter.runs.fronts.SearchRun`): metrics
    and curves against the true front of ``table`` on the throughput of ``proxy`` (without
    one, of the default oracle of the table's space and dataset: on sss the calibrated V100
    model, on tss the RTX 2080 Ti latencies measured at batch 256)."""
    problem = make_problem(
        table, budget, seed, proxy=proxy, proxy_cost=proxy_cost, charging=charging
    )
    record = run_search(  # the seed: make_problem's, read from the problem
        make_searcher(searcher),
        problem,
        filter=None if filter is None else make_filter(filter),
        max_idle=max_idle,
        workers=workers,
    )
    if proxy is None:  # the front's throughput axis: the table's space's default oracle
        oracle, device = SPACE_DEFAULT_ORACLE[table.space.name]
        spec = RunSpec("random", dataset=table.dataset.name, oracle=oracle, device=device)
        proxy = spec_proxy(spec)
    return score_search(record, table, proxy, problem.budget.horizon)


def run_record(
    spec: RunSpec,
    seed: int,
    on_progress: Callable[[Problem, int], None] | None = None,
    resolved: RunInputs | None = None,
) -> RunRecord:
    """The unscored record of ``spec`` run with ``seed``: a pure function of the two (wall
    time aside). ``on_progress`` is passed to :func:`~nasfilter.runs.runner.run_search`;
    ``resolved``: the spec's inputs (None: :func:`~nasfilter.runs.inputs.inputs` of it)."""
    table, proxy, _ = inputs(spec) if resolved is None else resolved
    problem = make_problem(
        table,
        spec.make_budget(),
        seed,
        proxy=proxy,
        proxy_cost=spec.proxy_cost,
        charging=spec.charging,
    )
    return run_search(
        spec.make_searcher(),
        problem,
        filter=spec.make_filter(),  # the seed: make_problem's, read from the problem
        max_idle=spec.max_idle,
        workers=spec.workers,
        on_progress=on_progress,
        spec=spec,
    )


def run_one(
    spec: RunSpec, seed: int, on_progress: Callable[[Problem, int], None] | None = None
) -> ScoredRun:
    """:func:`run_record`, scored by :func:`nasfilter.runs.results.score_record`: the spec
    is resolved once (:func:`~nasfilter.runs.inputs.inputs`) and that value serves both."""
    resolved = inputs(spec)
    return score_record(run_record(spec, seed, on_progress, resolved), resolved)


def _run_task(task: tuple[RunSpec, int]) -> ScoredRun:
    return run_one(*task)


def start_pool(jobs: int, preload: RunSpec | None = None) -> ProcessPoolExecutor:
    """A pool of ``jobs`` worker processes for :func:`run_grids`, started now, forked or
    spawned by :func:`pool_context`: forked ones begin with this process's imports and
    loaded inputs; spawned ones import nasfilter while this process goes on (checking its
    inputs, say) and, with ``preload``, load that spec's table, proxy and front reference.
    Use it in a ``with`` block; a failed preload is left to the runs, which report it.
    :class:`~nasfilter.runs.worker_start.MainGuardError` when spawned workers would run the
    calling script's unguarded top-level code again."""
    return _started_pool(jobs, preload, [preload], "start_pool")


def _started_pool(
    size: int, preload: RunSpec | None, sent: Sequence[object], caller: str
) -> ProcessPoolExecutor:
    """A pool of ``size`` processes, each started now and loading ``preload``'s inputs;
    ``sent`` are the objects the workers will be sent (checked by
    :func:`~nasfilter.runs.worker_start.main_reimport`)."""
    context = pool_context()
    with main_reimport(context, fork_blocker() or "asked for", sent, caller):
        pool = ProcessPoolExecutor(max_workers=size, mp_context=context, initializer=worker_init)
        for _ in range(size):  # each submission starts a process while none is idle
            pool.submit(_preload, preload)
    return pool


def _preload(spec: RunSpec | None) -> None:
    if spec is not None:
        try:
            inputs(spec)
        except Exception:  # the runs that need these inputs report it
            pass


def _own_pool(tasks: list[tuple[RunSpec, int]], jobs: int) -> ProcessPoolExecutor | None:
    """The worker pool :func:`run_grids` makes for ``tasks``, its processes started now
    (before a progress bar starts its thread, so that they may fork: :func:`pool_context`);
    None when the runs are made in this process (one job, or at most one run)."""
    if jobs == 1 or len(tasks) <= 1:
        return None
    specs = list(dict.fromkeys(spec for spec, _ in tasks))
    return _started_pool(min(jobs, len(tasks)), None, specs, f"run_experiment(jobs={jobs})")


def check_sendable(tasks: Sequence[tuple[RunSpec, int]], jobs: int) -> None:
    """ValueError, before any worker starts, for an in-process plugin factory of ``tasks``
    that cannot be pickled to a worker (a lambda, a nested function), naming it."""
    specs = dict.fromkeys(spec for spec, _ in tasks)
    check_picklable(
        [(s.label, "searcher", s.searcher_factory) for s in specs]
        + [(s.label, "filter", s.filter_factory) for s in specs],
        jobs,
    )


def _records(
    tasks: list[tuple[RunSpec, int]],
    on_progress: Callable[[Problem, int], None] | None = None,
    pool: ProcessPoolExecutor | None = None,
) -> Iterator[ScoredRun]:
    if pool is None:  # here: a run shows its progress
        for spec, seed in tasks:
            yield run_one(spec, seed, on_progress)
        return
    done = False
    try:
        yield from pool.map(_run_task, tasks, chunksize=1)
        done = True
    except BrokenProcessPool as exc:
        raise WorkerDied(
            "a worker process died (killed, or out of memory) before finishing its runs"
        ) from exc
    finally:
        if not done:  # a pool is kept for the caller to shut down, unless the runs stopped
            pool.shutdown(wait=True, cancel_futures=True)


def _plan(
    grids: Sequence[tuple[Sequence[RunSpec], Iterable[int]]], store: Storage | None, jobs: int
) -> list[tuple[RunSpec, int]]:
    """The (spec, seed) pairs to run, grid after grid, each in grid order, after checking
    every argument; with a store, its specs recorded and the pairs it holds already left
    out."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    tasks: list[tuple[RunSpec, int]] = []
    for specs, seeds in grids:
        specs = list(specs)
        if not specs:
            raise ValueError("the experiment has no run specs; give at least one searcher")
        for spec in specs:
            if not isinstance(spec, RunSpec):
                raise ValueError(f"specs must be RunSpec objects, got {spec!r}")
            spec.validate()
        seed_list = check_seeds(seeds)
        tasks += [(spec, seed) for spec in specs for seed in seed_list]
    tasks = list(dict.fromkeys(tasks))  # a pair in two grids runs once
    if store is not None:
        for spec in dict.fromkeys(spec for spec, _ in tasks):
            store.add_spec(spec, *provenance(spec))
        done = store.completed()
        tasks = [(spec, seed) for spec, seed in tasks if (spec.key(), seed) not in done]
    return tasks


class _RunBar:
    """The progress bar of the current run, made when a run is long enough to report."""

    def __init__(self) -> None:
        self.bar: Any = None

    def show(self, problem: Problem, n_distinct: int) -> None:
        budget = problem.budget  # progress in the clock the budget limits (worker first)
        total = budget.horizon
        if self.bar is None:
            self.bar = tqdm(total=total, unit="s", desc="run", leave=False)
        clock = problem.clock if budget.clock == "wall" else problem.worker_seconds
        self.bar.n = min(clock, total)
        self.bar.set_postfix_str(
            f"{problem.n_evaluations:,} evaluations of {n_distinct:,} architectures",
            refresh=True,
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def run_experiment(
    specs: Sequence[RunSpec],
    seeds: Iterable[int],
    *,
    store: Storage | None = None,
    jobs: int = 1,
    progress: bool = False,
    on_record: Callable[[ScoredRun], None] | None = None,
) -> list[ScoredRun]:
    """Run every (spec, seed) pair, in grid order; return the scored runs made now.

    A spec's searcher and filter may be in-process plugins (:meth:`RunSpec.of`,
    :func:`grid`). With ``store`` (any :class:`~nasfilter.runs.storage.base.Storage`), pairs already
    stored are skipped and each new run is written (one transaction, with its scores) as
    soon as it and every earlier pair are done, so an interrupted experiment resumes where
    it stopped. ``jobs`` worker processes (1 = this process) give identical runs.
    ``progress`` shows a progress bar on stderr.
    """
    return run_grids(
        [(specs, seeds)], store=store, jobs=jobs, progress=progress, on_record=on_record
    )


def run_grids(
    grids: Sequence[tuple[Sequence[RunSpec], Iterable[int]]],
    *,
    store: Storage | None = None,
    jobs: int = 1,
    progress: bool = False,
    on_record: Callable[[ScoredRun], None] | None = None,
    pool: ProcessPoolExecutor | None = None,
) -> list[ScoredRun]:
    """:func:`run_experiment` over several (specs, seeds) grids, in the order given (a pair
    in two grids runs once). One pool of ``jobs`` processes shares them all, so that none
    waits at the end of one grid for the next to start (``nasfilter demo`` runs the peers,
    which take longest, first and on fewer seeds than the study's searchers); ``pool``, one
    of :func:`start_pool`, is used instead of a pool made here (``jobs`` is then its size)."""
    tasks = _plan(grids, store, jobs)
    if pool is not None or (jobs > 1 and len(tasks) > 1):
        check_sendable(tasks, jobs)
    own = None if pool is not None else _own_pool(tasks, jobs)
    try:
        return _run_tasks(tasks, store, progress, on_record, pool or own)
    finally:
        if own is not None:
            own.shutdown(wait=True, cancel_futures=True)


def _run_tasks(
    tasks: list[tuple[RunSpec, int]],
    store: Storage | None,
    progress: bool,
    on_record: Callable[[ScoredRun], None] | None,
    pool: ProcessPoolExecutor | None,
) -> list[ScoredRun]:
    """Run ``tasks`` (in ``pool``, or here when None), storing each in grid order."""
    runs: list[ScoredRun] = []
    inner = _RunBar()
    with tqdm(total=len(tasks), disable=not progress, unit="run", desc="runs", leave=False) as bar:
        try:
            for run in _records(tasks, inner.show if progress else None, pool):
                inner.close()
                if store is not None:
                    store_run(store, run)
                runs.append(run)
                if on_record is not None:
                    on_record(run)
                bar.update(1)
        except WorkerDied as exc:
            hint = (
                f"the {len(runs)} runs completed so far are saved in {store.describe()}; "
                "run the same command again to resume"
                if store is not None
                else "no results database was given, so nothing was kept; run it again"
            )
            raise WorkerDied(f"{exc}; {hint}") from exc.__cause__
        finally:
            inner.close()
    return runs


def __getattr__(name: str) -> Any:
    raise gone(__name__, name)  # a spelling that went names its replacement


__all__ = [  # the experiment's names, and those of the leaf types it runs with
    "BUDGET_CLOCKS",
    "DEFAULT_BUDGET",
    "DEFAULT_TICKS",
    "FileIdentity",
    "MainGuardError",
    "RunRecord",
    "RunSpec",
    "ScoredRun",
    "WorkerDied",
    "check_seeds",
    "content_digest",
    "default_jobs",
    "file_identity",
    "fork_blocker",
    "grid",
    "inputs",
    "pool_context",
    "provenance",
    "run_experiment",
    "run_grids",
    "run_one",
    "run_record",
    "search",
    "start_pool",
    "table_identity",
]
