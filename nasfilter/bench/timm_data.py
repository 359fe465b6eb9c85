"""timm's published results, shipped in ``nasfilter/data/timm/`` (Apache-2.0, see its README).

The one reader of these files, for the survey and the oracle's calibration alike:

- ImageNet top-1 per architecture and image size (:func:`imagenet_top1`): the best pretrained
  tag of that architecture evaluated at that size.
- Measured inference throughput (:func:`read_benchmark`): a CSV in the format of timm's
  ``benchmark.py`` (the shipped RTX 3090 / 4090 files, or a user's own), one
  :class:`BenchmarkRow` per (model, image size).

Error policy: a file that is missing, not a UTF-8 CSV, without a required column or without
rows, and any row whose model, image size, throughput or batch is not a valid positive
value, raises ValueError naming the file (and the line, column and value). The optional
columns (``infer_gmacs``, ``param_count``) read as NaN where empty or not a number; a user of
them (the calibration's MACs check) leaves such rows out and counts them.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "timm"
RESULTS_FILE = DATA / "results-imagenet.csv"
LAYOUTS = ("nchw", "nhwc")
SHIPPED_DEVICES = ("rtx3090", "rtx4090")
# Columns a measured CSV must have (timm's benchmark.py writes more; extra ones are ignored).
BENCHMARK_COLUMNS = ("model", "infer_img_size", "infer_samples_per_sec", "infer_batch_size")
# Every column timm's benchmark.py writes for inference.
TIMM_COLUMNS = (
    "model",
    "infer_img_size",
    "infer_samples_per_sec",
    "infer_step_time",
    "infer_batch_size",
    "param_count",
    "infer_gmacs",
    "infer_macts",
)


@dataclass(frozen=True)
class BenchmarkRow:
    """One measured row: images/s of ``model`` (architecture) at ``img_size`` px and ``batch``.

    ``gmacs`` and ``params_m`` are the file's published GMACs per image and millions of
    parameters, NaN where the file has none.
    """

    model: str
    img_size: int
    batch: int
    throughput: float
    gmacs: float = math.nan
    params_m: float = math.nan


def shipped_benchmark(device: str, layout: str = "nchw") -> Path:
    """The shipped measurement file of ``device`` (rtx3090, rtx4090) and ``layout``."""
    if device not in SHIPPED_DEVICES:
        raise ValueError(
            f"no shipped measurements for device {device!r}; shipped: {SHIPPED_DEVICES}"
        )
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    return DATA / f"benchmark-infer-amp-{layout}-pt240-cu124-{device}.csv"


def read_benchmark(
    path: str | os.PathLike[str], required: tuple[str, ...] = BENCHMARK_COLUMNS
) -> list[BenchmarkRow]:
    """Every row of a measured CSV in timm's ``benchmark.py`` format (see the error policy).

    ``required``: the columns the file must have (default :data:`BENCHMARK_COLUMNS`).
    Duplicate (model, img_size) rows: the last one wins, as in timm's own merged files.
    """
    return read_benchmark_digest(path, required)[0]


def read_benchmark_digest(
    path: str | os.PathLike[str], required: tuple[str, ...] = BENCHMARK_COLUMNS
) -> tuple[list[BenchmarkRow], str]:
    """:func:`read_benchmark` and the SHA-256 (hex) of the bytes it read."""
    source = Path(path)
    if not source.is_file():
        raise ValueError(f"measured CSV {str(source)!r} does not exist or is not a file")
    raw = source.read_bytes()
    try:
        rows = _read_rows(source, raw.decode("utf-8"), required)
    except (UnicodeDecodeError, csv.Error) as exc:
        why = f"byte {exc.start} is not UTF-8" if isinstance(exc, UnicodeDecodeError) else exc
        raise ValueError(
            f"measured CSV {str(source)!r} is not a text CSV ({why}); give a CSV in timm's "
            "benchmark format"
        ) from None
    return rows, hashlib.sha256(raw).hexdigest()


def _number(text: str | None, what: str, where: str, integer: bool = False) -> float:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {what} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0 or (integer and value != int(value)):
        kind = "a positive integer" if integer else "a finite number > 0"
        raise ValueError(f"{where}: {what} must be {kind}, got {text!r}")
    return value


def _optional(text: str | None) -> float:
    try:
        value = float(text) if text not in (None, "") else math.nan
    except ValueError:
        return math.nan
    return value if math.isfinite(value) and value > 0 else math.nan


def _read_rows(source: Path, text: str, required: tuple[str, ...]) -> list[BenchmarkRow]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = reader.fieldnames or []
    missing = [c for c in required if c not in columns]
    if missing:
        raise ValueError(
            f"measured CSV {str(source)!r} is not in timm's benchmark format: missing "
            f"column(s) {missing}; it has {columns}; expected at least {list(required)}"
        )
    rows: dict[tuple[str, int], BenchmarkRow] = {}
    for k, row in enumerate(reader, start=2):
        where = f"{source.name} line {k}"
        model = (row.get("model") or "").strip()
        if not model:
            raise ValueError(f"{where}: empty model name")
        size = int(_number(row["infer_img_size"], "infer_img_size", where, integer=True))
        rows[(model, size)] = BenchmarkRow(
            model=model,
            img_size=size,
            batch=int(_number(row["infer_batch_size"], "infer_batch_size", where, integer=True)),
            throughput=_number(row["infer_samples_per_sec"], "infer_samples_per_sec", where),
            gmacs=_optional(row.get("infer_gmacs")),
            params_m=_optional(row.get("param_count")),
        )
    if not rows:
        raise ValueError(f"measured CSV {str(source)!r} has no rows")
    return list(rows.values())


def imagenet_top1() -> dict[tuple[str, int], float]:
    """Best published ImageNet top-1 (%) per (architecture, image size)."""
    best: dict[tuple[str, int], float] = {}
    with RESULTS_FILE.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            key = (row["model"].split(".", 1)[0], int(row["img_size"]))
            top1 = float(row["top1"])
            if top1 > best.get(key, -math.inf):
                best[key] = top1
    return best
