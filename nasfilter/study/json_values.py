"""Strict-JSON values of the typed summaries, and :class:`Stat` (a mean and standard error
over runs): the pieces :mod:`nasfilter.study.summary` and :mod:`nasfilter.study.signal_summary`
share. A number that is not finite (NaN: undefined) is written as null and read back as NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from nasfilter.runs.meanse import MeanSE

__all__ = [
    "Stat", "finite_or_none", "json_float", "json_floats", "json_ints", "json_safe", "plain_json",
]  # fmt: skip


# ------------------------------------------------------------------ JSON values
def finite_or_none(x: float | None) -> float | None:
    """``x`` as a float, or None when it is missing or not finite (strict JSON)."""
    return None if x is None or not math.isfinite(x) else float(x)


def json_float(x: Any) -> float:
    """A JSON number (None: NaN) as a float."""
    return math.nan if x is None else float(x)


def json_floats(values: Any) -> np.ndarray:
    """A JSON list of numbers (None: NaN) as float64 (n,)."""
    return np.asarray([json_float(v) for v in values], dtype=np.float64).reshape(-1)


def json_ints(values: Any) -> np.ndarray:
    """A JSON list of indices as int64 (n,)."""
    return np.asarray(values, dtype=np.int64).reshape(-1)


def json_safe(value: Any) -> Any:
    """``value`` with numpy types converted and NaN/inf written as None (strict JSON)."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return finite_or_none(float(value))
    return value


def plain_json(obj: Any) -> dict[str, Any]:
    """A dataclass of plain values and arrays as JSON values, one key per field."""
    return {f.name: json_safe(getattr(obj, f.name)) for f in fields(obj)}


@dataclass(frozen=True)
class Stat:
    """Mean and standard error of one number over runs (NaN where undefined)."""

    mean: float
    se: float

    @classmethod
    def of(cls, stat: MeanSE | None) -> Stat:
        if stat is None:
            return cls(math.nan, math.nan)
        return cls(float(stat.mean), float(stat.se))

    def to_json(self) -> dict[str, float | None]:
        return {"mean": finite_or_none(self.mean), "se": finite_or_none(self.se)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Stat:
        data = data or {}
        return cls(json_float(data.get("mean")), json_float(data.get("se")))
