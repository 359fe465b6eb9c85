"""MO-ASHA's promotion rule (non-dominated sorting, epsilon-net) on hand examples."""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.searchers.mo_rank import epsilon_net_order, promotable, promotion_order


def test_layers_come_first_then_the_epsilon_net_within_a_layer() -> None:
    # (accuracy, log throughput), both maximized
    points = np.array([
        [90.0, 3.0],  # 0: front
        [80.0, 4.0],  # 1: front
        [70.0, 5.0],  # 2: front
        [85.0, 3.5],  # 3: front (between 0 and 1)
        [79.0, 3.9],  # 4: dominated by 1 only -> layer 1
        [60.0, 2.0],  # 5: dominated by all -> layer 2
    ])
    # Scaled (acc over 60..90, log thr over 2..5): 0 = (1, 1/3), 1 = (2/3, 2/3),
    # 2 = (1/3, 1), 3 = (5/6, 1/2). The net starts at the best accuracy (0), then takes the
    # farthest from it: 2 (distance 0.943); then 1 (0.471 to 0, 0.471 to 2) over 3 (0.236).
    assert promotion_order(points, 4).tolist() == [0, 2, 1, 3]
    assert promotable(points, eta=3).tolist() == [0, 2]  # 6 // 3
    # a cut below layer 0: layer 0 by accuracy, then layer 1 (point 4)
    assert promotion_order(points, 5).tolist() == [0, 3, 1, 2, 4]
    assert promotion_order(points, 6).tolist() == [0, 3, 1, 2, 4, 5]
    assert promotable(points[:2], eta=3).tolist() == []  # fewer than eta: none yet


def test_a_single_objective_order_is_a_sort() -> None:
    acc = np.array([3.0, 1.0, 2.0])
    points = np.stack([acc, np.zeros(3)], axis=1)  # ties in throughput: one chain of layers
    assert promotion_order(points, 3).tolist() == [0, 2, 1]
    assert promotion_order(points, 0).tolist() == []


def test_epsilon_net_breaks_ties_by_position() -> None:
    same = np.zeros((3, 2))
    assert epsilon_net_order(same).tolist() == [0, 1, 2]


def test_bad_points_are_refused() -> None:
    with pytest.raises(ValueError, match=r"finite \(n, 2\)"):
        promotion_order(np.array([[1.0, np.nan]]), 1)
