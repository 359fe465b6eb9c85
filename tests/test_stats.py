"""nasfilter.stats against hand-computed coefficients and its NaN policy."""

import math

import numpy as np
import pytest

from nasfilter.stats import pearson, spearman


def test_spearman_hand_values() -> None:
    # ranks (1,2,3,4) vs (2,1,4,3): d^2 = 1+1+1+1 = 4, rho = 1 - 6*4/(4*15) = 0.6
    assert spearman([1, 2, 3, 4], [20, 10, 40, 30]) == pytest.approx(0.6)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_pearson_hand_value() -> None:
    # deviations (-1,0,1) and (-4/3,-1/3,5/3): sum of products 3, sums of squares 2 and 14/3
    assert pearson([0, 1, 2], [0, 1, 3]) == pytest.approx(3 / math.sqrt(2 * 14 / 3))


def test_non_finite_pairs_are_left_out() -> None:
    x = [1, 2, np.nan, 3, 4, np.inf]
    y = [20, 10, 5, 40, 30, 1]
    assert spearman(x, y) == pytest.approx(0.6)


@pytest.mark.parametrize(
    "x,y", [([1, 2], [1, 2]), ([1, 1, 1], [1, 2, 3]), ([np.nan] * 4, [1, 2, 3, 4])]
)
def test_undefined_is_nan(x: list[float], y: list[float]) -> None:
    assert math.isnan(spearman(x, y)) and math.isnan(pearson(x, y))


def test_lengths_must_agree() -> None:
    with pytest.raises(ValueError, match="3 and 2"):
        spearman([1, 2, 3], [1, 2])


def test_spearman_is_scipys_to_the_bit() -> None:
    """The numpy Spearman equals scipy.stats.spearmanr exactly, ties included (the survey's
    summary.json must not change with the implementation)."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(7)
    for n in (3, 10, 57, 600):
        for ties in (False, True):
            x = rng.normal(size=n)
            y = x + rng.normal(size=n)
            if ties:
                x, y = np.round(x, 1), np.round(y * 3) / 3
            got = spearman(x, y)
            assert got == float(spearmanr(x, y).statistic), (n, ties)
