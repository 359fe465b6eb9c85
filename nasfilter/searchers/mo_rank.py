"""MO-ASHA's promotion rule: non-dominated sorting, then an epsilon-net where the cut falls.

Schmucker et al. (2021, "Multi-objective Asynchronous Successive Halving") rank the results
of a rung over several objectives instead of one accuracy: points in earlier non-dominated
layers come first; where the cut of the best ``count`` falls inside a layer, an epsilon-net
picks the members of that layer that spread over it (its extremes and gaps) rather than
crowd in one corner. Here, both objectives maximized, in the rung's own min-max normalized
space:

1. layer k = :func:`nasfilter.pareto.nondominated_ranks` (0 first);
2. the layers wholly above the cut, in layer order, each by objective 0 (descending, the
   first on ties);
3. then the layer the cut falls in, in epsilon-net order: first the point best in
   objective 0 (the first on ties), then each time the point whose Euclidean distance to
   the nearest point already taken from this layer is largest (the first on ties).

A rung of n results may promote the first ``floor(n / eta)`` of this order. Only the layer at the
cut is ordered by the net (O(m^2) for m points), so a rung of thousands ranks in about a
millisecond.
"""

from __future__ import annotations

import numpy as np

from nasfilter.pareto import nondominated_ranks


def _scaled(points: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``points[rows]`` min-max normalized over all of ``points`` (n, 2)."""
    low, high = points.min(axis=0), points.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    return (points[rows] - low) / span


def epsilon_net_order(points: np.ndarray, limit: int | None = None) -> np.ndarray:
    """Positions of ``points`` (n, 2) in epsilon-net order (module docstring, step 3), the
    first ``limit`` of them (all when None)."""
    n = len(points)
    take = n if limit is None else min(n, limit)
    if take <= 0:
        return np.zeros(0, dtype=np.int64)
    xs, ys = np.ascontiguousarray(points[:, 0]), np.ascontiguousarray(points[:, 1])
    first = int(np.argmax(xs))
    order = [first]
    nearest = (xs - xs[first]) ** 2 + (ys - ys[first]) ** 2  # squared: the same argmax
    nearest[first] = -np.inf  # taken; the minimum below keeps -inf
    for _ in range(take - 1):
        nxt = int(np.argmax(nearest))
        order.append(nxt)
        np.minimum(nearest, (xs - xs[nxt]) ** 2 + (ys - ys[nxt]) ** 2, out=nearest)
        nearest[nxt] = -np.inf
    return np.asarray(order, dtype=np.int64)


def promotion_order(points: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` positions of ``points`` (n, 2), both maximized, best first
    (module docstring)."""
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 2 or not np.isfinite(p).all():
        raise ValueError(f"points must be a finite (n, 2) array, got shape {p.shape}")
    count = min(int(count), len(p))
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    ranks = nondominated_ranks(p)
    by_layer = np.lexsort((-p[:, 0], ranks))  # layer, then objective 0 descending (stable)
    layer_at_cut = ranks[by_layer[count - 1]]
    above = by_layer[ranks[by_layer] < layer_at_cut]
    members = np.flatnonzero(ranks == layer_at_cut)
    net = members[epsilon_net_order(_scaled(p, members), count - len(above))]
    return np.concatenate([above, net]).astype(np.int64)


def promotable(points: np.ndarray, eta: float) -> np.ndarray:
    """Positions of the ``floor(len(points) / eta)`` points a rung may promote, best first."""
    return promotion_order(points, int(len(points) / eta + 1e-9))
