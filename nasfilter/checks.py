"""Argument validators of the searchers, filters, runner and Pareto metrics (numpy only)."""

from __future__ import annotations

import numpy as np


def check_positive_int(
    value: object, name: str, minimum: int = 1, maximum: int | None = None, why: str = ""
) -> int:
    """``value`` as an int if it is an integer >= ``minimum`` (and <= ``maximum``, when
    given; ``why`` says where that bound comes from), else ValueError."""
    if (
        not isinstance(value, bool)
        and isinstance(value, (int, np.integer))
        and minimum <= value
        and (maximum is None or value <= maximum)
    ):
        return int(value)
    if maximum is None:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    raise ValueError(
        f"{name} must be an integer in [{minimum}, {maximum}]"
        + (f" ({why})" if why else "")
        + f", got {value!r}"
    )


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


MAX_WORKERS = 4096  # simulated workers; more is almost surely a typo


def check_workers(workers: object) -> int:
    """``workers`` as an int in [1, :data:`MAX_WORKERS`], else ValueError naming the range."""
    if (
        isinstance(workers, bool)
        or not isinstance(workers, (int, np.integer))
        or not 1 <= workers <= MAX_WORKERS
    ):
        raise ValueError(
            f"workers must be an integer from 1 to {MAX_WORKERS} (simulated parallel "
            f"workers), got {workers!r}"
        )
    return int(workers)


def finite_points(points: object, name: str, n_obj: int | None = 2) -> np.ndarray:
    """``points`` as a finite float64 array (n, n_obj); ValueError naming ``name`` if not."""
    want = f"(n, {n_obj})" if n_obj is not None else "(n, m)"
    try:
        arr = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array of shape {want}: {exc}") from None
    if arr.ndim == 1 and arr.size == 0:
        arr = arr.reshape(0, n_obj if n_obj is not None else 0)
    if (
        arr.ndim != 2
        or (n_obj is not None and arr.shape[1] != n_obj)
        or (arr.shape[1] == 0 and arr.shape[0] > 0)
    ):
        raise ValueError(f"{name} must have shape {want}, got shape {arr.shape}")
    if arr.size and not np.isfinite(arr).all():
        row = int(np.flatnonzero(~np.isfinite(arr).all(axis=1))[0])
        raise ValueError(
            f"{name} holds a non-finite value (NaN or inf) in row {row}: {arr[row].tolist()}; "
            "drop rows without a value first"
        )
    return arr


def finite_vector(value: object, name: str, length: int | None) -> np.ndarray:
    """``value`` as a finite float64 vector (length,); ValueError naming ``name`` if not."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric vector: {exc}") from None
    if arr.ndim != 1 or arr.size == 0 or (length is not None and arr.shape[0] != length):
        want = f"({length},)" if length is not None else "(m,)"
        raise ValueError(f"{name} must have shape {want}, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite, got {arr.tolist()}")
    return arr
