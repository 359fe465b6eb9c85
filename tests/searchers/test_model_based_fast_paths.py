"""Model-based search's fast paths give the numbers of the plain code they replace, bit for bit.

Each reference below is the code as it was before the shortcut (sort-based front of a
concatenation, numpy's axis-0 mean and std, np.clip in the strip areas, every gain recomputed
each greedy step); the inputs are drawn on a coarse grid so that ties, copies and dominated
points are common.
"""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.pareto import nondominated_mask
from nasfilter.searchers.accuracy_model import standardized
from nasfilter.searchers.acquisition import behind, hypervolume_gain, nonzero_gain
from nasfilter.searchers.batch_selection import greedy_batch, join_front


def _reference_gain(front: np.ndarray, points: np.ndarray) -> np.ndarray:
    """hypervolume_gain at (0, 0) as first written (np.clip)."""
    if len(front) == 0:
        return np.maximum(points[:, 0], 0.0) * np.maximum(points[:, 1], 0.0)
    f = front[np.argsort(front[:, 0])]
    lo = np.concatenate([[0.0], f[:, 0]])
    hi = np.concatenate([f[:, 0], [np.inf]])
    height = np.concatenate([f[:, 1], [0.0]])
    width = np.clip(np.minimum(points[:, :1], hi[None, :]) - lo[None, :], 0.0, None)
    rise = np.clip(points[:, 1:] - height[None, :], 0.0, None)
    return np.asarray((width * rise).sum(axis=1))


def _reference_greedy(
    front: np.ndarray, mean: np.ndarray, optimistic: np.ndarray, cost: np.ndarray, size: int
) -> list[int]:
    chosen: list[int] = []
    alive = np.ones(len(mean), dtype=bool)
    for _ in range(min(size, len(mean))):
        g = _reference_gain(front, optimistic) / cost
        if g[alive].max() > 0:
            j = int(np.flatnonzero(alive)[np.argmax(g[alive])])
        else:
            below = -behind(front, optimistic)
            j = int(np.flatnonzero(alive)[np.argmax(below[alive])])
        alive[j] = False
        chosen.append(j)
        merged = np.concatenate([front, mean[j : j + 1]])
        front = merged[nondominated_mask(merged)]
    return chosen


def _grid_points(rng: np.random.Generator, n: int, low: float = 0.01) -> np.ndarray:
    """Points (n, 2) on a coarse grid in [low, 1]: ties and copies are frequent."""
    return np.round(rng.uniform(low, 1.0, size=(n, 2)) * 12) / 12 + low


def _front(rng: np.random.Generator, n: int) -> np.ndarray:
    ev = _grid_points(rng, n)
    return ev[nondominated_mask(ev)]


def test_join_front_equals_the_front_of_the_concatenation() -> None:
    rng = np.random.default_rng(0)
    for _ in range(400):
        front = _front(rng, int(rng.integers(1, 30)))
        point = _grid_points(rng, 1)[0]
        if rng.random() < 0.2:  # a copy of a front point
            point = front[rng.integers(len(front))].copy()
        merged = np.concatenate([front, point[None, :]])
        expected = merged[nondominated_mask(merged)]
        got = join_front(front, point)
        assert got.tobytes() == expected.tobytes()


def test_join_front_rejects_a_non_finite_point_as_the_checked_path_does() -> None:
    with pytest.raises(ValueError):
        join_front(np.array([[0.5, 0.5]]), np.array([np.nan, 0.2]))


def test_standardized_equals_numpys_axis_0_mean_and_std() -> None:
    rng = np.random.default_rng(1)
    for trial in range(60):
        n = int(rng.integers(1, 40000))
        t = rng.normal(size=n) * rng.uniform(0.01, 10) + rng.uniform(-9, 9)
        u = np.full(n, 1.5) if trial % 10 == 0 else rng.normal(size=n)
        cols = np.stack([t, u, t * t, u * u], axis=1)
        std = cols.std(axis=0)
        expected = (cols - cols.mean(axis=0)) / np.where(std > 0, std, 1.0)
        got = np.stack([standardized(c) for c in (t, u, t * t, u * u)], axis=1)
        assert got.tobytes() == expected.tobytes()


def test_nonzero_gain_equals_every_gain_computed() -> None:
    rng = np.random.default_rng(2)
    for _ in range(200):
        front = _front(rng, int(rng.integers(1, 40)))
        points = _grid_points(rng, int(rng.integers(1, 300)))
        gain = nonzero_gain(front, points)
        assert gain.tobytes() == _reference_gain(front, points).tobytes()
        assert gain.tobytes() == hypervolume_gain(front, points).tobytes()


def test_nonzero_gain_scores_every_point_outside_the_reference_quadrant() -> None:
    # A front point below the reference's y: a point with y <= 0 still adds area above it.
    front = np.array([[0.2, -0.5], [-0.1, 0.3]])
    points = np.array([[0.5, -0.2], [0.1, 0.1], [-0.3, 0.2]])
    assert nonzero_gain(front, points).tobytes() == _reference_gain(front, points).tobytes()
    assert nonzero_gain(front, points)[0] > 0  # 0.2 wide strip x 0.3 rise above -0.5


@pytest.mark.parametrize("with_cost", [False, True])
def test_greedy_batch_equals_the_plain_greedy_loop(with_cost: bool) -> None:
    rng = np.random.default_rng(3)
    for _ in range(150):
        front = _front(rng, int(rng.integers(1, 25)))
        k = int(rng.integers(1, 40))
        mean = _grid_points(rng, k)
        if rng.random() < 0.5:  # most of the pool behind the front: the fallback rule
            mean *= rng.uniform(0.3, 0.9)
        optimistic = mean + rng.uniform(0, 0.1) * rng.random((k, 2)) * [0, 1]
        cost = rng.uniform(0.5, 3.0, size=k) if with_cost else np.ones(k)
        size = int(rng.integers(1, 20))
        expected = _reference_greedy(front, mean, optimistic, cost, size)
        assert greedy_batch(front, mean, optimistic, cost, size) == expected
