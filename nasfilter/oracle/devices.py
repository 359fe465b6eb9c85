"""Device specifications for the analytic roofline: peak FLOP/s and memory bandwidth.

The built-in specs are FACTS §7 (dense FP16 tensor-core peak, memory bandwidth). V100 is the
default, the study's device. Users define their own with ``name:peak_tflops:bandwidth_tbs``
(for example ``mygpu:200:1.5``) or a JSON file holding ``name``, ``peak_tflops``,
``bandwidth_tbs`` and optionally ``measured_peak_tflops``, ``measured_bandwidth_tbs`` and
``description``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PEAK_SOURCES = ("spec", "measured")


class UnknownDeviceError(ValueError):
    """A device name that is neither built in nor a valid user spec."""


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
    """

    name: str
    peak_flops: float
    bandwidth: float
    measured_peak_flops: float | None = None
    measured_bandwidth: float | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip() or ":" in self.name:
            raise ValueError(
                f"device name must be a non-empty string without ':', got {self.name!r}"
            )
        for field_name in ("peak_flops", "bandwidth", "measured_peak_flops", "measured_bandwidth"):
            value = getattr(self, field_name)
            if value is None and field_name.startswith("measured"):
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValueError(
                    f"device {self.name!r}: {field_name} must be a finite number > 0, got {value!r}"
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
        return json.dumps({**self.to_dict(), "description": self.description}, sort_keys=True)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (FLOP/s and bytes/s); also the roofline's device fingerprint."""
        return {
            "kind": "spec",
            "name": self.name,
            "peak_flops": float(self.peak_flops),
            "bandwidth": float(self.bandwidth),
            "measured_peak_flops": self.measured_peak_flops,
            "measured_bandwidth": self.measured_bandwidth,
        }


def _check_source(source: str) -> None:
    if source not in PEAK_SOURCES:
        raise ValueError(f"peak source must be one of {PEAK_SOURCES}, got {source!r}")


_T = 1e12
DEVICES: dict[str, DeviceSpec] = {
    "v100": DeviceSpec(
        "v100", 125 * _T, 0.9 * _T, measured_peak_flops=100 * _T, description="NVIDIA V100 SXM2"
    ),
    "a100": DeviceSpec("a100", 312 * _T, 2.039 * _T, description="NVIDIA A100 80 GB SXM"),
    "h100": DeviceSpec("h100", 989 * _T, 3.35 * _T, description="NVIDIA H100 SXM"),
    "h200": DeviceSpec(
        "h200",
        989 * _T,
        4.8 * _T,
        measured_peak_flops=780 * _T,  # a bf16 matrix product reached 770-800 (FACTS §7)
        measured_bandwidth=4.3 * _T,
        description="NVIDIA H200 SXM",
    ),
}
DEFAULT_DEVICE = "v100"


def _from_mapping(data: Any, origin: str) -> DeviceSpec:
    if not isinstance(data, dict):
        raise UnknownDeviceError(f"device file {origin!r} must hold a JSON object, got {data!r}")
    known = {
        "name",
        "peak_tflops",
        "bandwidth_tbs",
        "measured_peak_tflops",
        "measured_bandwidth_tbs",
        "description",
    }
    unknown = sorted(set(data) - known)
    missing = sorted({"name", "peak_tflops", "bandwidth_tbs"} - set(data))
    if unknown or missing:
        raise UnknownDeviceError(
            f"device file {origin!r}: missing keys {missing}, unknown keys {unknown}; "
            f"expected {sorted(known)}"
        )

    def tera(key: str) -> float | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UnknownDeviceError(
                f"device file {origin!r}: {key} must be a number, got {value!r}"
            )
        return float(value) * _T

    peak, bw = tera("peak_tflops"), tera("bandwidth_tbs")
    assert peak is not None and bw is not None
    return DeviceSpec(
        str(data["name"]),
        peak,
        bw,
        tera("measured_peak_tflops"),
        tera("measured_bandwidth_tbs"),
        str(data.get("description", "")),
    )


def get_device(spec: str | DeviceSpec | None = None) -> DeviceSpec:
    """A device from a built-in name, ``name:peak_tflops:bandwidth_tbs``, or a JSON file path.

    None gives the default (V100). Raises UnknownDeviceError listing the known names.
    """
    if spec is None:
        return DEVICES[DEFAULT_DEVICE]
    if isinstance(spec, DeviceSpec):
        return spec
    if not isinstance(spec, str):
        raise UnknownDeviceError(f"device must be a name or a spec string, got {spec!r}")
    text = spec.strip()
    if text.lower() in DEVICES:
        return DEVICES[text.lower()]
    if text.startswith("{"):  # DeviceSpec.to_dict() as JSON (how a spec travels to workers)
        try:
            data = json.loads(text)
            return DeviceSpec(
                str(data["name"]),
                float(data["peak_flops"]),
                float(data["bandwidth"]),
                data.get("measured_peak_flops"),
                data.get("measured_bandwidth"),
                str(data.get("description", "")),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise UnknownDeviceError(f"cannot read a device from {text!r}: {exc}") from exc
    if text.count(":") == 2:
        name, peak, bw = (part.strip() for part in text.split(":"))
        try:
            peak_v, bw_v = float(peak), float(bw)
        except ValueError:
            raise UnknownDeviceError(
                f"device spec {text!r} must be name:peak_tflops:bandwidth_tbs with numbers, "
                "e.g. mygpu:200:1.5"
            ) from None
        return DeviceSpec(name, peak_v * _T, bw_v * _T, description="user-defined")
    path = Path(text)
    if text.endswith(".json") or path.is_file():
        if not path.is_file():
            raise UnknownDeviceError(f"device file {text!r} does not exist")
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise UnknownDeviceError(f"device file {text!r} is not readable JSON: {exc}") from exc
        return _from_mapping(data, text)
    raise UnknownDeviceError(
        f"unknown device {spec!r}; known devices: {', '.join(DEVICES)}; or give "
        "name:peak_tflops:bandwidth_tbs (e.g. mygpu:200:1.5) or a JSON file"
    )
