"""BOHB's categorical density model against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nasfilter.searchers.kde import CategoricalKDE, best_ratio, split_good_bad


def test_density_of_two_points_by_hand() -> None:
    kde = CategoricalKDE(np.array([[0, 0], [1, 0]]), levels=3, bandwidths=np.array([0.2, 0.4]))
    # at (0, 0): datum (0,0) gives 0.8*0.6 = 0.48, datum (1,0) gives 0.1*0.6 = 0.06
    # at (2, 1): each datum gives (0.2/2)*(0.4/2) = 0.02
    assert kde.pdf(np.array([[0, 0], [2, 1]])) == pytest.approx([0.27, 0.02])
    # a density over 3 x 3 configurations sums to one
    grid = np.array([[a, b] for a in range(3) for b in range(3)])
    assert kde.pdf(grid).sum() == pytest.approx(1.0)


def test_density_ratio_by_hand() -> None:
    bw = np.array([0.2, 0.4])
    good = CategoricalKDE(np.array([[0, 0]]), 3, bw)
    bad = CategoricalKDE(np.array([[1, 1]]), 3, bw)
    x = np.array([[0, 0], [1, 1], [0, 1]])
    ratio = good.pdf(x) / bad.pdf(x)
    # l(0,0) = 0.8*0.6, g(0,0) = 0.1*0.2; l(1,1) = 0.1*0.2, g(1,1) = 0.8*0.6;
    # l(0,1) = 0.8*0.2, g(0,1) = 0.1*0.6
    assert ratio == pytest.approx([24.0, 1 / 24, 0.16 / 0.06])
    # candidates drawn from l: the best ratio among many is the good point itself
    assert best_ratio(good, bad, np.random.default_rng(0), 64).tolist() == [0, 0]


def test_normal_reference_bandwidth_by_hand() -> None:
    kde = CategoricalKDE(np.array([[0], [0], [0], [1]]), levels=8)
    # 1.06 * std([0, 0, 0, 1]) * 4 ** (-1/5) = 1.06 * sqrt(3/16) * 0.757858
    assert kde.bandwidths[0] == pytest.approx(1.06 * math.sqrt(3 / 16) * 4 ** -0.2)
    flat = CategoricalKDE(np.array([[0], [7]]), levels=8)  # clipped to the uniform kernel
    assert flat.bandwidths[0] == pytest.approx(7 / 8)
    assert flat.pdf(np.arange(8)[:, None]) == pytest.approx(np.full(8, 1 / 8))
    same = CategoricalKDE(np.array([[3], [3]]), levels=8)  # std 0: the minimum bandwidth
    assert same.bandwidths[0] == pytest.approx(1e-3)


def test_sampling_keeps_a_datum_with_probability_one_minus_bandwidth() -> None:
    kde = CategoricalKDE(np.array([[5, 2]]), 8, np.array([0.3, 0.7]))
    draws = kde.sample(np.random.default_rng(1), 20000)
    # kept with 1 - bw, else uniform over 8 codes (which hits the datum 1/8 of the time)
    expected = [(1 - 0.3) + 0.3 / 8, (1 - 0.7) + 0.7 / 8]
    assert (draws == [5, 2]).mean(axis=0) == pytest.approx(expected, abs=0.015)


def test_split_good_bad_as_hpbandster() -> None:
    losses = np.array([5.0, 1.0, 3.0, 2.0, 4.0, 0.5, 6.0, 7.0, 8.0, 9.0])
    good, bad = split_good_bad(losses, top_fraction=0.15, min_points=3)
    assert good.tolist() == [5, 1, 3]  # max(3, floor(1.5)) best
    assert bad.tolist() == [2, 4, 0, 6, 7, 8, 9]  # next max(3, floor(8.5)) = 8 (7 left)


def test_bad_input_names_the_value() -> None:
    with pytest.raises(ValueError, match=r"codes must lie in 0\.\.7"):
        CategoricalKDE(np.array([[8]]), 8)
    with pytest.raises(ValueError, match="bandwidths"):
        CategoricalKDE(np.array([[1]]), 8, np.array([0.9]))


def _direct_pdf(data: np.ndarray, levels: int, bw: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The module docstring's formula, every position in the product (in order 0..d-1)."""
    same, off = 1.0 - bw, bw / (levels - 1)
    prod = np.where(x[:, None, 0] == data[None, :, 0], same[0], off[0])
    for d in range(1, data.shape[1]):
        prod = prod * np.where(x[:, None, d] == data[None, :, d], same[d], off[d])
    return prod.mean(axis=1)


def test_pdf_leaving_out_uniform_positions_keeps_every_bit() -> None:
    # At 8 levels a position at the top bandwidth 7/8 has the kernel 1/8 whatever the codes;
    # pdf leaves it out of the products and scales once, which must give the same bits.
    rng = np.random.default_rng(3)
    for _ in range(200):
        n, d = int(rng.integers(1, 300)), int(rng.integers(1, 6))
        data = rng.integers(0, 8, size=(n, d))
        bw = rng.choice([7 / 8, 0.3, 0.61, 1e-3], size=d)
        kde = CategoricalKDE(data, 8, bw)
        x = rng.integers(0, 8, size=(int(rng.integers(1, 70)), d))
        assert np.array_equal(kde.pdf(x), _direct_pdf(data, 8, bw, x))
    flat = CategoricalKDE(rng.integers(0, 8, size=(9, 5)), 8, np.full(5, 7 / 8))
    assert flat.pdf(np.zeros((3, 5), dtype=np.int64)).tolist() == [8.0**-5] * 3
