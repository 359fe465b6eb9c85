"""The GPU model on the tss cells (NAS-Bench-201 networks): predict, fit and hold out.

The cells' measurements are HELP's latencies (``nasfilter.bench.tss_data``): every one of the
15625 networks on a GTX 1080 Ti, Titan X (Pascal), Titan Xp and RTX 2080 Ti at batch 1, 32 and
256 (CIFAR-10 shapes, 32x32). HELP does not say how they ran; the data says **FP32, PyTorch
eager** (docs/gpu-model.md, "The tss cells"): at batch 256 the fastest networks reach 28 % of
the Pascal cards' FP32 peak, 18 times their FP16 rate (GP102 runs FP16 at 1/64 of FP32), and
the RTX 2080 Ti, with tensor cores, is only as much faster as its FP32 peak and bandwidth
allow; at batch 1 and 32 the times barely differ (the host issuing kernels bounds them).

The model (:mod:`nasfilter.oracle.gpumodel`, engine "eager", precision "fp32") prices each
unit layer of :func:`nasfilter.bench.tss_layers.tss_units` on the device's data-sheet figures and
sums them per network with the unit counts (``counts @ seconds``): all 15625 in a few ms.
Its figures are the shipped calibration's: the twelve fitted on timm's FP16 measurements, and
the two only the cells constrain (:data:`~nasfilter.oracle.gpumodel.CELL_FIGURES`:
``fp32_efficiency`` and ``host_seconds``), fitted here on the cells of the GPUs given with the
twelve held fixed.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from nasfilter.bench.spaces import TSS
from nasfilter.bench.tss_data import SHA256, arch_ops, load_latency
from nasfilter.bench.tss_layers import tss_units
from nasfilter.oracle.calibration_file import load_calibration
from nasfilter.oracle.devices import DeviceSpec, get_device
from nasfilter.oracle.gpumodel import (
    CELL_FIGURES,
    MEMORY_HEADROOM,
    GpuModelParams,
    capped_by_measurements,
    host_seconds,
    layer_seconds,
    layer_work,
)
from nasfilter.oracle.gpuwork import PRECISION_BYTES
from nasfilter.oracle.roofline import DEFAULT_LAUNCH_OVERHEAD

# HELP's device names -> the built-in device of the same GPU.
HELP_DEVICES: dict[str, str] = {
    "1080ti": "gtx1080ti",
    "titanx": "titanx",
    "titanxp": "titanxp",
    "2080ti": "rtx2080ti",
}
# The same GPUs by architecture generation, from their data sheets (GP102 is Pascal, TU102
# Turing): what a GPU of a generation the fit never saw is held out by.
HELP_GENERATIONS: dict[str, tuple[str, ...]] = {
    "Pascal": ("1080ti", "titanx", "titanxp"),
    "Turing": ("2080ti",),
}
CELL_BATCHES = (1, 32, 256)
CELL_PRECISION = "fp32"  # what the cells' latencies were measured in (see the module docstring)
CELL_DATASET = "cifar10"  # HELP's input: 32x32 (docs/gpu-model.md)
# The start of the fit: where each term binds on some cells (a term that binds nowhere has no
# gradient, and a max() of terms has kinks): half the FP32 peak; 20 us to issue a kernel and
# 100 us more for a cuDNN conv (PyTorch eager on a desktop CPU); 3 G taps/s per SM (about two
# loads per clock at 1.5 GHz).
_START = {
    "fp32_efficiency": 0.5,
    "host_seconds": 20e-6,
    "conv_host_seconds": 100e-6,
    "pool_tap_rate": 3e9,
}
_SEARCH = {
    "fp32_efficiency": (1e-3, 1.0),
    "host_seconds": (0.0, 1e-3),
    "conv_host_seconds": (0.0, 1e-3),
    "pool_tap_rate": (1e6, 1e12),
}
_SCALE = {
    "fp32_efficiency": 1.0,
    "host_seconds": 1e-6,
    "conv_host_seconds": 1e-6,
    "pool_tap_rate": 1e9,
}


def largest_batch(device: DeviceSpec, dataset: str = CELL_DATASET, precision: str = "fp32") -> int:
    """The largest batch whose largest layer's input and output fit the device memory with
    the weights (the rule of :func:`~nasfilter.oracle.gpumodel.max_batch`), images."""
    device.require("memory_bytes")
    assert device.memory_bytes is not None
    table = tss_units(dataset).table
    bpe = PRECISION_BYTES[precision]
    live = float((table.input_elems + table.output_elems).max())
    weights = float((tss_units(dataset).params).sum())
    return int((MEMORY_HEADROOM * device.memory_bytes - bpe * weights) // (bpe * live))


def check_batch(batch: object, device: DeviceSpec, dataset: str, precision: str) -> int:
    """``batch`` as an int from 1 to :func:`largest_batch`; ValueError naming the value."""
    top = largest_batch(device, dataset, precision)
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or not 1 <= batch <= top:
        raise ValueError(
            f"batch must be an integer from 1 to {top} (the largest whose activations fit "
            f"{device.name}'s {(device.memory_bytes or 0) / 1e9:g} GB in {precision}), got "
            f"{batch!r}"
        )
    return int(batch)


def unit_seconds(
    device: DeviceSpec,
    batch: int,
    params: GpuModelParams,
    dataset: str = CELL_DATASET,
    precision: str = CELL_PRECISION,
) -> tuple[np.ndarray, np.ndarray]:
    """GPU and host seconds per batch of each unit layer of :func:`tss_units`, PyTorch
    eager, each (L,).

    The GPU time is the model's (:func:`~nasfilter.oracle.gpumodel.layer_seconds`), and for a
    window pooling unit at least its taps (``pool_taps`` x outputs x batch) at
    ``pool_tap_rate`` per SM: a stride-1 3x3 average pool reads each input nine times through
    the L1, so the SMs' load rate, not the DRAM, bounds it.
    """
    units = tss_units(dataset)
    work = layer_work(units.table, device, batch, precision)
    capped = capped_by_measurements(params, device)
    gpu = layer_seconds(work, device, capped, layout="nchw", engine="eager", precision=precision)
    assert device.sm_count is not None
    taps = units.pool_taps * units.table.output_elems[0] * batch
    stencil = taps / (device.sm_count * params.pool_tap_rate)
    return np.maximum(gpu[0], stencil), host_seconds(work, capped)[0]


def tss_batch_seconds(
    device: str | DeviceSpec,
    batch: int,
    params: GpuModelParams,
    ops: np.ndarray,
    dataset: str = CELL_DATASET,
    precision: str = CELL_PRECISION,
) -> np.ndarray:
    """Predicted seconds per batch of every network of ``ops`` (N, 6 op codes), (N,):
    ``max(GPU time, host time)`` of its unit layers, summed with their counts."""
    dev = get_device(device)
    b = check_batch(batch, dev, dataset, precision)
    counts = tss_units(dataset).counts(ops)
    gpu, host = unit_seconds(dev, b, params, dataset, precision)
    out: np.ndarray = np.maximum(counts @ gpu, counts @ host)
    return out


def roofline_batch_seconds(
    device: str | DeviceSpec,
    batch: int,
    ops: np.ndarray,
    dataset: str = CELL_DATASET,
    precision: str = CELL_PRECISION,
) -> np.ndarray:
    """The plain roofline's seconds per batch, (N,): per unit layer ``max(FLOPs / peak,
    bytes / bandwidth)`` on the data sheet's figures in ``precision`` plus the roofline's
    launch overhead (3 us), summed with the unit counts."""
    dev = get_device(device)
    table = tss_units(dataset).table
    peak = dev.fp32_peak_flops if precision == "fp32" else dev.peak_flops
    if peak is None:
        dev.require("fp32_peak_flops")
    assert peak is not None
    per_unit = np.maximum(
        table.flops(batch)[0] / peak,
        table.bytes(batch, PRECISION_BYTES[precision])[0] / dev.bandwidth,
    )
    out: np.ndarray = tss_units(dataset).counts(ops) @ (per_unit + DEFAULT_LAUNCH_OVERHEAD)
    return out


def fit_cell_figures(
    measured: Sequence[tuple[str, int, np.ndarray]],
    base: GpuModelParams,
    ops: np.ndarray,
) -> GpuModelParams:
    """``base`` with :data:`CELL_FIGURES` fitted to ``measured`` (device, batch, seconds per
    batch (N,) of the networks ``ops``): SciPy least squares (soft-L1, scale 0.1) of the log
    error, from a fixed start, deterministic. Raises RuntimeError when it does not converge."""
    from scipy.optimize import least_squares

    counts = tss_units(CELL_DATASET).counts(ops)
    names = CELL_FIGURES
    scale = np.array([_SCALE[n] for n in names])
    logs = [(get_device(d), b, np.log(np.asarray(sec, dtype=np.float64))) for d, b, sec in measured]

    def residual(z: np.ndarray) -> np.ndarray:
        params = replace(base, **dict(zip(names, (z * scale).tolist(), strict=True)))
        errs = []
        for dev, batch, log_truth in logs:
            gpu, host = unit_seconds(dev, batch, params)
            errs.append(np.log(np.maximum(counts @ gpu, counts @ host)) - log_truth)
        return np.concatenate(errs)

    start = np.array([_START[n] for n in names]) / scale
    lo = np.array([_SEARCH[n][0] for n in names]) / scale
    hi = np.array([_SEARCH[n][1] for n in names]) / scale
    res = least_squares(residual, start, bounds=(lo, hi), method="trf", loss="soft_l1", f_scale=0.1)
    if not res.success:
        raise RuntimeError(f"the cells' fit did not converge: {res.message}")
    return replace(base, **dict(zip(names, (res.x * scale).tolist(), strict=True)))


def cell_measurements(
    devices: Sequence[str] = tuple(HELP_DEVICES), batches: Sequence[int] = CELL_BATCHES
) -> list[tuple[str, int, np.ndarray]]:
    """The shipped cell latencies: (built-in device, batch, seconds per batch (15625,))."""
    return [(HELP_DEVICES[g], b, load_latency(g, b)) for g in devices for b in batches]


def all_ops() -> np.ndarray:
    """The op codes of all 15625 tss networks, int (15625, 6)."""
    return arch_ops().astype(np.int64)


def fit_cells(base: GpuModelParams, devices: Sequence[str] = tuple(HELP_DEVICES)) -> GpuModelParams:
    """``base`` with the cell figures fitted on the shipped cells of ``devices`` (HELP names).
    The shipped cells are fixed package data, so a fit is remembered (per process) for its
    ``base`` and devices: the held-out tables and the host check share theirs."""
    return _fit_shipped_cells(base, tuple(devices))


@functools.lru_cache(maxsize=16)
def _fit_shipped_cells(base: GpuModelParams, devices: tuple[str, ...]) -> GpuModelParams:
    return fit_cell_figures(cell_measurements(devices), base, all_ops())


def cells_provenance(devices: Sequence[str] = tuple(HELP_DEVICES)) -> dict[str, object]:
    """What a cells fit read: the shipped file's SHA-256, devices, batches, precision."""
    return {
        "figures": list(CELL_FIGURES),
        "file": "nasfilter/data/nats_tss_real/help_latency_ms.npz",
        "sha256": SHA256["help_latency_ms.npz"],
        "devices": [HELP_DEVICES[g] for g in devices],
        "batches": list(CELL_BATCHES),
        "networks": 15625,
        "precision": CELL_PRECISION,
        "engine": "PyTorch eager (HELP; assumed, see docs/gpu-model.md)",
    }


# Modelled host time over GPU time that makes a network worth measuring for the host: hosts
# differ by some 15-30 % between machines (docs/gpu-model.md), so at 1.5 a network stays
# host-bound on a host a third faster than the fit's.
HOST_BOUND_MARGIN = 1.5


def host_bound_networks(
    device: str | DeviceSpec, batch: int = 1, params: GpuModelParams | None = None
) -> np.ndarray:
    """The tss networks worth measuring for :func:`host_kernel_from_latency`, int64 (M,):
    those whose modelled host time is at least :data:`HOST_BOUND_MARGIN` times their modelled
    GPU time at ``batch`` on ``device`` (``params``: default the shipped calibration's), so
    that their latency is the host's whatever the GPU's error. Chosen before measuring."""
    params = load_calibration().params if params is None else params
    dev = replace(get_device(device), measured_host_kernel_seconds=None)
    counts = tss_units(CELL_DATASET).counts(all_ops())
    gpu, host = unit_seconds(dev, check_batch(batch, dev, CELL_DATASET, CELL_PRECISION), params)
    return np.flatnonzero(counts @ host >= HOST_BOUND_MARGIN * (counts @ gpu)).astype(np.int64)


def host_ratios(
    device: str | DeviceSpec,
    archs: Sequence[int] | np.ndarray,
    seconds: Sequence[float] | np.ndarray,
    batch: int = 1,
    params: GpuModelParams | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each measured tss network's latency over its modelled host time, float64 (K,), and
    whether it is host-bound, bool (K,): one of :func:`host_bound_networks` at ``batch`` (its
    modelled host time at least :data:`HOST_BOUND_MARGIN` times its modelled GPU time) and
    measured above its modelled GPU time, so that its latency speaks of the host.
    ``seconds`` per batch of ``batch`` images (K,) of the networks ``archs`` (K,) on
    ``device`` (its fitted host: a device file's own figure is ignored); ``params`` default to
    the shipped calibration's. ValueError naming the value for an index
    outside 0..15624, unequal lengths, or a latency that is not a finite number > 0."""
    params = load_calibration().params if params is None else params
    dev = replace(get_device(device), measured_host_kernel_seconds=None)  # the fitted host
    b = check_batch(batch, dev, CELL_DATASET, CELL_PRECISION)
    index = np.array([TSS.check_index(a) for a in np.asarray(archs).ravel().tolist()], np.int64)
    measured = np.asarray(seconds, dtype=np.float64).ravel()
    if index.size == 0 or measured.shape != index.shape:
        raise ValueError(
            f"give one latency per network: {index.size} networks, {measured.size} latencies"
        )
    bad = ~(np.isfinite(measured) & (measured > 0))
    if bad.any():
        raise ValueError(
            f"latencies must be finite seconds > 0, got {float(measured[bad][0])!r} for network "
            f"{int(index[bad][0])}"
        )
    counts = tss_units(CELL_DATASET).counts(all_ops()[index])
    gpu, host = unit_seconds(dev, b, params)
    ratio: np.ndarray = measured / (counts @ host)
    bound: np.ndarray = (counts @ host >= HOST_BOUND_MARGIN * (counts @ gpu)) & (
        counts @ gpu < measured
    )
    return ratio, bound


def host_kernel_from_latency(
    device: str | DeviceSpec,
    archs: Sequence[int] | np.ndarray,
    seconds: Sequence[float] | np.ndarray,
    batch: int = 1,
    params: GpuModelParams | None = None,
) -> float:
    """The host's seconds per eager kernel implied by tss networks measured on a machine:
    ``seconds`` per batch of ``batch`` images (K,) of the networks ``archs`` (K,), for the
    device file's ``measured_host_kernel_us`` (:class:`~nasfilter.oracle.devices.DeviceSpec`).

    A network the model calls host-bound at ``batch`` (:func:`host_bound_networks`) whose
    modelled GPU time is below its measurement is host-bound, and its measurement over its
    modelled host time (:func:`host_ratios`) scales
    ``params.host_seconds`` (default: the shipped calibration's); the median over those
    networks is returned (a few of them average out one measurement's noise:
    docs/gpu-model.md; :func:`host_bound_networks` are the ones to measure). ValueError naming
    the value for what :func:`host_ratios` refuses, no host-bound network, or ``params``
    without a host time.
    """
    if params is None:
        params = load_calibration().params
    if not params.host_seconds > 0:
        raise ValueError(
            f"the calibration has no host time (host_seconds = {params.host_seconds!r}): it "
            "was fitted without the cells, so it cannot scale one"
        )
    ratio, bound = host_ratios(device, archs, seconds, batch, params)
    if not bound.any():
        index = [TSS.check_index(a) for a in np.asarray(archs).ravel().tolist()]
        raise ValueError(
            f"none of the networks {index} is host-bound at batch {batch} on "
            f"{get_device(device).name}: for each, the modelled host time is under "
            f"{HOST_BOUND_MARGIN} times the modelled GPU time, or the measured latency is at or "
            "below the modelled GPU time, so it says nothing of the host (measure networks of "
            "host_bound_networks at batch 1)"
        )
    return float(np.median(ratio[bound]) * params.host_seconds)
