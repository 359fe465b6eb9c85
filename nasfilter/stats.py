"""Rank and linear correlation with one NaN policy, used by every module that reports one.

The policy: pairs in which either value is not finite are left out; with fewer than three
pairs left, or a constant side, the coefficient is undefined and NaN is returned (never an
exception, never a warning). Spearman's coefficient is computed here with numpy, as scipy
computes it (average ranks, then ``numpy.corrcoef``: the same bits), so that a survey does
not import ``scipy.stats`` (about a second) for one coefficient; scipy is imported on first
use by :func:`pearson`.
"""

from __future__ import annotations

import numpy as np

MIN_PAIRS = 3


def _finite_pairs(x: object, y: object) -> tuple[np.ndarray, np.ndarray] | None:
    """The finite pairs of two equal-length 1-D arrays, or None if too few or constant."""
    a = np.asarray(x, dtype=float).ravel()
    b = np.asarray(y, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"correlation of arrays of different lengths: {a.size} and {b.size}")
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size < MIN_PAIRS or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return a, b


def spearman(x: object, y: object) -> float:
    """Spearman's rank correlation of two (n,) arrays over their finite pairs; NaN if
    undefined (fewer than three finite pairs, or a constant side)."""
    pairs = _finite_pairs(x, y)
    if pairs is None:
        return float("nan")
    ranked = np.column_stack([_average_ranks(v) for v in pairs])
    return float(np.corrcoef(ranked, rowvar=False)[1, 0])


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``x``, ties given the mean of their ranks (``scipy.stats.rankdata``)."""
    order = np.argsort(x, kind="stable")
    y = x[order]
    starts = np.flatnonzero(np.concatenate(([True], y[:-1] != y[1:])))
    counts = np.diff(np.append(starts, y.size))
    ranks = np.empty(x.size, dtype=float)
    ranks[order] = np.repeat(starts + 1 + (counts - 1) / 2, counts)
    return ranks


def pearson(x: object, y: object) -> float:
    """Pearson's linear correlation of two (n,) arrays over their finite pairs; NaN if
    undefined (fewer than three finite pairs, or a constant side)."""
    pairs = _finite_pairs(x, y)
    if pairs is None:
        return float("nan")
    from scipy.stats import pearsonr

    return float(pearsonr(*pairs).statistic)
