"""Argument validators shared by searchers, filters and the runner (no other dependencies)."""

from __future__ import annotations

import numpy as np


def check_positive_int(value: object, name: str, minimum: int = 1) -> int:
    """``value`` as an int if it is an integer >= ``minimum``, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_real(
    value: object,
    name: str,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> float:
    """``value`` as a finite float within [low, high] (low excluded if ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (x <= low if low_open else x < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low:g}, got {value!r}")
    if high is not None and x > high:
        raise ValueError(f"{name} must be <= {high:g}, got {value!r}")
    return x
