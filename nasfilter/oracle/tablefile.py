"""Measurement table files: the measured rows of one backend on one device, as a small .npz.

This is the format of ``nasfilter measure --export`` and of the shipped onnxruntime sample.
It holds only the measured architectures (compact columns) plus a JSON ``meta`` record with
the backend, its config, the device fingerprint, the dataset and any settings worth keeping;
:meth:`MeasurementTable.proxy_table` spreads it into the simulator's
:class:`~nasfilter.bench.proxy.ProxyTable` (NaN where unmeasured).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.spaces import MAX_SIZE, Space
from nasfilter.files import MAX_META_BYTES, atomic_write, read_npz
from nasfilter.oracle.measurement import SCHEMA_VERSION, Measurement, config_space, device_label

FORMAT = "nasfilter-oracle-table"
FORMAT_VERSION = 1
_COLUMNS = (
    "arch",
    "throughput",
    "utilization",
    "flops_per_image",
    "peak_flops",
    "batch_size",
    "max_batch",
    "median_s",
    "cv",
)


@dataclass(frozen=True, eq=False)
class MeasurementTable:
    """Measured rows of one (dataset, backend, config, device) group.

    Attributes:
        meta: backend, config, device, dataset, label, created and extra settings.
        arch: NATS indices, int64 (k,), sorted.
        throughput: images/s, (k,).
        utilization: fraction of ``peak_flops``, (k,).
        flops_per_image: FLOPs, (k,).
        peak_flops: FLOP/s each row's utilization was computed against, (k,).
        batch_size, max_batch: int64 (k,), -1 where unknown.
        median_s: seconds per timed run, (k,), NaN where unknown.
        cv: coefficient of variation of the timing trials, (k,), NaN where unknown.
    """

    meta: dict[str, Any]
    arch: np.ndarray
    throughput: np.ndarray
    utilization: np.ndarray
    flops_per_image: np.ndarray
    peak_flops: np.ndarray
    batch_size: np.ndarray
    max_batch: np.ndarray
    median_s: np.ndarray
    cv: np.ndarray

    def __len__(self) -> int:
        return len(self.arch)

    @property
    def dataset(self) -> str:
        return str(self.meta["dataset"])

    @property
    def backend(self) -> str:
        return str(self.meta["backend"])

    @property
    def label(self) -> str:
        return str(self.meta.get("label", self.backend))

    @property
    def space(self) -> Space:
        """The search space the rows index: the config's ``"space"``, sss when absent."""
        config = self.meta.get("config")
        return config_space(config if isinstance(config, dict) else {})

    def proxy_table(self) -> ProxyTable:
        """Columns (size,) of the table's space (sss: 32768) for the simulator, NaN where not
        measured."""
        space = self.space
        util = np.full(space.size, np.nan)
        thr = np.full(space.size, np.nan)
        util[self.arch] = self.utilization
        thr[self.arch] = self.throughput
        provenance: dict[str, Any] = {
            key: self.meta[key]
            for key in ("backend", "dataset", "config", "device", "created", "source")
            if key in self.meta
        }
        provenance["synthetic"] = self.backend in ("roofline", "calibrated")
        provenance["n_measured"] = len(self)
        return ProxyTable(util, thr, self.label, provenance, space=space)


def table_label(backend: str, device: dict[str, Any]) -> str:
    return f"{backend} on {device_label(device)}"


def build_table(
    rows: Sequence[Measurement], extra: dict[str, Any] | None = None
) -> MeasurementTable:
    """A table of ok ``rows``, all of one group; raises ValueError if they are mixed or empty."""
    ok = sorted((m for m in rows if m.ok), key=lambda m: m.arch)
    if not ok:
        raise ValueError("no ok measurements to put in a table")
    first = ok[0]
    keys = {(m.dataset, m.backend, m.config_key, m.device_key) for m in ok}
    if len(keys) > 1:
        raise ValueError(
            f"a table holds one dataset, backend, config and device; got {len(keys)} "
            "different groups"
        )
    if len({m.arch for m in ok}) != len(ok):
        raise ValueError("a table holds each architecture at most once")

    def opt_int(x: int | None) -> int:
        return -1 if x is None else int(x)

    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "schema": SCHEMA_VERSION,
        "dataset": first.dataset,
        "backend": first.backend,
        "config": dict(first.config),
        "device": dict(first.device),
        "peak_source": first.peak_source,
        "label": table_label(first.backend, dict(first.device)),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **(extra or {}),
    }
    return MeasurementTable(
        meta=meta,
        arch=np.array([m.arch for m in ok], dtype=np.int64),
        throughput=np.array([m.throughput for m in ok]),
        utilization=np.array([m.utilization for m in ok]),
        flops_per_image=np.array([m.flops_per_image for m in ok]),
        peak_flops=np.array([m.peak_flops for m in ok]),
        batch_size=np.array([opt_int(m.batch_size) for m in ok], dtype=np.int64),
        max_batch=np.array([opt_int(m.max_batch) for m in ok], dtype=np.int64),
        median_s=np.array([m.timings.get("median_s", np.nan) for m in ok]),
        cv=np.array([m.timings.get("cv", np.nan) for m in ok]),
    )


def save_table(table: MeasurementTable, path: str | os.PathLike[str]) -> Path:
    """Write ``table`` as a compressed .npz, atomically; returns the path."""
    target = Path(path)
    if target.suffix != ".npz":
        raise ValueError(f"measurement table files end in .npz, got {str(target)!r}")
    columns = {name: getattr(table, name) for name in _COLUMNS}
    with atomic_write(target) as fh:
        np.savez_compressed(fh, meta=np.array(json.dumps(table.meta, sort_keys=True)), **columns)
    return target


def load_table_file(path: str | os.PathLike[str]) -> MeasurementTable:
    """Read a file written by :func:`save_table`; ValueError on a foreign or corrupt file."""
    source = Path(path)
    limits = {"meta": MAX_META_BYTES, **{c: 8 * MAX_SIZE for c in _COLUMNS}}  # <= 1 row per arch
    data = read_npz(source, "nasfilter measurement table", "`nasfilter measure --export`", limits)
    try:
        meta = json.loads(str(data["meta"]))
    except (KeyError, ValueError) as exc:
        raise ValueError(
            f"{str(source)!r} is not a nasfilter measurement table: unreadable metadata ({exc})"
        ) from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{str(source)!r} is not a nasfilter measurement table (wrong format)")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{str(source)!r} has table format version {meta.get('format_version')}; this "
            f"nasfilter reads version {FORMAT_VERSION}"
        )
    missing = [c for c in _COLUMNS if c not in data]
    if missing:
        raise ValueError(f"{str(source)!r} lacks columns {missing}")
    meta.setdefault("source", str(source))
    table = MeasurementTable(meta=meta, **{c: data[c] for c in _COLUMNS})
    n = len(table.arch)
    if any(getattr(table, c).shape != (n,) for c in _COLUMNS):
        raise ValueError(f"{str(source)!r} has columns of different lengths")
    try:
        size = table.space.size
    except ValueError as exc:
        raise ValueError(f"{str(source)!r}: {exc}") from None
    if n and (table.arch.min() < 0 or table.arch.max() >= size):
        raise ValueError(f"{str(source)!r} holds architecture indices outside [0, {size - 1}]")
    if not (np.isfinite(table.throughput).all() and (table.throughput > 0).all()):
        raise ValueError(f"{str(source)!r} holds non-finite or non-positive throughputs")
    return table
