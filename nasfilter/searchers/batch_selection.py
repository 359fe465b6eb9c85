"""Batch selection of model-based search: which of the proxy-measured pool are proposed.

Both rules take positions in a pool of normalized (throughput, accuracy) points (both
maximized; :class:`~nasfilter.searchers.acquisition.ObjectiveSpace`) and return the chosen
positions in proposal order.
"""

from __future__ import annotations

import numpy as np

from nasfilter.pareto import nondominated_mask
from nasfilter.searchers.acquisition import behind, hypervolume_gain, layer_order, no_underflow


def batch_size(limit: int, n_evaluated: int) -> int:
    """Proposals per model fit: an eighth of the evaluations so far, in [2, ``limit``]."""
    return int(min(limit, max(2, n_evaluated // 8)))


def greedy_batch(
    front: np.ndarray, mean: np.ndarray, optimistic: np.ndarray, cost: np.ndarray, size: int
) -> list[int]:
    """Up to ``size`` positions chosen greedily from a pool (k, 2).

    Each choice maximizes the hypervolume its ``optimistic`` point adds per ``cost`` (k,);
    when nothing adds any, the point least far behind the front. The chosen ``mean`` point
    then joins the front, so the next choice spreads over the throughput range."""
    chosen: list[int] = []
    alive = np.ones(len(mean), dtype=bool)
    # Once no candidate adds any hypervolume, none does after more points join the front
    # (its dominated region only grows), so the gains are not computed again; exact where
    # no strip's area underflows (acquisition.no_underflow).
    settled = False
    exact = no_underflow(front, mean, optimistic)
    for _ in range(min(size, len(mean))):
        j = -1
        if not settled:
            gain = hypervolume_gain(front, optimistic)
            g = gain / cost
            if g[alive].max() > 0:
                j = int(np.flatnonzero(alive)[np.argmax(g[alive])])
            else:
                settled = exact and not gain[alive].any()
        if j < 0:  # nothing is predicted to improve: the closest below the front
            below = -behind(front, optimistic)
            j = int(np.flatnonzero(alive)[np.argmax(below[alive])])
        alive[j] = False
        chosen.append(j)
        front = join_front(front, mean[j])
    return chosen


def join_front(front: np.ndarray, point: np.ndarray) -> np.ndarray:
    """The non-dominated points of ``front`` (m, 2, non-dominated, both maximized) with
    ``point`` (2,) added, in the order ``nondominated_mask`` of the two concatenated keeps:
    the front's points ``point`` does not dominate, then ``point`` unless a front point
    dominates it (copies are kept). O(m), without a sort; a non-finite point takes the
    checked path (which raises ValueError)."""
    if not np.isfinite(point).all():
        merged = np.concatenate([front, point[None, :]])
        return merged[nondominated_mask(merged)]
    ge = front >= point  # (m, 2): front point at least as good, per axis
    le = front <= point
    eq = ge & le
    beaten = le.all(axis=1) & ~eq.all(axis=1)  # the point dominates these
    dominated = (ge.all(axis=1) & ~eq.all(axis=1)).any()
    kept = front[~beaten]
    return kept if dominated else np.concatenate([kept, point[None, :]])


def layer_batch(
    pool: np.ndarray,
    points: np.ndarray,
    size: int,
    explore: float,
    free: np.ndarray,
    rng: np.random.Generator,
) -> list[int]:
    """``size`` architectures of ``pool`` (k,) taken by predicted layer of ``points`` (k, 2),
    spread over throughput; a Binomial(size, ``explore``) share of them replaced by random
    ``free`` architectures (indices, not in the choice) drawn from ``rng``."""
    chosen = pool[layer_order(points)[:size]].tolist()
    n_random = int(rng.binomial(len(chosen), explore))
    if n_random:
        rest = free[~np.isin(free, chosen)]
        picks = rng.choice(rest, size=min(n_random, len(rest)), replace=False)
        chosen = chosen[: len(chosen) - len(picks)] + picks.tolist()
    return chosen
