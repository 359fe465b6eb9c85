"""One run: a searcher, optionally a filter, and a metered problem -> a :class:`RunResult`.

The loop is the data flow of the project, with ``workers`` simulated workers (K)::

    while a worker is free and the budget is not spent:
        trial = searcher.ask()                     # Trial(id, arch), or None: done
        if filter and not filter.keep(trial.arch): # may query the proxy, never accuracy
            searcher.tell(trial, None)             # dropped
        else:
            start evaluating trial.arch on the free worker, at the current wall clock
    wait for the next evaluation to complete (the wall clock jumps to it), free its
    worker, searcher.tell(trial, accuracy)

An evaluation occupies its worker for its training time; the next proposal is asked for as
soon as a worker is free (asynchronous, as syne-tune's simulator does). Proxy queries are
made by the searcher or filter at the current wall clock and advance it. Evaluations that
complete at the same wall-clock second are told in the order they started. With K = 1 this
is the sequential loop (ask, filter, evaluate, tell), trace for trace.

It stops with a recorded ``status``:

- ``"budget"``: the budget was spent (evaluations already running still complete and are
  told, as the last evaluation of NATS-Bench's loop may overshoot);
- ``"searcher-done"``: ``ask`` returned None (running evaluations complete first);
- ``"stalled"``: :data:`DEFAULT_MAX_IDLE` (or ``max_idle``) proposals in a row were not
  evaluated. A run whose filter drops everything, with a searcher that never stops, would
  otherwise loop forever without advancing the clock;
- ``"space-exhausted"``: every architecture present in the table has been evaluated, so the
  searcher can propose nothing new (NATS-style loops end the same way when their space is
  used up); more budget would only re-draw training seeds of known architectures;
- ``"converged"``: :data:`DEFAULT_MAX_REPEATS` (or ``max_repeats``) evaluations in a row
  were of architectures this run had already evaluated: the searcher keeps proposing only
  what it knows, so the rest of the budget could change no front metric.

The last two make a huge budget (``--budget 1e30``) finish: a run ends when it has nothing
new to learn, not only when the clock runs out. With the study's budget (110000 s, at
least 43 s per evaluation: at most about 2,600 evaluations) neither can trigger before the
budget does. The trace the problem keeps is bounded as well (``Problem.trace_limit``).

Randomness: :func:`seed_streams` turns one seed into three independent generators (problem,
searcher, filter) through ``np.random.SeedSequence(seed).spawn(3)``, so a run is a pure
function of its spec, seed and K, whatever process runs it.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from nasfilter.fidelity import Fidelity, LearningCurves, is_full
from nasfilter.filters.base import Filter, as_single_filter
from nasfilter.metered import ProxyHandle, SearchContext
from nasfilter.problem import (
    ASK,
    DEFAULT_PROXY_COST,
    EVALUATE,
    RECOMMEND,
    Budget,
    BudgetExhausted,
    Problem,
)
from nasfilter.proxy import ProxyTable
from nasfilter.searchers.base import Searcher, as_trial_searcher
from nasfilter.space import Arch, index_of
from nasfilter.table import BenchmarkTable
from nasfilter.trial import WAIT, Trial

DEFAULT_MAX_IDLE = 10_000  # consecutive proposals without an evaluation before "stalled"
DEFAULT_MAX_REPEATS = 10_000  # consecutive evaluations of known architectures: "converged"
PROGRESS_EVERY = 4096  # proposals between two calls of run_search's on_progress
MAX_WORKERS = 4096  # simulated workers; more is almost surely a typo

STATUSES = ("budget", "searcher-done", "stalled", "space-exhausted", "converged")


class Streams(NamedTuple):
    """The three generators of one run."""

    problem: np.random.Generator
    searcher: np.random.Generator
    filter: np.random.Generator


def _seed_sequence(seed: int | np.random.SeedSequence) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        # A fresh copy: spawning from the caller's object would change its state.
        return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0 or a SeedSequence, got {seed!r}")
    return np.random.SeedSequence(int(seed))


def seed_streams(seed: int | np.random.SeedSequence) -> Streams:
    """Generators for the problem, the searcher and the filter of the run with ``seed``."""
    children = _seed_sequence(seed).spawn(3)
    return Streams(*(np.random.default_rng(c) for c in children))


def make_problem(
    table: BenchmarkTable,
    budget: float | Budget,
    seed: int | np.random.SeedSequence,
    proxy: ProxyTable | None = None,
    proxy_cost: float = DEFAULT_PROXY_COST,
    charging: str = "retrain",
    curves: LearningCurves | None = None,
) -> Problem:
    """The metered problem of the run with ``seed`` (its generator is stream 0).

    ``charging`` and ``curves`` are :class:`~nasfilter.problem.Problem`'s (how evaluations
    at a fidelity are charged, the learning curves behind them). Raises ValueError when
    ``proxy`` records a dataset other than the table's."""
    b = budget if isinstance(budget, Budget) else Budget(budget)
    if proxy is not None and isinstance(table, BenchmarkTable):
        check_same_dataset(table, proxy)
    return Problem(
        table,
        seed_streams(seed).problem,
        b,
        proxy=proxy,
        proxy_cost=proxy_cost,
        curves=curves,
        charging=charging,
    )


def check_same_dataset(table: BenchmarkTable, proxy: ProxyTable) -> None:
    """Raise ValueError, naming both, when ``proxy`` records a dataset other than
    ``table``'s (its networks then have other input sizes and classes)."""
    recorded = proxy.provenance.get("dataset")
    if recorded is not None and recorded != table.dataset.name:
        raise ValueError(
            f"the table is for dataset {table.dataset.name!r} but the proxy "
            f"({proxy.label}) was computed for {recorded!r}; load the proxy for "
            f"{table.dataset.name!r} (proxy_table(..., dataset={table.dataset.name!r}))"
        )


def _check_fresh(problem: Problem) -> None:
    """Raise ValueError when ``problem`` has been used: a run is its problem's whole life."""
    used = len(problem.log) + problem.n_unlogged
    if used or problem.worker_seconds or problem.clock:
        raise ValueError(
            f"this Problem was used already ({used} events, {problem.worker_seconds:g} "
            "worker-seconds charged): its clock and trace belong to that run. Build a fresh "
            "one for each run (make_problem(table, budget, seed, proxy))"
        )


@dataclass
class RunResult:
    """What one run did.

    Attributes:
        searcher, filter: names; ``searcher_config``, ``filter_config``: their parameters.
        status: why the run stopped, one of :data:`STATUSES`.
        events: the problem's event columns (see :data:`nasfilter.problem.EVENT_COLUMNS`),
            arrays of shape (n_events,).
        budget: the run's :class:`~nasfilter.problem.Budget`; ``workers``: K.
        clock: simulated wall-clock seconds when the run ended.
        worker_seconds: simulated seconds charged (accuracy and proxy), may exceed the
            budget by evaluations that were running; ``evaluation_seconds`` and
            ``proxy_seconds`` split it. With one worker it equals ``clock``.
        n_asked: trials; n_dropped: trials the filter dropped.
        n_unlogged: events left out of ``events`` past the problem's ``trace_limit``
            (repeats that change no metric; ``unlogged`` splits them, see
            :attr:`~nasfilter.problem.Problem.unlogged`); 0 for every ordinary run.
        best_index: the selected architecture: the searcher's last recommendation
            (:meth:`Searcher.recommend`), else the evaluated one with the highest
            validation accuracy seen (the first on ties); -1 if none. ``best_valid_acc``:
            the highest validation accuracy (percent) seen for it.
        wall_seconds: real seconds the loop took (not part of any result).
    """

    searcher: str
    filter: str
    status: str
    events: dict[str, np.ndarray]
    budget: Budget
    clock: float
    worker_seconds: float
    workers: int
    evaluation_seconds: float
    proxy_seconds: float
    n_evaluations: int
    n_proxy: int
    n_asked: int
    n_dropped: int
    best_index: int
    best_valid_acc: float
    wall_seconds: float
    searcher_config: dict[str, Any] = field(default_factory=dict)
    filter_config: dict[str, Any] = field(default_factory=dict)
    n_unlogged: int = 0
    unlogged: dict[str, float] = field(default_factory=dict)

    @property
    def evaluated(self) -> np.ndarray:
        """Indices of the evaluations in order, with repeats, int64 (n_evaluations,)."""
        return self.events["index"][self.events["kind"] == EVALUATE]


def check_workers(workers: object) -> int:
    """``workers`` as an int in [1, :data:`MAX_WORKERS`], else ValueError naming the range."""
    if (
        isinstance(workers, bool)
        or not isinstance(workers, (int, np.integer))
        or not 1 <= workers <= MAX_WORKERS
    ):
        raise ValueError(
            f"workers must be an integer from 1 to {MAX_WORKERS} (simulated parallel "
            f"workers), got {workers!r}"
        )
    return int(workers)


@dataclass
class _Tally:
    """What the loop counts while it runs."""

    n_asked: int = 0
    n_dropped: int = 0
    idle: int = 0
    status: str | None = None
    seen: dict[int, float] = field(default_factory=dict)  # best valid acc per told index
    first_best: tuple[int, float] = (-1, -math.inf)  # fallback rule: first highest
    recommended: Arch | None = None


class _Loop:
    """The simulation of one run: trials onto free workers, outcomes in completion order."""

    def __init__(
        self,
        searcher: Searcher,
        filter: Filter | None,
        problem: Problem,
        workers: int,
        max_idle: int,
        max_repeats: int = DEFAULT_MAX_REPEATS,
        on_progress: Callable[[Problem, int], None] | None = None,
    ) -> None:
        self.searcher, self.filter, self.problem = searcher, filter, problem
        self.max_idle, self.max_repeats, self.on_progress = max_idle, max_repeats, on_progress
        self.n_present = problem.table.n_present
        # indices whose full evaluation started; (index, fidelity) of the partial ones
        self.evaluated: set[int | tuple[int, Fidelity | None]] = set()
        self.n_full = 0  # indices in ``evaluated``
        self.repeats = 0  # evaluations in a row of keys already in ``evaluated``
        self.retrain = problem.charging == "retrain"
        self.free = list(range(workers))  # a min-heap of free worker ids
        # (end, start order, worker, trial, accuracy, index, full): a min-heap by completion
        self.running: list[tuple[float, int, int, Trial, float, int, bool]] = []
        self.started = 0
        self.tally = _Tally()

    def run(self) -> _Tally:
        tally = self.tally
        while True:
            try:
                self._fill()
            except BudgetExhausted:  # a proxy query inside ask or keep found the budget spent
                tally.status = "budget"
            if not self.running:
                break
            self._complete_next()
        if tally.status is None:
            tally.status = "budget"
        return tally

    def _fill(self) -> None:
        """Start trials until no worker is free or the run must stop."""
        tally, problem, free = self.tally, self.problem, self.free
        ask, tell, flt = self.searcher.ask, self.searcher.tell, self.filter
        keep_fn = None if flt is None else flt.keep
        drop = problem.record_drop
        on_progress = self.on_progress
        while free and tally.status is None:
            if problem.exhausted:
                tally.status = "budget"
                return
            trial = ask()
            if trial is None:
                tally.status = "searcher-done"
                return
            if trial is WAIT:  # nothing until a running trial is told
                if not self.running:
                    raise ValueError(
                        f"{self.searcher!r}.propose() returned WAIT with no trial running: "
                        "nothing it waits for can arrive; propose a trial or return None"
                    )
                return
            tally.n_asked += 1
            if on_progress is not None and tally.n_asked % PROGRESS_EVERY == 0:
                on_progress(problem, self.n_full)
            arch = trial.arch
            index = index_of(arch)
            if keep_fn is not None:
                try:
                    keep = keep_fn(arch)
                except BudgetExhausted:
                    problem.record(ASK, trial.id, index)  # asked, never judged
                    raise
                if keep is not True and keep is not False and not isinstance(keep, np.bool_):
                    raise ValueError(
                        f"{flt!r}.keep({arch}) returned {keep!r}; expected True or False"
                    )
                if not keep:  # dropped: told at once, as a None outcome
                    tally.n_dropped += 1
                    drop(trial.id, index)
                    tell(trial, None)
                    tally.idle += 1
                    if tally.idle >= self.max_idle:
                        tally.status = "stalled"
                    continue
                if problem.exhausted:  # the filter's proxy queries spent the budget
                    problem.record(ASK, trial.id, index)  # kept, never started
                    tally.status = "budget"
                    return
            worker = heapq.heappop(free)
            fidelity = trial.fidelity
            if fidelity is None and self.retrain:
                accuracy, end = problem.start_evaluation(index, trial.id, worker)
                full = True
            else:
                accuracy, end = problem.start_at_fidelity(index, fidelity, trial.id, worker)
                full = is_full(fidelity)
            tally.idle = 0
            heapq.heappush(self.running, (end, self.started, worker, trial, accuracy, index, full))
            self.started += 1
            self._note_novelty(index if full else (index, fidelity))

    def _note_novelty(self, key: int | tuple[int, Fidelity | None]) -> None:
        """Stop (once running evaluations complete) when every architecture of the table
        had a full evaluation, or when ``max_repeats`` evaluations in a row were repeats.
        Novelty is per architecture for full evaluations and per (architecture, fidelity)
        for the others, so promoting an architecture to a higher fidelity is new."""
        if key in self.evaluated:
            self.repeats += 1
            if self.repeats >= self.max_repeats:
                self.tally.status = "converged"
        else:
            self.evaluated.add(key)
            self.repeats = 0
            if type(key) is int:
                self.n_full += 1
                if self.n_full >= self.n_present:
                    self.tally.status = "space-exhausted"

    def _complete_next(self) -> None:
        end, _, worker, trial, accuracy, index, full = heapq.heappop(self.running)
        self.problem.advance(end)
        heapq.heappush(self.free, worker)
        tally = self.tally
        if full:  # what a run returns and recommends: full evaluations only
            if accuracy > tally.seen.get(index, -math.inf):
                tally.seen[index] = accuracy
            if accuracy > tally.first_best[1]:
                tally.first_best = (index, accuracy)
        try:
            self.searcher.tell(trial, accuracy)
        except BudgetExhausted:  # a proxy query in tell after the budget was spent
            tally.status = tally.status or "budget"
        self._note_recommendation()

    def _note_recommendation(self) -> None:
        rec = self.searcher.recommend()
        tally = self.tally
        if rec is None or rec == tally.recommended:
            return
        if type(rec) is not Arch or index_of(rec) not in tally.seen:
            raise ValueError(
                f"{self.searcher!r}.recommend() returned {rec!r}, which this run did not "
                "evaluate at full fidelity (or has not told yet); recommend an architecture "
                "evaluated at full fidelity, or None"
            )
        tally.recommended = rec
        index = index_of(rec)
        self.problem.record(RECOMMEND, -1, index, tally.seen[index])


def run_search(
    searcher: Searcher,
    problem: Problem,
    *,
    seed: int | np.random.SeedSequence,
    filter: Filter | None = None,
    max_idle: int = DEFAULT_MAX_IDLE,
    max_repeats: int = DEFAULT_MAX_REPEATS,
    on_progress: Callable[[Problem, int], None] | None = None,
    workers: int = 1,
) -> RunResult:
    """Run ``searcher`` (through ``filter``) on ``problem`` with ``workers`` simulated
    workers until a stop condition.

    ``seed`` (required: a run is a function of it) feeds streams 1 and 2 of
    :func:`seed_streams` to the searcher and the filter; build the problem with
    :func:`make_problem` and the same seed for a fully seeded run. Searchers and filters
    written for the earlier interfaces run through their adapters, with a FutureWarning
    (:func:`~nasfilter.searchers.base.as_trial_searcher`). Raises ValueError before the
    run for bad arguments, and when the searcher proposes something that is not an
    :class:`~nasfilter.space.Arch` or the filter answers anything but True or False.
    ``on_progress(problem, n_distinct)`` is called every :data:`PROGRESS_EVERY` trials
    (``n_distinct``: architectures evaluated so far), for a progress display of a long
    run.
    """
    searcher = as_trial_searcher(searcher)
    filt = None if filter is None else as_single_filter(filter)
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a Problem, got {problem!r}")
    if isinstance(max_idle, bool) or not isinstance(max_idle, int) or max_idle < 1:
        raise ValueError(f"max_idle must be an integer >= 1, got {max_idle!r}")
    if isinstance(max_repeats, bool) or not isinstance(max_repeats, int) or max_repeats < 1:
        raise ValueError(f"max_repeats must be an integer >= 1, got {max_repeats!r}")
    k = check_workers(workers)
    _check_fresh(problem)
    if problem.proxy_table is not None:
        check_same_dataset(problem.table, problem.proxy_table)
    streams = seed_streams(seed)
    proxy = ProxyHandle(problem)
    searcher.setup(SearchContext(streams.searcher, proxy))
    if filt is not None:
        filt.setup(SearchContext(streams.filter, proxy))

    start = time.perf_counter()
    tally = _Loop(searcher, filt, problem, k, max_idle, max_repeats, on_progress).run()
    wall = time.perf_counter() - start
    if tally.recommended is not None:
        best_index = index_of(tally.recommended)
        best_acc = tally.seen[best_index]
    else:
        best_index, best_acc = tally.first_best
    events = problem.log.arrays()
    assert tally.status is not None
    return RunResult(
        searcher=searcher.name,
        filter="none" if filt is None else filt.name,
        status=tally.status,
        events=events,
        budget=problem.budget,
        clock=problem.clock,
        worker_seconds=problem.worker_seconds,
        workers=k,
        evaluation_seconds=problem.evaluation_seconds,
        proxy_seconds=problem.proxy_seconds,
        n_evaluations=problem.n_evaluations,
        n_proxy=problem.n_proxy,
        n_asked=tally.n_asked,
        n_dropped=tally.n_dropped,
        best_index=best_index,
        best_valid_acc=best_acc if best_index >= 0 else math.nan,
        wall_seconds=wall,
        searcher_config=searcher.config(),
        filter_config={} if filt is None else filt.config(),
        n_unlogged=problem.n_unlogged,
        unlogged=problem.unlogged,
    )
