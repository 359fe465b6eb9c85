"""The meter of a run: what each query answers and costs, charged to the clock and traced.

One meter holds every charging rule, memo and counter: :meth:`Meter.evaluate` for an
accuracy evaluation (a training seed drawn from the run's generator, or the first answer
again when repeats are free), and the proxy queries, one (:meth:`Meter.proxy_one`) or many
in order (:meth:`Meter.proxies`). The two proxy lanes apply the same rule (a query is
charged ``proxy_cost`` when it is the run's first of its architecture or repeats are
charged, starts only while both clocks are below their limits, and is traced by
:meth:`nasfilter.sim.trace.Trace.proxy` / :meth:`~nasfilter.sim.trace.Trace.proxies`, the same
retention rule); the bulk lane is its vectorized form (costs summed by ``cumsum``), which
``tests/sim/test_problem.py`` checks against a loop of single queries.
"""

from __future__ import annotations

import math
import weakref
from typing import NamedTuple

import numpy as np

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.table import BenchmarkTable
from nasfilter.sim.clock import BudgetExhausted, SimClock
from nasfilter.sim.trace import Trace

_SEED_BLOCK = 1024  # seed slots drawn per call of the generator


class _Rows(NamedTuple):
    """A table's columns as Python lists: indexing one is several times cheaper than
    indexing an array, on the hot path of every evaluation."""

    valid_acc: list[list[float]]  # (32768, S), percent
    eval_cost: list[float]  # (32768,), s
    present: list[bool]  # (32768,)


# Built once per table (its columns are read-only) and kept while the table lives.
_ROWS: weakref.WeakKeyDictionary[BenchmarkTable, _Rows] = weakref.WeakKeyDictionary()


def _rows(table: BenchmarkTable) -> _Rows:
    rows = _ROWS.get(table)
    if rows is None:
        rows = _ROWS[table] = _Rows(
            table.valid_acc.tolist(), table.eval_cost.tolist(), table.present.tolist()
        )
    return rows


# A proxy table's (utilization, throughput) columns as lists, built once per table.
_READINGS: weakref.WeakKeyDictionary[ProxyTable, tuple[list[float], list[float]]] = (
    weakref.WeakKeyDictionary()
)


def _readings(proxy: ProxyTable) -> tuple[list[float], list[float]]:
    lists = _READINGS.get(proxy)
    if lists is None:
        lists = _READINGS[proxy] = (proxy.utilization.tolist(), proxy.throughput.tolist())
    return lists


class ProxyReading(NamedTuple):
    utilization: float  # fraction of peak FLOP/s
    throughput: float  # images per second


class Meter:
    """Answers and charges the queries of one run (see the module docstring).

    Args:
        table: the benchmark records.
        rng: draws the training seeds.
        clock: the run's clocks, charged here.
        trace: where each query is recorded.
        proxy: the proxy readings, or None.
        proxy_cost: seconds per charged proxy query.
        charge_repeats: a repeated evaluation is charged again with a new seed (else it
            answers the first accuracy at no cost).
        charge_repeat_proxy: a repeated proxy query is charged again (else it is free).
    """

    def __init__(
        self,
        table: BenchmarkTable,
        rng: np.random.Generator,
        clock: SimClock,
        trace: Trace,
        proxy: ProxyTable | None,
        proxy_cost: float,
        charge_repeats: bool,
        charge_repeat_proxy: bool,
    ) -> None:
        self.table, self.clock, self.trace, self.proxy = table, clock, trace, proxy
        self.proxy_cost = proxy_cost
        self.charge_repeats, self.charge_repeat_proxy = charge_repeats, charge_repeat_proxy
        self._rng = rng
        self._seeds = table.seeds
        # training-seed slots drawn uniformly, _SEED_BLOCK per call of rng, used last first
        self._draws: list[int] = []
        self._valid_acc = table.valid_acc
        self._valid_rows, self._eval_cost, self._present = _rows(table)
        self._proxy_lists: tuple[list[float], list[float]] | None = None  # when first queried
        self._eval_memo: dict[int, float] = {}  # first accuracy answered per index
        # 1 where the proxy was queried, per row; a bytearray indexes as fast as a set
        # looks up, and numpy reads and writes it in place for bulk queries
        self._proxy_seen = bytearray(len(table.valid_acc))
        self.evaluation_seconds = 0.0
        self.proxy_seconds = 0.0
        self.n_evaluations = 0
        self.n_proxy = 0

    # ------------------------------------------------------------------ evaluations
    def evaluate(self, index: int, trial: int, worker: int) -> tuple[float, float]:
        """Start evaluating row ``index`` at the wall clock; charge it now and return
        (accuracy in percent, wall-clock second it completes)."""
        clock = self.clock
        if clock.spent >= clock.limit or clock.now >= clock.wall_limit:
            clock.check_open("evaluate")  # raises BudgetExhausted
        cap = clock.budget.max_evaluations
        if cap is not None and self.n_evaluations >= cap:
            raise BudgetExhausted(f"cannot evaluate: the cap of {cap} evaluations is reached")
        if not self._present[index]:
            self.table.require(index)  # raises MissingArchitectureError naming the row
        memo = self._eval_memo
        if not self.charge_repeats and index in memo:
            accuracy, cost, seed = memo[index], 0.0, -1
        else:
            draws = self._draws
            slot = draws.pop() if draws else self._draw_block()
            accuracy = self._valid_rows[index][slot]
            if accuracy != accuracy:  # NaN: this seed's run is missing
                slot = self._redraw(index)
                accuracy = self._valid_rows[index][slot]
            cost = self._eval_cost[index]
            seed = self._seeds[slot]
            if index not in memo:
                memo[index] = accuracy
        return accuracy, self.charge_evaluation(index, accuracy, cost, seed, trial, worker)

    def charge_evaluation(
        self, index: int, accuracy: float, cost: float, seed: int, trial: int, worker: int
    ) -> float:
        """Charge one full evaluation of row ``index`` starting at the wall clock and trace
        it; return the wall-clock second it completes. The one charging path of full
        evaluations (:meth:`evaluate` and the resumed ones of
        :class:`~nasfilter.sim.fidelity_meter.FidelityMeter`)."""
        clock = self.clock
        clock.spent += cost
        self.evaluation_seconds += cost
        self.n_evaluations += 1
        start = clock.now
        self.trace.evaluation(trial, index, accuracy, seed, cost, clock.spent, start, worker)
        return start + cost

    def check_evaluation(self, index: int) -> None:
        """BudgetExhausted if no evaluation may start now (a spent clock, or the cap of
        evaluations); MissingArchitectureError if row ``index`` is not in the table."""
        clock = self.clock
        clock.check_open("evaluate")
        cap = clock.budget.max_evaluations
        if cap is not None and self.n_evaluations >= cap:
            raise BudgetExhausted(f"cannot evaluate: the cap of {cap} evaluations is reached")
        if not self._present[index]:
            self.table.require(index)

    def note_first(self, index: int, accuracy: float) -> None:
        """Remember ``accuracy`` as row ``index``'s first answer (the repeat memo)."""
        self._eval_memo.setdefault(index, accuracy)

    def _draw_block(self) -> int:
        """Refill the seed-slot draws (a block from the generator); return the first."""
        self._draws = self._rng.integers(0, len(self._seeds), size=_SEED_BLOCK)[::-1].tolist()
        return self._draws.pop()

    def _redraw(self, index: int) -> int:
        """A seed slot drawn uniformly among those with an accuracy for ``index``: some
        archives lack a seed's run, and NATS-Bench then draws among the seeds present."""
        present = np.flatnonzero(~np.isnan(self._valid_acc[index]))
        if present.size == 0:
            raise LookupError(
                f"architecture index {index} has no validation accuracy for any seed "
                f"in table {self.table.label!r}"
            )
        return int(present[self._rng.integers(present.size)])

    # ------------------------------------------------------------------ proxy queries
    def _proxy_table(self) -> ProxyTable:
        if self.proxy is None:
            raise ValueError("this problem has no proxy: pass proxy=ProxyTable(...) to Problem")
        return self.proxy

    def proxy_one(self, index: int) -> ProxyReading:
        """The batch of one :meth:`proxies` would answer for ``index``, in scalars: charged
        ``proxy_cost`` unless already queried (and repeats are free), serially on the
        wall clock."""
        proxy = self.proxy
        if proxy is None:
            proxy = self._proxy_table()  # raises ValueError: no proxy
        clock = self.clock
        if clock.spent >= clock.limit or clock.now >= clock.wall_limit:
            clock.check_open("query the proxy")  # raises BudgetExhausted
        utilization, throughput = self._proxy_lists or self._proxy_readings(proxy)
        thr = throughput[index]
        if not math.isfinite(thr):
            proxy.require(index)  # raises LookupError naming the architecture
        util = utilization[index]
        first = not self._proxy_seen[index]
        cost = self.proxy_cost if first or self.charge_repeat_proxy else 0.0
        self._proxy_seen[index] = 1
        start = clock.now
        clock.spent += cost
        clock.now += cost
        self.proxy_seconds += cost
        self.n_proxy += 1
        self.trace.proxy(index, util, thr, cost, clock.spent, start, first)
        return tuple.__new__(ProxyReading, (util, thr))  # skips the generated __new__

    def _proxy_readings(self, proxy: ProxyTable) -> tuple[list[float], list[float]]:
        self._proxy_lists = _readings(proxy)
        return self._proxy_lists

    def proxies(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Query valid indices ``idx`` (int64, shape (n,)) in order, serially, stopping
        where the budget runs out; return (indices answered (k,), readings (k, 2):
        utilization, throughput)."""
        proxy = self._proxy_table()
        clock = self.clock
        clock.check_open("query the proxy")
        measured = proxy.measured[idx]
        if not measured.all():
            proxy.require(int(idx[~measured][0]))
        first = np.zeros(idx.shape, dtype=bool)
        first[np.unique(idx, return_index=True)[1]] = True
        seen = np.frombuffer(self._proxy_seen, dtype=np.bool_)  # a view: no copy
        first &= ~seen[idx]
        charged = first | self.charge_repeat_proxy
        costs = np.where(charged, self.proxy_cost, 0.0)
        with np.errstate(over="ignore"):  # absurd costs (1e308 s) overflow to inf: spent
            total = np.cumsum(costs)
            spent = clock.spent + total
            ends = clock.now + total
        k = clock.allowed(spent - costs, ends - costs)
        idx, costs, spent, ends, first = idx[:k], costs[:k], spent[:k], ends[:k], first[:k]
        util = proxy.utilization[idx]
        thr = proxy.throughput[idx]
        columns = {"index": idx, "utilization": util, "throughput": thr, "cost": costs,
                   "worker_seconds": spent, "start": ends - costs, "end": ends}  # fmt: skip
        self.trace.proxies(columns, first)
        self.n_proxy += k
        if k:
            clock.spent = float(spent[-1])
            clock.now = float(ends[-1])
        self.proxy_seconds += float(costs.sum())
        seen[idx] = True
        return idx, np.stack([util, thr], axis=1)
