"""A GPU model that predicts each layer's time from the shared :class:`LayerTable`.

Where the plain roofline (:mod:`nasfilter.oracle.roofline`) takes every layer to run at
``max(FLOPs / peak, bytes / bandwidth)``, this model charges what a GPU actually executes.
For layer ``l`` of a network at batch ``B`` (FP16, 2 bytes per element)::

    dense conv / linear (tensor cores), implicit GEMM M = B x gemm_m, N = gemm_n, K = gemm_k:
        K' = C_in / groups rounded up to 8, times the filter taps (NHWC kernels pad the
             input channels of every tap to the tensor-core k granularity: a 3-channel stem
             runs as 8 channels)
        tiles = ceil(M / 128) x ceil(N / 32)                 (tile quantization, CTA tiles 128 x 32)
        waves = ceil(tiles / (SMs x 8))                      (wave quantization: 8 tiles per SM)
        work  = waves x SMs x 128 x 256 x K' x 2             (FLOPs the SMs are busy for)
        compute = work / (peak x tensor_efficiency)
    grouped / depthwise conv, ``groups`` GEMMs of M x N/groups x K, each padded to 8 x 8:
        compute = 2 x M x groups x ceil8(N / groups) x ceil8(K) / (peak x grouped_efficiency)
        a depthwise conv (one input channel per group) runs on the CUDA cores, streaming its
        input through the caches once per filter tap, at a rate that follows the memory:
        the same padded FLOPs / (bandwidth x 64 FLOP/B x depthwise_efficiency)
        (in eager NHWC, cuDNN's channels-last kernels: the ``nhwc_`` figures; PyTorch runs
        NCHW depthwise convs with its own kernels)
    memory  = bytes moved / (bandwidth x memory_efficiency), where a read of the tensor the
              previous kernel just wrote hits the L2 for a share min(1, L2 size / its size)
              (a cache keeping a random part of a tensor larger than itself)
    time_l  = max(compute, memory) + kernel_seconds                  (one kernel)

and the execution engine adds its own kernels:

- ``"fused"`` (TensorRT, the study's engine; the NATS oracle): nothing. BN is folded, the
  activation and residual add fused, and the engine picks its layouts, as the table assumes.
- ``"eager"`` (PyTorch eager with AMP, how timm's published benchmark runs): every conv and
  linear layer is followed by its BN (or bias), activation or scaling as separate elementwise
  kernels: ``eager_passes`` passes over the layer's output (a read or a write each; 4 = BN
  and activation, each reading and writing), at one kernel per two passes. The layout then
  matters (Li et al., arXiv 1610.03618: layout alone changes a layer's time many fold):
  cuDNN's tensor-core kernels work in NHWC, so in NCHW each dense conv pays
  ``nchw_transpose_passes`` passes over its input and output (transposes in and out, one
  kernel per two passes); in NHWC (``channels_last``) none. A dense conv whose input channels
  per group are not a multiple of 8 (a 3-channel stem) cannot be padded by that transpose in
  NHWC and runs at ``unaligned_efficiency`` of the peak there. Memory-only layers whose kernel
  needs the other layout (:data:`~nasfilter.bench.layer_table.KERNEL_LAYOUTS`: a group norm in
  NHWC, a layer norm over the channels of an NCHW map) pay ``layout_copy_passes`` passes over their
  input and output (the copy to the other layout and back). An NCHW dense conv also pays a
  fixed ``nchw_conv_seconds`` (its format conversion's kernels and set-up, whatever the
  size): the reason the measured NHWC gain shrinks as the images grow.

:func:`layer_terms` returns every term of every layer (seconds) and :func:`bounding_term`
which one bounds it: what a per-layer profile reads.

The twelve fitted figures are :class:`GpuModelParams`, fitted to measurements by
:mod:`nasfilter.oracle.calibration`, never set by hand. Every other figure is a device figure
(:class:`~nasfilter.oracle.devices.DeviceSpec`: peak, bandwidth, SM count, memory size) or a
documented constant of how tensor-core GEMM kernels tile (CUTLASS's and cuDNN's CTA tiles are
128 rows by 32 to 256 columns; an SM works on 128 x 256 outputs at once, so in this model every
tile width keeps it equally busy per wave and the narrowest, 32, always wastes least:
``TILE_N``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from nasfilter.bench.layer_table import LayerTable
from nasfilter.oracle.devices import DeviceSpec
from nasfilter.oracle.gpuwork import BYTES_PER_ELEMENT, LayerWork
from nasfilter.oracle.gpuwork import K_GRANULE as K_GRANULE  # re-exported: the model's API
from nasfilter.oracle.gpuwork import TILE_M as TILE_M
from nasfilter.oracle.gpuwork import TILE_N as TILE_N
from nasfilter.oracle.gpuwork import grouped_conv_flops as grouped_conv_flops
from nasfilter.oracle.gpuwork import l2_hit_share as l2_hit_share
from nasfilter.oracle.gpuwork import layer_work as layer_work
from nasfilter.oracle.gpuwork import padded_reduction as padded_reduction
from nasfilter.oracle.gpuwork import quantized_gemm_flops as quantized_gemm_flops

LAYOUTS = ("nchw", "nhwc")
PRECISIONS = ("fp16", "fp32")
ENGINES = ("fused", "eager")
# The rate depthwise convs' padded FLOPs run at, per byte/s of data-sheet bandwidth, at
# efficiency 1: 64 FLOP/B, a reference intensity that keeps their fitted efficiencies
# within (0, 1] (a 3x3 depthwise conv pads to 128 FLOPs per output; 2 bytes in, 2 out).
DEPTHWISE_FLOP_PER_BYTE = 64.0
MEMORY_HEADROOM = 0.9  # share of device memory a batch's activations may fill
INDEX_LIMIT = 2**31  # elements per tensor: cuDNN and TensorRT index tensors with 32-bit ints

# Physical range of each fitted figure: (lowest, highest) inclusive.
PARAM_RANGES: dict[str, tuple[float, float]] = {
    "tensor_efficiency": (1e-3, 1.0),
    "memory_efficiency": (1e-3, 1.0),
    "kernel_seconds": (0.0, 1e-3),
    "grouped_efficiency": (1e-4, 1.0),
    "eager_passes": (0.0, 16.0),
    "nchw_transpose_passes": (0.0, 8.0),
    "nhwc_grouped_efficiency": (1e-4, 1.0),
    "unaligned_efficiency": (1e-3, 1.0),
    "layout_copy_passes": (0.0, 8.0),
    "nchw_conv_seconds": (0.0, 1e-3),
    "depthwise_efficiency": (1e-4, 1.0),
    "nhwc_depthwise_efficiency": (1e-4, 1.0),
    "fp32_efficiency": (1e-3, 1.0),
    "host_seconds": (0.0, 1e-3),
    "conv_host_seconds": (0.0, 1e-3),
    "pool_tap_rate": (1e6, 1e12),
}
# The figures timm's FP16 measurements fit (the rest are fitted on the tss cells).
TIMM_FIGURES = tuple(list(PARAM_RANGES)[:12])
# The figures the tss cells (PyTorch eager, FP32, batch 1 to 256) fit, with timm's fixed.
CELL_FIGURES = ("fp32_efficiency", "host_seconds", "conv_host_seconds", "pool_tap_rate")
PARAM_MEANINGS: dict[str, str] = {
    "tensor_efficiency": "share of the tensor-core peak a full tile of a dense GEMM reaches",
    "memory_efficiency": "share of the memory bandwidth a kernel's traffic reaches",
    "kernel_seconds": "fixed cost of one kernel (launch gap, ramp-up and tail), seconds",
    "grouped_efficiency": "share of the tensor peak a grouped or depthwise conv reaches",
    "eager_passes": "elementwise passes over a layer's output in eager mode (BN, activation)",
    "nchw_transpose_passes": "passes over a dense conv's input and output to transpose NCHW",
    "nhwc_grouped_efficiency": "share of the tensor peak a grouped conv reaches in eager NHWC",
    "unaligned_efficiency": "share of the tensor peak a dense conv reaches in eager NHWC when "
    "its input channels per group are not a multiple of 8",
    "layout_copy_passes": "passes over a memory-only layer's input and output where its "
    "kernel needs the other layout",
    "nchw_conv_seconds": "fixed cost of a dense conv in eager NCHW beyond its transposes' "
    "traffic (cuDNN's format conversion around the NHWC kernel), seconds",
    "depthwise_efficiency": "share of its memory-bound rate (bandwidth x 64 FLOP/B) a "
    "depthwise conv (one input channel per group) reaches in eager NCHW (PyTorch's kernels)",
    "nhwc_depthwise_efficiency": "share of its memory-bound rate a depthwise conv reaches in "
    "eager NHWC (cuDNN's channels-last depthwise kernels)",
    "fp32_efficiency": "share of the CUDA cores' FP32 peak a full tile of a dense FP32 GEMM "
    "reaches (networks run in FP32: no tensor cores)",
    "host_seconds": "host time to issue one kernel in eager mode (Python, the dispatcher, the "
    "launch call), seconds",
    "conv_host_seconds": "extra host time of one conv or linear call in eager mode (cuDNN's "
    "descriptors and algorithm look-up), seconds",
    "pool_tap_rate": "window taps per second one SM reads for a stride-1 pooling layer (each "
    "output reads k x k inputs through the L1: the SMs' load rate bounds it, not the DRAM)",
}


@dataclass(frozen=True)
class GpuModelParams:
    """The fitted efficiency figures of the GPU model (see the module docstring)."""

    tensor_efficiency: float
    memory_efficiency: float
    kernel_seconds: float
    grouped_efficiency: float
    eager_passes: float
    nchw_transpose_passes: float
    nhwc_grouped_efficiency: float
    unaligned_efficiency: float
    layout_copy_passes: float
    nchw_conv_seconds: float = 0.0
    # Not given (NaN): as the grouped convs', the model before depthwise convs had their own.
    depthwise_efficiency: float = math.nan
    nhwc_depthwise_efficiency: float = math.nan
    # Not given (NaN): the model has no FP32 rate, and refuses an FP32 prediction.
    fp32_efficiency: float = math.nan
    host_seconds: float = 0.0  # 0: kernels are never host-bound (the fused engine)
    conv_host_seconds: float = 0.0
    pool_tap_rate: float = math.inf  # inf: pooling costs only its memory traffic

    def __post_init__(self) -> None:
        if math.isnan(self.depthwise_efficiency):
            object.__setattr__(self, "depthwise_efficiency", self.grouped_efficiency)
        if math.isnan(self.nhwc_depthwise_efficiency):
            object.__setattr__(self, "nhwc_depthwise_efficiency", self.nhwc_grouped_efficiency)
        bad = self.out_of_range()
        if bad:
            raise ValueError("GPU model parameter(s) outside their physical range: " + bad)

    def out_of_range(self) -> str:
        """'' if every figure lies in :data:`PARAM_RANGES`, else a sentence naming each one."""
        problems = []
        for name, value in self.to_dict().items():
            if name == "fp32_efficiency" and isinstance(value, float) and math.isnan(value):
                continue  # not fitted: FP32 predictions are refused instead
            if name == "pool_tap_rate" and value == math.inf:
                continue  # not fitted: pooling costs its memory traffic only
            lo, hi = PARAM_RANGES[name]
            if not (isinstance(value, (int, float)) and math.isfinite(value) and lo <= value <= hi):
                problems.append(
                    f"{name} = {value!r} not in [{lo:g}, {hi:g}] ({PARAM_MEANINGS[name]})"
                )
        return "; ".join(problems)

    def to_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Any) -> GpuModelParams:
        """Read back :meth:`to_dict`; raises ValueError naming missing or unknown keys."""
        names = [f.name for f in fields(cls)]
        if not isinstance(data, dict) or set(data) != set(names):
            got = sorted(data) if isinstance(data, dict) else data
            raise ValueError(f"GPU model parameters must have exactly the keys {names}, got {got}")
        return cls(**{k: float(data[k]) for k in names})

    @classmethod
    def from_vector(
        cls, x: np.ndarray, names: tuple[str, ...] | None = None, base: GpuModelParams | None = None
    ) -> GpuModelParams:
        """From the values of ``names`` (default: every field, in order), the rest from
        ``base`` (default: unset figures: NaN FP32 efficiency, no host time), without the
        range check (for fitting)."""
        obj = object.__new__(cls)
        rest = {
            "fp32_efficiency": math.nan,
            "host_seconds": 0.0,
            "conv_host_seconds": 0.0,
            "pool_tap_rate": math.inf,
        }
        for f in fields(cls):
            value = getattr(base, f.name) if base is not None else rest.get(f.name, math.nan)
            object.__setattr__(obj, f.name, float(value))
        every = tuple(f.name for f in fields(cls))
        for name, v in zip(names or every[: len(x)], x, strict=True):
            object.__setattr__(obj, name, float(v))
        return obj


def capped_by_measurements(params: GpuModelParams, device: DeviceSpec) -> GpuModelParams:
    """``params`` with the efficiencies capped, and the host time set, where the device has
    measured figures.

    A measured matrix product or copy (``measured_peak_flops``, ``measured_bandwidth``) is
    the most a kernel reaches on that device: the efficiencies are held to measured / data
    sheet (V100: 100 / 125 = 0.8 of the tensor peak). A measured host time per eager kernel
    (``measured_host_kernel_seconds``) replaces ``host_seconds``, and ``conv_host_seconds``
    (the extra of a cuDNN call, run on the same CPU by the same framework) is scaled by the
    same factor; without a fitted host time (0: the fused engine, or a fit that saw no host)
    nothing is scaled.
    """
    tensor, memory = params.tensor_efficiency, params.memory_efficiency
    if device.measured_peak_flops:
        tensor = min(tensor, device.measured_peak_flops / device.peak_flops)
    if device.measured_bandwidth:
        memory = min(memory, device.measured_bandwidth / device.bandwidth)
    capped = {
        "tensor_efficiency": tensor,
        "memory_efficiency": memory,
        "grouped_efficiency": min(params.grouped_efficiency, tensor),
        "nhwc_grouped_efficiency": min(params.nhwc_grouped_efficiency, tensor),
        "depthwise_efficiency": min(params.depthwise_efficiency, memory),
        "nhwc_depthwise_efficiency": min(params.nhwc_depthwise_efficiency, memory),
        "unaligned_efficiency": min(params.unaligned_efficiency, tensor),
    }
    host = device.measured_host_kernel_seconds
    if host and params.host_seconds > 0:
        capped["host_seconds"] = host
        capped["conv_host_seconds"] = params.conv_host_seconds * host / params.host_seconds
    # no range check: the caps only lower figures, and a fit passes its trial figures here
    return GpuModelParams.from_vector(np.array(list(capped.values())), tuple(capped), params)


def _check_choice(value: str, choices: tuple[str, ...], what: str) -> None:
    if value not in choices:
        raise ValueError(f"{what} must be one of {choices}, got {value!r}")


def layer_seconds(
    work: LayerWork,
    device: DeviceSpec,
    params: GpuModelParams,
    *,
    layout: str = "nhwc",
    engine: str = "fused",
    peak: float | None = None,
    bandwidth: float | None = None,
    precision: str = "fp16",
) -> np.ndarray:
    """Predicted seconds per layer and batch, (B, L); 0 where a layer is absent.

    ``peak`` (FLOP/s) and ``bandwidth`` (bytes/s) default to the device's data-sheet figures:
    the FP16 peak, or in ``precision`` "fp32" (``work`` computed in it) the FP32 peak.
    """
    _check_choice(layout, LAYOUTS, "layout")
    _check_choice(engine, ENGINES, "engine")
    _check_choice(precision, PRECISIONS, "precision")
    fp32 = precision == "fp32"
    if peak is None:
        if fp32:
            device.require("fp32_peak_flops")
        peak = device.fp32_peak_flops if fp32 else device.peak_flops
    assert peak is not None
    return seconds_from_work(
        work,
        peak,
        device.bandwidth if bandwidth is None else bandwidth,
        params,
        eager=engine == "eager",
        nchw=layout == "nchw",
        fp32=fp32,
    )


def seconds_from_work(
    work: LayerWork,
    peak: float | np.ndarray,
    bandwidth: float | np.ndarray,
    params: GpuModelParams,
    *,
    eager: bool,
    nchw: bool | np.ndarray,
    fp32: bool = False,
) -> np.ndarray:
    """:func:`layer_seconds` with the engine and layout as flags: per layer
    ``max(compute, memory) + kernel + eager + layout`` of :func:`layer_terms`: the GPU's
    time (the host's is :func:`host_seconds`).

    ``peak``, ``bandwidth`` and ``nchw`` may also be arrays that broadcast to (B, L);
    ``fp32``: the network runs in FP32 on the CUDA cores (``peak`` is then their FP32 rate).
    """
    t = layer_terms(work, peak, bandwidth, params, eager=eager, nchw=nchw, fp32=fp32)
    out: np.ndarray = np.maximum(t["compute"], t["memory"]) + t["kernel"]
    return out + t["eager"] + t["layout"] if eager else out


def host_seconds(work: LayerWork, params: GpuModelParams) -> np.ndarray:
    """The host's time to issue each layer's kernels in eager mode, seconds, (B, L).

    PyTorch eager issues one kernel at a time from Python: ``host_seconds`` per kernel (the
    layer's own and its elementwise passes', one per two passes) plus ``conv_host_seconds``
    per conv or linear call (cuDNN's descriptors and algorithm look-up). The launch queue is
    asynchronous, so a network takes ``max(sum of GPU times, sum of host times)``
    (:func:`network_seconds`): the host bounds it at batch 1, never at large batches.
    """
    issued = work.kernels + 0.5 * params.eager_passes * work.eager_layers
    out: np.ndarray = params.host_seconds * issued + params.conv_host_seconds * work.eager_layers
    return out


def network_seconds(gpu: np.ndarray, host: np.ndarray) -> np.ndarray:
    """Seconds per batch of each network, (B,): ``max`` of the summed GPU and host times
    (B, L) (the host runs ahead of the GPU through the launch queue until the queue is
    empty)."""
    out: np.ndarray = np.maximum(gpu.sum(axis=1), host.sum(axis=1))
    return out


TERMS = ("compute", "memory", "kernel", "eager", "layout")


def _efficiencies(
    work: LayerWork, params: GpuModelParams, *, eager: bool, nchw: bool | np.ndarray, fp32: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(where the data is channels-first, tensor efficiency, grouped efficiency), each
    broadcastable to (B, L): per layout in the eager engine, the better kernel when fused;
    in FP32 the dense layers' efficiency is ``fp32_efficiency``."""
    if fp32:
        if math.isnan(params.fp32_efficiency):
            raise ValueError(
                "this calibration has no fp32_efficiency (fitted before FP32 networks); refit "
                "it with `nasfilter calibrate` to predict a network run in FP32"
            )
        eff = np.asarray(params.fp32_efficiency)
        return np.asarray(nchw), eff, eff
    if eager:
        nchw = np.asarray(nchw) & (work.channels_last == 0)  # where the data is channels-first
        unaligned = np.where(nchw, 0.0, work.unaligned) > 0
        tensor_eff = np.where(unaligned, params.unaligned_efficiency, params.tensor_efficiency)
        grouped_eff = np.where(
            work.depthwise > 0,
            np.where(nchw, params.depthwise_efficiency, params.nhwc_depthwise_efficiency),
            np.where(nchw, params.grouped_efficiency, params.nhwc_grouped_efficiency),
        )
    else:  # the engine pads channels itself and picks the faster grouped kernel
        tensor_eff = np.asarray(params.tensor_efficiency)
        grouped_eff = np.where(
            work.depthwise > 0,
            max(params.depthwise_efficiency, params.nhwc_depthwise_efficiency),
            max(params.grouped_efficiency, params.nhwc_grouped_efficiency),
        )
    return np.asarray(nchw), tensor_eff, grouped_eff


def layer_terms(
    work: LayerWork,
    peak: float | np.ndarray,
    bandwidth: float | np.ndarray,
    params: GpuModelParams,
    *,
    eager: bool,
    nchw: bool | np.ndarray,
    fp32: bool = False,
) -> dict[str, np.ndarray]:
    """Every term of every layer's time, seconds, each (B, L) (names: :data:`TERMS`).

    ``compute``: the tile- and wave-quantized tensor or grouped work at its efficiency;
    ``memory``: the layer's own traffic; ``kernel``: its kernel cost; ``eager``: the eager
    engine's elementwise passes and their kernels; ``layout``: NCHW transposes and layout
    copies. A layer takes ``max(compute, memory) + kernel + eager + layout``.
    """
    bw = bandwidth * params.memory_efficiency
    nchw, tensor_eff, grouped_eff = _efficiencies(work, params, eager=eager, nchw=nchw, fp32=fp32)
    # Depthwise convs run on the CUDA cores, streaming their input through the caches once
    # per filter tap: their rate follows the memory system, not the tensor peak.
    depthwise_rate = bandwidth * DEPTHWISE_FLOP_PER_BYTE
    grouped_rate = np.where(work.depthwise > 0, depthwise_rate, peak) * grouped_eff
    compute = work.tensor_flops / (peak * tensor_eff) + work.grouped_flops / grouped_rate
    zero = np.zeros(np.shape(work.kernels))
    terms = {
        "compute": compute,
        "memory": work.bytes / bw,
        "kernel": params.kernel_seconds * work.kernels,
        "eager": zero,
        "layout": zero,
    }
    if eager:
        half_kernel = 0.5 * params.kernel_seconds
        terms["eager"] = params.eager_passes * (
            work.eager_bytes / bw + half_kernel * work.eager_layers
        )
        transpose = (
            params.nchw_transpose_passes
            * (work.transpose_bytes / bw + half_kernel * work.dense_convs)
            + params.nchw_conv_seconds * work.dense_convs
        )  # a fixed cost per NCHW dense conv
        copy_nchw = work.nchw_copy_bytes / bw + half_kernel * work.nchw_copies
        copy_nhwc = work.nhwc_copy_bytes / bw + half_kernel * work.nhwc_copies
        copies = params.layout_copy_passes * np.where(nchw, copy_nchw, copy_nhwc)
        terms["layout"] = np.where(nchw, transpose, 0.0) + copies
    return terms


def bounding_term(terms: dict[str, np.ndarray]) -> np.ndarray:
    """Per layer, the name of the largest of :func:`layer_terms`' terms, str array (B, L)."""
    stacked = np.stack([np.broadcast_to(terms[name], np.shape(terms["kernel"])) for name in TERMS])
    return np.array(TERMS)[np.argmax(stacked, axis=0)]


def max_batch(
    table: LayerTable,
    device: DeviceSpec,
    bytes_per_element: int = BYTES_PER_ELEMENT,
    cap: int | None = None,
) -> np.ndarray:
    """The largest power-of-two batch that fits in the device's memory, per network, (B,).

    ``cap`` (images, or None for no cap) bounds it: timm's published benchmark
    starts at 1024 and halves until a batch fits, so the survey passes ``cap=1024``.

    A batch fits when the weights plus the largest layer's input and output activations
    (both live while it runs) take at most :data:`MEMORY_HEADROOM` of the memory, the rest
    left to the engine's workspace, and no activation tensor exceeds :data:`INDEX_LIMIT`
    elements (``input_elems`` may include a fused residual: a bound, not an exact size).
    Raises MissingDeviceFieldError without ``memory_bytes``; ValueError where not even one
    image fits.
    """
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise ValueError(f"cap must be a positive integer or None, got {cap!r}")
    device.require("memory_bytes")
    assert device.memory_bytes is not None
    fits = memory_batch(table, device, bytes_per_element)
    largest = np.where(table.present, np.maximum(table.input_elems, table.output_elems), 0.0)
    fits = np.minimum(fits, np.floor(INDEX_LIMIT / largest.max(axis=1)))
    if np.any(fits < 1):
        raise ValueError(
            f"not even one image fits in {device.name}'s {device.memory_bytes / 1e9:g} GB "
            f"for network(s) {np.flatnonzero(fits < 1)[:5].tolist()}"
        )
    if cap is not None:
        fits = np.minimum(fits, cap)
    return np.exp2(np.floor(np.log2(fits)))


def memory_batch(
    table: LayerTable, device: DeviceSpec, bytes_per_element: int = BYTES_PER_ELEMENT
) -> np.ndarray:
    """The largest batch (any integer) whose weights plus largest layer's input and output
    take at most :data:`MEMORY_HEADROOM` of the device memory, per network, float (B,)."""
    device.require("memory_bytes")
    assert device.memory_bytes is not None
    live = np.where(table.present, table.input_elems + table.output_elems, 0.0).max(axis=1)
    weights = np.where(table.present, table.weight_elems, 0.0).sum(axis=1)
    free = MEMORY_HEADROOM * device.memory_bytes - bytes_per_element * weights
    out: np.ndarray = np.floor(free / (bytes_per_element * live))
    return out


def check_batch_fits(batch: int, table: LayerTable, device: DeviceSpec) -> int:
    """``batch``, or ValueError naming it when it is above what fits the device's memory for
    the largest network of ``table`` (:func:`memory_batch`); unchecked without a memory size."""
    if device.memory_bytes is None:
        return batch
    top = int(memory_batch(table, device).min())
    if batch > top:
        raise ValueError(
            f"batch must be an integer from 1 to {top} (the largest whose activations fit "
            f"{device.name}'s {device.memory_bytes / 1e9:g} GB for every network), got {batch}"
        )
    return batch
