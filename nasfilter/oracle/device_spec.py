"""The device spec: :class:`DeviceSpec`, its checks, and the errors of device look-ups.

The built-in devices and the readers of user specs are :mod:`nasfilter.oracle.devices`
(which re-exports everything here).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

PEAK_SOURCES = ("spec", "measured")


class UnknownDeviceError(ValueError):
    """A device name that is neither built in nor a valid user spec."""


class MissingDeviceFieldError(ValueError):
    """A device spec lacks a figure that a model needs (the message names it and its meaning)."""


# The optional figures a GPU model may need, with what each means (for error messages and docs).
MODEL_FIELDS: dict[str, str] = {
    "sm_count": (
        "the number of streaming multiprocessors; a GEMM's output tiles run on them in waves, "
        "so it sets the wave quantization (JSON key sm_count, an integer)"
    ),
    "memory_bytes": (
        "the device memory size; it bounds the largest batch that fits (JSON key memory_gb, "
        "in GB of 1e9 bytes)"
    ),
    "l2_bytes": "the L2 cache size (JSON key l2_mb, in MB of 1e6 bytes)",
    "fp32_peak_flops": (
        "the FP32 rate of the CUDA cores, the roof of a network run in FP32 (JSON key "
        "fp32_peak_tflops, in TFLOP/s)"
    ),
    "measured_host_kernel_seconds": (
        "the host's measured time to issue one PyTorch eager kernel on the machine the GPU "
        "runs in (Python, the dispatcher, the launch); it replaces the fitted host time, and "
        "scales the fitted extra of a conv call by the same factor (JSON key "
        "measured_host_kernel_us, in microseconds)"
    ),
}


# Figures no GPU comes near (the largest today: about 2 PFLOP/s dense FP16, 8 TB/s), nor any
# host (issuing an eager kernel takes some 5-100 us): a value above one is a unit mistake
# (FLOP/s given as TFLOP/s, seconds as us), refused naming the field and its file unit.
_ABSURD: dict[str, tuple[float, str, str]] = {
    "peak_flops": (1e16, "10 PFLOP/s", "TFLOP/s"),
    "measured_peak_flops": (1e16, "10 PFLOP/s", "TFLOP/s"),
    "fp16_accumulate_peak_flops": (1e16, "10 PFLOP/s", "TFLOP/s"),
    "fp32_peak_flops": (1e16, "10 PFLOP/s", "TFLOP/s"),
    "bandwidth": (1e14, "100 TB/s", "TB/s"),
    "measured_bandwidth": (1e14, "100 TB/s", "TB/s"),
    "measured_host_kernel_seconds": (1e-3, "1 ms", "us"),
}
MAX_SMS = 100_000  # far above any GPU (H100: 132): a larger sm_count is a typo
MAX_JSON_BYTES = 1_000_000  # a device file is a few hundred bytes


def _finite(value: Any) -> float | None:
    """``value`` as a finite float, or None for a bool, a non-number or an overflow."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return None
    return number if math.isfinite(number) else None


def _short(value: Any) -> str:
    """``repr(value)``, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


@dataclass(frozen=True)
class DeviceSpec:
    """A processor as the roofline sees it.

    Attributes:
        name: short lowercase name ("v100").
        peak_flops: dense FP16 tensor peak from the data sheet, FLOP/s.
        bandwidth: memory bandwidth from the data sheet, bytes/s.
        measured_peak_flops: a peak reached by a real matrix product, FLOP/s, if known.
        measured_bandwidth: a bandwidth reached by a real copy, bytes/s, if known.
        description: a human label.
        sm_count: streaming multiprocessors, if known.
        memory_bytes: device memory, bytes, if known.
        l2_bytes: L2 cache, bytes, if known (the GPU model counts no L2 hits without it).
        fp16_accumulate_peak_flops: the FP16 tensor rate with FP16 accumulation where it
            differs from ``peak_flops`` (GeForce: twice), FLOP/s; informational.
        sources: where the figures come from (data sheets, whitepapers).
        fp32_peak_flops: the FP32 rate of the CUDA cores (FMA = 2 FLOPs, boost clock),
            FLOP/s, if known: the roof of a network run in FP32.
        tensor_cores: whether the GPU has FP16 tensor cores (Volta and later); None if not
            stated. Without them ``peak_flops`` is the CUDA cores' FP16 rate (Pascal GP102:
            1/64 of FP32).
        measured_host_kernel_seconds: the host's measured seconds to issue one eager kernel
            on the machine this GPU runs in, if known: a figure of the machine (CPU, driver,
            framework), not of the GPU, which bounds small-batch eager networks
            (:data:`MODEL_FIELDS`).
    """

    name: str
    peak_flops: float
    bandwidth: float
    measured_peak_flops: float | None = None
    measured_bandwidth: float | None = None
    description: str = ""
    sm_count: int | None = None
    memory_bytes: float | None = None
    l2_bytes: float | None = None
    fp16_accumulate_peak_flops: float | None = None
    sources: str = ""
    fp32_peak_flops: float | None = None
    tensor_cores: bool | None = None
    measured_host_kernel_seconds: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip() or ":" in self.name:
            raise ValueError(
                f"device name must be a non-empty string without ':', got {self.name!r}"
            )
        optional = (
            "measured_peak_flops",
            "measured_bandwidth",
            "memory_bytes",
            "l2_bytes",
            "fp16_accumulate_peak_flops",
            "fp32_peak_flops",
            "measured_host_kernel_seconds",
        )
        for field_name in ("peak_flops", "bandwidth", *optional):
            value = getattr(self, field_name)
            if value is None and field_name in optional:
                continue
            number = _finite(value)
            if number is None or number <= 0:
                raise ValueError(
                    f"device {self.name!r}: {field_name} must be a finite number > 0, "
                    f"got {_short(value)}"
                )
        if self.tensor_cores is not None and not isinstance(self.tensor_cores, bool):
            raise ValueError(
                f"device {self.name!r}: tensor_cores must be true or false, "
                f"got {_short(self.tensor_cores)}"
            )

        count = self.sm_count
        if count is not None and (
            isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_SMS
        ):
            raise ValueError(
                f"device {self.name!r}: sm_count must be an integer from 1 to {MAX_SMS}, "
                f"got {_short(count)}"
            )

    def require(self, *fields: str) -> None:
        """Raise MissingDeviceFieldError naming each of ``fields`` (MODEL_FIELDS) that is unset."""
        missing = [f for f in fields if getattr(self, f) is None]
        if missing:
            what = "; ".join(f"{f}: {MODEL_FIELDS.get(f, f)}" for f in missing)
            raise MissingDeviceFieldError(
                f"device {self.name!r} lacks {', '.join(missing)}, which this model needs "
                f"({what}); give a JSON device file with these keys"
            )

    def peak(self, source: str = "spec") -> float:
        """Peak FLOP/s from ``source``: "spec", or "measured" (falls back to the spec)."""
        _check_source(source)
        if source == "measured" and self.measured_peak_flops is not None:
            return float(self.measured_peak_flops)
        return float(self.peak_flops)

    def memory_bandwidth(self, source: str = "spec") -> float:
        """Bandwidth in bytes/s from ``source``: "spec", or "measured" (falls back to the spec)."""
        _check_source(source)
        if source == "measured" and self.measured_bandwidth is not None:
            return float(self.measured_bandwidth)
        return float(self.bandwidth)

    def resolved_source(self, source: str) -> str:
        """Return "measured" only when a measured peak exists; otherwise "spec"."""
        _check_source(source)
        return "measured" if source == "measured" and self.measured_peak_flops else "spec"

    def cmr(self, source: str = "spec") -> float:
        """Compute-to-memory ratio, FLOP/byte: peak / bandwidth (V100 spec: 139)."""
        return self.peak(source) / self.memory_bandwidth(source)

    def to_json(self) -> str:
        """The spec as a JSON string that :func:`get_device` reads back."""
        return json.dumps(
            {**self.to_dict(), "description": self.description, "sources": self.sources},
            sort_keys=True,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (FLOP/s and bytes/s); also the oracles' device fingerprint.

        The GPU-model figures appear only when set, so the roofline fingerprint of a spec
        without them is what it always was.
        """
        out: dict[str, Any] = {
            "kind": "spec",
            "name": self.name,
            "peak_flops": float(self.peak_flops),
            "bandwidth": float(self.bandwidth),
            "measured_peak_flops": self.measured_peak_flops,
            "measured_bandwidth": self.measured_bandwidth,
        }
        for key in _EXTRA_FIELDS:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


_EXTRA_FIELDS = (
    "sm_count",
    "memory_bytes",
    "l2_bytes",
    "fp16_accumulate_peak_flops",
    "fp32_peak_flops",
    "tensor_cores",
    "measured_host_kernel_seconds",
)


def _check_plausible(spec: DeviceSpec, origin: str) -> DeviceSpec:
    """``spec`` unless a user-given figure is above :data:`_ABSURD` (UnknownDeviceError naming
    the field and value). Only user input is checked: code may build a spec with an unbounded
    figure to switch a roof off."""
    for field_name, (limit, words, unit) in _ABSURD.items():
        value = getattr(spec, field_name)
        if value is not None and value > limit:
            raise UnknownDeviceError(
                f"device {origin!r}: {field_name} = {value:g} is above {words}, no device's "
                f"figure; check the units (it is given in {unit})"
            )
    return spec


def _check_source(source: str) -> None:
    if source not in PEAK_SOURCES:
        raise ValueError(f"peak source must be one of {PEAK_SOURCES}, got {source!r}")
