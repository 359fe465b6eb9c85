"""The metered problem: the one door to costly information, with a simulated clock.

Every accuracy evaluation and every proxy (utilization) query passes through
:class:`Problem`. It charges the simulated clock, refuses queries once the budget is spent,
and records each query as an event. Test accuracy is never returned here: reporting code
reads it from the table after the run.

Evaluation semantics are NATS-Bench's ``simulate_train_eval(arch, dataset, hp='12')``
(docs/facts.md §2): the validation accuracy of one training seed drawn at random, costing
``12 x train-seconds-per-epoch + valid-seconds-per-epoch``.
"""

from __future__ import annotations

import array
import heapq
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from nasfilter.fidelity import (
    CHARGINGS,
    FULL_FIDELITY,
    Fidelity,
    FidelityEvaluation,
    LearningCurves,
    check_fidelity,
    check_iepoch,
    curves_for,
    fidelity_code,
    is_full,
)
from nasfilter.proxy import ProxyTable
from nasfilter.space import N_ARCHS, ArchLike, as_arch
from nasfilter.table import BenchmarkTable

# Simulated seconds charged for one proxy query. The study (docs/facts.md §4) measured the
# utilization of all 32767 networks and then evaluated the 144-network frontier within
# 110000 s. The frontier costs about 144 x 100 s = 14400 s, so a proxy query may cost at most
# about (110000 - 14400) / 32768 = 2.9 s. 2 s is a conservative figure for timing one
# pre-built TensorRT engine (warm-up plus timed iterations) and leaves about a quarter of the
# budget (110000 - 32768 x 2 - 14400 = 30064 s).
DEFAULT_PROXY_COST = 2.0

EVALUATE = "evaluate"
PROXY = "proxy"
ASK = "ask"  # a trial the run asked for and never dropped nor started (the budget ran out)
DROP = "drop"  # a filter dropped a trial
RECOMMEND = "recommend"  # the searcher's recommendation changed
PARTIAL = "partial"  # an evaluation below the full fidelity (Problem.start_evaluation_at)
EVENT_KINDS = (EVALUATE, PROXY, ASK, DROP, RECOMMEND, PARTIAL)
# What a trace past Problem.trace_limit leaves out: counts, the simulated seconds charged,
# and the wall-clock second the last one left out ended
UNLOGGED_FIELDS = ("evaluate", "proxy", "drop", "evaluation_seconds", "proxy_seconds", "end")


class BudgetExhausted(RuntimeError):
    """A query was asked for after the budget was spent."""


def _check_seconds(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be finite and > 0, got {value!r}")


@dataclass(frozen=True)
class Budget:
    """The search budget, in either clock (or both; the first spent ends the run).

    Attributes:
        seconds: worker-seconds: the total simulated seconds charged (evaluations and proxy
            queries), whatever the number of workers. None: no such limit.
        max_evaluations: a cap on accuracy evaluations, or None.
        wall_seconds: simulated wall-clock seconds (with K workers, evaluations overlap),
            or None: no such limit.

    No query starts once a limit is reached; one started before may end past it.
    """

    seconds: float | None
    max_evaluations: int | None = None
    wall_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.seconds is None and self.wall_seconds is None:
            raise ValueError("a budget needs seconds (worker-seconds) or wall_seconds")
        if self.seconds is not None:
            _check_seconds(self.seconds, "budget seconds")
        if self.wall_seconds is not None:
            _check_seconds(self.wall_seconds, "budget wall_seconds")
        if self.max_evaluations is not None and (
            isinstance(self.max_evaluations, bool)
            or not isinstance(self.max_evaluations, (int, np.integer))
            or self.max_evaluations < 1
        ):
            raise ValueError(
                f"max_evaluations must be a positive integer or None, got {self.max_evaluations!r}"
            )
        # numpy scalars become Python numbers, so a Budget always serialises as plain JSON
        for name in ("seconds", "max_evaluations", "wall_seconds"):
            value = getattr(self, name)
            if isinstance(value, np.generic):
                object.__setattr__(self, name, value.item())

    @property
    def horizon(self) -> float:
        """The simulated time axis of this budget's curves: wall_seconds if given, else
        seconds (with one worker the two clocks agree)."""
        value = self.wall_seconds if self.wall_seconds is not None else self.seconds
        assert value is not None
        return float(value)

    def describe(self) -> str:
        parts = []
        if self.seconds is not None:
            parts.append(f"{self.seconds:g} worker-seconds")
        if self.wall_seconds is not None:
            parts.append(f"{self.wall_seconds:g} wall-clock seconds")
        if self.max_evaluations is not None:
            parts.append(f"{self.max_evaluations} evaluations")
        return " or ".join(parts)


class Event(NamedTuple):
    """One event of a run (see :data:`EVENT_COLUMNS` for units)."""

    step: int
    kind: str
    trial: int
    arch: int  # NATS index
    value: float
    throughput: float
    seed: int
    cost: float
    clock: float
    start: float
    end: float
    worker: int


EVENT_COLUMNS = (
    "kind",  # one of EVENT_KINDS
    "trial",  # trial id (ask, drop, evaluate), -1 otherwise
    "index",  # NATS architecture index
    "value",  # evaluate, partial: validation accuracy (%); proxy: utilization (fraction);
    #           recommend: validation accuracy seen (%); else NaN
    "throughput",  # proxy: images/s; partial: its fidelity, int(hp) * 1000 + epochs
    #                (nasfilter.fidelity.fidelity_code); else NaN
    "seed",  # evaluate, partial: training seed; else -1
    "cost",  # simulated seconds charged (0 for ask, drop, recommend)
    "clock",  # worker-seconds charged in the run after this event
    "start",  # simulated wall-clock seconds when the event began
    "end",  # simulated wall-clock seconds when its result was available
    "worker",  # evaluate, partial: the simulated worker (0..K-1); else -1
)
_COLUMNS = EVENT_COLUMNS
_INT_COLUMNS = frozenset({"trial", "index", "seed", "worker"})
# array.array type codes of the columns: 8 bytes a number (1 for the kind), not a Python
# object each, so a long run's trace costs about 73 bytes an event.
_TYPECODES = {
    name: "B" if name == "kind" else "q" if name in _INT_COLUMNS else "d" for name in _COLUMNS
}
_KINDS = EVENT_KINDS  # code -> kind
_KIND_CODE = {kind: code for code, kind in enumerate(EVENT_KINDS)}

# Events a run's trace keeps in full. Every run of a sensible budget stays far below it (the
# study's runs log under 35,000). Past it, only events that can change a result are kept
# (see Problem); the others are counted in Problem.n_unlogged. 250,000 events are 18 MB.
TRACE_LIMIT = 250_000


class EventLog:
    """Append-only, column-wise record of a run's events (cheap to append and export)."""

    def __init__(self) -> None:
        self._cols: dict[str, array.array[Any]] = {
            name: array.array(code) for name, code in _TYPECODES.items()
        }

    def __len__(self) -> int:
        return len(self._cols["index"])

    def append(
        self,
        kind: str,
        index: int,
        value: float,
        throughput: float,
        seed: int,
        cost: float,
        clock: float,
        *,
        trial: int = -1,
        start: float | None = None,
        end: float | None = None,
        worker: int = -1,
    ) -> None:
        c = self._cols
        c["kind"].append(_KIND_CODE[kind])
        c["trial"].append(trial)
        c["index"].append(index)
        c["value"].append(value)
        c["throughput"].append(throughput)
        c["seed"].append(seed)
        c["cost"].append(cost)
        c["clock"].append(clock)
        c["start"].append(clock - cost if start is None else start)
        c["end"].append(clock if end is None else end)
        c["worker"].append(worker)

    def append_instant(
        self, kind: str, trial: int, index: int, value: float, clock: float, now: float
    ) -> None:
        """Append an event that costs nothing and takes no time (ask, drop, recommend)."""
        c = self._cols
        c["kind"].append(_KIND_CODE[kind])
        c["trial"].append(trial)
        c["index"].append(index)
        c["value"].append(value)
        c["throughput"].append(math.nan)
        c["seed"].append(-1)
        c["cost"].append(0.0)
        c["clock"].append(clock)
        c["start"].append(now)
        c["end"].append(now)
        c["worker"].append(-1)

    def extend(self, kind: str, columns: dict[str, np.ndarray]) -> None:
        """Append events of one kind from arrays of equal shape (k,), one per column
        except ``kind``; a column left out is filled with -1 (ints) or NaN."""
        n = len(columns["index"])
        c = self._cols
        c["kind"].frombytes(np.full(n, _KIND_CODE[kind], dtype=np.uint8).tobytes())
        for name in _COLUMNS[1:]:
            integer = name in _INT_COLUMNS
            arr = columns.get(name)
            if arr is None:
                arr = np.full(n, -1 if integer else math.nan)
            dtype = np.int64 if integer else np.float64
            c[name].frombytes(np.ascontiguousarray(arr, dtype=dtype).tobytes())

    def arrays(self) -> dict[str, np.ndarray]:
        """Columns as arrays of shape (n,): ``step`` and :data:`EVENT_COLUMNS`."""
        c = self._cols
        out: dict[str, np.ndarray] = {
            "step": np.arange(len(self), dtype=np.int64),
            "kind": np.asarray(_KINDS)[np.frombuffer(c["kind"], dtype=np.uint8)]
            if len(self)
            else np.asarray([], dtype=str),
        }
        for name in _COLUMNS[1:]:
            dtype = np.int64 if name in _INT_COLUMNS else np.float64
            out[name] = np.frombuffer(c[name], dtype=dtype).copy()
        return out

    def events(self) -> list[Event]:
        c = self._cols
        kinds = [_KINDS[k] for k in c["kind"]]
        return [
            Event(i, *row)
            for i, row in enumerate(zip(kinds, *(c[name] for name in _COLUMNS[1:]), strict=True))
        ]


class ProxyReading(NamedTuple):
    utilization: float  # fraction of peak FLOP/s
    throughput: float  # images per second


_SEED_BLOCK = 1024


def _fast_index(arch: ArchLike) -> int:
    """The index of ``arch``, skipping validation work for an in-range plain int."""
    if type(arch) is int and 0 <= arch < N_ARCHS:
        return arch
    return as_arch(arch).index


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
            keeps only events that can change a run's metrics: the first evaluation of an
            architecture (and any repeat that may complete before it), an evaluation whose
            accuracy beats every evaluation completed when it starts, the first proxy query
            of an architecture, and every ask and recommend event. The rest (repeated
            evaluations and proxy queries, drops) are charged and counted
            (:attr:`unlogged`) but not kept, so a huge budget cannot fill the memory. Final
            metrics and curves are those of the full trace, except the ``n_evaluations``
            curve, which counts logged evaluations only.
        curves: learning curves for :meth:`evaluate_at` (an evaluation at a chosen epoch
            and setting), such as ``nasfilter.fidelity.BenchmarkCurves(folder, dataset)``;
            None takes the table's own (the surrogate's SYNTHETIC curves) when it needs them.
        charging: how evaluations at a fidelity are charged (``nasfilter.fidelity.CHARGINGS``):
            ``"retrain"`` (NATS-Bench's: from scratch each time) or ``"resume"`` (from the
            last epoch this run trained for that architecture and setting, with its seed;
            see :meth:`start_at_fidelity`).
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
    ) -> None:
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if not isinstance(table, BenchmarkTable):
            raise ValueError(f"table must be a BenchmarkTable, got {type(table).__name__}")
        if not isinstance(budget, Budget):
            raise ValueError(f"budget must be a Budget, got {budget!r}")
        if proxy is not None and not isinstance(proxy, ProxyTable):
            raise ValueError(
                f"proxy must be a ProxyTable (see nasfilter.oracle.proxy_table) or None, "
                f"got {type(proxy).__name__}"
            )
        if not (
            isinstance(proxy_cost, (int, float, np.integer, np.floating))
            and not isinstance(proxy_cost, bool)
            and math.isfinite(proxy_cost)
            and proxy_cost >= 0
        ):
            raise ValueError(
                f"proxy_cost must be a finite number of seconds >= 0, got {proxy_cost!r}"
            )
        if isinstance(trace_limit, bool) or not isinstance(trace_limit, int) or trace_limit < 0:
            raise ValueError(f"trace_limit must be an integer >= 0, got {trace_limit!r}")
        cost = table.eval_cost
        present_cost = cost[table.present]
        if not np.all(np.isfinite(present_cost)):
            bad = int(np.flatnonzero(table.present)[~np.isfinite(present_cost)][0])
            raise ValueError(
                f"table {table.label!r} has NaN or infinite evaluation costs (first at "
                f"architecture index {bad}: train {table.train_time[bad]!r} s/epoch, valid "
                f"{table.valid_time[bad]!r} s/epoch)"
            )
        if np.any(present_cost < 0):
            bad = int(np.flatnonzero(table.present)[present_cost < 0][0])
            raise ValueError(
                f"table {table.label!r} has negative evaluation costs (first at architecture "
                f"index {bad}: {cost[bad]!r} s); per-epoch times must be >= 0"
            )
        self.table = table
        self.budget = budget
        self.proxy_table = proxy
        self.proxy_cost = float(proxy_cost)
        self.charge_repeats = charge_repeats
        self.charge_repeat_proxy = charge_repeat_proxy
        self._rng = rng
        self._eval_cost = cost
        self._valid_acc = table.valid_acc
        self._present = table.present
        self._seeds = table.seeds
        self._seed_draws: list[int] = []
        self._spent = 0.0  # worker-seconds charged
        self._now = 0.0  # simulated wall clock
        self._eval_seconds = 0.0
        self._proxy_seconds = 0.0
        self._n_evals = 0
        self._n_proxy = 0
        # queries charged but left out of the log past trace_limit, and their seconds
        self._unlogged: dict[str, float] = dict.fromkeys(UNLOGGED_FIELDS, 0.0)
        self._first_end: dict[int, float] = {}  # wall-clock end of each index's first eval
        # (end, -accuracy) of logged evaluations that may raise _best_done when complete
        self._completed_best: list[tuple[float, float]] = []
        self._best_done = -math.inf  # best accuracy of evaluations completed so far
        self.trace_limit = trace_limit
        self._log = EventLog()
        self._eval_memo: dict[int, float] = {}
        self._proxy_memo: set[int] = set()
        self._init_fidelity(curves, charging)

    # ------------------------------------------------------------------ state
    @property
    def clock(self) -> float:
        """The simulated wall clock, seconds. With one worker it equals
        :attr:`worker_seconds` whenever no evaluation is running."""
        return self._now

    @property
    def worker_seconds(self) -> float:
        """Simulated seconds charged so far (evaluations and proxy queries)."""
        return self._spent

    @property
    def evaluation_seconds(self) -> float:
        return self._eval_seconds

    @property
    def proxy_seconds(self) -> float:
        return self._proxy_seconds

    @property
    def n_evaluations(self) -> int:
        return self._n_evals

    @property
    def n_proxy(self) -> int:
        """Proxy queries so far (repeats included)."""
        return self._n_proxy

    @property
    def n_unlogged(self) -> int:
        """Events left out of the log past ``trace_limit`` (see :attr:`unlogged`)."""
        u = self._unlogged
        return int(u["evaluate"] + u["proxy"] + u["drop"])

    @property
    def unlogged(self) -> dict[str, float]:
        """What the log left out past ``trace_limit``, by :data:`UNLOGGED_FIELDS`: counts of
        evaluations, proxy queries and drops, the seconds the first two charged, and the
        wall-clock second the last of them ended. All 0 for every run that stays under the
        limit."""
        return dict(self._unlogged)

    @property
    def overshoot(self) -> float:
        """Worker-seconds charged past the budget (0 if within, or without that limit)."""
        limit = self.budget.seconds
        return 0.0 if limit is None else max(0.0, self._spent - limit)

    @property
    def remaining(self) -> float:
        """Seconds left before a limit of the budget is reached (>= 0), in its own clock."""
        left = math.inf
        if self.budget.seconds is not None:
            left = self.budget.seconds - self._spent
        if self.budget.wall_seconds is not None:
            left = min(left, self.budget.wall_seconds - self._now)
        return max(0.0, left)

    def _time_spent(self) -> bool:
        b = self.budget
        return (b.seconds is not None and self._spent >= b.seconds) or (
            b.wall_seconds is not None and self._now >= b.wall_seconds
        )

    @property
    def exhausted(self) -> bool:
        """True once no further query may start."""
        cap = self.budget.max_evaluations
        return self._time_spent() or (cap is not None and self._n_evals >= cap)

    @property
    def log(self) -> EventLog:
        """Every event so far, in order."""
        return self._log

    @property
    def events(self) -> list[Event]:
        """Every event so far, in order, as Event tuples (a copy)."""
        return self._log.events()

    def _check_open(self, what: str) -> None:
        if self._time_spent():
            raise BudgetExhausted(
                f"cannot {what}: the budget of {self.budget.describe()} is spent "
                f"({self._spent:.1f} worker-seconds, wall clock {self._now:.1f} s)"
            )

    def advance(self, time: float) -> None:
        """Move the wall clock forward to ``time`` (simulated seconds); never backward.

        Raises ValueError for an infinite or NaN ``time``, which no evaluation ends at."""
        if time > self._now:
            if time == math.inf:
                self._refuse_time(time)
            self._now = float(time)
        elif time != time:  # NaN compares false with everything
            self._refuse_time(time)

    def _refuse_time(self, time: float) -> None:
        raise ValueError(
            f"advance({time!r}): the wall clock moves to a finite number of simulated "
            f"seconds (now {self._now:g}); pass the end time start_evaluation() returned"
        )

    def record_drop(self, trial: int, index: int) -> None:
        """Log that a filter dropped ``trial`` (no cost); past ``trace_limit`` only count it."""
        if len(self._log) < self.trace_limit:
            self._log.append_instant(DROP, trial, index, math.nan, self._spent, self._now)
        else:
            self._unlogged["drop"] += 1

    def record(self, kind: str, trial: int, index: int, value: float = math.nan) -> None:
        """Log an ask, drop or recommend event at the current wall clock (no cost)."""
        if kind not in (ASK, DROP, RECOMMEND):
            raise ValueError(f"record() logs ask, drop or recommend events, got {kind!r}")
        self._log.append_instant(kind, trial, index, value, self._spent, self._now)

    # ---------------------------------------------------------------- queries
    def _next_seed_slot(self) -> int:
        if not self._seed_draws:
            draws = self._rng.integers(0, len(self._seeds), size=_SEED_BLOCK)
            self._seed_draws = draws[::-1].tolist()
        return self._seed_draws.pop()

    def evaluate(self, arch: ArchLike) -> float:
        """Train-and-validate ``arch`` at hp 12 with one random seed; return accuracy (percent).

        One worker: the evaluation starts now and the wall clock waits for it. Charges
        ``12 x train + valid`` seconds per epoch. Raises BudgetExhausted when no time (or no
        evaluation) remains, and MissingArchitectureError for an absent table row.
        """
        accuracy, end = self.start_evaluation(arch)
        self.advance(end)
        return accuracy

    def start_evaluation(
        self, arch: ArchLike, trial: int = -1, worker: int = 0
    ) -> tuple[float, float]:
        """Start evaluating ``arch`` on ``worker`` at the current wall clock.

        Returns (validation accuracy in percent, wall-clock second it completes). The
        worker-seconds are charged now; the wall clock does not move (see :meth:`advance`).
        The accuracy must not reach the searcher before that time.
        """
        index = _fast_index(arch)
        self._check_open("evaluate")
        cap = self.budget.max_evaluations
        if cap is not None and self._n_evals >= cap:
            raise BudgetExhausted(f"cannot evaluate: the cap of {cap} evaluations is reached")
        if not self._present[index]:
            self.table.require(index)  # raises MissingArchitectureError naming the row
        if not self.charge_repeats and index in self._eval_memo:
            accuracy, cost, seed = self._eval_memo[index], 0.0, -1
        else:
            slot = self._next_seed_slot()
            accuracy = float(self._valid_acc[index, slot])
            if math.isnan(accuracy):
                # Some archives lack a seed's run for an architecture; NATS-Bench then draws
                # among the seeds present, so redraw uniformly among those.
                present = np.flatnonzero(~np.isnan(self._valid_acc[index]))
                if present.size == 0:
                    raise LookupError(
                        f"architecture index {index} has no validation accuracy for any seed "
                        f"in table {self.table.label!r}"
                    )
                slot = int(present[self._rng.integers(present.size)])
                accuracy = float(self._valid_acc[index, slot])
            cost = float(self._eval_cost[index])
            seed = self._seeds[slot]
        new = index not in self._eval_memo
        if new:
            self._eval_memo[index] = accuracy
            self._first_end[index] = self._now + cost
        self._spent += cost
        self._eval_seconds += cost
        self._n_evals += 1
        start = self._now
        end = start + cost
        # Past the trace limit keep what can change a metric: a first evaluation, or one
        # whose accuracy beats every evaluation completed before it could (see the class).
        completed = self._completed_best
        while completed and completed[0][0] <= start:
            self._best_done = max(self._best_done, -heapq.heappop(completed)[1])
        if (
            len(self._log) < self.trace_limit
            or self._first_end[index] >= end  # the first evaluation (or still running)
            or accuracy > self._best_done
        ):
            self._log.append(
                EVALUATE,
                index,
                accuracy,
                math.nan,
                seed,
                cost,
                self._spent,
                trial=trial,
                start=start,
                end=end,
                worker=worker,
            )
            if accuracy > self._best_done:
                heapq.heappush(completed, (end, -accuracy))
        else:
            self._unlogged["evaluate"] += 1
            self._unlogged["evaluation_seconds"] += cost
            self._unlogged["end"] = max(self._unlogged["end"], end)
        return accuracy, end

    def query_proxy(self, arch: ArchLike) -> ProxyReading:
        """Utilization and throughput of ``arch`` from the proxy, charging ``proxy_cost``
        (nothing for an architecture already queried in this run, unless
        ``charge_repeat_proxy``)."""
        if self.proxy_table is None:
            raise ValueError("this problem has no proxy: pass proxy=ProxyTable(...) to Problem")
        index = _fast_index(arch)
        self._check_open("query the proxy")
        self.proxy_table.require(index)
        cost = self.proxy_cost
        new = index not in self._proxy_memo
        if not self.charge_repeat_proxy and not new:
            cost = 0.0
        self._proxy_memo.add(index)
        util = float(self.proxy_table.utilization[index])
        thr = float(self.proxy_table.throughput[index])
        start = self._now
        self._spent += cost
        self._now += cost
        self._proxy_seconds += cost
        self._n_proxy += 1
        if new or len(self._log) < self.trace_limit:
            self._log.append(
                PROXY, index, util, thr, -1, cost, self._spent, start=start, end=self._now
            )
        else:
            self._unlogged["proxy"] += 1
            self._unlogged["proxy_seconds"] += cost
            self._unlogged["end"] = max(self._unlogged["end"], self._now)
        return ProxyReading(util, thr)

    def query_proxy_many(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Query the proxy for each index in order, stopping when the budget runs out.

        Returns (indices answered, shape (k,), with their readings) as
        ``(answered, np.stack([utilization, throughput], axis=1))`` of shapes (k,), (k, 2).
        Equivalent to calling :meth:`query_proxy` in a loop, but vectorized.
        """
        if self.proxy_table is None:
            raise ValueError("this problem has no proxy: pass proxy=ProxyTable(...) to Problem")
        raw = np.asarray(indices)
        if raw.ndim != 1:
            raise ValueError(f"indices must be one-dimensional, got shape {raw.shape}")
        if raw.size and (raw.dtype == np.bool_ or not np.issubdtype(raw.dtype, np.integer)):
            raise ValueError(f"indices must be integer architecture indices, got dtype {raw.dtype}")
        idx = raw.astype(np.int64, copy=False)
        if idx.size and (idx.min() < 0 or idx.max() >= N_ARCHS):
            bad = idx[(idx < 0) | (idx >= N_ARCHS)][:5].tolist()
            raise ValueError(f"architecture indices must be in [0, {N_ARCHS - 1}], got {bad}")
        self._check_open("query the proxy")
        measured = self.proxy_table.measured[idx]
        if not measured.all():
            self.proxy_table.require(int(idx[~measured][0]))
        first = np.zeros(idx.shape, dtype=bool)
        _, first_pos = np.unique(idx, return_index=True)
        first[first_pos] = True
        first &= ~np.isin(idx, np.fromiter(self._proxy_memo, dtype=np.int64))
        if self.charge_repeat_proxy:
            costs = np.full(idx.shape, self.proxy_cost)
        else:
            costs = np.where(first, self.proxy_cost, 0.0)
        with np.errstate(over="ignore"):  # absurd costs (1e308 s) overflow to inf: spent
            total = np.cumsum(costs)
            clocks = self._spent + total
            ends = self._now + total
        # A query may start while both clocks before it are below their limits.
        k = len(idx)
        if self.budget.seconds is not None:
            k = min(k, int(np.searchsorted(clocks - costs, self.budget.seconds, side="left")))
        if self.budget.wall_seconds is not None:
            k = min(k, int(np.searchsorted(ends - costs, self.budget.wall_seconds, side="left")))
        idx, costs, clocks, ends, first = idx[:k], costs[:k], clocks[:k], ends[:k], first[:k]
        util = self.proxy_table.utilization[idx]
        thr = self.proxy_table.throughput[idx]
        keep = first | (len(self._log) + np.arange(k) < self.trace_limit)
        self._log.extend(
            PROXY,
            {
                "index": idx[keep],
                "value": util[keep],
                "throughput": thr[keep],
                "cost": costs[keep],
                "clock": clocks[keep],
                "start": (ends - costs)[keep],
                "end": ends[keep],
            },
        )
        self._n_proxy += k
        n_left_out = k - int(keep.sum())
        if n_left_out:
            self._unlogged["proxy"] += n_left_out
            self._unlogged["proxy_seconds"] += float(costs[~keep].sum())
            self._unlogged["end"] = max(self._unlogged["end"], float(ends[~keep].max()))
        spent = float(costs.sum())
        if k:
            self._spent = float(clocks[-1])
            self._now = float(ends[-1])
        self._proxy_seconds += spent
        self._proxy_memo.update(idx.tolist())
        return idx, np.stack([util, thr], axis=1)

    # ---------------------------------------------------------------- fidelity
    def _init_fidelity(self, curves: LearningCurves | None, charging: str) -> None:
        if curves is not None:
            if not callable(getattr(curves, "evaluation", None)):
                raise ValueError(
                    "curves must be learning curves (nasfilter.fidelity.BenchmarkCurves or "
                    f"SyntheticCurves) or None, got {type(curves).__name__}"
                )
            if curves.dataset != self.table.dataset.name:
                raise ValueError(
                    f"curves are of dataset {curves.dataset!r} but the table is of "
                    f"{self.table.dataset.name!r}; pass the curves of the same dataset"
                )
        if charging not in CHARGINGS:
            raise ValueError(
                f"charging must be one of {list(CHARGINGS)} ('retrain': every evaluation "
                f"trains from scratch, as NATS-Bench; 'resume': a promotion pays only the "
                f"epochs beyond the last one trained), got {charging!r}"
            )
        self.charging = charging
        self._curves = curves
        self._fidelity_log: list[FidelityEvaluation] = []
        self._fidelity_seconds = 0.0
        # resume: (index, hp) -> (seed, last 0-based epoch trained) of this run
        self._trained: dict[tuple[int, str], tuple[int, int]] = {}

    @property
    def curves(self) -> LearningCurves:
        """The learning curves behind :meth:`evaluate_at`: those given to the constructor,
        else the table's own (:func:`nasfilter.fidelity.curves_for`; NoCurvesError if none)."""
        if self._curves is None:
            self._curves = curves_for(self.table)
        return self._curves

    @property
    def fidelity_evaluations(self) -> list[FidelityEvaluation]:
        """Every evaluation below the full fidelity so far, in order (a copy). They are
        charged to both clocks and logged as ``partial`` events, but are not in
        :attr:`n_evaluations` nor :attr:`evaluation_seconds`, which count full evaluations
        only."""
        return list(self._fidelity_log)

    @property
    def fidelity_seconds(self) -> float:
        """Simulated seconds charged by evaluations below the full fidelity."""
        return self._fidelity_seconds

    def evaluate_at(self, arch: ArchLike, iepoch: int, hp: str = "12") -> float:
        """Train ``arch`` from scratch for ``iepoch + 1`` epochs of setting ``hp`` with one
        random seed and validate; return the accuracy at that epoch (percent). One worker:
        the wall clock waits for it. Charged as NATS-Bench's ``simulate_train_eval(arch,
        dataset, iepoch, hp)``: training seconds summed over epochs 0..iepoch plus the
        validation seconds per epoch (:mod:`nasfilter.fidelity`)."""
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
        index = _fast_index(arch)
        curves = self.curves
        epoch = check_iepoch(curves, hp, iepoch)
        self._check_open("evaluate")
        if not self._present[index]:
            self.table.require(index)  # raises MissingArchitectureError naming the row
        seeds = curves.seeds(index, hp)
        seed = seeds[int(self._rng.integers(len(seeds)))]
        accuracy, cost = curves.evaluation(index, hp, seed, epoch)
        end = self._charge_partial(index, hp, epoch, seed, accuracy, cost, trial, worker)
        return accuracy, end

    def start_at_fidelity(
        self, arch: ArchLike, fidelity: Fidelity | None, trial: int = -1, worker: int = 0
    ) -> tuple[float, float]:
        """Start evaluating ``arch`` at ``fidelity`` on ``worker`` now (the runner's door);
        return (accuracy in percent, wall-clock second it completes).

        The full fidelity (None or hp 12, 12 epochs) is a full evaluation (an ``evaluate``
        event, counted in :attr:`n_evaluations`); any other is a ``partial`` event.
        ``charging="retrain"``: the full one is :meth:`start_evaluation` (no curves needed),
        the others :meth:`start_evaluation_at`. ``charging="resume"`` (needs curves): the
        first evaluation of (architecture, hp) in this run draws a seed and trains from
        scratch; a later one continues that seed (another seed is impossible by
        construction) and pays the training seconds of the epochs beyond the last one
        trained (the difference of the two from-scratch charges) plus one validation (the
        table's ``valid_time``); one at or below the last epoch trained pays only that
        validation."""
        if self.charging == "retrain":
            if fidelity is None or (type(fidelity) is Fidelity and is_full(fidelity)):
                return self.start_evaluation(arch, trial, worker)
            fid = check_fidelity(self.curves, fidelity)
            return self.start_evaluation_at(arch, fid.epochs - 1, fid.hp, trial, worker)
        return self._start_resumed(
            arch, FULL_FIDELITY if fidelity is None else fidelity, trial, worker
        )

    def _start_resumed(
        self, arch: ArchLike, fidelity: Fidelity, trial: int, worker: int
    ) -> tuple[float, float]:
        index = _fast_index(arch)
        curves = self.curves
        hp, epochs = (fid := check_fidelity(curves, fidelity)).hp, fidelity.epochs
        full = is_full(fid)
        self._check_open("evaluate")
        cap = self.budget.max_evaluations
        if full and cap is not None and self._n_evals >= cap:
            raise BudgetExhausted(f"cannot evaluate: the cap of {cap} evaluations is reached")
        if not self._present[index]:
            self.table.require(index)
        iepoch = epochs - 1
        done = self._trained.get((index, hp))
        if done is None:
            seeds = curves.seeds(index, hp)
            seed, last = seeds[int(self._rng.integers(len(seeds)))], -1
            accuracy, cost = curves.evaluation(index, hp, seed, iepoch)
        else:
            seed, last = done
            accuracy, cost = curves.evaluation(index, hp, seed, iepoch)
            valid = float(self.table.valid_time[index])
            if iepoch > last:
                cost = cost - curves.evaluation(index, hp, seed, last)[1] + valid
            else:
                cost = valid
        self._trained[index, hp] = (seed, max(last, iepoch))
        if full:
            return accuracy, self._charge_full(index, accuracy, cost, seed, trial, worker)
        end = self._charge_partial(index, hp, iepoch, seed, accuracy, cost, trial, worker)
        return accuracy, end

    def _charge_partial(
        self,
        index: int,
        hp: str,
        iepoch: int,
        seed: int,
        accuracy: float,
        cost: float,
        trial: int,
        worker: int,
    ) -> float:
        """Charge and log one partial evaluation starting now; return its end."""
        start = self._now
        self._spent += cost
        self._fidelity_seconds += cost
        end = start + cost
        self._fidelity_log.append(
            FidelityEvaluation(
                trial,
                index,
                hp,
                iepoch,
                seed,
                accuracy,
                cost,
                self._spent,
                start,
                end,
                worker,
            )
        )
        code = fidelity_code(Fidelity(iepoch + 1, hp))
        self._log.append(
            PARTIAL,
            index,
            accuracy,
            code,
            seed,
            cost,
            self._spent,
            trial=trial,
            start=start,
            end=end,
            worker=worker,
        )
        return end

    def _charge_full(
        self, index: int, accuracy: float, cost: float, seed: int, trial: int, worker: int
    ) -> float:
        """Charge and log one full evaluation of the resume path starting now; return its
        end. The same bookkeeping and trace-limit rule as :meth:`start_evaluation`."""
        if index not in self._eval_memo:
            self._eval_memo[index] = accuracy
            self._first_end[index] = self._now + cost
        self._spent += cost
        self._eval_seconds += cost
        self._n_evals += 1
        start = self._now
        end = start + cost
        completed = self._completed_best
        while completed and completed[0][0] <= start:
            self._best_done = max(self._best_done, -heapq.heappop(completed)[1])
        if (
            len(self._log) < self.trace_limit
            or self._first_end[index] >= end
            or accuracy > self._best_done
        ):
            self._log.append(
                EVALUATE,
                index,
                accuracy,
                math.nan,
                seed,
                cost,
                self._spent,
                trial=trial,
                start=start,
                end=end,
                worker=worker,
            )
            if accuracy > self._best_done:
                heapq.heappush(completed, (end, -accuracy))
        else:
            self._unlogged["evaluate"] += 1
            self._unlogged["evaluation_seconds"] += cost
            self._unlogged["end"] = max(self._unlogged["end"], end)
        return end
