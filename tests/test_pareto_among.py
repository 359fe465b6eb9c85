"""pareto.nondominated_among: the front of a subset of rows, non-finite rows left out."""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.pareto import nondominated_among


def test_front_of_a_subset_by_hand() -> None:
    points = np.array([[1.0, 5.0], [2.0, 4.0], [9.0, 9.0], [3.0, 1.0], [np.nan, 10.0], [0.5, 6.0]])
    among = np.array([True, True, False, True, True, True])
    # Row 2 would dominate every row but does not compete; row 4 is not finite. Rows 0, 1,
    # 3 and 5 trade x against y, so none dominates another.
    expected = np.array([True, True, False, True, False, True])
    np.testing.assert_array_equal(nondominated_among(points, among), expected)


def test_dominated_row_and_empty_subset() -> None:
    points = np.array([[1.0, 1.0], [2.0, 2.0], [np.inf, 0.0]])
    np.testing.assert_array_equal(
        nondominated_among(points, [True, True, True]), [False, True, False]
    )
    np.testing.assert_array_equal(nondominated_among(points, [False] * 3), [False] * 3)


def test_bad_shapes_are_named() -> None:
    with pytest.raises(ValueError, match="among must be"):
        nondominated_among(np.zeros((3, 2)), [True, False])
    with pytest.raises(ValueError, match=r"points must have shape \(n, 2\)"):
        nondominated_among(np.zeros((3, 3)), [True] * 3)
