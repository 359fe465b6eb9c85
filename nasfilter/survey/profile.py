"""A per-layer profile of one model on a GPU you need not have: ``nasfilter profile``'s API.

:func:`profile` analyses a model (a timm name, ``module:function`` returning a torch module,
or a module itself) on the meta device, predicts each layer's time with the calibrated GPU
model (:mod:`nasfilter.survey.breakdown`: FLOPs, bytes, intensity against the device's CMR,
time, share and what bounds it), and the what-ifs: the other layout, the other engine, the
largest batch that fits and a FoldedCNN. Its whole-model throughput is the survey's
(:func:`nasfilter.oracle.calibrated.predict_throughput`, the same table, batch, layout,
engine and calibration), and so is its default batch: the largest power of two up to 1024
that fits the device memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.layer_table import LayerTable
from nasfilter.oracle.calibrated import Calibration, load_calibration, predict_throughput
from nasfilter.oracle.devices import DeviceSpec, get_device
from nasfilter.oracle.gpumodel import BYTES_PER_ELEMENT, ENGINES, LAYOUTS
from nasfilter.oracle.gpumodel import max_batch as gpu_max_batch
from nasfilter.registry import _PLUGIN, _load_module
from nasfilter.survey.analysis import ModelProfile, profile_model
from nasfilter.survey.breakdown import LayerBreakdown, layer_breakdown
from nasfilter.survey.fold import check_fold, fold
from nasfilter.survey.survey import per_original_image
from nasfilter.survey.throughput import max_batch as survey_max_batch
from nasfilter.survey.timm_import import import_timm
from nasfilter.survey.timm_models import _default_size, build_timm_model, check_names

DEFAULT_SHAPE = (3, 224, 224)


@dataclass(frozen=True)
class WhatIf:
    """One alternative setting: its predicted throughput (images/s) and utilization (0..1),
    or why it could not be predicted (``error``)."""

    name: str
    setting: str
    batch: int
    throughput: float
    utilization: float
    error: str = ""


@dataclass(frozen=True, eq=False)
class Profile:
    """One model's predicted execution on one device, per layer and whole.

    Attributes:
        model: the model's name; input_shape: (C, H, W) of one image.
        device, layout, engine, batch: the setting predicted.
        calibration: the fit used (``fitted_on``, ``path``).
        analysis: the layer analysis (per image, B = 1).
        layers: the per-layer breakdown at ``batch``.
        throughput: images/s; utilization: throughput x FLOPs per image / data-sheet peak.
        what_ifs: the alternatives, each against this setting.
    """

    model: str
    input_shape: tuple[int, int, int]
    device: DeviceSpec
    layout: str
    engine: str
    batch: int
    calibration: Calibration
    analysis: ModelProfile
    layers: LayerBreakdown
    throughput: float
    utilization: float
    what_ifs: tuple[WhatIf, ...]

    @property
    def table(self) -> LayerTable:
        return self.analysis.table

    @property
    def flops_per_image(self) -> float:
        return 2.0 * self.analysis.macs

    @property
    def arithmetic_intensity(self) -> float:
        """The whole network's FLOP/byte at the batch (the survey's definition)."""
        return float(self.table.network_intensity(self.batch, BYTES_PER_ELEMENT)[0])

    @property
    def cmr(self) -> float:
        """The device's compute-to-memory ratio, FLOP/byte (data sheet)."""
        return self.device.cmr("spec")


def load_model(spec: str, img_size: int | None = None) -> tuple[Any, str, int | None]:
    """A torch module, its name and its default image size (None: not known) from a timm
    name (built for ``img_size`` px where that matters) or ``module:function``
    (``path.py:function``), a function called without arguments returning a torch module.

    Raises LookupError for an unknown timm name, ValueError naming ``spec`` otherwise.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"model must be a timm name or module:function, got {spec!r}")
    text = spec.strip()
    match = _PLUGIN.match(text)
    if match is None:
        arch = check_names([text])[0]
        return build_timm_model(arch, img_size), arch, _default_size(import_timm(), arch)
    import torch

    module_name, attr = match.group("module"), match.group("attr")
    try:
        obj: Any = _load_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        model = obj()
    except Exception as exc:
        raise ValueError(f"model {text!r} cannot be built: {type(exc).__name__}: {exc}") from exc
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model {text!r} returned a {type(model).__name__}, not a torch module")
    return model, f"{Path(module_name).name}:{attr}", None


def fits(table: LayerTable, device: DeviceSpec, batch: int) -> bool:
    """Whether ``batch`` images fit the device memory by the GPU model's rule
    (:func:`nasfilter.oracle.gpumodel.max_batch` of a table of ``batch`` images)."""
    scaled = replace(
        table, input_elems=table.input_elems * batch, output_elems=table.output_elems * batch
    )
    try:
        return bool(gpu_max_batch(scaled, device)[0] >= 1)
    except ValueError:
        return False


def largest_batch(table: LayerTable, device: DeviceSpec) -> int:
    """The largest batch (any integer) that :func:`fits`; ValueError when not even one does."""
    low = int(gpu_max_batch(table, device)[0])  # a power of two that fits; 2x does not
    high = 2 * low
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(table, device, mid) else (low, mid)
    return low


def check_batch(table: LayerTable, device: DeviceSpec, batch: int | str, name: str) -> int:
    """``batch`` as an int: ``"max"`` is the survey's (largest power of two <= 1024 that fits);
    a number that does not fit raises ValueError saying the largest that does."""
    if batch == "max":
        return survey_max_batch(table, device)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be 'max' or a positive integer, got {batch!r}")
    if not fits(table, device, batch):
        raise ValueError(
            f"batch {batch} of {name} does not fit in {device.name}'s "
            f"{(device.memory_bytes or 0) / 1e9:g} GB; the largest batch that fits is "
            f"{largest_batch(table, device)}"
        )
    return batch


def _predict(
    table: LayerTable, base: Profile, batch: int, layout: str, engine: str, flops: float
) -> tuple[float, float]:
    """Images/s and utilization of ``table`` on ``base``'s device and calibration."""
    thr = predict_throughput(
        table, base.device, batch, layout=layout, engine=engine, calibration=base.calibration
    )
    return thr, thr * flops / base.device.peak("spec")


def _folded(model: Any, prof: ModelProfile, f: int) -> LayerTable:
    c, h, w = prof.input_shape
    folded = profile_model(fold(model, f, prof.input_shape), (c * f, h, w), name=prof.name)
    return per_original_image(folded.table, f)


def what_ifs(model: Any, base: Profile, fold_factor: int = 4) -> tuple[WhatIf, ...]:
    """The alternatives to ``base``'s setting (see the module docstring); ``fold_factor`` 1
    leaves out the FoldedCNN, and one that cannot be built is reported with its reason."""
    t, b, flops = base.table, base.batch, base.flops_per_image
    layout = "nhwc" if base.layout == "nchw" else "nchw"
    engine = "fused" if base.engine == "eager" else "eager"
    big = int(gpu_max_batch(t, base.device)[0])
    out = [
        WhatIf("layout", layout, b, *_predict(t, base, b, layout, base.engine, flops)),
        WhatIf("engine", engine, b, *_predict(t, base, b, base.layout, engine, flops)),
        WhatIf(
            "largest batch",
            f"batch {big}, the largest power of two that fits",
            big,
            *_predict(t, base, big, base.layout, base.engine, flops),
        ),
    ]
    if fold_factor == 1:
        return tuple(out)
    setting = f"FoldedCNN f = {fold_factor}"
    try:
        folded = _folded(model, base.analysis, fold_factor)
    except (ValueError, RuntimeError) as exc:  # FoldError, AnalysisError: reported
        out.append(WhatIf("fold", setting, b, math.nan, math.nan, f"{type(exc).__name__}: {exc}"))
        return tuple(out)
    ff = 2.0 * float(folded.macs.sum())
    out.append(WhatIf("fold", setting, b, *_predict(folded, base, b, base.layout, base.engine, ff)))
    return tuple(out)


def profile(
    model: Any,
    input_shape: Sequence[int] | None = None,
    *,
    device: str | DeviceSpec = "v100",
    layout: str = "nchw",
    engine: str = "eager",
    batch: int | str = "max",
    calibration: Calibration | str | Path | None = None,
    fold: int = 4,
) -> Profile:
    """Profile ``model`` (a timm name, ``module:function`` or a torch module) on ``device``.

    ``input_shape`` is (C, H, W) of one image (default: timm's size for a timm model, else
    3 x 224 x 224); ``fold``: the FoldedCNN what-if's factor (1: none). The defaults are the
    survey's (eager engine, NCHW, the shipped calibration, batch max). Raises ValueError
    (AnalysisError) naming the model when it cannot be traced for the shape, and
    MissingDeviceFieldError naming the device field the GPU model lacks.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    check_fold(fold)
    dev = get_device(device)
    dev.require("sm_count", "memory_bytes")
    cal = calibration if isinstance(calibration, Calibration) else load_calibration(calibration)
    shape = None if input_shape is None else _shape(input_shape)
    if isinstance(model, str):
        model, name, size = load_model(model, None if shape is None else shape[1])
    else:
        name, size = type(model).__name__, None
    if shape is None:
        shape = (3, size, size) if size else DEFAULT_SHAPE
    analysis = profile_model(model, shape, name=name)
    b = check_batch(analysis.table, dev, batch, analysis.name)
    layers = layer_breakdown(analysis.table, dev, cal.params, b, layout=layout, engine=engine)
    thr = b / float(layers.seconds.sum())
    util = thr * 2.0 * analysis.macs / dev.peak("spec")
    base = Profile(name, shape, dev, layout, engine, b, cal, analysis, layers, thr, util, ())
    return replace(base, what_ifs=what_ifs(model, base, fold))


def _shape(input_shape: Sequence[int]) -> tuple[int, int, int]:
    dims = tuple(input_shape) if isinstance(input_shape, (tuple, list)) else ()
    if len(dims) != 3 or not all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 1 for d in dims
    ):
        raise ValueError(f"input shape must be C,H,W of positive integers, got {input_shape!r}")
    return (int(dims[0]), int(dims[1]), int(dims[2]))
