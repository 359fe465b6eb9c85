"""A run's trace: its :class:`~nasfilter.sim.events.EventLog` and what it keeps past a limit.

Under ``limit`` events every event is logged. Past it the trace keeps only events that can
change a run's metrics: the first evaluation of an architecture (and any repeat that may
complete before it), an evaluation whose accuracy beats every evaluation completed when it
starts, the first proxy query of an architecture, and every ask and recommend event. The
rest (repeated evaluations and proxy queries, drops) are counted in :attr:`Trace.unlogged`
but not kept, so that a huge budget cannot fill the memory.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from nasfilter.sim.events import ROW_SIZE, EventKind, EventLog, pack_event

# What a trace past its limit leaves out: counts, the simulated seconds charged, and the
# wall-clock second the last one left out ended
UNLOGGED_FIELDS = ("evaluate", "proxy", "drop", "evaluation_seconds", "proxy_seconds", "end")

_EVALUATE, _PROXY, _DROP = EventKind.EVALUATE, EventKind.PROXY, EventKind.DROP
_PARTIAL = EventKind.PARTIAL
_heappop, _heappush = heapq.heappop, heapq.heappush
_NAN = math.nan


class Trace:
    """The event log of one run with its retention policy past ``limit`` events."""

    __slots__ = ("_best_done", "_buf", "_completed_best", "_first_end", "_full", "_limit", "log",
                 "unlogged")  # fmt: skip

    def __init__(self, limit: int) -> None:
        self.log = EventLog()
        self._limit = limit
        # the log's bytes, which evaluation and proxy events are packed onto directly (the
        # hot path), and their length at the limit
        self._buf = self.log.buffer
        self._full = limit * ROW_SIZE
        self.unlogged: dict[str, float] = dict.fromkeys(UNLOGGED_FIELDS, 0.0)
        self._first_end: dict[int, float] = {}  # wall-clock end of each index's first eval
        # (end, -accuracy) of logged evaluations that may raise _best_done when complete
        self._completed_best: list[tuple[float, float]] = []
        self._best_done = -math.inf  # best accuracy of evaluations completed so far

    @property
    def limit(self) -> int:
        """Events logged in full (see the module docstring)."""
        return self._limit

    @property
    def n_unlogged(self) -> int:
        """Events left out (evaluations, proxy queries and drops)."""
        u = self.unlogged
        return int(u["evaluate"] + u["proxy"] + u["drop"])

    def evaluation(
        self,
        trial: int,
        index: int,
        accuracy: float,
        seed: int,
        cost: float,
        spent: float,
        start: float,
        worker: int,
    ) -> None:
        """An evaluation charged ``cost`` s at wall clock ``start``, ``spent`` worker-seconds
        after it; logged, or counted if it cannot change a metric past the limit."""
        end = start + cost
        first_end = self._first_end.setdefault(index, end)
        completed = self._completed_best
        while completed and completed[0][0] <= start:
            self._best_done = max(self._best_done, -_heappop(completed)[1])
        buf = self._buf
        if len(buf) < self._full or first_end >= end or accuracy > self._best_done:
            buf += pack_event(_EVALUATE, trial, index, accuracy, _NAN, _NAN, seed, cost, spent,
                              start, end, worker, -1, -1, -1)  # fmt: skip
            if accuracy > self._best_done:
                _heappush(completed, (end, -accuracy))
            return
        u = self.unlogged
        u["evaluate"] += 1
        u["evaluation_seconds"] += cost
        u["end"] = max(u["end"], end)

    def partial(
        self,
        trial: int,
        index: int,
        accuracy: float,
        seed: int,
        cost: float,
        spent: float,
        start: float,
        worker: int,
        hp: int,
        epochs: int,
    ) -> None:
        """An evaluation at ``epochs`` of setting ``hp`` (below the full fidelity), always
        logged: it is what a multi-fidelity searcher decides on."""
        self.log.append(_PARTIAL, trial, index, accuracy, _NAN, _NAN, seed, cost, spent,
                        start, start + cost, worker, hp, epochs)  # fmt: skip

    def proxy(
        self, index: int, utilization: float, throughput: float, cost: float, spent: float,
        start: float, first: bool,
    ) -> None:  # fmt: skip
        """A proxy query from wall clock ``start`` to ``start + cost``; ``first``: the run's
        first query of ``index`` (always logged)."""
        if first or len(self._buf) < self._full:
            self._buf += pack_event(_PROXY, -1, index, _NAN, utilization, throughput, -1, cost,
                                    spent, start, start + cost, -1, -1, -1, -1)  # fmt: skip
        else:
            u = self.unlogged
            u["proxy"] += 1
            u["proxy_seconds"] += cost
            u["end"] = max(u["end"], start + cost)

    def proxies(self, columns: dict[str, np.ndarray], first: np.ndarray) -> None:
        """Proxy queries in order, as arrays of shape (k,) (``index``, ``utilization``,
        ``throughput``, ``cost``, ``worker_seconds``, ``start``, ``end``); ``first`` marks
        each architecture's first query of the run (always logged)."""
        k = len(first)
        keep = first | (self.log.n + np.arange(k) < self.limit)
        self.log.extend(_PROXY, {name: arr[keep] for name, arr in columns.items()})
        n_left_out = k - int(keep.sum())
        if n_left_out:
            u = self.unlogged
            u["proxy"] += n_left_out
            u["proxy_seconds"] += float(columns["cost"][~keep].sum())
            u["end"] = max(u["end"], float(columns["end"][~keep].max()))

    def zerocost(self, proxy: str, columns: dict[str, np.ndarray]) -> None:
        """Zero-cost queries of ``proxy`` in order, as arrays of shape (k,) (``index``,
        ``cost``, ``worker_seconds``, ``start``, ``end``), their ``proxy`` column its code in
        the log (:meth:`~nasfilter.sim.events.EventLog.proxy_code`); always logged (at most
        one charged query per architecture and proxy unless repeats are charged)."""
        code = self.log.proxy_code(proxy)
        self.log.extend(
            EventKind.ZEROCOST, columns | {"proxy": np.full(len(columns["index"]), code)}
        )

    def drop(self, trial: int, index: int, spent: float, now: float) -> None:
        """A filter dropped ``trial`` (no cost); past the limit it is only counted."""
        buf = self._buf
        if len(buf) < self._full:  # EventLog.append_instant, packed here (the hot path)
            buf += pack_event(_DROP, trial, index, _NAN, _NAN, _NAN, -1, 0.0, spent, now, now,
                              -1, -1, -1, -1)  # fmt: skip
        else:
            self.unlogged["drop"] += 1

    def instant(
        self, kind: EventKind, trial: int, index: int, accuracy: float, spent: float, now: float
    ) -> None:
        """An ask, drop or recommend event, always logged."""
        self.log.append_instant(kind, trial, index, accuracy, spent, now)
