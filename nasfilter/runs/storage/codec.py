"""The SQLite results database's errors and its scores codec, apart from the
:class:`~nasfilter.runs.storage.sqlite_store.Store` that uses them (and
:mod:`nasfilter.runs.storage.migration`).

- :class:`StoreError` and :func:`database_problem`: what a reader is told about a file
  that is not a results database, is locked, damaged or on a full disk;
- :func:`inflate_exactly`: a bounded zlib inflate, so a crafted row cannot make a reader
  inflate gigabytes;
- the ``scores`` row: JSON numbers that may be NaN or infinite, and curves stacked as one
  compressed float64 array (:func:`encode_scores`, :func:`decode_scores`).
"""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.runs.metrics import current_names
from nasfilter.runs.records import StoredScores
from nasfilter.sim.events import TRACE_LIMIT

BUSY_TIMEOUT = 60.0  # seconds a writer waits for another one


class StoreError(ValueError):
    """The file is not a nasfilter results database, has another schema version, is
    damaged, locked or on a full disk; the message names the file (and the run)."""


def database_problem(path: Path, exc: Exception, timeout: float = BUSY_TIMEOUT) -> StoreError:
    """A :class:`StoreError` naming ``path`` and saying what to do about an SQLite error."""
    text = str(exc)
    where = repr(str(path))
    if "locked" in text or "busy" in text:
        return StoreError(
            f"results database {where} is locked by another program (waited {timeout:g} s: "
            f"{text}); try again when that program has finished"
        )
    if "full" in text or "I/O error" in text:
        return StoreError(
            f"cannot write results database {where}: {text} (the disk may be full or failing; "
            "free some space and run the command again: runs already stored are kept)"
        )
    if "malformed" in text or "not a database" in text or isinstance(exc, zlib.error):
        return StoreError(
            f"results database {where} is damaged ({text}); restore it from a copy, or "
            "write the runs again to a new --db file"
        )
    return StoreError(f"results database {where}: {text}")


# Bounds of what a database row may claim, so that a crafted row cannot make a reader
# inflate gigabytes: a run logs at most TRACE_LIMIT events (plus a few recommendations).
MAX_EVENTS = 2 * TRACE_LIMIT
MAX_CURVE_CELLS = 64 * 100_000  # curves x ticks


def inflate_exactly(blob: bytes, size: int, what: str) -> bytes:
    """``blob`` decompressed, which must be exactly ``size`` bytes; zlib.error otherwise,
    without ever inflating more than ``size + 1`` bytes."""
    if not isinstance(blob, bytes):
        raise zlib.error(f"{what} is not a compressed blob")
    inflater = zlib.decompressobj()
    data = inflater.decompress(blob, size + 1)
    if len(data) != size or not inflater.eof:
        raise zlib.error(
            f"{what} does not hold {size} bytes as its row says (it inflates to "
            f"{'more' if len(data) > size else len(data)})"
        )
    return data


def _json_number(x: Any) -> Any:
    """JSON for a float that may be NaN or infinite (as strings), else the value."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, np.generic):
        return _json_number(x.item())
    return x


def _from_json_number(x: Any) -> Any:
    return float(x) if x in ("nan", "inf", "-inf") else x


def encode_scores(scores: StoredScores) -> tuple[str, str, str, bytes]:
    """(summary JSON, metrics JSON, curve names and shape JSON, compressed curves) of a
    scores row."""
    names = list(scores.curves)
    stacked = np.stack([np.asarray(scores.curves[k], dtype="<f8") for k in names])
    return (
        json.dumps({k: _json_number(v) for k, v in scores.summary.items()}, default=str),
        json.dumps({k: _json_number(v) for k, v in scores.metrics.items()}),
        json.dumps([names, list(stacked.shape)]),
        zlib.compress(stacked.tobytes(), 1),
    )


def decode_scores(
    version: int, summary: str, metrics: str, names_shape: str, blob: bytes
) -> StoredScores:
    """A scores row decoded, the curves inflated no further than their stated shape."""
    names, shape = json.loads(names_shape)
    if (
        not isinstance(names, list)
        or not all(isinstance(k, str) for k in names)
        or not isinstance(shape, list)
        or len(shape) != 2
        or not all(isinstance(d, int) and d >= 0 for d in shape)
        or shape[0] != len(names)
        or shape[0] * shape[1] > MAX_CURVE_CELLS
    ):
        raise ValueError(f"curve names and shape {names_shape[:200]!r} do not match")
    data = inflate_exactly(blob, shape[0] * shape[1] * 8, "the curves")
    stacked = np.frombuffer(data, dtype="<f8").reshape(shape)
    curves = {
        k: (stacked[i].astype(np.int64) if k == "n_evaluations" else stacked[i].copy())
        for i, k in enumerate(names)
    }
    return StoredScores(  # metrics stored before their rename are read under today's names
        int(version),
        {k: _from_json_number(v) for k, v in json.loads(summary).items()},
        current_names({k: _from_json_number(v) for k, v in json.loads(metrics).items()},
                      "stored metrics"),
        current_names(curves, "stored curves"),
    )
