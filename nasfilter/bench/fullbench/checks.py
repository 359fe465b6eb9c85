"""The values of an archive record that :func:`nasfilter.bench.fullbench.convert_full` accepts.

A NATS-Bench record holds, per run, numbers only: accuracies in percent (0..100), times in
seconds (finite, >= 0), losses, FLOPs and parameters (finite, >= 0), a latency list (or
None), an integer epoch count and integer seeds, each seed once. Anything else (NaN, 300 %,
a string, ``None`` or ``True`` where a number belongs, a negative or infinite time, a
duplicated seed, a record whose ``arch_str`` is another architecture's) is refused with a
ValueError naming the file, the run and the field, never stored as a number.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

ACC_RANGE = (0.0, 100.0)  # percent


def _is_number_type(kind: type) -> bool:
    return issubclass(kind, (int, float, np.integer, np.floating)) and not issubclass(
        kind, (bool, np.bool_)
    )


def _first_non_number(values: list[Any]) -> tuple[int, Any] | None:
    for i, v in enumerate(values):
        if not _is_number_type(type(v)):
            return i, v
    return None


def numbers(
    values: list[Any], where: str, what: str, low: float | None = None,
    high: float | None = None, finite: bool = True,
) -> np.ndarray:
    """``values`` (one per epoch) as float64; ValueError naming ``where``, ``what`` and the
    epoch of the first value that is not a number, not finite (when ``finite``), or outside
    ``low..high``."""
    if not all(_is_number_type(kind) for kind in {type(v) for v in values}):
        i, v = _first_non_number(values) or (0, None)
        raise ValueError(f"{where}: {what} at epoch {i} is {v!r}, expected a number")
    arr = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(arr) if finite else np.zeros(arr.shape, dtype=bool)
    if low is not None:
        bad |= arr < low
    if high is not None:
        bad |= arr > high
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        span = f"{low:g}..{high:g}" if high is not None else f">= {low:g}"
        raise ValueError(
            f"{where}: {what} at epoch {i} is {values[i]!r}; expected a finite number in {span}"
        )
    return arr


def number(value: Any, where: str, what: str) -> float:
    """A finite, non-negative scalar cost (FLOPs, parameters, a latency); ValueError else."""
    if not _is_number_type(type(value)) or not math.isfinite(float(value)) or value < 0:
        raise ValueError(f"{where}: {what} is {value!r}, expected a finite number >= 0")
    return float(value)


def latency(value: Any, where: str) -> Any:
    """The run's mean latency (s per batch of 256), with the archive's type; -1.0 when
    unknown (None). ValueError for an empty list or values that are not seconds."""
    if value is None:
        return -1.0
    if not isinstance(value, list) or not value:
        raise ValueError(
            f"{where}: latency is {value!r}, expected None or a non-empty list of seconds"
        )
    for i, v in enumerate(value):
        number(v, where, f"latency[{i}]")
    return sum(value) / len(value)


def epochs(value: Any, where: str) -> int:
    """The run's epoch count: a positive integer; ValueError else."""
    if not _is_number_type(type(value)) or not float(value).is_integer() or value < 1:
        raise ValueError(f"{where}: epochs is {value!r}, expected a positive integer")
    if not isinstance(value, (int, np.integer)):
        raise ValueError(f"{where}: epochs is {value!r} ({type(value).__name__}), expected "
                         "an integer")
    return int(value)


def seeds(value: Any, where: str) -> list[int]:
    """A record's seed list: integers, sorted, each once; ValueError naming the problem."""
    if not isinstance(value, list) or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in value
    ):
        raise ValueError(f"{where} are {value!r}, expected a list of integers")
    if value != sorted(value):
        raise ValueError(f"{where} {value} are not sorted")
    if len(set(value)) != len(value):
        dup = sorted({s for s in value if value.count(s) > 1})
        raise ValueError(f"{where} {value} repeat seed(s) {dup}: each run has one seed")
    return [int(s) for s in value]


def architecture(state: dict[str, Any], index: int, expected: str, where: str) -> None:
    """ValueError when the record's own ``arch_index``/``arch_str`` (where it has them) name
    another architecture than the file's index ``index`` (whose string is ``expected``)."""
    if "arch_index" in state and state["arch_index"] != index:
        raise ValueError(
            f"{where}: the record says arch_index {state['arch_index']!r}, but the archive "
            f"places it at index {index}; the archive is damaged or its records are swapped"
        )
    if "arch_str" in state and state["arch_str"] != expected:
        raise ValueError(
            f"{where}: the record's arch_str is {state['arch_str']!r}, but architecture "
            f"{index} is {expected!r}; the archive is damaged or its records are swapped"
        )
