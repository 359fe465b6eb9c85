"""How high can a run's HV ratio go within a budget? Two yardsticks for a searcher's figure.

A run is scored on the architectures it evaluated by a time t (:mod:`nasfilter.runs.results`
counts the evaluations that ended by t), and with one worker and no proxy charges their
evaluation costs sum to at most t. So no searcher, however well informed, beats:

- :func:`clairvoyant_ceiling`: the highest HV ratio of **any** set of architectures whose
  evaluation costs sum to at most the budget: the figure of a searcher that knew every
  scored accuracy and throughput and only paid to evaluate. It is a budgeted hypervolume
  problem, solved exactly on a grid of ``resolution`` seconds and returned as a bracket:
  ``lower`` is the HV ratio of a set that fits the budget with every cost rounded up to the
  grid (a set any run could evaluate, returned in ``chosen``), ``upper`` is the optimum
  with every cost rounded down (no set within the budget does better).

  Why it is exact: an architecture weakly dominated in (scored accuracy, throughput) by
  one that costs no more can be swapped for it without losing area or time, so an optimal
  set exists among the architectures non-dominated in (accuracy, throughput, cost), a
  few hundred of a table; within a set only its mutually non-dominated members add area,
  so the optimum is a chain sorted by throughput, and a dynamic programme over chain ends
  and grid budgets finds it (O(c^2 B) for c such architectures and B grid steps).

  With ``last_may_overrun=True`` a set fits when its costs **less the largest** sum to at
  most the budget: the rule of a run's final metrics (``nasfilter compare``), where an
  evaluation started before the budget ran out counts when it ends. Whatever the number of
  workers, a run charges each evaluation when it starts and starts none once the budget is
  spent, so every evaluation but the last started fits (the run needs them to sum to less
  than the budget, the ceiling to at most it: they differ only at exact equality). The
  programme then carries a second table, of chains in which one member is free (taking any
  member free is the same rule: the largest is the best one to take).

- :func:`signal_ceiling`: the HV ratio of the set a run would evaluate if it took a cheap
  signal for the accuracy and knew it for every architecture (the whole hp-12 table, say):
  the clairvoyant set of (signal, throughput) within the budget, scored on the accuracy.
  It is not a bound on searchers that read that signal (they may hedge, or learn the
  signal's errors); it shows what trusting the signal's ranking of the front is worth.

Both read the run's front reference (:class:`~nasfilter.runs.metrics.FrontReference`), so
the figures are on the scale every run of that table and proxy is scored on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nasfilter.checks import check_real
from nasfilter.runs.metrics import FrontReference

#: The largest dynamic-programme grid (chain ends x budget steps) computed before asking
#: for a coarser resolution: 8 bytes each, so about 0.8 GB.
MAX_GRID = 100_000_000


@dataclass(frozen=True)
class Ceiling:
    """The clairvoyant ceiling of one table and proxy at each of ``budgets``.

    Attributes:
        budgets: the budgets, worker-seconds, float64 (k,).
        lower: HV ratio of ``chosen[i]``, a set whose evaluation costs sum to at most
            ``budgets[i]`` (less the largest, with ``last_may_overrun``), float64 (k,).
        upper: no set of architectures within ``budgets[i]`` has a higher HV ratio,
            float64 (k,); ``upper - lower`` is the grid's rounding, 0 when every cost is a
            multiple of ``resolution``.
        chosen: the architecture indices of each budget's set, int64 arrays.
        resolution: the grid step, seconds.
        candidates: how many architectures are non-dominated in (accuracy, throughput,
            cost): the only ones an optimal set needs.
        lower_curve, upper_curve: the bracket at every grid budget b * resolution up to the
            largest budget, float64 (steps + 1,).
        last_may_overrun: whether a set's largest cost was left out of its sum.
    """

    budgets: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    chosen: tuple[np.ndarray, ...]
    resolution: float
    candidates: int
    lower_curve: np.ndarray
    upper_curve: np.ndarray
    last_may_overrun: bool = False

    def seconds_to_reach(self, target: float) -> tuple[float, float]:
        """(at least, at most): the evaluation seconds a set of architectures needs to reach
        an HV ratio of ``target`` (0 < target <= 1): no set costing less than the first
        reaches it, one costing the second does; inf where no set within the largest
        budget is known to (the second alone: the grid's rounding leaves it open)."""
        goal = check_real(target, "target (an HV ratio)", 0.0, 1.0, low_open=True) * (1 - 1e-12)
        found = []
        for curve in (self.upper_curve, self.lower_curve):
            hit = np.flatnonzero(curve >= goal)
            found.append(float(hit[0] * self.resolution) if len(hit) else math.inf)
        return found[0], found[1]


def _costs(reference: FrontReference, cost: object) -> np.ndarray:
    """``cost`` as float64 (n,), checked where the reference has both objectives."""
    arr = np.asarray(cost, dtype=np.float64)
    n = len(reference.points)
    if arr.shape != (n,):
        raise ValueError(f"cost must have shape ({n},), one per architecture, got {arr.shape}")
    bad = np.flatnonzero(reference.usable & ~(np.isfinite(arr) & (arr >= 0)))
    if len(bad):
        i = int(bad[0])
        raise ValueError(
            f"cost of architecture {i} is {float(arr[i])!r}; an evaluation cost is a finite number "
            f"of seconds >= 0 ({len(bad)} in all)"
        )
    return arr


def _budgets(budgets: Sequence[float]) -> np.ndarray:
    if len(budgets) == 0:
        raise ValueError("budgets is empty; pass at least one budget in seconds")
    return np.asarray([check_real(b, "a budget (s)", 0.0) for b in budgets])


def cost_efficient(points: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Positions of the rows of ``points`` (n, 2), both maximized, that no other row weakly
    dominates at a cost (n,) no higher; of exact repeats the first is kept. int64 (c,)."""
    order = np.lexsort((-points[:, 1], -points[:, 0], cost))
    keep: list[int] = []
    best_y = np.empty(0)  # the kept rows' objectives, in keep's order
    best_x = np.empty(0)
    for i in order.tolist():
        y, x = points[i]
        if np.any((best_y >= y) & (best_x >= x)):
            continue
        keep.append(i)
        best_y = np.append(best_y, y)
        best_x = np.append(best_x, x)
    return np.asarray(keep, dtype=np.int64)


def _chain_table(y: np.ndarray, x: np.ndarray, units: np.ndarray, steps: int) -> np.ndarray:
    """G (c, steps + 1): the largest hypervolume above the origin of a chain of the points
    (y, x) (c,), sorted by x ascending, that ends at point j and whose ``units`` sum to at
    most b; -inf where none fits."""
    c = len(x)
    table = np.full((c, steps + 1), -np.inf)
    for j in range(c):
        u = int(units[j])
        if u > steps:
            continue
        best = np.full(steps + 1 - u, x[j] * y[j])  # j alone
        before = np.flatnonzero((x[:j] < x[j]) & (y[:j] > y[j]))
        if len(before):
            grown = table[before, : steps + 1 - u] + ((x[j] - x[before]) * y[j])[:, None]
            best = np.maximum(best, grown.max(axis=0))
        table[j, u:] = best
    return table


def _free_table(
    y: np.ndarray, x: np.ndarray, units: np.ndarray, steps: int, paid: np.ndarray
) -> np.ndarray:
    """F (c, steps + 1): as :func:`_chain_table` (``paid``, its table), for chains in which
    at most one member costs nothing: the largest hypervolume of a chain ending at j whose
    other members' ``units`` sum to at most b."""
    c = len(x)
    table = np.full((c, steps + 1), -np.inf)
    for j in range(c):
        u = int(units[j])
        before = np.flatnonzero((x[:j] < x[j]) & (y[:j] > y[j]))
        best = np.full(steps + 1, x[j] * y[j])  # j alone, free
        if len(before):
            gain = ((x[j] - x[before]) * y[j])[:, None]
            best = np.maximum(best, (paid[before] + gain).max(axis=0))  # j free
            if u <= steps:  # j paid, one member before it free
                grown = (table[before, : steps + 1 - u] + gain).max(axis=0)
                best[u:] = np.maximum(best[u:], grown)
        table[j] = best
    return table


def _backtrack_free(
    free: np.ndarray, paid: np.ndarray, y: np.ndarray, x: np.ndarray, units: np.ndarray,
    step: int,
) -> list[int]:
    """The chain (positions) that reaches ``free[:, step].max()`` (:func:`_free_table`)."""
    if not np.isfinite(free[:, step]).any():
        return []
    j = int(np.argmax(free[:, step]))
    chain = [j]
    b = step
    while True:
        u = int(units[j])
        before = np.flatnonzero((x[:j] < x[j]) & (y[:j] > y[j]))
        alone = x[j] * y[j]
        if len(before) and u <= b:  # was j paid, with the free member before it?
            grown = free[before, b - u] + (x[j] - x[before]) * y[j]
            k = int(np.argmax(grown))
            if grown[k] == free[j, b] and grown[k] > alone:
                j, b = int(before[k]), b - u
                chain.append(j)
                continue
        if not len(before):
            return chain
        grown = paid[before, b] + (x[j] - x[before]) * y[j]  # j free: the rest paid
        k = int(np.argmax(grown))
        if not grown[k] > alone:
            return chain
        return chain + _backtrack(paid, y, x, units, b, int(before[k]))


def _backtrack(
    table: np.ndarray, y: np.ndarray, x: np.ndarray, units: np.ndarray, step: int,
    end: int | None = None,
) -> list[int]:
    """The chain (positions) that reaches ``table[:, step].max()``, or ``table[end, step]``
    when ``end`` is given."""
    if end is None:
        if not np.isfinite(table[:, step]).any():
            return []
        end = int(np.argmax(table[:, step]))
    j = end
    chain = [j]
    b = step
    while True:
        b -= int(units[j])
        before = np.flatnonzero((x[:j] < x[j]) & (y[:j] > y[j]))
        if not len(before):
            return chain
        grown = table[before, b] + (x[j] - x[before]) * y[j]
        k = int(np.argmax(grown))
        if not grown[k] > x[j] * y[j]:
            return chain
        j = int(before[k])
        chain.append(j)


def _grid_units(cost: np.ndarray, resolution: float, up: bool) -> np.ndarray:
    scaled = cost / resolution
    return np.ceil(scaled) if up else np.floor(scaled)


@dataclass(frozen=True)
class _Chains:
    """The architectures an optimal set needs, sorted by throughput ascending: their
    indices (c,), normalized accuracy y and log throughput x (c,), costs (c,) s."""

    index: np.ndarray
    y: np.ndarray
    x: np.ndarray
    cost: np.ndarray

    @classmethod
    def of(cls, reference: FrontReference, costs: np.ndarray, top: float) -> _Chains:
        """Those of ``reference`` non-dominated in (accuracy, throughput, cost) that cost
        at most ``top`` seconds."""
        idx = np.flatnonzero(reference.usable)
        points = reference.norm.transform(reference.points[idx])  # (accuracy, log thr)
        keep = cost_efficient(points, costs[idx])
        keep = keep[costs[idx][keep] <= top]
        order = keep[np.argsort(points[keep, 1], kind="stable")]
        return cls(idx[order], points[order, 0], points[order, 1], costs[idx][order])

    def table(
        self, resolution: float, steps: int, up: bool, overrun: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the table to read, the paid-chain table, units): :func:`_chain_table` with costs
        rounded up or down to the grid, and with ``overrun`` its :func:`_free_table`."""
        units = _grid_units(self.cost, resolution, up)
        paid = _chain_table(self.y, self.x, units, steps)
        read = _free_table(self.y, self.x, units, steps, paid) if overrun else paid
        return read, paid, units

    def chain(
        self, read: np.ndarray, paid: np.ndarray, units: np.ndarray, step: int, overrun: bool
    ) -> np.ndarray:
        """The architecture indices (ascending) of the best chain within ``step`` units."""
        if overrun:
            found = _backtrack_free(read, paid, self.y, self.x, units, step)
        else:
            found = _backtrack(paid, self.y, self.x, units, step)
        return np.sort(self.index[found])


def clairvoyant_ceiling(
    reference: FrontReference,
    cost: object,
    budgets: Sequence[float],
    resolution: float = 1.0,
    last_may_overrun: bool = False,
) -> Ceiling:
    """The highest HV ratio of any set of architectures whose evaluation ``cost`` (s, (n,),
    one per row of ``reference.points``; the table's ``eval_cost``) sums to at most each of
    ``budgets`` (s), bracketed on a grid of ``resolution`` seconds (module docstring);
    O(c^2 B) time and O(c B) memory for c candidates and B = max(budgets) / resolution.
    With ``last_may_overrun`` the sum leaves out the set's largest cost (the rule of a run's
    final metrics; about twice the time and memory).

    ValueError for a cost that is negative or not finite where the reference has both
    objectives, a budget below 0, a resolution <= 0, or a grid over :data:`MAX_GRID`.
    """
    if not isinstance(last_may_overrun, bool):
        raise ValueError(f"last_may_overrun must be True or False, got {last_may_overrun!r}")
    at = _budgets(budgets)
    res = check_real(resolution, "resolution (s)", 0.0, low_open=True)
    chains, steps = _chains(reference, cost, float(at.max()), res, last_may_overrun)
    cols = np.floor(at / res).astype(np.int64)
    feasible, paid, units = chains.table(res, steps, up=True, overrun=last_may_overrun)
    relaxed, _, _ = chains.table(res, steps, up=False, overrun=last_may_overrun)
    chosen = []
    lower = np.empty(len(at))
    for i, col in enumerate(cols.tolist()):
        chain = chains.chain(feasible, paid, units, col, last_may_overrun)
        chosen.append(chain)
        lower[i] = reference.indicators(chain)[0]
    upper_curve = relaxed.max(axis=0, initial=0.0) / reference.true_hv
    return Ceiling(
        budgets=at,
        lower=lower,
        upper=np.maximum(upper_curve[cols], lower),  # equal sums in another order: ulps
        chosen=tuple(chosen),
        resolution=res,
        candidates=len(chains.index),
        lower_curve=feasible.max(axis=0, initial=0.0) / reference.true_hv,
        upper_curve=upper_curve,
        last_may_overrun=last_may_overrun,
    )


def _chains(
    reference: FrontReference, cost: object, top: float, res: float, overrun: bool
) -> tuple[_Chains, int]:
    """The checked :class:`_Chains` of ``reference`` within ``top`` seconds (any cost with
    ``overrun``: the free member may cost more than the budget) and the grid's steps;
    ValueError for a grid over :data:`MAX_GRID` (two tables count twice)."""
    chains = _Chains.of(reference, _costs(reference, cost), math.inf if overrun else top)
    steps = math.floor(top / res)
    if len(chains.index) * (steps + 1) * (2 if overrun else 1) > MAX_GRID:
        raise ValueError(
            f"a grid of {len(chains.index)} architectures x {steps + 1} budget steps is over "
            f"{MAX_GRID:,}; pass a coarser resolution than {res!r} s"
        )
    return chains, steps


def signal_ceiling(
    reference: FrontReference,
    signal: object,
    cost: object,
    budgets: Sequence[float],
    resolution: float = 1.0,
    last_may_overrun: bool = False,
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """(HV ratio float64 (k,), the sets): at each of ``budgets``, the set a searcher that
    took ``signal`` for the accuracy and knew it for every architecture would evaluate (the
    :func:`clairvoyant_ceiling` set of (``signal``, throughput): at most the signal's own
    front), scored on ``reference``'s accuracy.

    ``signal`` (n,): a value per row of ``reference.points``, higher = better (e.g. the
    table's hp-12 validation accuracy); architectures whose signal is not finite are never
    chosen (never ranked); ``last_may_overrun`` as :func:`clairvoyant_ceiling`'s.
    ValueError as :func:`clairvoyant_ceiling`, and for a signal of another shape or finite
    for none of the scored architectures.
    """
    sig = np.asarray(signal, dtype=np.float64)
    n = len(reference.points)
    if sig.shape != (n,):
        raise ValueError(f"signal must have shape ({n},), one per architecture, got {sig.shape}")
    usable = reference.usable & np.isfinite(sig)
    if not usable.any():
        raise ValueError("signal is not finite for any architecture the reference scores")
    trusted = FrontReference.from_points(np.stack([sig, reference.points[:, 1]], axis=1), usable)
    chosen = clairvoyant_ceiling(trusted, cost, budgets, resolution, last_may_overrun).chosen
    return np.array([reference.indicators(s)[0] for s in chosen]), chosen
