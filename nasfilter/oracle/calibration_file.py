"""The calibration file: the GPU model's fitted figures, stored with their provenance.

A calibration (:class:`Calibration`) is what ``nasfilter calibrate`` writes and every
prediction of the calibrated model reads: the sixteen
:class:`~nasfilter.oracle.gpumodel.GpuModelParams`, a label of the data they were fitted on
and the fit's record. The format is versioned (:data:`CALIBRATION_FORMAT`); a file of an
older model version is refused by name (its figures mean something else), and every figure
is checked (a finite number within its physical range) on the way in. The shipped fit is
:data:`DEFAULT_CALIBRATION`. The model's terms are :mod:`nasfilter.oracle.gpumodel`, the
fitting :mod:`nasfilter.oracle.calibration` (timm) and :mod:`nasfilter.oracle.cells`
(the tss cells), the oracle that predicts with a calibration :mod:`nasfilter.oracle.calibrated`.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nasfilter.files import atomic_write
from nasfilter.oracle.devices import _short as _short_repr
from nasfilter.oracle.gpumodel import GpuModelParams

CALIBRATION_DIR = Path(__file__).resolve().parent.parent / "data" / "calibration"
DEFAULT_CALIBRATION = CALIBRATION_DIR / "timm-rtx3090-rtx4090.json"
# 5: sixteen figures (FP32, host and pooling terms fitted on the tss cells); 4: twelve, L2
# hits, grouped convs at a memory-bound rate; 3: ten; 2: nine; 1: six
CALIBRATION_FORMAT = 5
_OLDER_FORMATS = {
    1: "six figures, before the layout-aware model",
    2: "nine figures, before the NCHW conv cost",
    3: "ten figures, before the L2 and the memory-bound rate of grouped convs",
    4: "twelve figures, before the FP32, host and pooling terms of the tss cells",
}


class CalibrationFileError(ValueError):
    """A calibration file that cannot be read (the message says what is wrong)."""


@dataclass(frozen=True)
class Calibration:
    """Fitted GPU-model figures and where they came from.

    Attributes:
        params: the fitted figures.
        fitted_on: a short label of the data ("timm rtx3090+rtx4090 eager AMP").
        provenance: the fit's record (files and their SHA-256, samples, error, command).
        path: the file it was read from, if any.
    """

    params: GpuModelParams
    fitted_on: str
    provenance: dict[str, Any]
    path: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": CALIBRATION_FORMAT,
                "model": "nasfilter.oracle.gpumodel",
                "params": self.params.to_dict(),
                "fitted_on": self.fitted_on,
                "provenance": self.provenance,
            },
            indent=2,
            sort_keys=True,
        )

    def fitted_sha256(self) -> set[str]:
        """The SHA-256 of every file the provenance records (the files it was fitted on)."""

        def found(node: Any) -> set[str]:
            if isinstance(node, dict):
                own = {node["sha256"]} if isinstance(node.get("sha256"), str) else set()
                return own.union(*(found(v) for v in node.values()))
            if isinstance(node, list):
                return set().union(*(found(v) for v in node))
            return set()

        return found(self.provenance)

    def save(self, path: str | Path, force: bool = False) -> Path:
        """Write the calibration as JSON; an existing file is kept unless ``force``."""
        unset = [k for k, v in self.params.to_dict().items() if not math.isfinite(v)]
        if unset:
            raise ValueError(
                f"calibration figure(s) {', '.join(unset)} not fitted (not finite); a "
                "calibration file holds every figure: fit the cells too (fit_cells)"
            )
        p = Path(path)
        if p.exists() and not force:
            raise FileExistsError(f"{str(p)!r} exists; pass --force to overwrite it")
        with atomic_write(p, "w") as fh:
            fh.write(self.to_json() + "\n")
        return p


def load_calibration(path: str | Path | None = None) -> Calibration:
    """Read a calibration file (default: the shipped :data:`DEFAULT_CALIBRATION`).

    The one way to load a user's calibration (``nasfilter calibrate --out FILE``), for the
    survey, the oracle and any other command that takes ``--calibration FILE``. Raises
    :class:`CalibrationFileError` naming the file and what is wrong with it.
    """
    p = Path(path) if path is not None else DEFAULT_CALIBRATION
    return _load(str(p))


@functools.lru_cache(maxsize=8)
def _load(path: str) -> Calibration:
    p = Path(path)
    if not p.is_file():
        raise CalibrationFileError(
            f"calibration file {path!r} does not exist; make one with `nasfilter calibrate`"
        )
    try:
        data = json.loads(p.read_text(), parse_constant=_refuse_constant)
    except (OSError, ValueError, RecursionError) as exc:
        raise CalibrationFileError(
            f"calibration file {path!r} is not readable JSON: {exc}"
        ) from exc
    if not isinstance(data, dict):
        raise CalibrationFileError(f"calibration file {path!r} must hold a JSON object")
    fmt = data.get("format")
    if isinstance(fmt, int) and not isinstance(fmt, bool) and fmt in _OLDER_FORMATS:
        raise CalibrationFileError(
            f"calibration file {path!r} was fitted by an older nasfilter (format "
            f"{fmt}, {_OLDER_FORMATS[fmt]}); its figures mean something "
            f"else in this model: refit it with `nasfilter calibrate`"
        )
    if isinstance(fmt, bool) or fmt != CALIBRATION_FORMAT:
        raise CalibrationFileError(
            f"calibration file {path!r} is not a nasfilter calibration of format "
            f"{CALIBRATION_FORMAT} (its format is {_short_repr(fmt)})"
        )
    params = _read_params(data.get("params"), path)
    fitted_on, provenance = data.get("fitted_on", ""), data.get("provenance", {})
    if not isinstance(fitted_on, str):
        raise CalibrationFileError(
            f"calibration file {path!r}: fitted_on must be a string, got {_short_repr(fitted_on)}"
        )
    if not isinstance(provenance, dict):
        raise CalibrationFileError(
            f"calibration file {path!r}: provenance must be a JSON object, got "
            f"{_short_repr(provenance)}"
        )
    return Calibration(params, fitted_on, provenance, path)


def _refuse_constant(name: str) -> float:
    """JSON's non-standard NaN and Infinity are refused (a fitted figure is finite)."""
    raise ValueError(f"{name} is not a number a calibration may hold")


def _read_params(raw: object, path: str) -> GpuModelParams:
    """The figures of a calibration file, each checked: a finite number (not a bool, string,
    list or null) within its physical range; CalibrationFileError naming field and value."""
    names = list(GpuModelParams.__dataclass_fields__)
    if not isinstance(raw, dict) or set(raw) != set(names):
        got = sorted(map(str, raw)) if isinstance(raw, dict) else _short_repr(raw)
        raise CalibrationFileError(
            f"calibration file {path!r}: params must have exactly the keys {names}, got {got}"
        )
    values = {}
    for name in names:
        value = raw[name]
        number = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # an integer of hundreds of digits
                number = None
        if number is None or not math.isfinite(number):
            raise CalibrationFileError(
                f"calibration file {path!r}: params.{name} must be a finite number, got "
                f"{_short_repr(value)}"
            )
        values[name] = number
    try:
        # every figure is given and finite, so none is replaced by another's value
        return GpuModelParams(**values)
    except ValueError as exc:
        raise CalibrationFileError(f"calibration file {path!r}: {exc}") from exc


__all__ = [
    "CALIBRATION_DIR",
    "CALIBRATION_FORMAT",
    "DEFAULT_CALIBRATION",
    "Calibration",
    "CalibrationFileError",
    "load_calibration",
]
