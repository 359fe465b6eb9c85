"""Throughput of a model's fused layers on a device: the plain roofline, and the prediction.

Both are the oracle's own functions applied to a one-model :class:`LayerTable`; nothing here
is a second copy of a device model:

- ``roofline_throughput``: the plain per-layer roofline (docs/facts.md §4),
  :func:`nasfilter.oracle.roofline.roofline_layer_seconds` with the data-sheet peak and
  bandwidth and no launch overhead: ``max(FLOPs / peak, bytes / bandwidth)`` per layer, FP16.
- ``predicted_throughput``: the survey's single hook for "the oracle's best GPU model"; every
  ``predicted_throughput`` column and figure comes from it. It is the calibrated GPU model
  (:func:`nasfilter.oracle.calibrated.predict_throughput`), eager engine (how timm's
  benchmark runs: PyTorch eager, AMP) in the survey's layout, with the shipped calibration
  or one the user fitted with ``nasfilter calibrate`` (``calibration``).
  :func:`predictor_label` names the model and the data it was fitted on (:data:`PREDICTOR`
  for the shipped fit).
- ``max_batch``: :func:`nasfilter.oracle.gpumodel.max_batch` capped at
  :data:`TIMM_MAX_BATCH`.

The shipped calibration was fitted on the same timm RTX 3090 / RTX 4090 files the survey
compares with (:func:`fitted_on_files`): beside those files, a prediction is in-sample.
"""

from __future__ import annotations

import numpy as np

from nasfilter.bench.layer_table import LayerTable
from nasfilter.oracle.calibrated import Calibration, load_calibration, predict_throughput
from nasfilter.oracle.devices import DeviceSpec
from nasfilter.oracle.gpumodel import BYTES_PER_ELEMENT
from nasfilter.oracle.gpumodel import max_batch as _gpu_max_batch
from nasfilter.oracle.roofline import roofline_layer_seconds

__all__ = [
    "BYTES_PER_ELEMENT",
    "ENGINE",
    "PREDICTOR",
    "TIMM_MAX_BATCH",
    "fitted_on_files",
    "max_batch",
    "predicted_throughput",
    "predictor_label",
    "roofline_throughput",
]

ENGINE = "eager"  # timm's benchmark: PyTorch eager with AMP
TIMM_MAX_BATCH = 1024  # timm's benchmark starts at 1024 and halves when out of memory


def predictor_label(calibration: Calibration | None = None) -> str:
    """The name of the survey's GPU model and of the data its calibration (default: the
    shipped one) was fitted on, with the calibration file where it is the user's."""
    cal = calibration or load_calibration()
    where = "" if cal.path is None or calibration is None else f", file {cal.path}"
    return f"calibrated GPU model, {ENGINE} engine (fit: {cal.fitted_on}{where})"


def fitted_on_files(calibration: Calibration | None = None) -> list[str]:
    """File names of the measurements a calibration (default: the shipped one) was fitted on."""
    sets = (calibration or load_calibration()).provenance.get("sets", [])
    return sorted(str(f["file"]) for s in sets for f in s.get("files", []))


PREDICTOR = predictor_label()


def _check(table: LayerTable, batch: int) -> None:
    if table.n_networks != 1:
        raise ValueError(f"expected a single-model LayerTable (B = 1), got B = {table.n_networks}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")


def roofline_throughput(table: LayerTable, device: DeviceSpec, batch: int) -> float:
    """Images/s of the plain per-layer roofline at ``batch`` (data-sheet peak, no overhead)."""
    _check(table, batch)
    seconds = roofline_layer_seconds(
        table, device.peak("spec"), device.memory_bandwidth("spec"), int(batch), 0.0
    )
    return float(batch / seconds.sum())


def predicted_throughput(
    table: LayerTable,
    device: DeviceSpec,
    batch: int,
    layout: str = "nchw",
    calibration: Calibration | None = None,
) -> float:
    """Images/s predicted by the survey's GPU model (:func:`predictor_label`) at ``batch``,
    with ``calibration`` (default: the shipped one).

    Raises MissingDeviceFieldError when the device lacks its SM count.
    """
    _check(table, batch)
    return predict_throughput(
        table, device, int(batch), layout=layout, engine=ENGINE, calibration=calibration
    )


def max_batch(table: LayerTable, device: DeviceSpec) -> int:
    """The largest power-of-two batch <= :data:`TIMM_MAX_BATCH` that fits the device memory
    (:func:`nasfilter.oracle.gpumodel.max_batch`); MissingDeviceFieldError without its
    memory size."""
    _check(table, 1)
    return int(_gpu_max_batch(table, device, cap=TIMM_MAX_BATCH)[0])
