"""The measured oracle: real GPU latencies of every tss cell (HELP), as a proxy table.

HELP (github HayeonLee/HELP, MIT) measured the latency of all 15625 NAS-Bench-201 cells on
four GPUs at batch 1, 32 and 256 (:mod:`nasfilter.bench.tss_data`). From a device's latency this
oracle derives, for every cell:

- throughput = batch / latency, images per second (derived from a measurement);
- utilization = throughput x 2 x MACs / the device's **FP32** peak (``fp32_peak_flops`` of
  :mod:`nasfilter.oracle.devices`, from NVIDIA's data sheets), where MACs are what NATS calls
  FLOPs for the CIFAR-10 network (32x32 input, 10 classes).

Assumptions, stated because the source does not document them: HELP gives no framework,
precision or input size for its GPU measurements. We assume FP32 (Pascal GPUs run FP16 at
1/64 of FP32, so FP32 is what a plain PyTorch run of that era used) and the CIFAR-10 network
(the only setting documented for HELP's data, through HW-NAS-Bench). The same measured
latencies serve every dataset's table; they are not measurements of the CIFAR-100 or
ImageNet16-120 networks. CPUs and edge devices have no documented peak here, so this oracle
refuses them (their latencies are in :func:`nasfilter.bench.tss_data.load_latency`).

Spelling: ``measured`` with ``device="2080ti"`` (batch 256), ``measured[batch=1]``.
"""

from __future__ import annotations

import numpy as np

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.spaces import TSS
from nasfilter.bench.tss_data import GPU_BATCHES, GPUS, SHA256, load_latency, load_tss_arrays
from nasfilter.oracle.devices import get_device

NAME = "measured"
DEFAULT_BATCH = 256
# HELP's device key -> the device spec holding its data-sheet figures
DEVICE_SPECS = {
    "1080ti": "gtx1080ti",
    "2080ti": "rtx2080ti",
    "titanx": "titanx",
    "titanxp": "titanxp",
}
PRECISION = "FP32 (assumed; HELP does not document framework or precision)"


def help_device(device: object) -> str:
    """HELP's key of ``device`` (``2080ti`` or ``rtx2080ti``, ...); ValueError listing them."""
    if isinstance(device, str):
        key = device.strip().lower()
        for help_key, spec in DEVICE_SPECS.items():
            if key in (help_key, spec):
                return help_key
    raise ValueError(
        f"the measured oracle has no latencies for device {device!r}; measured GPUs: "
        f"{', '.join(GPUS)} (batch {', '.join(map(str, GPU_BATCHES))}); pass one as --device"
    )


def parse_settings(spec: str) -> int:
    """The batch of ``measured`` or ``measured[batch=B]``; ValueError naming what is allowed."""
    text = spec.strip()
    name, _, rest = text.partition("[")
    if name.strip().lower() != NAME or (rest and not rest.endswith("]")):
        raise ValueError(f"not a measured-oracle spec: {spec!r}; write measured[batch=256]")
    batch = DEFAULT_BATCH
    for item in filter(None, (part.strip() for part in rest[:-1].split(","))):
        key, _, value = item.partition("=")
        if key.strip() != "batch":
            raise ValueError(
                f"oracle {spec!r}: unknown setting {key.strip()!r}; the measured oracle takes "
                f"batch={'|'.join(map(str, GPU_BATCHES))}"
            )
        try:
            batch = int(value)
        except ValueError:
            raise ValueError(f"oracle {spec!r}: batch must be an integer, got {value!r}") from None
    if batch not in GPU_BATCHES:
        raise ValueError(
            f"oracle {spec!r}: no latency was measured at batch {batch}; measured batches: "
            f"{', '.join(map(str, GPU_BATCHES))}"
        )
    return batch


def measured_proxy(device: object, batch: int = DEFAULT_BATCH) -> ProxyTable:
    """The tss proxy of HELP's measured latency on ``device`` at ``batch`` (see module)."""
    key = help_device(device)
    spec = get_device(DEVICE_SPECS[key])
    if spec.fp32_peak_flops is None:  # pragma: no cover - the four GPUs all have one
        raise ValueError(f"device {spec.name!r} has no FP32 peak: utilization is undefined")
    latency = load_latency(key, batch)  # seconds per batch, (15625,)
    throughput = batch / latency
    macs = load_tss_arrays("cifar10").flops_M.astype(np.float64) * 1e6
    utilization = throughput * 2.0 * macs / spec.fp32_peak_flops
    label = f"measured {key} batch {batch} (HELP latency; utilization vs FP32 peak)"
    provenance = {
        "backend": NAME,
        "device": spec.name,
        "help_device": key,
        "batch": batch,
        "fp32_peak_flops": spec.fp32_peak_flops,
        "precision": PRECISION,
        "flops_of": "cifar10 network (32x32, 10 classes); NATS FLOPs counted as MACs, x2",
        "source": "HELP (HayeonLee/HELP @ 45f70eb9, MIT) measured latency",
        "checksum": SHA256["help_latency_ms.npz"],
        "synthetic": False,
        "real": "measured latency; throughput = batch / latency",
        "derived": "utilization = throughput x 2 x MACs / FP32 data-sheet peak",
    }
    return ProxyTable(utilization, throughput, label, provenance, space=TSS)


def measured_proxy_spec(spec: str, device: object) -> ProxyTable:
    """:func:`measured_proxy` of a spec string such as ``measured[batch=1]``."""
    return measured_proxy(device, parse_settings(spec))


def is_measured_spec(spec: object) -> bool:
    """Whether ``spec`` names the measured oracle (``measured`` or ``measured[...]``)."""
    return isinstance(spec, str) and spec.strip().lower().partition("[")[0].strip() == NAME
