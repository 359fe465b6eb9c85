"""Acquisition of model-based search: where a candidate lies against the evaluated front.

Points are (throughput, accuracy) pairs, both maximized, in the normalized objective space
of :class:`ObjectiveSpace` (each axis scaled to [0, 1] with a 1 % margin, as
:mod:`nasfilter.runs.metrics` does). :func:`hypervolume_gain` scores the improvement a point
would bring, :func:`behind` (additive epsilon) how far it falls short, and
:func:`hypervolume_pool` ranks the candidates worth a proxy query.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nasfilter.filters.builtins import additive_epsilon
from nasfilter.pareto import nondominated_ranks
from nasfilter.searchers.utilization_pareto import spread_order

PREFILTER = 2000  # candidates whose posterior sd is computed each round


@dataclass(frozen=True)
class ObjectiveSpace:
    """Accuracy and log throughput, each mapped to [0, 1] with a 1 % margin below."""

    a0: float  # accuracy (percent) mapped to 0
    span_a: float  # accuracy span mapped to 1
    t0: float  # log throughput mapped to 0
    span_t: float

    @classmethod
    def over(cls, accuracy: np.ndarray, log_thr: np.ndarray) -> ObjectiveSpace:
        """The space spanned by predicted accuracies and log throughputs (k,) each."""
        lo_a, hi_a = float(accuracy.min()), float(accuracy.max())
        lo_t, hi_t = float(log_thr.min()), float(log_thr.max())
        span_a = max(hi_a - lo_a, 1e-9) * 1.01
        span_t = max(hi_t - lo_t, 1e-9) * 1.01
        return cls(hi_a - span_a, span_a, hi_t - span_t, span_t)

    def points(self, accuracy: np.ndarray, log_thr: np.ndarray) -> np.ndarray:
        """Normalized (throughput, accuracy) points, (k, 2)."""
        return np.stack([(log_thr - self.t0) / self.span_t, (accuracy - self.a0) / self.span_a], 1)


def hypervolume_gain(
    front: np.ndarray, points: np.ndarray, reference: tuple[float, float] = (0.0, 0.0)
) -> np.ndarray:
    """Hypervolume each point (k, 2) alone would add to a front (m, 2); both maximized.

    ``front`` must be non-dominated. Returns (k,) >= 0. O(k m), vectorized.
    """
    r0, r1 = reference
    if len(front) == 0:
        return np.maximum(points[:, 0] - r0, 0.0) * np.maximum(points[:, 1] - r1, 0.0)
    f = front[np.argsort(front[:, 0])]  # x ascending, so y descending
    # Strips in x: [r0, x_1], (x_1, x_2], ..., (x_{m-1}, x_m], (x_m, inf); the front's height
    # on each is the y of the first front point at or right of it.
    lo = np.concatenate([[r0], f[:, 0]])
    hi = np.concatenate([f[:, 0], [np.inf]])
    height = np.concatenate([f[:, 1], [r1]])
    # np.maximum(., 0.0): np.clip's numbers (-0.0 and NaN included) without its overhead.
    width = np.maximum(np.minimum(points[:, :1], hi[None, :]) - lo[None, :], 0.0)
    rise = np.maximum(points[:, 1:] - height[None, :], 0.0)
    return np.asarray((width * rise).sum(axis=1))


def front_height(front: np.ndarray, x: np.ndarray, floor: float) -> np.ndarray:
    """The front's (m, 2) y at each x (k,): the best y among front points with x' >= x."""
    if len(front) == 0:
        return np.full(len(x), floor)
    f = front[np.argsort(front[:, 0])]
    best_right = np.maximum.accumulate(f[::-1, 1])[::-1]  # best y from position i on
    pos = np.searchsorted(f[:, 0], x, side="left")
    out = np.full(len(x), floor)
    inside = pos < len(f)
    out[inside] = best_right[pos[inside]]
    return out


def behind(front: np.ndarray, points: np.ndarray) -> np.ndarray:
    """How far each point (k, 2) lies behind a front (m, 2), both maximized: the additive
    epsilon, the smallest equal shift of both coordinates that leaves a point dominated by
    no front point (0 on the front, < 0 beyond it, -inf for an empty front).

    The same measure as :func:`nasfilter.filters.log_epsilon`, in linear units.
    """
    return additive_epsilon(
        np.asarray(points, dtype=np.float64), np.asarray(front, dtype=np.float64)
    )


def layer_order(points: np.ndarray) -> np.ndarray:
    """Positions of points (k, 2) by non-dominated layer (both maximized), and within a layer
    in spread order over x (both ends, then midpoints coarse to fine), int64 (k,)."""
    ranks = nondominated_ranks(points)
    within = np.empty(len(points), dtype=np.int64)
    for layer in np.unique(ranks):
        members = np.flatnonzero(ranks == layer)
        by_x = members[np.argsort(points[members, 0], kind="stable")]
        within[by_x[spread_order(len(by_x))]] = np.arange(len(by_x))
    return np.lexsort((within, ranks))


def prefilter(
    front: np.ndarray, points: np.ndarray, limit: int = PREFILTER
) -> tuple[np.ndarray, np.ndarray]:
    """The positions (at most ``limit``) of the points (k, 2) least far behind ``front``,
    and their distance below it (``-behind``), both (<= limit,); all of them when k <= limit
    (in their order)."""
    gap = -behind(front, points)
    if len(points) <= limit:
        return np.arange(len(points)), gap
    keep = np.argpartition(-gap, limit)[:limit]
    return keep, gap[keep]


def hypervolume_pool(
    front: np.ndarray, points: np.ndarray, gap: np.ndarray, bonus: np.ndarray, k: int
) -> np.ndarray:
    """Positions of the ``k`` best points (m, 2): by the hypervolume each would add with
    ``bonus`` (m,) added to its accuracy (optimism), then by its optimistic gap (m,)."""
    optimistic = points.copy()
    optimistic[:, 1] += bonus
    return np.lexsort((-(gap + bonus), -nonzero_gain(front, optimistic)))[:k]


def nonzero_gain(front: np.ndarray, points: np.ndarray) -> np.ndarray:
    """:func:`hypervolume_gain` at the reference (0, 0), computed only for the points (k, 2)
    that no front point (m, 2) weakly dominates: a dominated point adds none (+0.0 exactly),
    and each point's gain is a sum over the same strips however many points are scored.
    The shortcut needs coordinates >= 0 (the reference's quadrant) that cannot underflow a
    strip's area (:func:`no_underflow`); otherwise every point is scored."""
    if len(front) == 0 or not no_underflow(front, points) or min(front.min(), points.min()) < 0:
        return hypervolume_gain(front, points)
    height = front_height(front, points[:, 0], -np.inf)
    scored = np.flatnonzero((points[:, 1] > height) & (points[:, 0] > 0) & (points[:, 1] > 0))
    gain = np.zeros(len(points))
    if len(scored):
        gain[scored] = hypervolume_gain(front, points[scored])
    return gain


def no_underflow(*arrays: np.ndarray) -> bool:
    """Whether every coordinate is finite and 0 or at least 1e-100 in magnitude: then a
    difference of two of them is 0 or above 1e-117, and a hypervolume strip's area (a
    product of two) is 0 only when one of them is."""
    for a in arrays:
        mag = np.abs(a)
        if not (np.isfinite(a).all() and ((mag >= 1e-100) | (mag == 0)).all()):
            return False
    return True
