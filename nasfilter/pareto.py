"""Pareto fronts and front-quality metrics, for objectives that are **maximized** by default.

The study compares the front a search returns with the true front over the whole table, on
test accuracy (percent) and throughput (images/s), and uses the throughput–utilization front
as a filter; every objective there is maximized. Functions take ``maximize`` (one bool for
every objective, or one per objective) for the other orientation.

Dominance, as used everywhere here: ``p`` dominates ``q`` when ``p >= q`` in every objective
and ``p > q`` in at least one (in the "better" direction). A point that another point equals
in one objective and beats in the other is therefore dominated. Exact duplicates do not
dominate each other: every copy of a front point is non-dominated and gets the same rank.

Shapes: a point set is a float array ``(n, m)``, here ``m = 2`` unless stated; an empty set
may be given as ``(0, m)`` or as an empty sequence. Values must be finite.

Comparing a run with the true front goes through a fixed :class:`Normalization` taken over
the whole table (see there), so that figures are unit-free and comparable across runs.
"""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nasfilter.checks import finite_points, finite_vector

DEFAULT_MARGIN = 0.01  # fraction of each objective's range added below the worst value

# Pairwise metrics work on blocks of about this many float64 values (32 MiB).
_BLOCK_VALUES = 1 << 22


# ---------------------------------------------------------------------------- validation


def _signs(maximize: bool | Sequence[bool], n_obj: int) -> np.ndarray:
    """+1 for a maximized objective, -1 for a minimized one, shape (n_obj,)."""
    if isinstance(maximize, (bool, np.bool_)):
        flags = [bool(maximize)] * n_obj
    else:
        flags = list(maximize)
        if len(flags) != n_obj or not all(isinstance(f, (bool, np.bool_)) for f in flags):
            raise ValueError(
                f"maximize must be a bool or {n_obj} bools (one per objective), got {maximize!r}"
            )
    return np.where(np.asarray(flags, dtype=bool), 1.0, -1.0)


def _pair(points: object, name: str, other: np.ndarray, other_name: str) -> np.ndarray:
    """Validate ``points`` with the same number of objectives as ``other``."""
    arr = finite_points(points, name, n_obj=None)
    if arr.shape[0] == 0 and arr.shape[1] == 0:
        return arr.reshape(0, other.shape[1])
    if arr.shape[1] != other.shape[1]:
        raise ValueError(
            f"{name} has {arr.shape[1]} objectives but {other_name} has {other.shape[1]}; "
            "they must match"
        )
    return arr


# ---------------------------------------------------------------------- non-dominated sorting


def _sweep_order(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort maximized 2-D points by x then y, both descending.

    Returns ``order`` (n,), the sorted ``y`` (n,) and ``first`` (n,) bool: True on the first
    row of each run of identical points. In this order every point that dominates a point
    comes before it, and a distinct earlier point dominates it iff its y is >= the point's.
    """
    order = np.argsort(-p[:, 0])
    xs = p[order, 0]
    if np.any(xs[1:] == xs[:-1]):  # ties in x: sort them by y too
        order = np.lexsort((-p[:, 1], -p[:, 0]))
        xs = p[order, 0]
    ys = p[order, 1]
    first = np.ones(len(p), dtype=bool)
    first[1:] = (xs[1:] != xs[:-1]) | (ys[1:] != ys[:-1])
    return order, ys, first


def _front_in_x_order(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-dominated points of maximized 2-D points (n >= 1), found with one sort on x.

    Returns ``order`` (n,) sorting x descending (ties in any order), the sorted ``y`` (n,) and
    ``keep`` (n,) bool in that order. A point is kept when its y beats every point of larger
    x and is the highest among the points of its own x (so copies are kept together).
    """
    n = len(p)
    order = np.argsort(-p[:, 0])
    xs = p[order, 0]
    ys = p[order, 1]
    new_x = np.ones(n, dtype=bool)
    np.not_equal(xs[1:], xs[:-1], out=new_x[1:])
    starts = np.flatnonzero(new_x)
    group = np.cumsum(new_x) - 1
    group_top = np.maximum.reduceat(ys, starts)
    top_before = np.empty(len(starts))
    top_before[0] = -np.inf
    top_before[1:] = np.maximum.accumulate(ys)[starts[1:] - 1]
    keep = (ys >= group_top[group]) & (ys > top_before[group])
    return order, ys, keep


def nondominated_mask(points: object, maximize: bool | Sequence[bool] = (True, True)) -> np.ndarray:
    """Which points no other point dominates: bool (n,) for points (n, 2).

    A point beaten in one objective and tied in the other is dominated; every copy of a
    duplicated front point is kept (True). O(n log n), one sort.
    """
    return finite_front_mask(finite_points(points, "points") * _signs(maximize, 2))


def finite_front_mask(p: np.ndarray) -> np.ndarray:
    """:func:`nondominated_mask` of maximized points ``p``, a float64 array (n, 2) the caller
    has checked to be finite, without the argument checks (for hot loops)."""
    if len(p) == 0:
        return np.zeros(0, dtype=bool)
    order, _, keep_sorted = _front_in_x_order(p)
    keep = np.empty(len(p), dtype=bool)
    keep[order] = keep_sorted
    return keep


def nondominated_among(
    points: object, among: object, maximize: bool | Sequence[bool] = (True, True)
) -> np.ndarray:
    """:func:`nondominated_mask` over a subset: bool (n,) for points (n, 2) that may hold
    NaN or inf, True for the rows of ``among`` (bool (n,)) with finite values that no other
    such row dominates; every other row is False (it neither competes nor is kept).
    """
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"points must have shape (n, 2), got shape {p.shape}")
    mask = np.asarray(among, dtype=bool)
    if mask.shape != (len(p),):
        raise ValueError(f"among must be a bool vector of length {len(p)}, got {mask.shape}")
    out = np.zeros(len(p), dtype=bool)
    idx = np.flatnonzero(mask & np.isfinite(p).all(axis=1))
    if idx.size:
        out[idx] = nondominated_mask(p[idx], maximize)
    return out


def nondominated_ranks(
    points: object, maximize: bool | Sequence[bool] = (True, True)
) -> np.ndarray:
    """Front layer of every point, int64 (n,) for points (n, 2); 0 is the first front.

    Layer k holds the points that are non-dominated once layers 0..k-1 are removed
    ("successive frontiers"); duplicates share a layer; ``ranks == 0`` equals
    :func:`nondominated_mask`. O(n log L) for L layers: one sort, then one sweep that keeps
    the best y seen in each layer and places each point by binary search.
    """
    p = finite_points(points, "points") * _signs(maximize, 2)
    n = len(p)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order, ys, first = _sweep_order(p)
    # neg_best[k] = -(highest y in layer k so far); nondecreasing in k. A point goes to the
    # first layer whose highest y is below its own: no point there dominates it, and the
    # point holding the highest y of every earlier layer does.
    neg_best: list[float] = []
    layer_of_distinct: list[int] = []
    find, place, n_layers = bisect.bisect_right, layer_of_distinct.append, 0
    for neg_y in (-ys[first]).tolist():
        k = find(neg_best, neg_y)
        if k == n_layers:
            neg_best.append(neg_y)
            n_layers += 1
        else:
            neg_best[k] = neg_y
        place(k)
    distinct_id = np.cumsum(first) - 1
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.asarray(layer_of_distinct, dtype=np.int64)[distinct_id]
    return ranks


# ---------------------------------------------------------------------------- indicators


def hypervolume_2d(
    points: object,
    reference: object,
    maximize: bool | Sequence[bool] = (True, True),
) -> float:
    """Exact area dominated by points (n, 2) and bounded by ``reference`` (2,).

    For maximization this is the area of the union of boxes [reference, p]. Points not
    strictly better than the reference in both objectives add nothing; an empty set gives
    0.0. Dominated and repeated points leave the result unchanged bit for bit. O(n log n).
    """
    signs = _signs(maximize, 2)
    p = finite_points(points, "points") * signs
    return _hypervolume(p, finite_vector(reference, "reference", 2) * signs)


def _hypervolume(p: np.ndarray, ref: np.ndarray) -> float:
    """:func:`hypervolume_2d` of checked, maximized points (n, 2) above ``ref`` (2,)."""
    p = p[(p[:, 0] > ref[0]) & (p[:, 1] > ref[1])]
    if len(p) == 0:
        return 0.0
    order, ys, keep = _front_in_x_order(p)
    # The front, x descending, climbs in y; drop repeated copies.
    xs = p[order[keep], 0]
    ys = ys[keep]
    below = np.empty_like(ys)
    below[0] = ref[1]
    below[1:] = ys[:-1]
    step = ys > below
    # Each front point adds the strip between the previous point's y and its own.
    return float(np.sum((xs[step] - ref[0]) * (ys[step] - below[step])))


def _reference_set(reference_front: object) -> np.ndarray:
    ref = finite_points(reference_front, "reference_front", n_obj=None)
    if ref.shape[0] == 0:
        raise ValueError("reference_front is empty; it needs at least one point")
    return ref


def _blocks(n_rows: int, row_values: int) -> list[slice]:
    step = max(1, _BLOCK_VALUES // max(1, row_values))
    return [slice(i, min(i + step, n_rows)) for i in range(0, n_rows, step)]


def _oriented(
    front: object, reference_front: object, maximize: bool | Sequence[bool]
) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``front`` (n, m) and ``reference_front`` (r, m), both turned to maximization."""
    ref = _reference_set(reference_front)
    sol = _pair(front, "front", ref, "reference_front")
    signs = _signs(maximize, ref.shape[1])
    return sol * signs, ref * signs


def igd_plus(
    front: object,
    reference_front: object,
    maximize: bool | Sequence[bool] = True,
) -> float:
    """IGD+ (Ishibuchi et al. 2015) of ``front`` (n, m) against ``reference_front`` (r, m).

    The mean, over reference points z, of the distance from z to the nearest front point
    a counting only the objectives where a is worse: ``sqrt(sum(max(z - a, 0)**2))`` for
    maximization. Averaged over the reference set (as moocore and pymoo do). 0 when every
    reference point is weakly dominated; ``inf`` for an empty front. O(n r m).
    """
    sol, ref = _oriented(front, reference_front, maximize)
    return _igd_plus(sol, ref)


def _igd_plus(sol: np.ndarray, ref: np.ndarray) -> float:
    """:func:`igd_plus` of checked, maximized ``sol`` (n, m) against ``ref`` (r, m)."""
    if len(sol) == 0:
        return math.inf
    nearest = np.empty(len(ref))
    for rows in _blocks(len(ref), sol.size):
        gap = ref[rows, None, :] - sol[None, :, :]
        np.maximum(gap, 0.0, out=gap)
        nearest[rows] = np.einsum("ijk,ijk->ij", gap, gap).min(axis=1)
    return float(np.mean(np.sqrt(nearest)))


def additive_epsilon(
    front: object,
    reference_front: object,
    maximize: bool | Sequence[bool] = True,
) -> float:
    """Additive epsilon indicator of ``front`` (n, m) against ``reference_front`` (r, m).

    The smallest eps such that every reference point is weakly dominated by some front
    point shifted by eps in every objective: ``max_z min_a max_i (z_i - a_i)`` for
    maximization (moocore's ``epsilon_additive(front, ref=reference_front)``). 0 when the
    front equals the reference set, negative when it strictly dominates all of it, ``inf``
    for an empty front. O(n r m).
    """
    sol, ref = _oriented(front, reference_front, maximize)
    return _additive_epsilon(sol, ref)


def _additive_epsilon(sol: np.ndarray, ref: np.ndarray) -> float:
    """:func:`additive_epsilon` of checked, maximized ``sol`` (n, m) against ``ref`` (r, m)."""
    if len(sol) == 0:
        return math.inf
    needed = np.empty(len(ref))
    for rows in _blocks(len(ref), sol.size):
        needed[rows] = (ref[rows, None, :] - sol[None, :, :]).max(axis=2).min(axis=1)
    return float(needed.max())


def finite_indicators(
    run: np.ndarray, reference_front: np.ndarray, reference: np.ndarray
) -> tuple[float, float, float]:
    """(:func:`hypervolume_2d` above ``reference`` (2,), :func:`igd_plus`,
    :func:`additive_epsilon`) of maximized points ``run`` (n, 2) against
    ``reference_front`` (r, 2), float64 arrays the caller has checked to be finite (r >= 1),
    without the argument checks (for hot loops); the same numbers bit for bit."""
    return (
        _hypervolume(run, reference),
        _igd_plus(run, reference_front),
        _additive_epsilon(run, reference_front),
    )


def _as_indices(indices: object, name: str) -> np.ndarray:
    arr = np.asarray(indices)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(
            f"{name} must be a 1-D array of integer indices, got dtype {arr.dtype} "
            f"and shape {arr.shape}"
        )
    return arr


def front_recall(front_indices: object, true_front_indices: object) -> float:
    """Fraction of the distinct true-front indices that appear in ``front_indices``.

    Both are 1-D integer arrays (architecture indices); order and repeats do not matter.
    """
    found = _as_indices(front_indices, "front_indices")
    true = np.unique(_as_indices(true_front_indices, "true_front_indices"))
    if len(true) == 0:
        raise ValueError("true_front_indices is empty; the true front has at least one member")
    return float(np.count_nonzero(np.isin(true, found)) / len(true))


# ------------------------------------------------------------------ comparing with the truth


@dataclass(frozen=True, eq=False)
class Normalization:
    """A fixed affine map of objective values to unit-free scores, 1 = best.

    Built over the whole table (all 32768 architectures) with :meth:`from_points`, so the
    scale is the same for every run: ``ideal`` is the best and ``nadir`` the worst value of
    each objective over all points (not the nadir of the Pareto front). Each objective is
    mapped linearly so that ``ideal`` -> 1 and ``lower = nadir - margin * (range)`` (moved
    away from the ideal) -> 0. Every table point then scores in
    [margin / (1 + margin), 1] and the hypervolume reference point is the origin, so the
    extreme points of a front still add area.

    Attributes:
        ideal: best value of each objective, original units, shape (m,).
        nadir: worst value of each objective, original units, shape (m,).
        maximize: orientation of each objective.
        margin: fraction of each objective's range put between the nadir and the reference.
    """

    ideal: np.ndarray
    nadir: np.ndarray
    maximize: tuple[bool, ...] = (True, True)
    margin: float = DEFAULT_MARGIN

    def __post_init__(self) -> None:
        ideal = finite_vector(self.ideal, "ideal", None).copy()
        nadir = finite_vector(self.nadir, "nadir", len(ideal)).copy()
        signs = _signs(self.maximize, len(ideal))
        flat = (ideal - nadir) * signs <= 0
        if flat.any():
            k = int(np.flatnonzero(flat)[0])
            raise ValueError(
                f"objective {k} has ideal {ideal[k]!r} not better than nadir {nadir[k]!r}; "
                "an objective whose values are all equal cannot be normalized"
            )
        if (
            isinstance(self.margin, bool)
            or not isinstance(self.margin, numbers.Real)
            or not (math.isfinite(self.margin) and self.margin >= 0)
        ):
            raise ValueError(f"margin must be a finite number >= 0, got {self.margin!r}")
        ideal.setflags(write=False)
        nadir.setflags(write=False)
        object.__setattr__(self, "ideal", ideal)
        object.__setattr__(self, "nadir", nadir)
        object.__setattr__(self, "maximize", tuple(bool(s > 0) for s in signs))

    @classmethod
    def from_points(
        cls,
        all_points: object,
        maximize: bool | Sequence[bool] = (True, True),
        margin: float = DEFAULT_MARGIN,
    ) -> Normalization:
        """Ideal and nadir over ``all_points`` (n, 2): every architecture of the table."""
        pts = finite_points(all_points, "all_points")
        if len(pts) == 0:
            raise ValueError("all_points is empty; pass every architecture's objectives")
        signs = _signs(maximize, pts.shape[1])
        oriented = pts * signs
        return cls(
            ideal=oriented.max(axis=0) * signs,
            nadir=oriented.min(axis=0) * signs,
            maximize=tuple(bool(s > 0) for s in signs),
            margin=margin,
        )

    @property
    def lower(self) -> np.ndarray:
        """Objective values mapped to 0 (the reference point), original units, shape (m,)."""
        return self.nadir - (self.ideal - self.nadir) * self.margin

    @property
    def reference(self) -> np.ndarray:
        """The hypervolume reference point in normalized space: zeros, shape (m,)."""
        return np.zeros(len(self.ideal))

    def transform(self, points: object) -> np.ndarray:
        """Normalized scores (n, m) of ``points`` (n, m), maximized, 1 = the ideal."""
        pts = finite_points(points, "points", n_obj=len(self.ideal))
        lower = self.lower
        return (pts - lower) / (self.ideal - lower)


@dataclass(frozen=True)
class FrontMetrics:
    """How close a run's front is to the true front, in normalized space.

    Attributes:
        hv_ratio: HV(run) / HV(true front), reference at the normalized origin; 1 = as good.
        igd_plus: IGD+ of the run against the true front (0 = every true point reached).
        epsilon: additive epsilon of the run against the true front (0 = as good).
        n_points: number of rows of the run's points as given.
    """

    hv_ratio: float
    igd_plus: float
    epsilon: float
    n_points: int


def compare_fronts(run_points: object, true_points: object, norm: Normalization) -> FrontMetrics:
    """Quality of the points a run returns (n, m) against the true front (t, m).

    Both are mapped with ``norm`` (maximized, 1 = best). The reference set of IGD+ and
    epsilon is the distinct non-dominated rows of ``true_points``, so a true front given with
    dominated or repeated rows gives the same figures. Dominated run points change nothing.
    An empty run gives hv_ratio 0 and igd_plus = epsilon = inf. m must be 2. Nothing is
    clipped: run points beyond the true front (another table's normalization, a wrong true
    front) show up as hv_ratio > 1 and epsilon < 0.
    """
    n_obj = len(norm.ideal)
    if n_obj != 2:
        raise ValueError(f"compare_fronts needs 2 objectives, the normalization has {n_obj}")
    run = norm.transform(finite_points(run_points, "run_points"))
    true = norm.transform(finite_points(true_points, "true_points"))
    if len(true) == 0:
        raise ValueError("true_points is empty; pass the true Pareto front")
    true = np.unique(true[nondominated_mask(true)], axis=0)
    hv_true = hypervolume_2d(true, norm.reference)
    if hv_true <= 0:
        raise ValueError(
            "the true front has no area above the reference point; was the normalization "
            "built from the same table?"
        )
    if len(run) == 0:
        return FrontMetrics(hv_ratio=0.0, igd_plus=math.inf, epsilon=math.inf, n_points=0)
    return FrontMetrics(
        hv_ratio=hypervolume_2d(run, norm.reference) / hv_true,
        igd_plus=igd_plus(run, true),
        epsilon=additive_epsilon(run, true),
        n_points=len(run),
    )
