"""Mean and standard error over runs: the one statistics function of the results
(:func:`mean_se`) and its one text form (:func:`format_mean_se`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class MeanSE:
    """Mean and standard error over runs. ``se`` is NaN for fewer than two runs (no band)
    and when any value is infinite; ``n`` counts the values that were not missing."""

    mean: Any  # float, or an array over ticks
    se: Any
    n: int


def mean_se(values: Any) -> MeanSE:
    """Mean and standard error (sample std, ddof 1, over sqrt(n)) over axis 0.

    ``values``: shape (runs,) or (runs, ticks); None and NaN are missing and left out.
    The one statistics function of nasfilter: tables, curves and plots all use it, so a
    single run shows its value with no error band everywhere.
    """
    if not isinstance(values, np.ndarray):
        values = [math.nan if v is None else v for v in values]
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim not in (1, 2):
        raise ValueError(f"values must have shape (runs,) or (runs, ticks), got {arr.shape}")
    present = ~np.isnan(arr)
    n_each = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(present, arr, 0.0).sum(axis=0)
        mean = np.where(n_each > 0, total / np.maximum(n_each, 1), np.nan)
        dev = np.where(present, arr - mean, 0.0)
        var = (dev**2).sum(axis=0) / np.maximum(n_each - 1, 1)
        se = np.sqrt(var / np.maximum(n_each, 1))
        # Runs that agree exactly have no spread: rounding in the mean must not invent one.
        if arr.shape[0]:
            low = np.where(present, arr, np.inf).min(axis=0)
            se = np.where(low == np.where(present, arr, -np.inf).max(axis=0), 0.0, se)
    finite = np.isfinite(np.where(present, arr, 0.0)).all(axis=0)
    se = np.where((n_each >= 2) & finite, se, np.nan)
    n = int(n_each.max()) if arr.size else 0
    if arr.ndim == 1:
        return MeanSE(float(mean), float(se), n)
    return MeanSE(mean, se, n)


def format_mean_se(mean: float, se: float, decimals: int) -> str:
    """``"0.912 ± 0.012"``; the value alone when the standard error is undefined (one run,
    or an infinite value) or zero (every run agrees); ``"n/a"`` if missing."""
    if mean is None or not math.isfinite(mean):
        return "inf" if mean == math.inf else "n/a"

    def fmt(x: float) -> str:
        if abs(mean) >= 1e9:  # a huge budget's seconds: 4 significant digits, not 30
            return f"{x:.4g}"
        return f"{x:,.{decimals}f}" if decimals == 0 else f"{x:.{decimals}f}"

    text = fmt(mean)
    if se is not None and math.isfinite(se) and se > 0:
        text += f" ± {fmt(se)}"
    return text
