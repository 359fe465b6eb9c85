"""What a GPU must do per layer of a :class:`~nasfilter.bench.layer_table.LayerTable` at one batch.

:func:`layer_work` turns a table into :class:`LayerWork`: tile- and wave-quantized tensor
FLOPs, the padded FLOPs of grouped and depthwise convs, the bytes each kernel moves (with the
L2 hits of reads of the tensor just written: :func:`l2_hit_share`), and the counts and bytes
the eager engine's extra kernels and the layout terms charge. The device model that turns
this work into seconds is :mod:`nasfilter.oracle.gpumodel`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nasfilter.bench.layer_table import KERNEL_LAYOUTS, LayerTable
from nasfilter.oracle.devices import DeviceSpec

BYTES_PER_ELEMENT = 2  # FP16
# Bytes per element of each precision a network may run in. FP16 runs its dense layers on the
# tensor cores (K pads to K_GRANULE, NHWC kernels); FP32 on the CUDA cores, whose SGEMM
# kernels tile the same way but reduce over any K and run NCHW natively (no transposes).
PRECISION_BYTES = {"fp16": 2, "fp32": 4}
TILE_M = 128  # CTA tile rows (output pixels)
TILE_N = 32  # the narrowest CTA tile width (output channels): N pads to it
TILE_AREA_PER_SM = TILE_M * 256  # output elements one SM works on at once
K_GRANULE = 8  # FP16 tensor-core instructions reduce over multiples of 8


@dataclass(frozen=True, eq=False)
class LayerWork:
    """What the GPU must do per layer at one batch, before the efficiency figures apply.

    All arrays (B, L), zero where a layer is absent or the term does not apply.

    Attributes:
        tensor_flops: tile- and wave-quantized FLOPs of dense GEMM layers (tensor cores).
        grouped_flops: padded FLOPs of grouped and depthwise convs (:func:`grouped_conv_flops`).
        bytes: FP16 bytes the layer's own kernel reads and writes.
        eager_bytes: bytes of one elementwise pass over a conv's or linear layer's output
            (eager mode).
        transpose_bytes: bytes of one pass over a dense NHWC-kernel conv's input and output.
        kernels: 1 per executed layer.
        eager_layers: 1 per executed conv (dense or grouped) or linear layer.
        dense_convs: 1 per executed dense NHWC-kernel conv (the ones NCHW transposes).
        unaligned: 1 per dense conv whose input channels per group are not a multiple of 8.
        nchw_copy_bytes: bytes of one pass over the input and output of a memory-only layer
            whose kernel needs NHWC (charged when the network runs NCHW).
        nhwc_copy_bytes: the same for memory-only layers whose kernel needs NCHW.
        nchw_copies, nhwc_copies: 1 per such layer.
        channels_last: 1 where a network run in NCHW already holds channels-last data: every
            layer after its first channels-last norm (a ``LayerNorm2d`` permutes the map to
            ``(N, H, W, C)``; its permuted-back output keeps channels-last strides, and
            PyTorch runs a conv channels-last when its input is), 0 elsewhere.
        depthwise: 1 per executed depthwise conv (one input channel per group; its
            ``grouped_flops`` run at the depthwise efficiencies).
    """

    tensor_flops: np.ndarray
    grouped_flops: np.ndarray
    bytes: np.ndarray
    eager_bytes: np.ndarray
    transpose_bytes: np.ndarray
    kernels: np.ndarray
    eager_layers: np.ndarray
    dense_convs: np.ndarray
    unaligned: np.ndarray
    nchw_copy_bytes: np.ndarray
    nhwc_copy_bytes: np.ndarray
    nchw_copies: np.ndarray
    nhwc_copies: np.ndarray
    channels_last: np.ndarray
    depthwise: np.ndarray


def quantized_gemm_flops(
    m: np.ndarray, n: np.ndarray, k: np.ndarray, sm_count: int, k_granule: int = K_GRANULE
) -> np.ndarray:
    """FLOPs the SMs are busy for on GEMMs of shape M x N x K, tiles and waves counted.

    Tiles are :data:`TILE_M` x :data:`TILE_N`; an SM runs :data:`TILE_AREA_PER_SM` outputs at
    once (8 such tiles), and a partial last wave costs a full one; K pads to
    :data:`K_GRANULE`. Equals ``2 M N K`` when every tile and wave is full; 0 where M, N or K
    is 0. With ``k_granule`` 1 (FP32 on the CUDA cores, no K padding) a wave is one tile per
    SM instead: a lone tile runs at its SM's full FP32 rate (the CUDA cores need no tensor
    fragments filled), so a small GEMM is charged only the tiles of its busiest SM.
    """
    k_pad = np.ceil(k / k_granule) * k_granule
    tiles = np.ceil(m / TILE_M) * np.ceil(n / TILE_N)
    if k_granule == 1:  # FP32 on the CUDA cores: a tile alone on an SM runs at its full rate,
        # so a wave is one tile per SM and a partial wave costs its busiest SM's tiles
        waves = np.ceil(tiles / sm_count)
        out: np.ndarray = waves * (sm_count * TILE_M * TILE_N * 2.0) * k_pad
        return out
    slots = sm_count * (TILE_AREA_PER_SM // (TILE_M * TILE_N))
    best: np.ndarray = np.ceil(tiles / slots) * (sm_count * TILE_AREA_PER_SM * 2.0) * k_pad
    return best


def grouped_conv_flops(batch: float | np.ndarray, table: LayerTable) -> np.ndarray:
    """FLOPs a grouped conv occupies its units for, (B, L): ``groups`` GEMMs, each padded.

    Each group is a GEMM of ``M x (N / groups) x K``; both its width and its reduction pad
    to :data:`K_GRANULE` (the smallest matrix fragment), so a depthwise 3x3 conv (width 1,
    K = 9) occupies 8 x 16 / 9 = 14 times its useful FLOPs.
    """
    groups = np.maximum(table.groups, 1.0)
    width = np.ceil(table.gemm_n / groups / K_GRANULE) * K_GRANULE
    depth = np.ceil(table.gemm_k / K_GRANULE) * K_GRANULE
    return 2.0 * batch * table.gemm_m * groups * width * depth


def padded_reduction(table: LayerTable, unaligned: np.ndarray | None = None) -> np.ndarray:
    """K' per layer, (B, L): ``C_in / groups`` rounded up to :data:`K_GRANULE`, times the taps.

    NHWC implicit-GEMM kernels reduce over the channels of one filter tap at a time, so the
    padding is per tap; where ``in_channels`` is 0 (unknown) the whole K pads instead. Where
    the channels per group are a multiple of :data:`K_GRANULE` both agree; ``unaligned``
    (bool (B, L), default: every layer) says where they may not, to skip the other columns.
    """
    out: np.ndarray = np.ceil(table.gemm_k / K_GRANULE) * K_GRANULE
    cols = np.ones(table.n_layers, dtype=bool) if unaligned is None else unaligned.any(axis=0)
    if cols.any():
        k = table.gemm_k[:, cols]
        per_group = table.in_channels[:, cols] / np.maximum(table.groups[:, cols], 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            taps = np.where(per_group > 0, k / per_group, 1.0)
        channels = np.where(per_group > 0, per_group, k)
        out[:, cols] = np.ceil(channels / K_GRANULE) * K_GRANULE * np.round(taps)
    return out


def l2_hit_share(read_bytes: np.ndarray, l2_bytes: float | None) -> np.ndarray:
    """Share of a read of ``read_bytes`` (the tensor the previous kernel just wrote) served by
    an L2 of ``l2_bytes``: ``min(1, L2 / size)``, the hit rate of a cache that keeps a random
    share of a tensor larger than itself; 0 everywhere where the L2 size is unknown (None)."""
    if not l2_bytes:
        return np.zeros(np.shape(read_bytes))
    with np.errstate(divide="ignore"):
        share: np.ndarray = np.minimum(1.0, l2_bytes / np.asarray(read_bytes, dtype=np.float64))
    return share


def layer_work(
    table: LayerTable, device: DeviceSpec, batch: int | np.ndarray, precision: str = "fp16"
) -> LayerWork:
    """The per-layer work of ``table`` on ``device`` at ``batch`` (an int or one per network),
    in ``precision`` (:data:`PRECISION_BYTES`). Raises MissingDeviceFieldError if the device
    lacks its SM count."""
    if precision not in PRECISION_BYTES:
        raise ValueError(f"precision must be one of {tuple(PRECISION_BYTES)}, got {precision!r}")
    device.require("sm_count")
    fp32, bpe = precision == "fp32", PRECISION_BYTES[precision]
    assert device.sm_count is not None
    b = np.asarray(batch, dtype=np.float64).reshape(-1, 1) if np.ndim(batch) else float(batch)
    kinds = np.array(table.kinds)
    present = table.present
    dense = present & ((kinds == "conv") | (kinds == "linear"))
    grouped = present & (kinds == "grouped_conv")
    eager_layer = present & (kinds != "memory")
    # FP32 runs on the CUDA cores: no K padding, no NCHW transposes
    nhwc = (table.kernel_layout == KERNEL_LAYOUTS["nhwc"]) & (not fp32)
    dense_conv = present & (kinds == "conv") & nhwc
    per_group = table.in_channels / np.maximum(table.groups, 1.0)
    unaligned = present & (kinds == "conv") & (np.mod(per_group, K_GRANULE) != 0) & (not fp32)
    depthwise = grouped & (per_group == 1)
    # A grouped conv runs `groups` GEMMs; a dense layer one.
    tensor = quantized_gemm_flops(
        b * table.gemm_m,
        table.gemm_n,
        table.gemm_k if fp32 else padded_reduction(table, unaligned),
        device.sm_count,
        1 if fp32 else K_GRANULE,
    )
    in_bytes = (bpe * b) * table.input_elems
    out_bytes = (bpe * b) * table.output_elems
    in_out = in_bytes + out_bytes
    # Reads of what the previous kernel just wrote: a share of them hits in the L2.
    # Bytes served by the L2: size x l2_hit_share(size) = min(size, L2), without a division.
    l2 = device.l2_bytes or 0.0
    in_hits, out_hits = np.minimum(in_bytes, l2), np.minimum(out_bytes, l2)
    moved = in_out - in_hits + bpe * table.weight_elems
    pass_bytes = out_bytes - 0.5 * out_hits  # a pass: half reads, half writes
    transpose_bytes = in_out - 0.5 * (in_hits + out_hits)
    return LayerWork(
        tensor_flops=np.where(dense, tensor, 0.0),
        grouped_flops=(
            np.where(grouped, grouped_conv_flops(b, table), 0.0)
            if grouped.any()
            else np.zeros(present.shape)
        ),
        bytes=np.where(present, moved, 0.0),
        eager_bytes=np.where(eager_layer, pass_bytes, 0.0),
        transpose_bytes=np.where(dense_conv, transpose_bytes, 0.0),
        kernels=present.astype(np.float64),
        eager_layers=eager_layer.astype(np.float64),
        dense_convs=dense_conv.astype(np.float64),
        unaligned=unaligned.astype(np.float64),
        depthwise=depthwise.astype(np.float64),
        **_layout_copies(table, in_out),
    )


def _layout_copies(table: LayerTable, in_out: np.ndarray) -> dict[str, np.ndarray]:
    """The copy fields of :class:`LayerWork` (shared read-only zeros where a table has none)."""
    memory = table.present & (np.array(table.kinds) == "memory")
    nchw_copy = memory & (table.kernel_layout == KERNEL_LAYOUTS["nhwc"])
    nhwc_copy = memory & (table.kernel_layout == KERNEL_LAYOUTS["nchw"])
    names = ("nchw_copy_bytes", "nhwc_copy_bytes", "nchw_copies", "nhwc_copies", "channels_last")
    if not (nchw_copy.any() or nhwc_copy.any()):
        zero = np.zeros(table.present.shape)
        zero.setflags(write=False)
        return dict.fromkeys(names, zero)
    # From the first channels-last norm on, an NCHW run holds channels-last data.
    converted = np.cumsum(nchw_copy, axis=1) - nchw_copy > 0
    nchw_copy = nchw_copy & ~converted
    values = (
        np.where(nchw_copy, in_out, 0.0),
        np.where(nhwc_copy, in_out, 0.0),
        nchw_copy.astype(np.float64),
        nhwc_copy.astype(np.float64),
        converted.astype(np.float64),
    )
    return dict(zip(names, values, strict=True))
