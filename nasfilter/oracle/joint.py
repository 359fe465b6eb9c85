"""One fit on both sources: timm's FP16 models and the tss cells' FP32 latencies together.

The shipped calibration is fitted in two stages (timm's twelve FP16 figures, then the four
cell figures with those held). :func:`fit_joint` fits all sixteen at once on any mix of the
two sources, so the figures both sources use (``memory_efficiency``, ``kernel_seconds``,
``eager_passes``: DRAM, a kernel's fixed cost and PyTorch's elementwise passes do not depend
on the precision) are set by both. The device part stays the data sheet; the precision is the
one per-source choice, and it is the hardware's: an FP16 network runs its dense layers on the
tensor cores (``tensor_efficiency`` of the FP16 tensor peak), an FP32 network on the CUDA
cores (``fp32_efficiency`` of the FP32 peak). Pascal has no tensor cores, so its cells say
nothing of ``tensor_efficiency``; nothing else is per generation.

Each source weighs the same in the loss: the cells' residuals (four GPUs x three batches x
15625 networks) are scaled by ``sqrt(n_timm / n_cells)``.

:func:`validate_joint` holds it out two ways: each of the six GPUs left out of
the fit in turn (RTX 3090 and 4090 from timm, four cell GPUs), and each source left out
(timm only -> cells, cells only -> timm), with the plain roofline beside each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nasfilter.bench.tss_layers import tss_units
from nasfilter.oracle import calibration as cal
from nasfilter.oracle.calibration_file import CALIBRATION_DIR
from nasfilter.oracle.cells import (
    _SCALE as CELL_SCALE,
)
from nasfilter.oracle.cells import (
    _SEARCH as CELL_SEARCH,
)
from nasfilter.oracle.cells import (
    _START as CELL_START,
)
from nasfilter.oracle.cells import (
    CELL_DATASET,
    all_ops,
    unit_seconds,
)
from nasfilter.oracle.devices import get_device
from nasfilter.oracle.gpumodel import CELL_FIGURES, TIMM_FIGURES, GpuModelParams

# The joint fit on all four timm files and all four cell GPUs, shipped beside the default
# (staged) calibration: `nasfilter calibrate --joint --out` this path (docs/gpu-model.md).
JOINT_CALIBRATION = CALIBRATION_DIR / "joint-timm-cells.json"
JOINT_FIGURES: tuple[str, ...] = (*TIMM_FIGURES, *CELL_FIGURES)
# The cells constrain only these of timm's figures (FP32 networks run no tensor-core,
# grouped, depthwise or layout term); with the cells alone the rest keep the fixed start.
SHARED_FIGURES = ("memory_efficiency", "kernel_seconds", "eager_passes")


@dataclass(frozen=True)
class JointResult:
    """A joint fit: its figures, what it read, its rms log error per source."""

    params: GpuModelParams
    timm_devices: tuple[str, ...]
    cell_devices: tuple[str, ...]
    rms_log_error: dict[str, float]
    evaluations: int


def _vectors() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Start, lower and upper bounds (in fit units) and the unit of each joint figure."""
    start = [getattr(cal._START, n) for n in TIMM_FIGURES] + [CELL_START[n] for n in CELL_FIGURES]
    lo = [cal._SEARCH[n][0] for n in TIMM_FIGURES] + [CELL_SEARCH[n][0] for n in CELL_FIGURES]
    hi = [cal._SEARCH[n][1] for n in TIMM_FIGURES] + [CELL_SEARCH[n][1] for n in CELL_FIGURES]
    scale = np.concatenate([cal._SCALE, [CELL_SCALE[n] for n in CELL_FIGURES]])
    return np.array(start) / scale, np.array(lo) / scale, np.array(hi) / scale, scale


def _params(z: np.ndarray, scale: np.ndarray, tie_tensor: bool) -> GpuModelParams:
    """The figures of fit vector ``z`` (not range-checked: the fit searches beyond)."""
    values = z * scale
    if tie_tensor:  # no FP16 data: a full tile reaches the same share of either unit's peak
        values = values.copy()
        values[JOINT_FIGURES.index("tensor_efficiency")] = values[
            JOINT_FIGURES.index("fp32_efficiency")
        ]
    return GpuModelParams.from_vector(values, JOINT_FIGURES)


def _cell_residual(
    measured: Sequence[tuple[str, int, np.ndarray]], ops: np.ndarray
) -> tuple[Any, int]:
    """A function of the params giving the log errors of every cell measurement, and n."""
    counts = tss_units(CELL_DATASET).counts(ops)
    logs = [(get_device(d), b, np.log(np.asarray(s, dtype=np.float64))) for d, b, s in measured]

    def residual(params: GpuModelParams) -> np.ndarray:
        out = []
        for dev, batch, truth in logs:
            gpu, host = unit_seconds(dev, batch, params)
            out.append(np.log(np.maximum(counts @ gpu, counts @ host)) - truth)
        return np.concatenate(out) if out else np.zeros(0)

    return residual, sum(len(t) for _, _, t in logs)


def cell_scale(n_timm: int, n_cells: int, cell_weight: float = 1.0) -> float:
    """The factor on each cell residual: ``sqrt(cell_weight x n_timm / n_cells)``, so that the
    cells' share of the loss is ``cell_weight`` times timm's (1: each source weighs the same);
    1 when either source is empty. ValueError naming ``cell_weight`` unless it is positive."""
    if isinstance(cell_weight, bool) or not (
        isinstance(cell_weight, (int, float)) and math.isfinite(cell_weight) and cell_weight > 0
    ):
        raise ValueError(f"cell_weight must be a positive finite number, got {cell_weight!r}")
    return math.sqrt(cell_weight * n_timm / n_cells) if n_timm and n_cells else 1.0


def fit_joint(
    timm_sets: Sequence[cal.SampleSet],
    cells: Sequence[tuple[str, int, np.ndarray]],
    ops: np.ndarray | None = None,
    cell_weight: float = 1.0,
) -> JointResult:
    """All sixteen figures fitted on ``timm_sets`` and ``cells`` (device, batch, seconds per
    batch of the networks ``ops``, default all 15625), the cells ``cell_weight`` times timm in
    the loss (:func:`cell_scale`); soft-L1 least squares of the log errors from a fixed start
    (deterministic). With no timm set, only :data:`SHARED_FIGURES` and the cell figures are
    fitted: the rest keep the start, ``tensor_efficiency`` tied to ``fp32_efficiency``.
    Raises CalibrationError when it does not converge or ends outside the physical ranges."""
    from scipy.optimize import least_squares

    ops = all_ops() if ops is None else ops
    start, lo, hi, scale = _vectors()
    flat = cal._flatten(timm_sets) if timm_sets else None
    nhwc, nchw = cal.layout_pairs(timm_sets) if timm_sets else (np.zeros(0, int),) * 2
    log_timm = np.log(flat.measured) if flat is not None else np.zeros(0)
    cell_res, n_cells = _cell_residual(cells, ops)
    n_timm = len(log_timm) + len(nhwc)
    weight = cell_scale(n_timm, n_cells, cell_weight)
    names = JOINT_FIGURES if flat is not None else (*SHARED_FIGURES, *CELL_FIGURES)
    free = np.array([JOINT_FIGURES.index(n) for n in names])

    def full(z: np.ndarray) -> GpuModelParams:
        x = start.copy()
        x[free] = z
        return _params(x, scale, tie_tensor=flat is None)

    def residual(z: np.ndarray) -> np.ndarray:
        params = full(z)
        parts = [weight * cell_res(params)]
        if flat is not None:
            err = np.log(cal._throughput(flat, params)) - log_timm
            parts = [err, cal.RATIO_WEIGHT * (err[nhwc] - err[nchw]), *parts]
        return np.concatenate(parts)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        res = least_squares(
            residual, start[free], bounds=(lo[free], hi[free]), method="trf", loss="soft_l1",
            f_scale=0.1, max_nfev=2000,
        )  # fmt: skip
    if not res.success or not np.all(np.isfinite(res.fun)):
        raise cal.CalibrationError(f"the joint fit did not converge ({res.message})")
    params = full(res.x)
    bad = params.out_of_range()
    if bad:
        raise cal.CalibrationError(f"the joint fit is unphysical, refused: {bad}")
    params = GpuModelParams.from_dict(params.to_dict())
    n_t = len(log_timm)
    rms = {"cells": float(np.sqrt(np.mean(cell_res(params) ** 2))) if n_cells else math.nan}
    rms["timm"] = float(np.sqrt(np.mean(res.fun[:n_t] ** 2))) if n_t else math.nan
    return JointResult(
        params=params,
        timm_devices=tuple(s.device.name for s in timm_sets),
        cell_devices=tuple(dict.fromkeys(d for d, _, _ in cells)),
        rms_log_error=rms,
        evaluations=int(res.nfev),
    )


def timm_only_params(params: GpuModelParams) -> GpuModelParams:
    """timm's figures with the cell figures at what timm alone says (no cell in the fit): a
    dense tile reaches ``tensor_efficiency`` of the FP32 peak too, no host time, pooling at
    its memory traffic."""
    return replace(
        params,
        fp32_efficiency=params.tensor_efficiency,
        host_seconds=0.0,
        conv_host_seconds=0.0,
        pool_tap_rate=math.inf,
    )


__all__ = [
    "JOINT_CALIBRATION",
    "JOINT_FIGURES",
    "SHARED_FIGURES",
    "JointResult",
    "cell_scale",
    "fit_joint",
    "timm_only_params",
]
