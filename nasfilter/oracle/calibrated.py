"""The calibrated GPU model as an oracle: throughput and utilization of all 32768 networks.

It predicts each layer's time of the NATS networks' layer table with
:mod:`nasfilter.oracle.gpumodel`, using figures fitted to real measurements and stored with
their provenance in a calibration file (:mod:`nasfilter.oracle.calibration_file`, whose
names are importable from here too); the shipped one (:data:`DEFAULT_CALIBRATION`) by
``nasfilter calibrate`` on timm's RTX 3090 and 4090 files and the tss cells.

Settings, and why:

- engine ``"fused"`` by default: the study times TensorRT engines, which fold BN and fuse
  activations and residual adds, as the layer table assumes; the eager-mode figures of the
  fit (elementwise passes, NCHW transposes) then do not apply. ``engine="eager"`` predicts
  PyTorch eager instead, in ``layout`` ``"nchw"`` or ``"nhwc"``.
- batch ``"max"`` by default: the study times the largest batch that fits; here it is the
  largest power of two whose activations fit the device memory, per network
  (:func:`~nasfilter.oracle.gpumodel.max_batch`). An int fixes it (refused above what fits).
- the efficiencies are capped by the device's measured figures where it has them (a
  measured matrix product or copy is the most a kernel reaches there: V100 100 of 125
  TFLOP/s, so at most 0.8; :func:`~nasfilter.oracle.gpumodel.capped_by_measurements`).
- utilization = throughput x FLOPs per image / peak, the roofline's peak (the measured one
  where known: V100 100 TFLOP/s): the two oracles compare directly, utilization <= 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from nasfilter.bench.costs import flops
from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.layer_table import LayerTable
from nasfilter.bench.network import layer_table
from nasfilter.bench.proxy import ProxyTable
from nasfilter.oracle.analytic import AnalyticBackend, prediction_proxy_table
from nasfilter.oracle.base import BackendSpec
from nasfilter.oracle.calibration_file import CALIBRATION_DIR as CALIBRATION_DIR
from nasfilter.oracle.calibration_file import CALIBRATION_FORMAT as CALIBRATION_FORMAT
from nasfilter.oracle.calibration_file import DEFAULT_CALIBRATION as DEFAULT_CALIBRATION
from nasfilter.oracle.calibration_file import Calibration as Calibration
from nasfilter.oracle.calibration_file import CalibrationFileError as CalibrationFileError
from nasfilter.oracle.calibration_file import load_calibration as load_calibration
from nasfilter.oracle.cells import CELL_DATASET, CELL_PRECISION, all_ops, tss_batch_seconds
from nasfilter.oracle.devices import DEVICES, DeviceSpec, get_device
from nasfilter.oracle.gpumodel import (
    ENGINES,
    LAYOUTS,
    GpuModelParams,
    bounding_term,
    capped_by_measurements,
    check_batch_fits,
    layer_seconds,
    layer_terms,
    layer_work,
    max_batch,
)
from nasfilter.oracle.gpuwork import LayerWork

DEFAULT_PEAK_SOURCE = "measured"


@dataclass(frozen=True, eq=False)
class CalibratedResult:
    """The calibrated prediction for every architecture on one device and dataset.

    Attributes:
        device, dataset: what it is for.
        calibration: the fitted figures and their provenance.
        engine, layout: the execution the model predicts.
        batch: images per batch, per architecture, (32768,).
        peak_source: "spec" or "measured": the utilization denominator's source.
        peak_flops: the utilization denominator, FLOP/s.
        flops_per_image: 2 x NATS MACs, (32768,).
        batch_seconds: predicted seconds per batch, (32768,).
        throughput: images/s, (32768,).
        utilization: fraction of ``peak_flops``, (32768,).
        layer_seconds: seconds per layer and batch, (32768, L).
        batch_setting: what was asked: "max" (the largest batch that fits each network) or
            one batch for all.
    """

    device: DeviceSpec
    dataset: Dataset
    calibration: Calibration
    engine: str
    layout: str
    batch: np.ndarray
    peak_source: str
    peak_flops: float
    flops_per_image: np.ndarray
    batch_seconds: np.ndarray
    throughput: np.ndarray
    utilization: np.ndarray
    layer_seconds: np.ndarray
    batch_setting: int | str = "max"

    @property
    def label(self) -> str:
        return (
            f"calibrated {self.device.name} fp16 {self.engine} (fit: {self.calibration.fitted_on})"
        )

    def config(self) -> dict[str, Any]:
        return model_config(
            self.engine, self.layout, self.peak_source, self.calibration, self.batch_setting
        )

    def proxy_table(self) -> ProxyTable:
        """The simulator's view, labelled with the model and its fit data."""
        return prediction_proxy_table(
            self,
            "calibrated",
            "GPU model calibrated on real measurements of other networks; "
            "a prediction, not a measurement",
            {"calibration": self.calibration.provenance},
        )


def model_config(
    engine: str,
    layout: str,
    peak_source: str,
    calibration: Calibration,
    batch: int | str = "max",
) -> dict[str, Any]:
    """The settings of a calibrated prediction, JSON-ready: the config of its result and of
    its backend (a cache key, so both must agree; the backend always predicts at "max")."""
    return {
        "engine": engine,
        "layout": layout,
        "batch": batch,
        "peak_source": peak_source,
        "params": calibration.params.to_dict(),
        "fitted_on": calibration.fitted_on,
    }


def _check(engine: str, layout: str, batch: object) -> None:
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if batch != "max" and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise ValueError(f"batch must be 'max' or a positive integer, got {batch!r}")


def calibrated(
    device: str | DeviceSpec | None = None,
    dataset: str | Dataset = "cifar10",
    calibration: Calibration | str | Path | None = None,
    *,
    engine: str = "fused",
    layout: str = "nhwc",
    batch: int | str = "max",
    peak_source: str = DEFAULT_PEAK_SOURCE,
) -> CalibratedResult:
    """Predict every architecture's throughput and utilization with the calibrated model.

    Raises MissingDeviceFieldError when the device lacks the SM count or memory size.
    """
    dev = get_device(device)
    ds = get_dataset(dataset)
    _check(engine, layout, batch)
    dev.require("sm_count", *(("memory_bytes",) if batch == "max" else ()))
    cal = calibration if isinstance(calibration, Calibration) else load_calibration(calibration)
    table = layer_table(ds)
    if batch == "max":
        batches = max_batch(table, dev)
    else:  # a batch above what fits the memory is refused naming it
        batches = np.full(table.n_networks, float(check_batch_fits(int(batch), table, dev)))
    work = layer_work(table, dev, batches)
    params = capped_by_measurements(cal.params, dev)
    seconds = layer_seconds(work, dev, params, layout=layout, engine=engine)
    batch_seconds = seconds.sum(axis=1)
    throughput = batches / batch_seconds
    source = dev.resolved_source(peak_source)
    peak = dev.peak(source)
    fpi = np.asarray(flops(ds), dtype=np.float64)
    utilization = throughput * fpi / peak
    for arr in (batches, seconds, batch_seconds, throughput, utilization):
        arr.setflags(write=False)
    return CalibratedResult(
        device=dev,
        dataset=ds,
        calibration=cal,
        engine=engine,
        layout=layout,
        batch=batches,
        peak_source=source,
        peak_flops=peak,
        flops_per_image=fpi,
        batch_seconds=batch_seconds,
        throughput=throughput,
        utilization=utilization,
        layer_seconds=seconds,
        batch_setting=batch if batch == "max" else int(batch),
    )


def predict_throughput(
    table: LayerTable,
    device: str | DeviceSpec,
    batch: int,
    layout: str = "nchw",
    engine: str = "eager",
    calibration: Calibration | str | Path | None = None,
) -> float:
    """Images/s of a one-network table (a torch model's) at ``batch`` with the calibrated model.

    The default engine is ``"eager"``, how timm's published benchmark runs (PyTorch eager,
    AMP) in ``layout``; this is what ``nasfilter calibrate`` fitted and validated.
    """
    work, dev, params = _prepared(table, device, batch, layout, engine, calibration)
    seconds = layer_seconds(work, dev, params, layout=layout, engine=engine)[0]
    return float(batch / seconds.sum())  # the bounding terms are not needed: not computed


def predict_layers(
    table: LayerTable,
    device: str | DeviceSpec,
    batch: int,
    layout: str = "nchw",
    engine: str = "eager",
    calibration: Calibration | str | Path | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-layer seconds of one batch, (L,), and the term that bounds each layer, str (L,).

    The layers of :func:`predict_throughput` (which is ``batch / seconds.sum()``); the bound
    is one of :data:`~nasfilter.oracle.gpumodel.TERMS` (compute, memory, kernel, eager,
    layout), from :func:`~nasfilter.oracle.gpumodel.layer_terms`. Absent layers take 0 s.
    """
    work, dev, params = _prepared(table, device, batch, layout, engine, calibration)
    seconds = layer_seconds(work, dev, params, layout=layout, engine=engine)[0]
    terms = layer_terms(
        work, dev.peak_flops, dev.bandwidth, params, eager=engine == "eager", nchw=layout == "nchw"
    )
    return seconds, bounding_term(terms)[0]


def _prepared(
    table: LayerTable,
    device: str | DeviceSpec,
    batch: int,
    layout: str,
    engine: str,
    calibration: Calibration | str | Path | None,
) -> tuple[LayerWork, DeviceSpec, GpuModelParams]:
    """The checked arguments of :func:`predict_layers`: the table's work, device, params."""
    _check(engine, layout, batch)
    if table.n_networks != 1:
        raise ValueError(f"expected a one-network LayerTable (B = 1), got B = {table.n_networks}")
    dev = get_device(device)
    cal = calibration if isinstance(calibration, Calibration) else load_calibration(calibration)
    return layer_work(table, dev, batch), dev, capped_by_measurements(cal.params, dev)


def predict_tss(
    device: str | DeviceSpec,
    batch: int,
    calibration: Calibration | str | Path | None = None,
    dataset: str = CELL_DATASET,
    precision: str = CELL_PRECISION,
) -> np.ndarray:
    """Images/s of all 15625 tss networks on ``device`` at ``batch``, (15625,): PyTorch eager
    in ``precision`` (:mod:`nasfilter.oracle.cells`); a batch of 0 or one that does not fit
    the memory is refused naming it."""
    dev = get_device(device)
    cal = calibration if isinstance(calibration, Calibration) else load_calibration(calibration)
    seconds = tss_batch_seconds(dev, batch, cal.params, all_ops(), dataset, precision)
    out: np.ndarray = batch / seconds
    return out


class CalibratedBackend(AnalyticBackend):
    """The calibrated GPU model as an oracle backend: instant, deterministic.

    Args:
        device: v100 (default), a100, h100, h200, rtx3090, rtx4090, rtx2080ti, gtx1080ti,
            titanx, titanxp or a JSON device file
            (with the SM count and memory size the model needs).
        calibration: a calibration file written by `nasfilter calibrate` (default: the
            shipped fit).
        engine: "fused" (TensorRT-style: BN folded, activation and add fused; the study's
            engine) or "eager" (PyTorch eager: extra elementwise passes per layer).
        layout: "nhwc" (channels_last) or "nchw".
        peak_source: "measured" (the measured peak where the device has one) or "spec".
    """

    name: ClassVar[str] = "calibrated"
    commit_every: ClassVar[int] = 8192

    def __init__(
        self,
        device: str | DeviceSpec | None = None,
        calibration: str | None = None,
        engine: str = "fused",
        layout: str = "nhwc",
        peak_source: str = DEFAULT_PEAK_SOURCE,
    ) -> None:
        _check(engine, layout, "max")
        self.device = get_device(device)
        self.device.require("sm_count", "memory_bytes")
        self.calibration_path = calibration
        self.calibration = load_calibration(calibration)
        self.engine = engine
        self.layout = layout
        self.peak_source = self.device.resolved_source(peak_source)
        self._results: dict[str, CalibratedResult] = {}

    def result(self, dataset: str | Dataset) -> CalibratedResult:
        """The full prediction for ``dataset`` (computed once per backend)."""
        ds = get_dataset(dataset)
        if ds.name not in self._results:
            self._results[ds.name] = calibrated(
                self.device,
                ds,
                self.calibration,
                engine=self.engine,
                layout=self.layout,
                peak_source=self.peak_source,
            )
        return self._results[ds.name]

    @property
    def config(self) -> dict[str, Any]:
        return model_config(self.engine, self.layout, self.peak_source, self.calibration)

    def fingerprint(self) -> dict[str, Any]:
        return self.device.to_dict()

    def spec(self) -> BackendSpec:
        builtin = DEVICES.get(self.device.name)
        device = self.device.name if builtin == self.device else self.device.to_json()
        config: dict[str, Any] = {
            "engine": self.engine,
            "layout": self.layout,
            "peak_source": self.peak_source,
        }
        if self.calibration_path is not None:
            config["calibration"] = self.calibration_path
        return BackendSpec(self.name, device, config)

    def predict_tss(self, batch: int, precision: str = "fp32") -> np.ndarray:
        """Images/s of all 15625 tss (NAS-Bench-201) networks at ``batch`` on this backend's
        device, PyTorch eager in ``precision`` (:func:`nasfilter.oracle.cells.predict_tss`),
        (15625,); for ``nasfilter measure --space tss``."""
        return predict_tss(self.device, batch, self.calibration, precision=precision)

    def batch_of(self, prediction: CalibratedResult, arch: int) -> tuple[int, int | None]:
        batch = int(prediction.batch[arch])  # the largest that fits the memory
        return batch, batch
