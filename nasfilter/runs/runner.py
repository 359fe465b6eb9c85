"""One run: a searcher, optionally a filter, and a metered problem -> a :class:`RunResult`.

The loop is the data flow of the project, with ``workers`` simulated workers (K)::

    while a worker is free and the budget is not spent:
        trial = searcher.ask()                     # Trial(id, arch, fidelity), or None: done
        if trial is WAIT: break                    # wait for a running trial (error if none)
        if filter and not filter.keep(trial.arch): # may query the proxy, never accuracy
            searcher.tell(trial, None)             # dropped
        else:
            start evaluating trial.arch at trial.fidelity on the free worker, at the
            current wall clock (Problem.start_at_fidelity; None: the full evaluation)
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

Multi-fidelity: an evaluation below the full fidelity (hp 12, 12 epochs) is charged and
recorded as a ``partial`` event, but the run's result (the selected architecture, the
front, every metric) counts full evaluations only; novelty (``space-exhausted``,
``converged``) is per architecture for full evaluations and per (architecture, fidelity)
for the others.

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

from nasfilter.bench.fidelity import Fidelity, LearningCurves, is_full
from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.spaces import SSS, TSS, Cell
from nasfilter.bench.spaces.sss import Arch, index_of
from nasfilter.bench.table import BenchmarkTable
from nasfilter.bench.tss_curves import full_fidelity
from nasfilter.checks import MAX_WORKERS as MAX_WORKERS
from nasfilter.checks import check_workers
from nasfilter.filters.base import Filter, index_keep, validate_filter
from nasfilter.runs.records import DEFAULT_MAX_IDLE, RunRecord, RunSpec
from nasfilter.searchers.base import Searcher, validate_searcher
from nasfilter.sim.problem import (
    ASK,
    DEFAULT_PROXY_COST,
    RECOMMEND,
    Budget,
    BudgetExhausted,
    Problem,
)
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from nasfilter.sim.trial import WAIT, Trial

DEFAULT_MAX_REPEATS = 10_000  # consecutive evaluations of known architectures: "converged"
PROGRESS_EVERY = 4096  # proposals between two calls of run_search's on_progress

STATUSES = ("budget", "searcher-done", "stalled", "space-exhausted", "converged")
_heappop, _heappush = heapq.heappop, heapq.heappush


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


def _stream(children: list[np.random.SeedSequence], k: int) -> np.random.Generator:
    """Generator ``k`` of :func:`seed_streams` from the spawned ``children``, built alone (the
    same state; a run builds each generator it uses once)."""
    return np.random.default_rng(children[k])


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

    ``charging`` and ``curves`` are :class:`~nasfilter.sim.problem.Problem`'s (how evaluations
    at a fidelity are charged, the learning curves behind them). Raises ValueError when
    ``proxy`` records a dataset other than the table's."""
    b = budget if isinstance(budget, Budget) else Budget(budget)
    return Problem(
        table,
        _stream(_seed_sequence(seed).spawn(3), 0),  # seed_streams(seed).problem
        b,
        proxy=proxy,
        proxy_cost=proxy_cost,
        curves=curves,
        charging=charging,
    )


def made_seed(problem: Problem) -> np.random.SeedSequence | None:
    """The seed :func:`make_problem` built ``problem`` with (its generator is stream 0 of
    that seed's :func:`seed_streams`), as a fresh SeedSequence; None for a problem built
    another way (its own generator), which carries no run seed."""
    made = problem.seed_sequence
    if made is None or made.spawn_key[-1:] != (0,):
        return None
    return np.random.SeedSequence(made.entropy, spawn_key=made.spawn_key[:-1])


def check_same_seed(problem: Problem, seed: int | np.random.SeedSequence) -> None:
    """Raise ValueError, naming both seeds, when ``problem`` was built by
    :func:`make_problem` with a seed other than ``seed``: the problem's stream and the
    searcher's and filter's would then come from two runs. A problem built another way
    (its own generator) carries no seed to compare."""
    made = made_seed(problem)
    if made is None:
        return
    given = _seed_sequence(seed)
    if (made.entropy, made.spawn_key) != (given.entropy, given.spawn_key):
        shown = made.entropy if not made.spawn_key else made
        raise ValueError(
            f"the problem was made with seed {shown!r} but run_search was given seed "
            f"{seed!r}; give the seed once, to make_problem(..., seed), and leave out "
            "run_search's seed= (nasfilter.search takes it once)"
        )


def _run_seed(
    problem: Problem, seed: int | np.random.SeedSequence | None
) -> tuple[np.random.SeedSequence, int | None]:
    """(the run's seed sequence, the integer seed its record keeps, None for a
    SeedSequence): ``seed`` when given (checked against the problem's), else the seed
    :func:`make_problem` built ``problem`` with. ValueError when neither says one."""
    if seed is None:
        made = made_seed(problem)
        if made is None:
            raise ValueError(
                "run_search needs the run's seed: build the problem with "
                "make_problem(table, budget, seed), or give seed= for a problem built "
                "with its own generator"
            )
        entropy = made.entropy  # an integer seed, or a SeedSequence's entropy
        return made, entropy if not made.spawn_key and isinstance(entropy, int) else None
    check_same_seed(problem, seed)
    return _seed_sequence(seed), int(seed) if isinstance(seed, (int, np.integer)) else None


def _check_fresh(problem: Problem) -> None:
    """Raise ValueError when ``problem`` has been used: a run is its problem's whole life."""
    used = len(problem.log) + problem.n_unlogged
    if used or problem.worker_seconds or problem.clock:
        raise ValueError(
            f"this Problem was used already ({used} events, {problem.worker_seconds:g} "
            "worker-seconds charged): its clock and trace belong to that run. Build a fresh "
            "one for each run (make_problem(table, budget, seed, proxy))"
        )


def _check_loop_arguments(problem: Problem, max_idle: int, max_repeats: int) -> None:
    """ValueError for a problem that is not a :class:`Problem`, or a bad
    ``max_idle`` or ``max_repeats`` (integers >= 1)."""
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a Problem, got {problem!r}")
    if isinstance(max_idle, bool) or not isinstance(max_idle, int) or max_idle < 1:
        raise ValueError(f"max_idle must be an integer >= 1, got {max_idle!r}")
    if isinstance(max_repeats, bool) or not isinstance(max_repeats, int) or max_repeats < 1:
        raise ValueError(f"max_repeats must be an integer >= 1, got {max_repeats!r}")


RunResult = RunRecord  # what run_search returns: the run's record (nasfilter.runs.records)


@dataclass
class _Tally:
    """What the loop counts while it runs."""

    n_asked: int = 0
    n_dropped: int = 0
    idle: int = 0
    status: str | None = None
    seen: dict[int, float] = field(default_factory=dict)  # best valid acc per told index
    first_best: tuple[int, float] = (-1, -math.inf)  # fallback rule: first highest
    recommended: object = None  # an Arch (sss) or a Cell (tss)


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
        # the table's full fidelity (tss-real-hp200: hp 200); sss keeps is_full's rule
        self.sss, self.full = problem.table.space is SSS, full_fidelity(problem.table)
        self.free = list(range(workers))  # a min-heap of free worker ids
        # (end, start order, worker, trial, accuracy, index, full): a min-heap by completion
        self.running: list[tuple[float, int, int, Trial, float, int, bool]] = []
        self.started = 0
        self.tally = _Tally()
        # What _fill and _complete_next use for every trial, bound once per run instead of
        # once per call, each in one tuple
        keep = None if filter is None else index_keep(filter)
        start, advance = problem.loop_calls()
        ask, dropped = searcher.loop_calls()
        self._hot = (self.tally, problem, self.free, filter, ask, dropped, keep,
                     problem.record_drop, start, on_progress, self.retrain)  # fmt: skip
        self._done = (self.running, advance, self.free, self.tally, searcher.tell,
                      searcher.recommend)  # fmt: skip

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
        tally, problem, free, flt, ask, dropped, keep_fn, drop, start, on_progress, retrain = (
            self._hot
        )
        while free and tally.status is None:
            if problem.exhausted:
                tally.status = "budget"
                return
            trial = ask()
            if trial is None:
                tally.status = "searcher-done"
                return
            if trial is WAIT:  # nothing until a running trial is told
                self._check_waiting()
                return
            tally.n_asked += 1
            if on_progress is not None and tally.n_asked % PROGRESS_EVERY == 0:
                on_progress(problem, self.n_full)
            arch = trial[1]  # trial.arch, without the property look-up
            index = index_of(arch)
            if keep_fn is not None:
                try:
                    keep = keep_fn(arch, index)
                except BudgetExhausted:
                    problem.record(ASK, trial.id, index)  # asked, never judged
                    raise
                if keep is not True and keep is not False and not isinstance(keep, np.bool_):
                    raise ValueError(
                        f"{flt!r}.keep({arch}) returned {keep!r}; expected True or False"
                    )
                if not keep:  # dropped: told at once, as a None outcome
                    tally.n_dropped += 1
                    drop(trial[0], index)
                    dropped(trial)  # searcher.tell(trial, None)
                    tally.idle += 1
                    if tally.idle >= self.max_idle:
                        tally.status = "stalled"
                    continue
                if problem.exhausted:  # the filter's proxy queries spent the budget
                    problem.record(ASK, trial.id, index)  # kept, never started
                    tally.status = "budget"
                    return
            worker = _heappop(free)
            fidelity = trial[2]  # trial.fidelity, without the property lookup (hot path)
            if fidelity is None and retrain:
                accuracy, end = start(index, trial[0], worker)
                full = True
            else:
                accuracy, end = problem.start_at_fidelity(index, fidelity, trial.id, worker)
                full = is_full(fidelity) if self.sss else fidelity in (None, self.full)
            tally.idle = 0
            _heappush(self.running, (end, self.started, worker, trial, accuracy, index, full))
            self.started += 1
            self._note_novelty(index if full else (index, fidelity), full)

    def _check_waiting(self) -> None:
        """ValueError when the searcher waits with no trial running (it would wait forever)."""
        if not self.running:
            raise ValueError(
                f"{self.searcher!r}.propose() returned WAIT with no trial running: "
                "nothing it waits for can arrive; propose a trial or return None"
            )

    def _note_novelty(self, key: int | tuple[int, Fidelity | None], full: bool) -> None:
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
            if full:
                self.n_full += 1
                if self.n_full >= self.n_present:
                    self.tally.status = "space-exhausted"

    def _complete_next(self) -> None:
        running, advance, free, tally, tell, recommend = self._done
        end, _, worker, trial, accuracy, index, full = _heappop(running)
        advance(end)
        _heappush(free, worker)
        if full:  # what a run returns and recommends: full evaluations only
            if accuracy > tally.seen.get(index, -math.inf):
                tally.seen[index] = accuracy
            if accuracy > tally.first_best[1]:
                tally.first_best = (index, accuracy)
        try:
            tell(trial, accuracy)
        except BudgetExhausted:  # a proxy query in tell after the budget was spent
            tally.status = tally.status or "budget"
        rec = recommend()
        if rec is not None and rec is not tally.recommended:  # the rest only on a change
            self._note_recommendation(rec)

    def _note_recommendation(self, rec: object) -> None:
        """Log ``rec``, the searcher's recommendation, as a ``recommend`` event if it
        changed; ValueError if it is not an architecture this run evaluated in full."""
        tally = self.tally
        if rec == tally.recommended:
            return
        space = self.problem.table.space
        index = index_of(rec) if type(rec) is Arch else -1
        if type(rec) is Cell and space is TSS:
            index = space.index_of(rec)
        if index not in tally.seen:
            raise ValueError(
                f"{self.searcher!r}.recommend() returned {rec!r}, which this run did not "
                "evaluate at full fidelity (or has not told yet); recommend an architecture "
                "evaluated at full fidelity, or None"
            )
        tally.recommended = rec
        self.problem.record(RECOMMEND, -1, index, tally.seen[index])


def run_search(
    searcher: Searcher,
    problem: Problem,
    *,
    seed: int | np.random.SeedSequence | None = None,
    filter: Filter | None = None,
    max_idle: int = DEFAULT_MAX_IDLE,
    max_repeats: int = DEFAULT_MAX_REPEATS,
    on_progress: Callable[[Problem, int], None] | None = None,
    workers: int = 1,
    spec: RunSpec | None = None,
) -> RunResult:
    """Run ``searcher`` (through ``filter``) on ``problem`` with ``workers`` simulated
    workers until a stop condition.

    The run's seed feeds streams 1 and 2 of :func:`seed_streams` to the searcher and the
    filter; it is given once, to :func:`make_problem`, which seeds the problem with stream
    0 and which run_search reads it from. ``seed`` is for a problem built with its own
    generator (or for older callers: it must then equal make_problem's). Raises ValueError
    before the run for bad arguments (a searcher or filter of the earlier interfaces:
    :func:`~nasfilter.searchers.base.validate_searcher`), and when the searcher proposes
    something that is not an :class:`~nasfilter.bench.spaces.sss.Arch` or the filter answers
    anything but True or False.
    ``on_progress(problem, n_distinct)`` is called every :data:`PROGRESS_EVERY` trials
    (``n_distinct``: architectures evaluated so far), for a progress display of a long
    run. ``spec``: the :class:`~nasfilter.runs.records.RunSpec` this run is of (what
    :func:`~nasfilter.runs.experiment.run_record` passes), recorded in the returned record,
    which is complete when made; None for a run outside an experiment.
    """
    searcher = validate_searcher(searcher)
    filt = None if filter is None else validate_filter(filter)
    _check_loop_arguments(problem, max_idle, max_repeats)
    k = check_workers(workers)
    _check_fresh(problem)
    run_seq, run_seed = _run_seed(problem, seed)
    children = run_seq.spawn(3)  # seed_streams(seed) 1 and 2
    proxy = ProxyHandle(problem)
    searcher.setup(SearchContext(_stream(children, 1), proxy))
    if filt is not None:
        filt.setup(SearchContext(_stream(children, 2), proxy))

    start = time.perf_counter()
    tally = _Loop(searcher, filt, problem, k, max_idle, max_repeats, on_progress).run()
    wall = time.perf_counter() - start
    events = problem.log.arrays()
    assert tally.status is not None
    info: dict[str, Any] = {
        "searcher_config": searcher.config(),
        "filter_config": {} if filt is None else filt.config(),
        "wall_seconds": wall,
    }
    if problem.n_unlogged:  # the trace left events out past Problem.trace_limit
        info["unlogged"] = problem.unlogged
    if problem.log.proxies:  # what the zerocost events' proxy codes stand for
        info["zerocost_proxies"] = list(problem.log.proxies)
    return RunRecord(spec, run_seed, tally.status, events, info, workers=k)
