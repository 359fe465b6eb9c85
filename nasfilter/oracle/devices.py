"""Device specifications: peak FLOP/s, memory bandwidth, and what a GPU model needs besides.

The built-in specs are docs/facts.md §7 (dense FP16 tensor-core peak, memory bandwidth) plus the
figures the calibrated GPU model (:mod:`nasfilter.oracle.gpumodel`) reads: the number of
streaming multiprocessors (the wave size of a GEMM), the memory size (the largest batch) and
the L2 size, each from the vendor's architecture whitepaper or data sheet named in the spec's
``sources``. V100 is the default, the study's device.

``peak_flops`` is the dense FP16 tensor-core rate **with FP32 accumulation**, the rate that
cuDNN, PyTorch AMP and TensorRT's FP16 kernels run at. GeForce cards (RTX 3090, 4090) run FP16
tensor math at twice that rate only when accumulating in FP16; that figure is kept in
``fp16_accumulate_peak_flops`` and used by nothing by default (docs/facts.md §7). Data-centre cards
have one rate for both.

Users define their own with ``name:peak_tflops:bandwidth_tbs`` (for example ``mygpu:200:1.5``;
enough for the plain roofline) or a JSON file holding ``name``, ``peak_tflops``,
``bandwidth_tbs`` and optionally ``measured_peak_tflops``, ``measured_bandwidth_tbs``,
``sm_count``, ``memory_gb``, ``l2_mb``, ``fp16_accumulate_peak_tflops``, ``fp32_peak_tflops``,
``tensor_cores``, ``measured_host_kernel_us``, ``sources`` and ``description``. The
calibrated model needs ``sm_count`` and ``memory_gb`` (:data:`MODEL_FIELDS` says what each
means); it reads ``l2_mb`` where given (reads of a tensor just written hit the L2) and,
without it, counts no L2 hits (a conservative default: the prediction is then at most as
fast as with the L2). ``measured_host_kernel_us`` is the one figure of the machine rather
than the GPU: the host's time to issue an eager kernel, which bounds small batches
(:func:`nasfilter.oracle.cells.host_kernel_from_latency` derives it from measured networks).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from nasfilter.oracle.device_spec import _ABSURD as _ABSURD
from nasfilter.oracle.device_spec import _EXTRA_FIELDS as _EXTRA_FIELDS
from nasfilter.oracle.device_spec import MAX_JSON_BYTES as MAX_JSON_BYTES
from nasfilter.oracle.device_spec import MAX_SMS as MAX_SMS
from nasfilter.oracle.device_spec import MODEL_FIELDS as MODEL_FIELDS
from nasfilter.oracle.device_spec import PEAK_SOURCES as PEAK_SOURCES
from nasfilter.oracle.device_spec import DeviceSpec as DeviceSpec
from nasfilter.oracle.device_spec import MissingDeviceFieldError as MissingDeviceFieldError
from nasfilter.oracle.device_spec import UnknownDeviceError as UnknownDeviceError
from nasfilter.oracle.device_spec import _check_plausible as _check_plausible
from nasfilter.oracle.device_spec import _check_source as _check_source
from nasfilter.oracle.device_spec import _finite as _finite
from nasfilter.oracle.device_spec import _short as _short

_T = 1e12
_GB = 1e9
_MB = 1e6
_MIB = 2**20
_KIB = 2**10
_US = 1e-6
DEVICES: dict[str, DeviceSpec] = {
    "v100": DeviceSpec(
        "v100",
        125 * _T,
        0.9 * _T,
        measured_peak_flops=100 * _T,  # the study's measured peak (docs/facts.md §4)
        description="NVIDIA V100 SXM2 16 GB",
        sm_count=80,
        memory_bytes=16 * _GB,
        l2_bytes=6 * _MIB,
        fp32_peak_flops=15.7 * _T,
        tensor_cores=True,
        sources="NVIDIA Tesla V100 GPU Architecture whitepaper (2017): 80 SMs, 6144 KB L2, "
        "16 GB HBM2, 900 GB/s, 125 TFLOP/s tensor, 15.7 TFLOP/s FP32 (5120 CUDA cores x 2 x "
        "1.53 GHz); docs/facts.md §7",
    ),
    "a100": DeviceSpec(
        "a100",
        312 * _T,
        2.039 * _T,
        description="NVIDIA A100 80 GB SXM",
        sm_count=108,
        memory_bytes=80 * _GB,
        l2_bytes=40 * _MB,
        fp32_peak_flops=19.5 * _T,
        tensor_cores=True,
        sources="NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs, 40 MB L2; "
        "A100 80GB data sheet: 80 GB HBM2e, 2039 GB/s, 312 TFLOP/s FP16 tensor, 19.5 TFLOP/s "
        "FP32 (6912 CUDA cores x 2 x 1.41 GHz); docs/facts.md §7",
    ),
    "h100": DeviceSpec(
        "h100",
        989 * _T,
        3.35 * _T,
        description="NVIDIA H100 SXM",
        sm_count=132,
        memory_bytes=80 * _GB,
        l2_bytes=50 * _MB,
        fp32_peak_flops=67 * _T,
        tensor_cores=True,
        sources="NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022) and data sheet: "
        "H100 SXM5 132 SMs, 50 MB L2, 80 GB HBM3, 3.35 TB/s, 989 TFLOP/s dense FP16, "
        "67 TFLOP/s FP32 (16896 CUDA cores x 2 x 1.98 GHz); docs/facts.md §7",
    ),
    "h200": DeviceSpec(
        "h200",
        989 * _T,
        4.8 * _T,
        measured_peak_flops=780 * _T,  # a bf16 matrix product reached 770-800 (docs/facts.md §7)
        measured_bandwidth=4.3 * _T,
        description="NVIDIA H200 SXM",
        sm_count=132,
        memory_bytes=141 * _GB,
        l2_bytes=50 * _MB,
        fp32_peak_flops=67 * _T,
        tensor_cores=True,
        sources="NVIDIA H200 Tensor Core GPU data sheet (2024): 141 GB HBM3e, 4.8 TB/s, "
        "989 TFLOP/s dense FP16, 67 TFLOP/s FP32; the same GH100 chip as the H100 SXM "
        "(132 SMs, 50 MB L2); docs/facts.md §7",
    ),
    "rtx3090": DeviceSpec(
        "rtx3090",
        71 * _T,
        0.936 * _T,
        description="NVIDIA GeForce RTX 3090 (GA102)",
        sm_count=82,
        memory_bytes=24 * _GB,
        l2_bytes=6 * _MIB,
        fp16_accumulate_peak_flops=142 * _T,
        fp32_peak_flops=35.6 * _T,
        tensor_cores=True,
        sources="NVIDIA Ampere GA102 GPU Architecture whitepaper (2020): 82 SMs, 6144 KB L2, "
        "24 GB GDDR6X, 936 GB/s, 71 TFLOP/s FP16 tensor with FP32 accumulate (142 with FP16 "
        "accumulate), 35.6 TFLOP/s FP32 (10496 CUDA cores x 2 x 1.695 GHz); docs/facts.md §7",
    ),
    "rtx4090": DeviceSpec(
        "rtx4090",
        165.2 * _T,
        1.008 * _T,
        description="NVIDIA GeForce RTX 4090 (AD102)",
        sm_count=128,
        memory_bytes=24 * _GB,
        l2_bytes=72 * _MIB,
        fp16_accumulate_peak_flops=330.3 * _T,
        fp32_peak_flops=82.6 * _T,
        tensor_cores=True,
        sources="NVIDIA Ada GPU Architecture whitepaper (2022): RTX 4090 128 SMs, 72 MB L2, "
        "24 GB GDDR6X, 1008 GB/s, 165.2 TFLOP/s FP16 tensor with FP32 accumulate (330.3 with "
        "FP16 accumulate), 82.6 TFLOP/s FP32 (16384 CUDA cores x 2 x 2.52 GHz); "
        "docs/facts.md §7",
    ),
    # The four GPUs of the tss cells' latencies (HELP); reference-board boost clocks.
    # Pascal (GP102) has no tensor cores and runs FP16 arithmetic at 1/64 of its FP32 rate:
    # its peak_flops is that CUDA-core FP16 rate, and FP32 networks run at fp32_peak_flops.
    "gtx1080ti": DeviceSpec(
        "gtx1080ti",
        0.177 * _T,
        0.484 * _T,
        description="NVIDIA GeForce GTX 1080 Ti (GP102, Pascal)",
        sm_count=28,
        memory_bytes=11 * _GB,
        l2_bytes=2816 * _KIB,
        fp32_peak_flops=11.34 * _T,
        tensor_cores=False,
        sources="NVIDIA GeForce GTX 1080 Ti specifications: 3584 CUDA cores (28 SMs of 128), "
        "1582 MHz boost (3584 x 2 x 1.582 GHz = 11.34 TFLOP/s FP32), 11 GB GDDR5X at 11 Gbps "
        "on 352 bits = 484 GB/s; NVIDIA Pascal GP102 (Tesla P40/GP100 whitepaper family): "
        "FP16 at 1/64 of FP32 on GP102 (0.177 TFLOP/s), no tensor cores; L2 256 KB per "
        "32-bit memory controller x 11 = 2816 KB",
    ),
    "titanx": DeviceSpec(
        "titanx",
        0.171 * _T,
        0.480 * _T,
        description="NVIDIA TITAN X (Pascal, GP102)",
        sm_count=28,
        memory_bytes=12 * _GB,
        l2_bytes=3 * _MIB,
        fp32_peak_flops=10.97 * _T,
        tensor_cores=False,
        sources="NVIDIA TITAN X (Pascal) specifications: 3584 CUDA cores (28 SMs), 1531 MHz "
        "boost (10.97 TFLOP/s FP32), 12 GB GDDR5X at 10 Gbps on 384 bits = 480 GB/s; GP102: "
        "FP16 at 1/64 of FP32 (0.171 TFLOP/s), no tensor cores, 3072 KB L2",
    ),
    "titanxp": DeviceSpec(
        "titanxp",
        0.190 * _T,
        0.5476 * _T,
        description="NVIDIA TITAN Xp (Pascal, full GP102)",
        sm_count=30,
        memory_bytes=12 * _GB,
        l2_bytes=3 * _MIB,
        fp32_peak_flops=12.15 * _T,
        tensor_cores=False,
        sources="NVIDIA TITAN Xp specifications: 3840 CUDA cores (30 SMs), 1582 MHz boost "
        "(12.15 TFLOP/s FP32), 12 GB GDDR5X at 11.4 Gbps on 384 bits = 547.6 GB/s; GP102: "
        "FP16 at 1/64 of FP32 (0.190 TFLOP/s), no tensor cores, 3072 KB L2",
    ),
    "rtx2080ti": DeviceSpec(
        "rtx2080ti",
        53.8 * _T,
        0.616 * _T,
        description="NVIDIA GeForce RTX 2080 Ti (TU102, Turing)",
        sm_count=68,
        memory_bytes=11 * _GB,
        l2_bytes=5632 * _KIB,
        fp16_accumulate_peak_flops=107.6 * _T,
        fp32_peak_flops=13.4 * _T,
        tensor_cores=True,
        sources="NVIDIA Turing GPU Architecture whitepaper (2018), Table 1, RTX 2080 Ti "
        "reference board: 68 SMs, 4352 CUDA cores, 1545 MHz boost, 13.4 TFLOP/s FP32, "
        "53.8 TFLOP/s FP16 tensor with FP32 accumulate (107.6 with FP16 accumulate), "
        "11 GB GDDR6 at 14 Gbps on 352 bits = 616 GB/s, 5632 KB L2 (Founders Edition, "
        "1635 MHz: 14.2 / 56.9 / 113.8)",
    ),
}
DEFAULT_DEVICE = "v100"


def _parse_json(text: str, origin: str) -> Any:
    """JSON ``text`` of a device; UnknownDeviceError naming ``origin`` when it is not JSON,
    too large or nested too deep to read."""
    if len(text) > MAX_JSON_BYTES:
        raise UnknownDeviceError(
            f"device file {origin!r} is {len(text)} characters; a device file holds one small "
            "JSON object"
        )
    try:
        return json.loads(text)
    except RecursionError:
        raise UnknownDeviceError(
            f"device file {origin!r} is nested too deep to be a device: give one flat JSON "
            "object of figures"
        ) from None
    except ValueError as exc:
        raise UnknownDeviceError(f"device file {origin!r} is not readable JSON: {exc}") from exc


# A JSON device file's figures, in the units people write them in: (key, DeviceSpec field,
# the field's SI unit per the key's unit). Read by :func:`_from_mapping`, written by
# :func:`device_file_dict`.
_FILE_FIGURES: tuple[tuple[str, str, float], ...] = (
    ("peak_tflops", "peak_flops", _T),
    ("bandwidth_tbs", "bandwidth", _T),
    ("measured_peak_tflops", "measured_peak_flops", _T),
    ("measured_bandwidth_tbs", "measured_bandwidth", _T),
    ("memory_gb", "memory_bytes", _GB),
    ("l2_mb", "l2_bytes", _MB),
    ("fp16_accumulate_peak_tflops", "fp16_accumulate_peak_flops", _T),
    ("fp32_peak_tflops", "fp32_peak_flops", _T),
    ("measured_host_kernel_us", "measured_host_kernel_seconds", _US),
)
_FILE_KEYS = frozenset(
    {"name", "description", "sm_count", "tensor_cores", "sources"}
    | {key for key, _, _ in _FILE_FIGURES}
)


def device_file_dict(spec: DeviceSpec) -> dict[str, Any]:
    """``spec`` as a JSON device file's object (TFLOP/s, TB/s, GB, MB, us; unset figures left
    out), which :func:`get_device` reads back from a file."""
    out: dict[str, Any] = {"name": spec.name}
    for key, field_name, unit in _FILE_FIGURES:
        value = getattr(spec, field_name)
        if value is not None:
            out[key] = float(value) / unit
    for key in ("sm_count", "tensor_cores"):
        if getattr(spec, key) is not None:
            out[key] = getattr(spec, key)
    return {**out, "description": spec.description, "sources": spec.sources}


def _check_keys(data: Any, origin: str) -> None:
    """Raise UnknownDeviceError unless ``data`` is a dict of known keys with the required."""
    if not isinstance(data, dict):
        raise UnknownDeviceError(f"device file {origin!r} must hold a JSON object, got {data!r}")
    unknown = sorted(set(data) - _FILE_KEYS)
    missing = sorted({"name", "peak_tflops", "bandwidth_tbs"} - set(data))
    if unknown or missing:
        raise UnknownDeviceError(
            f"device file {origin!r}: missing keys {missing}, unknown keys {unknown}; "
            f"expected {sorted(_FILE_KEYS)}"
        )


def _scaled(data: dict[str, Any], key: str, origin: str, unit: float = _T) -> float | None:
    """``data[key]`` times ``unit`` (None where absent); UnknownDeviceError if not finite."""
    value = data.get(key)
    if value is None:
        return None
    number = _finite(value)
    if number is None or not math.isfinite(number * unit):
        raise UnknownDeviceError(
            f"device file {origin!r}: {key} must be a finite number, got {_short(value)}"
        )
    return number * unit


def _sm_count(data: dict[str, Any], origin: str) -> int | None:
    sm_count = data.get("sm_count")
    if sm_count is not None and (
        isinstance(sm_count, bool) or not isinstance(sm_count, int) or not 1 <= sm_count <= MAX_SMS
    ):
        raise UnknownDeviceError(
            f"device file {origin!r}: sm_count must be an integer from 1 to {MAX_SMS}, "
            f"got {_short(sm_count)}"
        )
    return sm_count


def _from_mapping(data: Any, origin: str) -> DeviceSpec:
    """The device of a JSON device file's object (keys in :data:`_FILE_KEYS`, TFLOP/s, TB/s,
    GB and MB)."""
    _check_keys(data, origin)
    figures = {field: _scaled(data, key, origin, unit) for key, field, unit in _FILE_FIGURES}
    sm_count = _sm_count(data, origin)
    try:
        spec = DeviceSpec(
            name=str(data["name"]),
            description=str(data.get("description", "")),
            sm_count=sm_count,
            sources=str(data.get("sources", "")),
            tensor_cores=data.get("tensor_cores"),
            **figures,  # type: ignore[arg-type]
        )
    except ValueError as exc:
        raise UnknownDeviceError(f"device file {origin!r}: {exc}") from exc
    return _check_plausible(spec, origin)


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
        return _from_inline_json(text)
    if text.count(":") == 2:
        return _from_triple(text)
    path = Path(text)
    if path.is_dir():
        raise UnknownDeviceError(
            f"device {text!r} is a folder; give a built-in device ({', '.join(DEVICES)}) or a "
            "JSON device file"
        )
    if text.endswith(".json") or path.is_file():
        return _from_file(path, text)
    raise UnknownDeviceError(
        f"unknown device {spec!r}; known devices: {', '.join(DEVICES)}; or give "
        "name:peak_tflops:bandwidth_tbs (e.g. mygpu:200:1.5) or a JSON file"
    )


def _from_inline_json(text: str) -> DeviceSpec:
    """A device from :meth:`DeviceSpec.to_dict` as JSON (SI units)."""
    data = _parse_json(text, "<inline JSON>")
    try:
        return DeviceSpec(
            str(data["name"]),
            float(data["peak_flops"]),
            float(data["bandwidth"]),
            data.get("measured_peak_flops"),
            data.get("measured_bandwidth"),
            str(data.get("description", "")),
            sm_count=data.get("sm_count"),
            memory_bytes=data.get("memory_bytes"),
            l2_bytes=data.get("l2_bytes"),
            fp16_accumulate_peak_flops=data.get("fp16_accumulate_peak_flops"),
            sources=str(data.get("sources", "")),
            fp32_peak_flops=data.get("fp32_peak_flops"),
            tensor_cores=data.get("tensor_cores"),
            measured_host_kernel_seconds=data.get("measured_host_kernel_seconds"),
        )
    except (ValueError, KeyError, TypeError, OverflowError) as exc:
        raise UnknownDeviceError(
            f"cannot read a device from {_short(text)}: {_short(str(exc))}"
        ) from exc


def _from_triple(text: str) -> DeviceSpec:
    """A device from ``name:peak_tflops:bandwidth_tbs``."""
    name, peak, bw = (part.strip() for part in text.split(":"))
    try:
        peak_v, bw_v = float(peak), float(bw)
    except ValueError:
        raise UnknownDeviceError(
            f"device spec {text!r} must be name:peak_tflops:bandwidth_tbs with numbers, "
            "e.g. mygpu:200:1.5"
        ) from None
    try:
        spec = DeviceSpec(name, peak_v * _T, bw_v * _T, description="user-defined")
    except ValueError as exc:
        raise UnknownDeviceError(f"device spec {text!r}: {exc}") from exc
    return _check_plausible(spec, text)


def _from_file(path: Path, text: str) -> DeviceSpec:
    """A device from a JSON device file (:func:`_from_mapping`)."""
    if not path.is_file():
        raise UnknownDeviceError(f"device file {text!r} does not exist")
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise UnknownDeviceError(f"device file {text!r} cannot be read: {exc}") from exc
    return _from_mapping(_parse_json(raw, text), text)
