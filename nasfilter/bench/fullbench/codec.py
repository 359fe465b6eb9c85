"""Lossless storage of one run array: the smallest encoding that gives every value back.

An array (rows: architectures present; columns: epochs) is first made **constant**
(one column) when every row is constant over epochs, as NATS-Bench's per-epoch times are.
Its values are then stored as

- ``centi`` (uint16) or ``milli`` (uint32): integers ``k`` with ``k / 100`` (``k / 1000``)
  equal to the value bit for bit, as test accuracies of 10,000 images are;
- ``f64``: float64 as the archive holds it;
- ``f32``: float32, only for the metrics allowed to lose precision (losses, training
  accuracies), when no exact encoding fits.

NaN (an absent run) is the largest integer in the integer encodings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_INT_CODECS = (("centi", 100, np.uint16), ("milli", 1000, np.uint32))
_DIVISORS = {name: div for name, div, _ in _INT_CODECS}
_SENTINEL = {name: int(np.iinfo(dtype).max) for name, _, dtype in _INT_CODECS}


def _integer_code(values: np.ndarray, divisor: int, dtype: Any) -> np.ndarray | None:
    """``values`` as integers k with k / divisor == value exactly, or None."""
    finite = np.isfinite(values)
    if np.isinf(values).any():
        return None
    scaled = np.round(values[finite] * divisor)
    top = np.iinfo(dtype).max
    if scaled.size and (scaled.min() < 0 or scaled.max() >= top):
        return None
    if not np.array_equal(scaled / divisor, values[finite]):  # IEEE division, as decode does
        return None
    out = np.full(values.shape, top, dtype=dtype)
    out[finite] = scaled.astype(dtype)
    return out


def encode(values: np.ndarray, lossy_ok: bool) -> tuple[np.ndarray, dict[str, Any]]:
    """Encode a float64 (rows, epochs) array; return (stored array, its description)."""
    constant = bool(values.shape[1] > 0 and np.array_equal(
        values, np.broadcast_to(values[:, :1], values.shape), equal_nan=True
    ))
    data = values[:, 0] if constant else values
    for name, divisor, dtype in _INT_CODECS:
        coded = _integer_code(data, divisor, dtype)
        if coded is not None:
            return coded, {"codec": name, "constant": constant}
    if lossy_ok:
        return data.astype(np.float32), {"codec": "f32", "constant": constant}
    return np.ascontiguousarray(data), {"codec": "f64", "constant": constant}


def decode_row(stored: np.ndarray, row: int, spec: dict[str, Any], epochs: int) -> list[float]:
    """Row ``row`` of an encoded array as Python floats, one per epoch."""
    raw = stored[row].tolist()
    codec = spec["codec"]
    if codec in _DIVISORS:
        divisor, sentinel = _DIVISORS[codec], _SENTINEL[codec]
        nan = float("nan")
        if spec["constant"]:
            return [nan if raw == sentinel else raw / divisor] * epochs
        return [nan if k == sentinel else k / divisor for k in raw]
    if spec["constant"]:
        return [float(raw)] * epochs
    return raw
