"""One oracle answer for one architecture: the :class:`Measurement` row and its status.

Utilization = achieved FLOP/s / peak FLOP/s = throughput x FLOPs per image / peak
(docs/facts.md §4).
FLOPs per image are 2 x the NATS-Bench MACs (``nasfilter.bench.costs.flops``) for every backend, so
utilizations of different backends are comparable.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nasfilter.bench.spaces import Space, get_space

# Bumped whenever the meaning of a stored row changes; part of every cache key.
SCHEMA_VERSION = 1


class Status(str, enum.Enum):
    """How a measurement ended."""

    OK = "ok"
    OOM = "oom"  # out of memory even at the smallest batch
    ERROR = "error"


class InvalidMeasurement(ValueError):
    """A row that must not be stored: NaN, infinite or non-positive throughput, and the like."""


def config_space(config: Mapping[str, Any]) -> Space:
    """The search space a backend config's rows index: its ``"space"`` (tss measurements
    carry ``"tss"``), sss when absent; InvalidMeasurement naming an unknown one."""
    try:
        return get_space(config.get("space", "sss"))
    except ValueError as exc:
        raise InvalidMeasurement(f"backend config {dict(config)!r}: {exc}") from None


def canonical_json(value: Mapping[str, Any]) -> str:
    """Deterministic compact JSON of a config or fingerprint (sorted keys): a cache key part."""
    return json.dumps(dict(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def device_label(device: Mapping[str, Any]) -> str:
    """A short human label of a device fingerprint ("v100 (spec)", "Intel Xeon ..., 2 cores")."""
    kind = device.get("kind")
    if kind == "spec":
        return f"{device.get('name')} (spec)"
    if kind == "cpu":
        return f"{device.get('cpu', 'cpu')}, {device.get('logical_cpus', '?')} logical CPUs"
    if kind == "cuda":
        return str(device.get("gpu", "cuda"))
    return str(device.get("name", kind or "unknown"))


def _positive(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@dataclass(frozen=True)
class Measurement:
    """The oracle's answer for one architecture on one dataset, backend and device.

    Attributes:
        arch: NATS index.
        dataset: dataset name (input size and classes).
        backend: backend name ("roofline", "onnxruntime", "torch-cuda", "tensorrt").
        config: the backend's settings (batch policy, timing windows, ...), JSON-ready.
        device: the device fingerprint, JSON-ready (``kind`` is "spec", "cpu" or "cuda").
        status: ok, oom or error.
        throughput: images per second; NaN unless ``status`` is ok.
        batch_size: the batch timed (None if none ran).
        max_batch: the largest batch that fit (None where not searched).
        flops_per_image: 2 x MACs, FLOPs.
        peak_flops: the peak the utilization is computed from, FLOP/s.
        peak_source: "spec" (data sheet) or "measured" (a microbenchmark).
        timings: seconds and ratios of the measurement itself (median, cv, setup, ...).
        error: the error text when ``status`` is not ok.
        schema: :data:`SCHEMA_VERSION` of the row.
    """

    arch: int
    dataset: str
    backend: str
    config: Mapping[str, Any]
    device: Mapping[str, Any]
    status: Status
    throughput: float
    batch_size: int | None
    max_batch: int | None
    flops_per_image: float
    peak_flops: float
    peak_source: str
    timings: Mapping[str, float] = field(default_factory=dict)
    error: str = ""
    schema: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))
        if self.status is Status.OK:
            if not _positive(self.throughput):
                raise InvalidMeasurement(
                    f"architecture {self.arch} ({self.backend}): throughput must be finite and "
                    f"> 0 images/s for an ok measurement, got {self.throughput!r}"
                )
        elif not (isinstance(self.throughput, float) and math.isnan(self.throughput)):
            raise InvalidMeasurement(
                f"architecture {self.arch}: a {self.status.value} measurement has no throughput "
                f"(NaN expected), got {self.throughput!r}"
            )
        if not _positive(self.flops_per_image):
            raise InvalidMeasurement(
                f"architecture {self.arch}: flops_per_image must be > 0, "
                f"got {self.flops_per_image!r}"
            )
        if not _positive(self.peak_flops):
            raise InvalidMeasurement(
                f"architecture {self.arch}: peak_flops must be > 0, got {self.peak_flops!r}"
            )
        if self.peak_source not in ("spec", "measured"):
            raise InvalidMeasurement(
                f"peak_source must be 'spec' or 'measured', got {self.peak_source!r}"
            )

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def achieved_flops(self) -> float:
        """FLOP/s reached: throughput x FLOPs per image (NaN unless ok)."""
        return self.throughput * self.flops_per_image

    @property
    def utilization(self) -> float:
        """Achieved FLOP/s / peak FLOP/s, a fraction (NaN unless ok)."""
        return self.achieved_flops / self.peak_flops

    @property
    def config_key(self) -> str:
        return canonical_json(self.config)

    @property
    def device_key(self) -> str:
        return canonical_json(self.device)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict holding every field plus the derived figures (NaN as None)."""

        def num(x: float) -> float | None:
            return None if math.isnan(x) else float(x)

        return {
            "arch": self.arch,
            "dataset": self.dataset,
            "backend": self.backend,
            "config": dict(self.config),
            "device": dict(self.device),
            "status": self.status.value,
            "throughput": num(self.throughput),
            "batch_size": self.batch_size,
            "max_batch": self.max_batch,
            "flops_per_image": self.flops_per_image,
            "achieved_flops": num(self.achieved_flops),
            "utilization": num(self.utilization),
            "peak_flops": self.peak_flops,
            "peak_source": self.peak_source,
            "timings": dict(self.timings),
            "error": self.error,
            "schema": self.schema,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measurement:
        """Inverse of :meth:`to_dict` (derived figures are recomputed, not read)."""
        try:
            thr = data["throughput"]
            return cls(
                arch=int(data["arch"]),
                dataset=str(data["dataset"]),
                backend=str(data["backend"]),
                config=dict(data["config"]),
                device=dict(data["device"]),
                status=Status(data["status"]),
                throughput=math.nan if thr is None else float(thr),
                batch_size=data["batch_size"],
                max_batch=data["max_batch"],
                flops_per_image=float(data["flops_per_image"]),
                peak_flops=float(data["peak_flops"]),
                peak_source=str(data["peak_source"]),
                timings=dict(data.get("timings", {})),
                error=str(data.get("error", "")),
                schema=int(data.get("schema", SCHEMA_VERSION)),
            )
        except (KeyError, TypeError) as exc:
            raise InvalidMeasurement(f"not a measurement row: {exc!r} in {dict(data)!r}") from exc

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False)
