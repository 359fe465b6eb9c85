"""MO-ASHA's promotion order: non-dominated sorting, then an epsilon-net within each layer.

Schmucker et al. (2021, "Multi-objective Asynchronous Successive Halving") rank the results
of a rung over several objectives instead of one accuracy: points in earlier non-dominated
layers come first; within a layer, an epsilon-net orders them so that the first ones spread
over the layer (its extremes and gaps) rather than crowd in one corner. Here, both
objectives maximized, in the rung's own min-max normalized space:

1. layer k = :func:`nasfilter.pareto.nondominated_ranks` (0 first);
2. within a layer, the first point is the best in objective 0 (the first on ties); each next
   one is the point whose Euclidean distance to the nearest point already ordered in this
   layer is largest (the first on ties).

A rung of n results promotes the first ``n // eta`` of this order.
"""

from __future__ import annotations

import numpy as np

from nasfilter.pareto import nondominated_ranks


def _scaled(points: np.ndarray) -> np.ndarray:
    low, high = points.min(axis=0), points.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    return (points - low) / span


def epsilon_net_order(points: np.ndarray) -> np.ndarray:
    """Positions of ``points`` (n, 2) in epsilon-net order (module docstring, step 2)."""
    n = len(points)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    first = int(np.argmax(points[:, 0]))
    order = [first]
    nearest = np.linalg.norm(points - points[first], axis=1)
    nearest[first] = -np.inf
    for _ in range(n - 1):
        nxt = int(np.argmax(nearest))
        order.append(nxt)
        nearest = np.minimum(nearest, np.linalg.norm(points - points[nxt], axis=1))
        nearest[order] = -np.inf
    return np.asarray(order, dtype=np.int64)


def promotion_order(points: np.ndarray) -> np.ndarray:
    """Positions of ``points`` (n, 2), both maximized, best first (module docstring)."""
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 2 or not np.isfinite(p).all():
        raise ValueError(f"points must be a finite (n, 2) array, got shape {p.shape}")
    if len(p) == 0:
        return np.zeros(0, dtype=np.int64)
    scaled = _scaled(p)
    ranks = nondominated_ranks(p)
    out = []
    for layer in range(int(ranks.max()) + 1):
        members = np.flatnonzero(ranks == layer)
        out.append(members[epsilon_net_order(scaled[members])])
    return np.concatenate(out)


def promotable(points: np.ndarray, eta: int) -> np.ndarray:
    """Positions of the ``len(points) // eta`` points a rung may promote, best first."""
    return promotion_order(points)[: len(points) // eta]
