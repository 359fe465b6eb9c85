"""Throughput of a model's fused layers on a device: the plain roofline, and the prediction.

``roofline_throughput`` is the plain per-layer roofline (FACTS §4): each layer takes
``max(FLOPs / peak, bytes / bandwidth)`` at the batch, FP16 (2 bytes per element), and the
network's time is the sum. It knows nothing of tile quantization, kernel launches or layouts.

``predicted_throughput`` is the survey's single hook for "the oracle's best GPU model": every
``predicted_throughput`` column and figure comes from it. Until the calibrated GPU model
(issue 9) replaces its body, it is the same roofline plus a fixed cost per executed layer
(:data:`LAUNCH_OVERHEAD`, the NATS roofline oracle's 3 us), and :data:`PREDICTOR` names it.
"""

from __future__ import annotations

import numpy as np

from nasfilter.layers import LayerTable
from nasfilter.oracle.devices import DeviceSpec

BYTES_PER_ELEMENT = 2  # FP16
LAUNCH_OVERHEAD = 3e-6  # seconds per executed layer and batch
PREDICTOR = "roofline + 3 us per layer (placeholder for the calibrated GPU model)"
DEFAULT_MAX_BATCH = 1024  # timm's benchmark starts at 1024 and halves when out of memory


def _check(table: LayerTable, batch: int) -> None:
    if table.n_networks != 1:
        raise ValueError(f"expected a single-model LayerTable (B = 1), got B = {table.n_networks}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")


def layer_seconds(table: LayerTable, device: DeviceSpec, batch: int) -> np.ndarray:
    """Roofline seconds of each layer for one batch, (L,)."""
    _check(table, batch)
    flops = table.flops(batch)[0]
    moved = table.bytes(batch, BYTES_PER_ELEMENT)[0]
    return np.maximum(flops / device.peak("spec"), moved / device.memory_bandwidth("spec"))


def roofline_throughput(table: LayerTable, device: DeviceSpec, batch: int) -> float:
    """Images/s of the plain per-layer roofline at ``batch``."""
    return float(batch / layer_seconds(table, device, batch).sum())


def predicted_throughput(
    table: LayerTable, device: DeviceSpec, batch: int, layout: str = "nchw"
) -> float:
    """Images/s predicted by the survey's GPU model (:data:`PREDICTOR`) at ``batch``.

    ``layout`` ("nchw" or "nhwc") is accepted for the calibrated model; the roofline
    placeholder ignores it.
    """
    if layout not in ("nchw", "nhwc"):
        raise ValueError(f"layout must be 'nchw' or 'nhwc', got {layout!r}")
    seconds = layer_seconds(table, device, batch)
    executed = int(np.count_nonzero(table.present[0]))
    return float(batch / (seconds.sum() + LAUNCH_OVERHEAD * executed))


def max_batch(table: LayerTable, device: DeviceSpec, cap: int = DEFAULT_MAX_BATCH) -> int:
    """The largest power-of-two batch <= ``cap`` whose weights plus the two largest live
    activations of a layer (its input and output, FP16) fit in the device memory; ``cap``
    when the device's memory size is unknown."""
    if cap < 1:
        raise ValueError(f"cap must be >= 1, got {cap}")
    memory = device.memory_bytes
    if memory is None:
        return cap
    per_image = float(np.max(table.input_elems[0] + table.output_elems[0])) * BYTES_PER_ELEMENT
    weights = float(table.weight_elems[0].sum()) * BYTES_PER_ELEMENT
    batch = cap
    while batch > 1 and weights + batch * per_image > memory:
        batch //= 2
    return batch
