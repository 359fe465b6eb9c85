"""One run: a searcher, optionally a filter, and a metered problem -> a :class:`RunResult`.

The loop is the data flow of the project::

    arch = searcher.ask()
    kept = filter.select([arch], proxy)        # may query the proxy, never accuracy
    if kept: searcher.tell(arch, problem.evaluate(arch))
    else:    searcher.tell(arch, None)

It stops with a recorded ``status``:

- ``"budget"``: the budget was spent (the last evaluation may overshoot it, as in NATS);
- ``"searcher-done"``: ``ask`` returned None;
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
function of its spec and seed, whatever process runs it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from nasfilter.filters.base import Filter
from nasfilter.metered import ProxyHandle, SearchContext
from nasfilter.problem import DEFAULT_PROXY_COST, EVALUATE, Budget, BudgetExhausted, Problem
from nasfilter.proxy import ProxyTable
from nasfilter.searchers.base import Searcher
from nasfilter.space import Arch, index_of
from nasfilter.table import BenchmarkTable

DEFAULT_MAX_IDLE = 10_000  # consecutive proposals without an evaluation before "stalled"
DEFAULT_MAX_REPEATS = 10_000  # consecutive evaluations of known architectures: "converged"
PROGRESS_EVERY = 4096  # proposals between two calls of run_search's on_progress

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
) -> Problem:
    """The metered problem of the run with ``seed`` (its generator is stream 0)."""
    b = budget if isinstance(budget, Budget) else Budget(budget)
    return Problem(table, seed_streams(seed).problem, b, proxy=proxy, proxy_cost=proxy_cost)


@dataclass
class RunResult:
    """What one run did.

    Attributes:
        searcher, filter: names; ``searcher_config``, ``filter_config``: their parameters.
        status: why the run stopped, one of :data:`STATUSES`.
        events: the problem's event columns (see :meth:`nasfilter.problem.EventLog.arrays`),
            arrays of shape (n_events,).
        clock: simulated seconds spent (accuracy and proxy), may exceed the budget by the
            last evaluation; ``evaluation_seconds`` and ``proxy_seconds`` split it.
        n_asked: proposals; n_dropped: proposals the filter dropped.
        n_unlogged: queries charged but left out of ``events`` past the problem's
            ``trace_limit`` (repeats that change no metric); 0 for every ordinary run.
        best_index: the architecture the searcher returns (:meth:`Searcher.recommend`), by
            default the evaluated one with the highest validation accuracy seen (the first on
            ties); -1 if none. ``best_valid_acc``: the highest validation accuracy (percent)
            seen for it.
        wall_seconds: real seconds the loop took (not part of any result).
    """

    searcher: str
    filter: str
    status: str
    events: dict[str, np.ndarray]
    budget: float
    clock: float
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

    @property
    def evaluated(self) -> np.ndarray:
        """Indices of the evaluations in order, with repeats, int64 (n_evaluations,)."""
        return self.events["index"][self.events["kind"] == EVALUATE]


def run_search(
    searcher: Searcher,
    problem: Problem,
    *,
    filter: Filter | None = None,
    seed: int | np.random.SeedSequence = 0,
    max_idle: int = DEFAULT_MAX_IDLE,
    max_repeats: int = DEFAULT_MAX_REPEATS,
    on_progress: Callable[[Problem, int], None] | None = None,
) -> RunResult:
    """Run ``searcher`` (through ``filter``) on ``problem`` until a stop condition.

    ``seed`` feeds streams 1 and 2 of :func:`seed_streams` to the searcher and the filter;
    build the problem with :func:`make_problem` and the same seed for a fully seeded run.
    Raises ValueError before the run for bad arguments, and when the searcher proposes
    something that is not an :class:`~nasfilter.space.Arch` or the filter returns
    anything but a sub-list of its candidates. ``on_progress(problem, n_distinct)`` is
    called every :data:`PROGRESS_EVERY` proposals (``n_distinct``: architectures
    evaluated so far), for a progress display of a long run.
    """
    if not isinstance(searcher, Searcher):
        raise ValueError(f"searcher must be a Searcher instance, got {searcher!r}")
    if filter is not None and not isinstance(filter, Filter):
        raise ValueError(f"filter must be a Filter instance or None, got {filter!r}")
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a Problem, got {problem!r}")
    if isinstance(max_idle, bool) or not isinstance(max_idle, int) or max_idle < 1:
        raise ValueError(f"max_idle must be an integer >= 1, got {max_idle!r}")
    if isinstance(max_repeats, bool) or not isinstance(max_repeats, int) or max_repeats < 1:
        raise ValueError(f"max_repeats must be an integer >= 1, got {max_repeats!r}")
    streams = seed_streams(seed)
    proxy = ProxyHandle(problem)
    searcher.setup(SearchContext(streams.searcher, proxy))
    if filter is not None:
        filter.setup(SearchContext(streams.filter, proxy))

    ask, tell, evaluate = searcher.ask, searcher.tell, problem.evaluate
    select = None if filter is None else filter.select
    n_asked = n_dropped = idle = repeats = 0
    n_present = problem.table.n_present
    best_index, best_acc = -1, -math.inf
    seen: dict[int, float] = {}  # best validation accuracy per evaluated index
    status = "budget"
    start = time.perf_counter()
    try:
        while not problem.exhausted:
            arch = ask()
            if arch is None:
                status = "searcher-done"
                break
            if type(arch) is not Arch:
                raise ValueError(f"{searcher!r}.ask() returned {arch!r}; expected an Arch or None")
            n_asked += 1
            if on_progress is not None and n_asked % PROGRESS_EVERY == 0:
                on_progress(problem, len(seen))
            if select is not None:
                kept = select([arch], proxy)
                if kept and (len(kept) != 1 or kept[0] != arch):
                    raise ValueError(
                        f"{filter!r}.select([{arch}]) returned {kept!r}; expected a sub-list "
                        "of its candidates"
                    )
                if not kept:
                    n_dropped += 1
                    tell(arch, None)
                    idle += 1
                    if idle >= max_idle:
                        status = "stalled"
                        break
                    continue
                if problem.exhausted:  # the filter's proxy queries spent the budget
                    break
            index = index_of(arch)
            accuracy = evaluate(index)
            idle = 0
            known = seen.get(index)
            repeats = 0 if known is None else repeats + 1
            if known is None or accuracy > known:
                seen[index] = accuracy
            if accuracy > best_acc:
                best_index, best_acc = index, accuracy
            tell(arch, accuracy)
            if known is None and len(seen) >= n_present:
                status = "space-exhausted"
                break
            if repeats >= max_repeats:
                status = "converged"
                break
    except BudgetExhausted:
        status = "budget"  # a proxy query inside ask/select/tell found the budget spent
    wall = time.perf_counter() - start
    recommended = searcher.recommend()
    if recommended is not None:
        rec_index = index_of(recommended)
        if rec_index not in seen:
            raise ValueError(
                f"{searcher!r}.recommend() returned {recommended}, which this run did not "
                "evaluate; recommend an evaluated architecture or None"
            )
        best_index, best_acc = rec_index, seen[rec_index]
    events = problem.log.arrays()
    return RunResult(
        searcher=searcher.name,
        filter="none" if filter is None else filter.name,
        status=status,
        events=events,
        budget=problem.budget.seconds,
        clock=problem.clock,
        evaluation_seconds=problem.evaluation_seconds,
        proxy_seconds=problem.proxy_seconds,
        n_evaluations=problem.n_evaluations,
        n_proxy=problem.n_proxy,
        n_asked=n_asked,
        n_dropped=n_dropped,
        best_index=best_index,
        best_valid_acc=best_acc if best_index >= 0 else math.nan,
        wall_seconds=wall,
        searcher_config=searcher.config(),
        filter_config={} if filter is None else filter.config(),
        n_unlogged=problem.n_unlogged,
    )
