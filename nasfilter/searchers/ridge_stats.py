"""An incremental Bayesian ridge fit: sufficient statistics grown by the rows a run observes.

:meth:`nasfilter.searchers.features.RidgeModel.fit` forms the Gram matrix of every observed
row at each refit (a matrix product over n rows, the bulk of a round once n is in the
hundreds, and slow where BLAS threads compete for busy cores). :class:`RidgeStats` keeps
``sum x x'``, ``sum x``, ``sum x y``, ``sum y`` and ``sum y**2`` of the rows of a fixed
design instead, updated by rank-k additions as observations arrive, so a refit costs
O(d**3) for the penalty grid, independent of n. Columns that change from round to round
(``model-based-hw``'s proxy columns) are passed to :meth:`RidgeStats.fit` as ``extra``:
their blocks of the Gram matrix (O(n d e) for e extra columns) are formed there.

The fit is :class:`RidgeModel`'s, penalty by generalized cross-validation over the same
grid, with the residual sum of squares taken from the statistics
(``y'y - 2 w'X'y + w'X'X w``, centred) instead of from the rows: the same model up to
rounding (tests/searchers/test_ridge_stats.py checks it against ``RidgeModel.fit``).
"""

from __future__ import annotations

import numpy as np

from nasfilter.searchers.accuracy_model import ProxyReadings
from nasfilter.searchers.features import RIDGE_PENALTIES, RidgeModel


def _gram(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a' b`` of rows (n, p) and (n, q) -> (p, q), by einsum (no BLAS threads)."""
    return np.asarray(np.einsum("ij,ik->jk", a, b))


class RidgeStats:
    """Sufficient statistics of the observed rows of ``design`` (N, d) and their targets.

    ``shift`` (targets' units) is subtracted from every target before it is summed, so the
    sums of squares do not lose digits to a large common level (accuracies near 90 %).
    """

    def __init__(self, design: np.ndarray, shift: float = 0.0) -> None:
        self.design = design
        d = design.shape[1]
        self.shift = float(shift)
        self.rows: list[int] = []
        self.targets: list[float] = []
        self._xx = np.zeros((d, d))
        self._x = np.zeros(d)
        self._xy = np.zeros(d)
        self._y = 0.0
        self._yy = 0.0

    @property
    def n(self) -> int:
        return len(self.rows)

    def add(self, rows: np.ndarray, targets: np.ndarray) -> None:
        """Add observations: ``rows`` (k,) int indices into the design, ``targets`` (k,)."""
        rows = np.asarray(rows, dtype=np.int64)
        t = np.asarray(targets, dtype=np.float64) - self.shift
        if not np.isfinite(t).all():
            raise ValueError("a ridge fit needs finite targets")
        xs = self.design[rows]
        self._xx += _gram(xs, xs)
        self._x += xs.sum(axis=0)
        self._xy += t @ xs
        self._y += float(t.sum())
        self._yy += float(t @ t)
        self.rows.extend(rows.tolist())
        self.targets.extend(np.asarray(targets, dtype=np.float64).tolist())

    def fit(
        self, extra: np.ndarray | None = None, penalties: tuple[float, ...] = RIDGE_PENALTIES
    ) -> RidgeModel:
        """The ridge model of the targets on the design's columns, then ``extra``'s
        (N, e) if given (indexed like the design); penalty by GCV. Raises ValueError
        for fewer than 3 observations or non-finite extra columns."""
        n = self.n
        if n < 3:
            raise ValueError(f"a ridge fit needs at least 3 observations, got {n}")
        xx, sx, xy = self._xx, self._x, self._xy
        if extra is not None:
            xx, sx, xy = self._with_extra(extra)
        center = sx / n
        ybar = self._y / n
        gram = xx - n * np.outer(center, center)
        xty = xy - n * ybar * center
        yty = self._yy - n * ybar * ybar
        return _gcv_fit(gram, xty, yty, n, ybar + self.shift, center, penalties)

    def _with_extra(self, extra: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The statistics of the design's columns followed by ``extra``'s (N, e)."""
        rows = np.asarray(self.rows, dtype=np.int64)
        e = extra[rows]
        if not np.isfinite(e).all():
            raise ValueError("a ridge fit needs finite features")
        t = np.asarray(self.targets) - self.shift
        cross = _gram(self.design[rows], e)
        xx = np.block([[self._xx, cross], [cross.T, _gram(e, e)]])
        return xx, np.concatenate([self._x, e.sum(axis=0)]), np.concatenate([self._xy, t @ e])


def _gcv_fit(
    gram: np.ndarray, xty: np.ndarray, yty: float, n: int, intercept: float,
    center: np.ndarray, penalties: tuple[float, ...],
) -> RidgeModel:
    """:meth:`RidgeModel.fit`'s GCV choice from centred statistics: ``gram`` (d, d),
    ``xty`` (d,), ``yty`` (the centred targets' sum of squares)."""

    def rss(coef: np.ndarray) -> float:
        return max(yty - 2.0 * float(coef @ xty) + float(coef @ gram @ coef), 0.0)

    return RidgeModel.from_gram(gram, xty, rss, n, intercept, center, penalties)


class IncrementalReadings(ProxyReadings):
    """:class:`ProxyReadings` whose two ridge models (log throughput, log utilization) are
    fitted from :class:`RidgeStats` grown by the new readings, on the same refit schedule
    (when the readings have grown by a quarter)."""

    def __init__(self, features: np.ndarray, with_utilization: bool) -> None:
        super().__init__(features, with_utilization)
        self._added = np.zeros(len(features), dtype=bool)
        self._stats: tuple[RidgeStats, RidgeStats] | None = None

    def predictions(self) -> tuple[np.ndarray, np.ndarray]:
        n = int(self.measured.sum())
        if self._predicted is None or n >= 1.25 * self._predicted_at:
            new = np.flatnonzero(self.measured & ~self._added)
            if self._stats is None:
                self._stats = (RidgeStats(self.features, float(self.log_thr[new].mean())),
                               RidgeStats(self.features, float(self.log_util[new].mean())))
            thr_stats, util_stats = self._stats
            thr_stats.add(new, self.log_thr[new])
            if self.with_utilization:
                util_stats.add(new, self.log_util[new])
            self._added[new] = True
            thr = thr_stats.fit().mean(self.features)
            util = util_stats.fit().mean(self.features) if self.with_utilization else thr
            self._predicted, self._predicted_at = (thr, util), n
        return self._predicted


__all__ = ["IncrementalReadings", "RidgeStats"]
