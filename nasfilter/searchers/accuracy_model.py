"""The models of model-based search: accuracy from free features, the proxy's readings.

:func:`fit_accuracy` fits a Bayesian ridge model of validation accuracy (percent) over a
design matrix (one row per architecture); :class:`ProxyReadings` keeps the proxy readings of
one run and predicts log throughput and log utilization of the architectures not measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nasfilter.searchers.features import RidgeModel
from nasfilter.sim.proxy_handle import ProxyHandle

CALIBRATE_FROM = 20  # evaluated architectures before the cubic calibration applies


@dataclass(frozen=True)
class AccuracyFit:
    """A fitted accuracy model and its predictions for every architecture."""

    model: RidgeModel
    design: np.ndarray  # (32768, d), the features it was fitted on
    mean: np.ndarray  # (32768,), predicted validation accuracy (percent)
    evaluated: np.ndarray  # (u,) int64, the distinct evaluated indices, ascending

    def sd(self, indices: np.ndarray) -> np.ndarray:
        """Posterior sd of the linear predictor at ``indices`` (k,), percent."""
        return self.model.sd(self.design[indices])


def fit_accuracy(
    design: np.ndarray, indices: list[int], accuracy: list[float], calibrate: bool
) -> AccuracyFit:
    """Fit on the evaluations so far (``indices`` with ``accuracy``, percent), one row per
    architecture (the mean of its evaluations; repeats are rare). With ``calibrate``, once
    :data:`CALIBRATE_FROM` architectures are evaluated, the prediction passes through a cubic
    fitted to them (a single-index model: accuracy saturates with capacity)."""
    obs = np.asarray(indices, dtype=np.int64)
    acc = np.asarray(accuracy)
    uniq, inv = np.unique(obs, return_inverse=True)
    acc_mean = np.bincount(inv, weights=acc) / np.bincount(inv)
    return accuracy_fit(RidgeModel.fit(design[uniq], acc_mean), design, uniq, acc_mean,
                        calibrate)


def accuracy_fit(
    model: RidgeModel, design: np.ndarray, uniq: np.ndarray, acc_mean: np.ndarray,
    calibrate: bool,
) -> AccuracyFit:
    """The :class:`AccuracyFit` of a ridge ``model`` fitted on the distinct evaluated
    ``uniq`` (u,) ascending, with their accuracies ``acc_mean`` (u,), percent: its
    predictions over ``design`` (32768, d), through :func:`fit_accuracy`'s cubic with
    ``calibrate``."""
    mu = model.mean(design)
    if calibrate and len(uniq) >= CALIBRATE_FROM:
        coef = np.polyfit(mu[uniq], acc_mean, 3)
        mu = np.polyval(coef, mu)
    return AccuracyFit(model, design, mu, uniq)


class ProxyReadings:
    """The proxy readings of one run (log throughput, log utilization) and a ridge model of
    both over the free features, refitted when the readings have grown by a quarter."""

    def __init__(self, features: np.ndarray, with_utilization: bool) -> None:
        self.features = features  # (32768, d)
        self.with_utilization = with_utilization
        n = len(features)  # the space's size
        self.measured = np.zeros(n, dtype=bool)
        self.log_thr = np.full(n, np.nan)
        self.log_util = np.full(n, np.nan)
        self._predicted: tuple[np.ndarray, np.ndarray] | None = None
        self._predicted_at = 0

    def measure(self, proxy: ProxyHandle, indices: np.ndarray) -> None:
        """Query ``proxy`` for those of ``indices`` not measured yet (charged)."""
        todo = indices[~self.measured[indices]]
        if len(todo) == 0:
            return
        answered, readings = proxy.query_many(todo)
        self.measured[answered] = True
        self.log_thr[answered] = np.log(readings[:, 1])
        self.log_util[answered] = np.log(np.maximum(readings[:, 0], 1e-12))

    def predictions(self) -> tuple[np.ndarray, np.ndarray]:
        """Predicted log throughput and log utilization of every architecture, (32768,)
        each (utilization = throughput's prediction unless ``with_utilization``)."""
        n = int(self.measured.sum())
        if self._predicted is None or n >= 1.25 * self._predicted_at:
            x, meas = self.features, np.flatnonzero(self.measured)
            thr = RidgeModel.fit(x[meas], self.log_thr[meas]).mean(x)
            util = (
                RidgeModel.fit(x[meas], self.log_util[meas]).mean(x)
                if self.with_utilization
                else thr
            )
            self._predicted, self._predicted_at = (thr, util), n
        return self._predicted

    def log_throughput(self) -> np.ndarray:
        """Measured log throughput where measured, else predicted, (32768,)."""
        return np.where(self.measured, self.log_thr, self.predictions()[0])

    def hardware_columns(self, out: np.ndarray | None = None) -> np.ndarray:
        """Standardized log throughput, log utilization and their squares (measured where
        measured, else predicted), (32768, 4): the accuracy features of ``hardware=True``;
        written into ``out`` (32768, 4) when given."""
        thr, util = self.predictions()
        t = np.where(self.measured, self.log_thr, thr)
        u = np.where(self.measured, self.log_util, util)
        out = np.empty((len(t), 4)) if out is None else out
        for j, col in enumerate((t, u, t * t, u * u)):
            out[:, j] = standardized(col)
        return out


def standardized(col: np.ndarray) -> np.ndarray:
    """``(col - mean) / std`` of a column (n,) (std 0 divides by 1), the numbers of numpy's
    ``mean(axis=0)`` and ``std(axis=0)`` of a stack of columns, which sum each column in
    row order: so does a cumulative sum, many times faster than a strided reduction."""
    n = len(col)
    mean = np.cumsum(col)[-1] / n
    dev = col - mean
    std = np.sqrt(np.cumsum(dev * dev)[-1] / n)
    return dev / (std if std > 0 else 1.0)
