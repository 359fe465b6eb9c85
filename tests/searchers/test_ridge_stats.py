"""The incremental ridge fit: the model RidgeModel.fit gives from the rows, and the closed
form of ridge regression, from statistics grown batch by batch."""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.searchers.accuracy_model import ProxyReadings
from nasfilter.searchers.features import RidgeModel, base_features
from nasfilter.searchers.ridge_stats import IncrementalReadings, RidgeStats

X = base_features()


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(X), n, replace=False)
    y = 85.0 + X[rows, :5] @ rng.normal(size=5) + rng.normal(scale=0.7, size=n)
    return rows, y


def _assert_same(got: RidgeModel, want: RidgeModel) -> None:
    assert got.penalty == want.penalty
    assert got.intercept == pytest.approx(want.intercept, rel=1e-12)
    np.testing.assert_allclose(got.center, want.center, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.weights, want.weights, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(got.covariance, want.covariance, rtol=1e-7, atol=1e-12)
    assert got.noise_sd == pytest.approx(want.noise_sd, rel=1e-6)


def test_grown_statistics_give_the_model_of_the_rows() -> None:
    rows, y = _data(300)
    stats = RidgeStats(X, shift=float(y[:10].mean()))
    for part in (slice(0, 7), slice(7, 120), slice(120, 300)):
        stats.add(rows[part], y[part])
    _assert_same(stats.fit(), RidgeModel.fit(X[rows], y))
    # and the predictions at every architecture
    np.testing.assert_allclose(stats.fit().mean(X), RidgeModel.fit(X[rows], y).mean(X),
                               rtol=1e-9)


def test_extra_columns_join_the_design() -> None:
    rows, y = _data(200, seed=1)
    extra = np.random.default_rng(2).normal(size=(len(X), 4))
    stats = RidgeStats(X)
    stats.add(rows[:50], y[:50])
    stats.add(rows[50:], y[50:])
    _assert_same(stats.fit(extra), RidgeModel.fit(np.hstack([X, extra])[rows], y))


def test_one_penalty_matches_the_closed_form() -> None:
    rows, y = _data(80, seed=3)
    stats = RidgeStats(X, shift=80.0)
    stats.add(rows, y)
    model = stats.fit(penalties=(2.5,))
    # ridge as least squares on the augmented system [Xc; sqrt(lam) I] w = [yc; 0]
    xc = X[rows] - X[rows].mean(axis=0)
    aug = np.vstack([xc, np.sqrt(2.5) * np.eye(X.shape[1])])
    target = np.concatenate([y - y.mean(), np.zeros(X.shape[1])])
    want, *_ = np.linalg.lstsq(aug, target, rcond=None)
    np.testing.assert_allclose(model.weights, want, rtol=1e-7, atol=1e-9)
    assert model.intercept == pytest.approx(y.mean())


def test_too_few_or_bad_observations_are_refused() -> None:
    stats = RidgeStats(X)
    stats.add(np.array([0, 1]), np.array([80.0, 81.0]))
    with pytest.raises(ValueError, match="at least 3 observations, got 2"):
        stats.fit()
    with pytest.raises(ValueError, match="finite targets"):
        stats.add(np.array([2]), np.array([np.nan]))
    stats.add(np.array([2]), np.array([82.0]))
    extra = np.full((len(X), 1), np.inf)
    with pytest.raises(ValueError, match="finite features"):
        stats.fit(extra)


class _Proxy:
    """A proxy handle answering every query with seeded (utilization, throughput)."""

    def query_many(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(indices)
        return indices, np.stack([rng.uniform(0.1, 1, len(indices)),
                                  np.exp(X[indices, 0] + rng.normal(size=len(indices)))], 1)


def test_incremental_readings_predict_as_the_readings_do() -> None:
    rows = np.random.default_rng(5).choice(len(X), 400, replace=False)
    ours, theirs = IncrementalReadings(X, True), ProxyReadings(X, True)
    for part in (rows[:40], rows[40:45], rows[45:200], rows[200:]):
        for readings in (ours, theirs):
            readings.measure(_Proxy(), part)  # type: ignore[arg-type]
        for got, want in zip(ours.predictions(), theirs.predictions(), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
