"""The metered problem: the one door to costly information, with a simulated clock.

Every accuracy evaluation and every proxy (utilization) query passes through
:class:`Problem`. It charges the simulated clock, refuses queries once the budget is spent,
and records each query as an event. Test accuracy is never returned here: reporting code
reads it from the table after the run.

Evaluation semantics are NATS-Bench's ``simulate_train_eval(arch, dataset, hp='12')``
(docs/facts.md §2): the validation accuracy of one training seed drawn at random, costing
``12 x train-seconds-per-epoch + valid-seconds-per-epoch``.

:class:`Problem` checks its inputs and delegates: the clocks and the budget to
:class:`~nasfilter.sim.clock.SimClock`, answering and charging to
:class:`~nasfilter.sim.meter.Meter`,
and the event log with its retention policy to :class:`~nasfilter.sim.trace.Trace`; the event
schema is :mod:`nasfilter.sim.events`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from nasfilter.bench.fidelity import Fidelity, FidelityEvaluation, LearningCurves
from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.spaces.sss import ArchLike
from nasfilter.bench.table import BenchmarkTable
from nasfilter.sim.clock import Budget, BudgetExhausted, SimClock
from nasfilter.sim.events import (
    ASK,
    DROP,
    EVALUATE,
    EVENT_COLUMNS,
    EVENT_KINDS,
    PARTIAL,
    PROXY,
    RECOMMEND,
    TRACE_LIMIT,
    ZEROCOST,
    Event,
    EventKind,
    EventLog,
)
from nasfilter.sim.fidelity_meter import FidelityMeter
from nasfilter.sim.inputs_check import (
    check_indices,
    check_problem_inputs,
)
from nasfilter.sim.meter import Meter, ProxyReading
from nasfilter.sim.trace import UNLOGGED_FIELDS, Trace
from nasfilter.sim.zerocost_lane import ZeroCostLane
from nasfilter.zerocost.scorefile import ScoreFile

__all__ = [
    "ASK",
    "DEFAULT_PROXY_COST",
    "DROP",
    "EVALUATE",
    "EVENT_COLUMNS",
    "EVENT_KINDS",
    "PARTIAL",
    "PROXY",
    "RECOMMEND",
    "TRACE_LIMIT",
    "UNLOGGED_FIELDS",
    "ZEROCOST",
    "Budget",
    "BudgetExhausted",
    "Event",
    "EventLog",
    "Problem",
    "ProxyReading",
]

# Simulated seconds charged for one proxy query. The study (docs/facts.md §4) measured the
# utilization of all 32767 networks and then evaluated the 144-network frontier within
# 110000 s. The frontier costs about 144 x 100 s = 14400 s, so a proxy query may cost at most
# about (110000 - 14400) / 32768 = 2.9 s. 2 s is a conservative figure for timing one
# pre-built TensorRT engine (warm-up plus timed iterations) and leaves about a quarter of the
# budget (110000 - 32768 x 2 - 14400 = 30064 s).
DEFAULT_PROXY_COST = 2.0

_INSTANT = {EventKind.ASK.label: EventKind.ASK, EventKind.DROP.label: EventKind.DROP,
            EventKind.RECOMMEND.label: EventKind.RECOMMEND}  # fmt: skip


def _fast_index(arch: ArchLike, table: BenchmarkTable) -> int:
    """The index of ``arch`` in ``table``'s space, skipping validation for an in-range int."""
    space = table.space
    if type(arch) is int and 0 <= arch < space.size:
        return arch
    return space.index_of(arch)


class Problem:
    """A metered search problem over one benchmark table.

    Args:
        table: the benchmark records.
        rng: draws the training seed of each evaluation; give each run its own.
        budget: simulated seconds (and optionally evaluations) the run may spend.
        proxy: utilization and throughput per architecture, or None for no proxy.
        proxy_cost: simulated seconds charged per proxy query (>= 0).
        charge_repeats: when False, a repeated evaluation returns the first answer at no
            cost; by default it is charged again with a new seed, as in NATS-Bench.
        charge_repeat_proxy: when True, a repeated proxy query is charged again. By default
            it is free: the oracle caches its answer per architecture, so a searcher and a
            filter of one run asking about the same architecture pay for one measurement.
        trace_limit: events logged in full (default :data:`TRACE_LIMIT`). Past it, the log
            keeps only events that can change a run's metrics (:mod:`nasfilter.sim.trace`): the
            first evaluation of an architecture (and any repeat that may complete before
            it), an evaluation whose accuracy beats every evaluation completed when it
            starts, the first proxy query of an architecture, and every ask and recommend
            event. The rest (repeated evaluations and proxy queries, drops) are charged and
            counted (:attr:`unlogged`) but not kept, so a huge budget cannot fill the
            memory. Final metrics and curves are those of the full trace, except the
            ``n_evaluations`` curve, which counts logged evaluations only.
        curves: learning curves for :meth:`evaluate_at` (an evaluation at a chosen epoch
            and setting), such as ``nasfilter.bench.fidelity.BenchmarkCurves(folder, dataset)``;
            None takes the table's own (the surrogate's SYNTHETIC curves) when it needs them.
        charging: how evaluations at a fidelity are charged
        (``nasfilter.bench.fidelity.CHARGINGS``):
            ``"retrain"`` (NATS-Bench's: from scratch each time) or ``"resume"`` (from the
            last epoch this run trained for that architecture and setting, with its seed;
            see :mod:`nasfilter.sim.fidelity_meter`).
        zerocost: zero-cost scores of the table's space and dataset
            (:class:`~nasfilter.zerocost.scorefile.ScoreFile`), or None for the shipped ones,
            loaded at the first :meth:`query_zerocost_many` (:mod:`nasfilter.sim.zerocost_lane`).
    """

    def __init__(
        self,
        table: BenchmarkTable,
        rng: np.random.Generator,
        budget: Budget,
        proxy: ProxyTable | None = None,
        proxy_cost: float = DEFAULT_PROXY_COST,
        charge_repeats: bool = True,
        charge_repeat_proxy: bool = False,
        trace_limit: int = TRACE_LIMIT,
        curves: LearningCurves | None = None,
        charging: str = "retrain",
        zerocost: ScoreFile | None = None,
    ) -> None:
        check_problem_inputs(table, rng, budget, proxy, proxy_cost, trace_limit)
        self.table = table
        self.budget = budget
        seed_seq = getattr(rng.bit_generator, "seed_seq", None)
        self._seed_sequence = seed_seq if isinstance(seed_seq, np.random.SeedSequence) else None
        self._clock = SimClock(budget)
        self._trace = Trace(trace_limit)
        self._meter = Meter(
            table, rng, self._clock, self._trace, proxy, float(proxy_cost), charge_repeats,
            charge_repeat_proxy,
        )  # fmt: skip
        self._fidelity = FidelityMeter(
            table, rng, self._clock, self._trace, self._meter, curves, charging
        )
        self._zerocost = ZeroCostLane(
            table.space.name, table.dataset.name, self._clock, zerocost, charge_repeat_proxy,
            self._trace,
        )

    # ------------------------------------------------------------------ settings
    @property
    def proxy_table(self) -> ProxyTable | None:
        """The proxy readings, or None."""
        return self._meter.proxy

    @property
    def proxy_cost(self) -> float:
        """Simulated seconds charged per proxy query."""
        return self._meter.proxy_cost

    @property
    def charge_repeats(self) -> bool:
        """Whether a repeated evaluation is charged again (with a new seed)."""
        return self._meter.charge_repeats

    @property
    def charge_repeat_proxy(self) -> bool:
        """Whether a repeated proxy query is charged again."""
        return self._meter.charge_repeat_proxy

    @property
    def seed_sequence(self) -> np.random.SeedSequence | None:
        """The seed sequence of the problem's generator (what
        :func:`~nasfilter.runs.runner.make_problem` seeded it with), or None."""
        return self._seed_sequence

    # ------------------------------------------------------------------ state
    @property
    def clock(self) -> float:
        """The simulated wall clock, seconds. With one worker it equals
        :attr:`worker_seconds` whenever no evaluation is running."""
        return self._clock.now

    @property
    def worker_seconds(self) -> float:
        """Simulated seconds charged so far (evaluations and proxy queries)."""
        return self._clock.spent

    @property
    def trace_limit(self) -> int:
        """Events logged in full (see the class)."""
        return self._trace.limit

    @property
    def evaluation_seconds(self) -> float:
        return self._meter.evaluation_seconds

    @property
    def proxy_seconds(self) -> float:
        return self._meter.proxy_seconds

    @property
    def n_evaluations(self) -> int:
        return self._meter.n_evaluations

    @property
    def n_proxy(self) -> int:
        """Proxy queries so far (repeats included)."""
        return self._meter.n_proxy

    @property
    def n_unlogged(self) -> int:
        """Events left out of the log past ``trace_limit`` (see :attr:`unlogged`)."""
        return self._trace.n_unlogged

    @property
    def unlogged(self) -> dict[str, float]:
        """What the log left out past ``trace_limit``, by :data:`UNLOGGED_FIELDS`: counts of
        evaluations, proxy queries and drops, the seconds the first two charged, and the
        wall-clock second the last of them ended. All 0 for every run that stays under the
        limit."""
        return dict(self._trace.unlogged)

    @property
    def overshoot(self) -> float:
        """Worker-seconds charged past the budget (0 if within, or without that limit)."""
        return self._clock.overshoot

    @property
    def remaining(self) -> float:
        """Seconds left before a limit of the budget is reached (>= 0), in its own clock."""
        return self._clock.remaining

    @property
    def exhausted(self) -> bool:
        """True once no further query may start."""
        return self._clock.exhausted(self._meter.n_evaluations)

    @property
    def log(self) -> EventLog:
        """Every event so far, in order."""
        return self._trace.log

    @property
    def events(self) -> list[Event]:
        """Every event so far, in order, as Event tuples (a copy)."""
        return self._trace.log.events()

    def _check_open(self, what: str) -> None:
        self._clock.check_open(what)

    def advance(self, time: float) -> None:
        """Move the wall clock forward to ``time`` (simulated seconds); never backward.

        Raises ValueError for an infinite or NaN ``time``, which no evaluation ends at."""
        self._clock.advance(time)

    def record_drop(self, trial: int, index: int) -> None:
        """Log that a filter dropped ``trial`` (no cost); past ``trace_limit`` only count it."""
        clock = self._clock
        self._trace.drop(trial, index, clock.spent, clock.now)

    def record(self, kind: str, trial: int, index: int, value: float = math.nan) -> None:
        """Log an ask, drop or recommend event at the current wall clock (no cost);
        ``value`` is the recommended architecture's accuracy (percent) for recommend."""
        code = _INSTANT.get(kind) if isinstance(kind, str) else None
        if code is None:
            raise ValueError(f"record() logs ask, drop or recommend events, got {kind!r}")
        clock = self._clock
        self._trace.instant(code, trial, index, value, clock.spent, clock.now)

    # ---------------------------------------------------------------- queries
    def evaluate(self, arch: ArchLike) -> float:
        """Train-and-validate ``arch`` at hp 12 with one random seed; return accuracy (percent).

        One worker: the evaluation starts now and the wall clock waits for it. Charges
        ``12 x train + valid`` seconds per epoch. Raises BudgetExhausted when no time (or no
        evaluation) remains, and MissingArchitectureError for an absent table row.
        """
        accuracy, end = self._meter.evaluate(_fast_index(arch, self.table), -1, 0)
        self._clock.advance(end)
        return accuracy

    def start_evaluation(
        self, arch: ArchLike, trial: int = -1, worker: int = 0
    ) -> tuple[float, float]:
        """Start evaluating ``arch`` on ``worker`` at the current wall clock.

        Returns (validation accuracy in percent, wall-clock second it completes). The
        worker-seconds are charged now; the wall clock does not move (see :meth:`advance`).
        The accuracy must not reach the searcher before that time.
        """
        if type(arch) is not int or not 0 <= arch < self.table.space.size:  # a plain index
            arch = self.table.space.index_of(arch)
        return self._meter.evaluate(arch, trial, worker)

    def loop_calls(
        self,
    ) -> tuple[Callable[[int, int, int], tuple[float, float]], Callable[[float], None]]:
        """The calls a run's loop makes per trial, to bind once per run: ``start(index, trial,
        worker)``, :meth:`start_evaluation` of a valid plain index without its argument check
        (the loop passes the index of an Arch), and ``advance(time)``, :meth:`advance`."""
        return self._meter.evaluate, self._clock.advance

    def query_proxy(self, arch: ArchLike) -> ProxyReading:
        """Utilization and throughput of ``arch`` from the proxy, charging ``proxy_cost``
        (nothing for an architecture already queried in this run, unless
        ``charge_repeat_proxy``)."""
        meter = self._meter
        if meter.proxy is None:
            raise ValueError("this problem has no proxy: pass proxy=ProxyTable(...) to Problem")
        if type(arch) is not int or not 0 <= arch < self.table.space.size:  # a plain index
            arch = self.table.space.index_of(arch)
        return meter.proxy_one(arch)

    def query_proxy_many(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Query the proxy for each index in order, stopping when the budget runs out.

        Returns (indices answered, shape (k,), with their readings) as
        ``(answered, np.stack([utilization, throughput], axis=1))`` of shapes (k,), (k, 2).
        Charged as :meth:`query_proxy` in a loop, but vectorized.
        """
        if self.proxy_table is None:
            raise ValueError("this problem has no proxy: pass proxy=ProxyTable(...) to Problem")
        return self._meter.proxies(check_indices(indices, self.table.space.size))

    # ---------------------------------------------------------------- zero-cost
    @property
    def zerocost(self) -> ZeroCostLane:
        """The zero-cost lane (:mod:`nasfilter.sim.zerocost_lane`): scores, costs, counts."""
        return self._zerocost

    def query_zerocost_many(self, proxy: str, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Zero-cost scores of ``proxy`` for each index in order until the budget runs out,
        each first query charged :meth:`ZeroCostLane.cost` (modelled); (answered (k,),
        scores float64 (k,), NaN where the proxy is undefined)."""
        idx = check_indices(indices, self.table.space.size)
        return self._zerocost.query_many(proxy, idx)

    # ---------------------------------------------------------------- fidelity
    @property
    def charging(self) -> str:
        """How evaluations at a fidelity are charged: ``"retrain"`` or ``"resume"``
        (:mod:`nasfilter.sim.fidelity_meter`)."""
        return self._fidelity.charging

    @property
    def curves(self) -> LearningCurves:
        """The learning curves behind :meth:`evaluate_at`: those given to the constructor,
        else the table's own (:func:`nasfilter.bench.fidelity.curves_for`; NoCurvesError if
        none)."""
        return self._fidelity.curves

    @property
    def fidelity_evaluations(self) -> list[FidelityEvaluation]:
        """Every evaluation below the full fidelity so far, in order (a copy). They are
        charged to both clocks and logged as ``partial`` events, but are not in
        :attr:`n_evaluations` nor :attr:`evaluation_seconds`, which count full evaluations
        only."""
        return list(self._fidelity.log)

    @property
    def fidelity_seconds(self) -> float:
        """Simulated seconds charged by evaluations below the full fidelity."""
        return self._fidelity.seconds

    def evaluate_at(self, arch: ArchLike, iepoch: int, hp: str = "12") -> float:
        """Train ``arch`` from scratch for ``iepoch + 1`` epochs of setting ``hp`` with one
        random seed and validate; return the accuracy at that epoch (percent). One worker:
        the wall clock waits for it. Charged as NATS-Bench's ``simulate_train_eval(arch,
        dataset, iepoch, hp)``: training seconds summed over epochs 0..iepoch plus the
        validation seconds per epoch (:mod:`nasfilter.bench.fidelity`)."""
        accuracy, end = self.start_evaluation_at(arch, iepoch, hp)
        self.advance(end)
        return accuracy

    def start_evaluation_at(
        self, arch: ArchLike, iepoch: int, hp: str = "12", trial: int = -1, worker: int = 0
    ) -> tuple[float, float]:
        """Start :meth:`evaluate_at` on ``worker`` now; return (accuracy, wall-clock second
        it completes), as :meth:`start_evaluation`. The seed is drawn from the run's rng
        among the architecture's seeds at ``hp``. Logged as a ``partial`` event, whatever
        the epoch (:meth:`start_at_fidelity` routes the full fidelity to
        :meth:`start_evaluation`); ``max_evaluations`` does not cap these."""
        return self._fidelity.start_at_epoch(
            _fast_index(arch, self.table), iepoch, hp, trial, worker
        )

    def start_at_fidelity(
        self, arch: ArchLike, fidelity: Fidelity | None, trial: int = -1, worker: int = 0
    ) -> tuple[float, float]:
        """Start evaluating ``arch`` at ``fidelity`` on ``worker`` now (the runner's door);
        return (accuracy in percent, wall-clock second it completes).

        The full fidelity (None or hp 12, 12 epochs) is a full evaluation (an ``evaluate``
        event, counted in :attr:`n_evaluations`); any other is a ``partial`` event. How it
        is charged depends on :attr:`charging` (:mod:`nasfilter.sim.fidelity_meter`): with
        ``"retrain"`` the full one is :meth:`start_evaluation` (no curves needed)."""
        return self._fidelity.start(_fast_index(arch, self.table), fidelity, trial, worker)
