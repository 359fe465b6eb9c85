"""The metered problem: the one door to costly information, with a simulated clock.

Every accuracy evaluation and every proxy (utilization) query passes through
:class:`Problem`. It charges the simulated clock, refuses queries once the budget is spent,
and records each query as an event. Test accuracy is never returned here: reporting code
reads it from the table after the run.

Evaluation semantics are NATS-Bench's ``simulate_train_eval(arch, dataset, hp='12')``
(FACTS §2): the validation accuracy of one training seed drawn at random, costing
``12 x train-seconds-per-epoch + valid-seconds-per-epoch``.
"""

from __future__ import annotations

import array
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from nasfilter.proxy import ProxyTable
from nasfilter.space import N_ARCHS, ArchLike, as_arch
from nasfilter.table import BenchmarkTable

# Simulated seconds charged for one proxy query. The study (FACTS §4) measured the
# utilization of all 32767 networks and then evaluated the 144-network frontier within
# 110000 s. The frontier costs about 144 x 100 s = 14400 s, so a proxy query may cost at most
# about (110000 - 14400) / 32768 = 2.9 s. 2 s is a conservative figure for timing one
# pre-built TensorRT engine (warm-up plus timed iterations) and leaves about a quarter of the
# budget (110000 - 32768 x 2 - 14400 = 30064 s).
DEFAULT_PROXY_COST = 2.0

EVALUATE = "evaluate"
PROXY = "proxy"


class BudgetExhausted(RuntimeError):
    """A query was asked for after the budget was spent."""


@dataclass(frozen=True)
class Budget:
    """The search budget: simulated seconds, and optionally a cap on accuracy evaluations."""

    seconds: float
    max_evaluations: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.seconds, bool) or not isinstance(
            self.seconds, (int, float, np.integer, np.floating)
        ):
            raise ValueError(f"budget seconds must be a number, got {self.seconds!r}")
        if not math.isfinite(self.seconds) or self.seconds <= 0:
            raise ValueError(f"budget seconds must be finite and > 0, got {self.seconds!r}")
        if self.max_evaluations is not None and (
            isinstance(self.max_evaluations, bool)
            or not isinstance(self.max_evaluations, (int, np.integer))
            or self.max_evaluations < 1
        ):
            raise ValueError(
                f"max_evaluations must be a positive integer or None, got {self.max_evaluations!r}"
            )
        # numpy scalars become Python numbers, so a Budget always serialises as plain JSON
        for name in ("seconds", "max_evaluations"):
            value = getattr(self, name)
            if isinstance(value, np.generic):
                object.__setattr__(self, name, value.item())


class Event(NamedTuple):
    """One query. ``value`` is validation accuracy (percent) for an evaluation and
    utilization (a fraction) for a proxy query; ``throughput`` (images/s) is NaN for
    evaluations; ``seed`` is the training seed of an evaluation, -1 for a proxy query;
    ``cost`` and ``clock`` (the total after this query) are simulated seconds."""

    step: int
    kind: str
    arch: int  # NATS index
    value: float
    throughput: float
    seed: int
    cost: float
    clock: float


_COLUMNS = ("kind", "index", "value", "throughput", "seed", "cost", "clock")
# array.array type codes of the columns: 8 bytes a number (1 for the kind), not a Python
# object each, so a long run's trace costs about 41 bytes an event.
_TYPECODES = {
    "kind": "B",
    "index": "q",
    "value": "d",
    "throughput": "d",
    "seed": "q",
    "cost": "d",
    "clock": "d",
}
_KINDS = (EVALUATE, PROXY)  # code -> kind
_KIND_CODE = {EVALUATE: 0, PROXY: 1}

# Events a run's trace keeps in full. Every run of a sensible budget stays far below it (the
# study's runs log under 35,000). Past it, only events that can change a result are kept
# (see Problem); the others are counted in Problem.n_unlogged. 250,000 events are 10 MB.
TRACE_LIMIT = 250_000


class EventLog:
    """Append-only, column-wise record of queries (cheap to append, cheap to export)."""

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
    ) -> None:
        c = self._cols
        c["kind"].append(_KIND_CODE[kind])
        c["index"].append(index)
        c["value"].append(value)
        c["throughput"].append(throughput)
        c["seed"].append(seed)
        c["cost"].append(cost)
        c["clock"].append(clock)

    def extend(
        self,
        kind: str,
        index: np.ndarray,
        value: np.ndarray,
        throughput: np.ndarray,
        seed: np.ndarray,
        cost: np.ndarray,
        clock: np.ndarray,
    ) -> None:
        """Append len(index) events of one kind from arrays of equal shape (k,)."""
        c = self._cols
        c["kind"].frombytes(np.full(len(index), _KIND_CODE[kind], dtype=np.uint8).tobytes())
        for name, arr in (
            ("index", index),
            ("value", value),
            ("throughput", throughput),
            ("seed", seed),
            ("cost", cost),
            ("clock", clock),
        ):
            dtype = np.int64 if _TYPECODES[name] == "q" else np.float64
            c[name].frombytes(np.ascontiguousarray(arr, dtype=dtype).tobytes())

    def arrays(self) -> dict[str, np.ndarray]:
        """Columns as arrays of shape (n,): step, kind (str), index, value, throughput, seed,
        cost (s), clock (s)."""
        c = self._cols
        out: dict[str, np.ndarray] = {
            "step": np.arange(len(self), dtype=np.int64),
            "kind": np.asarray(_KINDS)[np.frombuffer(c["kind"], dtype=np.uint8)]
            if len(self)
            else np.asarray([], dtype=str),
        }
        for name in _COLUMNS[1:]:
            dtype = np.int64 if _TYPECODES[name] == "q" else np.float64
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
            architecture, an evaluation whose accuracy beats every earlier one, and the
            first proxy query of an architecture. The rest (repeats) are charged and counted
            (:attr:`n_unlogged`) but not kept, so a huge budget cannot fill the memory.
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
        self._clock = 0.0
        self._eval_seconds = 0.0
        self._proxy_seconds = 0.0
        self._n_evals = 0
        self._n_proxy = 0
        self._n_unlogged = 0
        self._best_acc = -math.inf
        self.trace_limit = trace_limit
        self._log = EventLog()
        self._eval_memo: dict[int, float] = {}
        self._proxy_memo: set[int] = set()

    # ------------------------------------------------------------------ state
    @property
    def clock(self) -> float:
        """Simulated seconds spent so far."""
        return self._clock

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
        """Queries charged but not kept in the log (past ``trace_limit``)."""
        return self._n_unlogged

    @property
    def overshoot(self) -> float:
        """Seconds spent past the budget by the last query (0 if within)."""
        return max(0.0, self._clock - self.budget.seconds)

    @property
    def exhausted(self) -> bool:
        """True once no further query may start."""
        cap = self.budget.max_evaluations
        return self._clock >= self.budget.seconds or (cap is not None and self._n_evals >= cap)

    @property
    def log(self) -> EventLog:
        """Every query so far, in order."""
        return self._log

    @property
    def events(self) -> list[Event]:
        """Every query so far, in order, as Event tuples (a copy)."""
        return self._log.events()

    def _check_open(self, what: str) -> None:
        if self._clock >= self.budget.seconds:
            raise BudgetExhausted(
                f"cannot {what}: the budget of {self.budget.seconds:g} s is spent "
                f"(clock {self._clock:.1f} s)"
            )

    # ---------------------------------------------------------------- queries
    def _next_seed_slot(self) -> int:
        if not self._seed_draws:
            draws = self._rng.integers(0, len(self._seeds), size=_SEED_BLOCK)
            self._seed_draws = draws[::-1].tolist()
        return self._seed_draws.pop()

    def evaluate(self, arch: ArchLike) -> float:
        """Train-and-validate ``arch`` at hp 12 with one random seed; return accuracy (percent).

        Charges ``12 x train + valid`` seconds per epoch. Raises BudgetExhausted when no time
        (or no evaluation) remains, and MissingArchitectureError for an absent table row.
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
        self._clock += cost
        self._eval_seconds += cost
        self._n_evals += 1
        if new or accuracy > self._best_acc or len(self._log) < self.trace_limit:
            self._log.append(EVALUATE, index, accuracy, math.nan, seed, cost, self._clock)
        else:
            self._n_unlogged += 1
        self._best_acc = max(self._best_acc, accuracy)
        return accuracy

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
        self._clock += cost
        self._proxy_seconds += cost
        self._n_proxy += 1
        if new or len(self._log) < self.trace_limit:
            self._log.append(PROXY, index, util, thr, -1, cost, self._clock)
        else:
            self._n_unlogged += 1
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
            clocks = self._clock + np.cumsum(costs)
        # A query may start while the clock before it is below the budget.
        before = clocks - costs
        k = int(np.searchsorted(before, self.budget.seconds, side="left"))
        idx, costs, clocks, first = idx[:k], costs[:k], clocks[:k], first[:k]
        util = self.proxy_table.utilization[idx]
        thr = self.proxy_table.throughput[idx]
        keep = first | (len(self._log) + np.arange(k) < self.trace_limit)
        n_keep = int(keep.sum())
        self._log.extend(
            PROXY, idx[keep], util[keep], thr[keep], np.full(n_keep, -1), costs[keep], clocks[keep]
        )
        self._n_proxy += k
        self._n_unlogged += k - n_keep
        spent = float(costs.sum())
        if k:
            self._clock = float(clocks[-1])
        self._proxy_seconds += spent
        self._proxy_memo.update(idx.tolist())
        return idx, np.stack([util, thr], axis=1)
