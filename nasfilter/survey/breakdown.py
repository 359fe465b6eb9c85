"""Each layer's predicted time split by its cause, from the calibrated GPU model.

:func:`layer_breakdown` asks :mod:`nasfilter.oracle.gpumodel` for a layer's work and
predicted seconds, then splits those seconds into parts that sum to them (:data:`PARTS`):

- ``compute``: the useful FLOPs of the layer's GEMM(s) at the fitted tensor-core rate;
- ``tile quantization``: the compute spent on padding, a GEMM's M x N rounded up to whole
  CTA tiles and K to the tensor-core granule (for a grouped or depthwise conv, every group's
  width and reduction padded to the smallest matrix fragment);
- ``wave quantization``: the compute of the idle SMs in a partial last wave of tiles;
- ``memory``: the layer's own traffic, when it takes longer than its compute (the
  ``max(compute, memory)`` of the model: a compute-bound layer has no memory part);
- ``elementwise passes``: eager mode's separate BN / activation passes over the output;
- ``per-kernel cost``: the fixed cost of each kernel launched for the layer;
- ``transposes``: NCHW's transposes around a dense conv and its fixed conversion cost
  (eager mode, where the data is channels-first);
- ``other``: whatever the GPU model charges beyond these (0 for the model as documented in
  :mod:`nasfilter.oracle.gpumodel`; kept so that the parts always sum to the layer's time).

A layer's *bound* is its largest part. Tile efficiency = useful / tile-padded FLOPs; wave
efficiency = tile-padded / wave-padded FLOPs (NaN for memory-only layers; 1 for grouped convs,
which the model does not wave-quantize).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nasfilter.bench.layer_table import LayerTable
from nasfilter.oracle.devices import DeviceSpec
from nasfilter.oracle.gpumodel import (
    K_GRANULE,
    TILE_M,
    TILE_N,
    GpuModelParams,
    capped_by_measurements,
    layer_seconds,
    layer_terms,
    layer_work,
)

PARTS = (
    "compute",
    "tile quantization",
    "wave quantization",
    "memory",
    "elementwise passes",
    "per-kernel cost",
    "transposes",
    "other",
)


@dataclass(frozen=True, eq=False)
class LayerBreakdown:
    """One network's layers at one batch; every array has shape (L,).

    Attributes:
        seconds: predicted seconds per layer for the whole batch.
        parts: :data:`PARTS` -> seconds per layer; they sum to ``seconds``.
        tile_efficiency: useful / tile-padded GEMM FLOPs (NaN for memory-only layers).
        wave_efficiency: tile-padded / wave-padded FLOPs (NaN for memory-only layers).
    """

    seconds: np.ndarray
    parts: dict[str, np.ndarray]
    tile_efficiency: np.ndarray
    wave_efficiency: np.ndarray

    @property
    def bound(self) -> list[str]:
        """Per layer, the name of its largest part."""
        stacked = np.stack([self.parts[p] for p in PARTS])
        return [PARTS[i] for i in stacked.argmax(axis=0)]


def layer_breakdown(
    table: LayerTable,
    device: DeviceSpec,
    params: GpuModelParams,
    batch: int,
    *,
    layout: str,
    engine: str,
) -> LayerBreakdown:
    """The :class:`LayerBreakdown` of a one-network ``table`` at ``batch`` (see the module
    docstring); ``params`` are capped by the device's measured figures, as in a prediction."""
    p = capped_by_measurements(params, device)
    work = layer_work(table, device, batch)
    seconds = layer_seconds(work, device, p, layout=layout, engine=engine)[0]
    kinds = np.array(table.kinds)
    dense = (kinds == "conv") | (kinds == "linear")
    grouped = kinds == "grouped_conv"
    m, n, k = batch * table.gemm_m[0], table.gemm_n[0], table.gemm_k[0]
    useful = 2.0 * m * n * k
    k_pad = np.ceil(k / K_GRANULE) * K_GRANULE
    tiled = 2.0 * np.ceil(m / TILE_M) * TILE_M * np.ceil(n / TILE_N) * TILE_N * k_pad
    padded = np.where(dense, tiled, work.grouped_flops[0])
    with np.errstate(invalid="ignore", divide="ignore"):
        tile_eff = np.where(dense | grouped, useful / padded, np.nan)
        wave_eff = np.where(dense, tiled / work.tensor_flops[0], np.where(grouped, 1.0, np.nan))
    bandwidth = device.bandwidth * p.memory_efficiency
    eager, nchw = engine == "eager", layout == "nchw"
    terms = layer_terms(work, device.peak_flops, device.bandwidth, p, eager=eager, nchw=nchw)
    compute = terms["compute"][0]  # the model's own (tensor, grouped, depthwise; per layout)
    memory = work.bytes[0] / bandwidth
    compute_bound = compute >= memory
    c = np.where(compute_bound, compute, 0.0)
    te, we = np.nan_to_num(tile_eff, nan=1.0), np.nan_to_num(wave_eff, nan=1.0)
    half = 0.5 * p.kernel_seconds
    passes = p.eager_passes * work.eager_bytes[0] / bandwidth if eager else 0.0 * memory
    launches = p.kernel_seconds * work.kernels[0]
    if eager:
        launches = launches + p.eager_passes * half * work.eager_layers[0]
    transposes = 0.0 * memory
    if eager and nchw:
        transposes = (
            p.nchw_transpose_passes
            * (work.transpose_bytes[0] / bandwidth + half * work.dense_convs[0])
            + p.nchw_conv_seconds * work.dense_convs[0]
        )
        transposes = np.where(work.channels_last[0] == 0, transposes, 0.0)
    parts = {
        "compute": c * te * we,
        "tile quantization": c * we * (1.0 - te),
        "wave quantization": c * (1.0 - we),
        "memory": np.where(compute_bound, 0.0, memory),
        "elementwise passes": passes,
        "per-kernel cost": launches,
        "transposes": transposes,
    }
    parts["other"] = seconds - sum(parts.values())
    return LayerBreakdown(seconds, parts, tile_eff, wave_eff)
