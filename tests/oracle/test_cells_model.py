"""The GPU model on the tss cells: FP32 physics, batch limits, the shipped fit, the format."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from nasfilter.oracle.calibrated import (
    DEFAULT_CALIBRATION,
    CalibrationFileError,
    load_calibration,
    predict_tss,
)
from nasfilter.oracle.calibration import scores
from nasfilter.oracle.cells import (
    HELP_DEVICES,
    all_ops,
    cell_measurements,
    fit_cell_figures,
    largest_batch,
    roofline_batch_seconds,
    tss_batch_seconds,
)
from nasfilter.oracle.devices import DEVICES
from nasfilter.oracle.gpuwork import quantized_gemm_flops


def test_the_cells_were_measured_in_fp32_not_fp16() -> None:
    # At batch 256 the fastest cells reach a quarter of a Pascal card's FP32 peak: 18 times its
    # FP16 rate (GP102: 1/64 of FP32), so the arithmetic was FP32 (FLOPs = 2 x NATS MACs).
    from nasfilter.bench.tss_data import load_latency, load_tss_arrays

    flops = 2e6 * load_tss_arrays("cifar10").flops_M.astype(np.float64)
    dev = DEVICES["gtx1080ti"]
    rate = (256 / load_latency("1080ti", 256) * flops).max()
    assert dev.fp32_peak_flops is not None
    assert 0.2 < rate / dev.fp32_peak_flops < 0.5 and rate / dev.peak_flops > 10


def test_fp32_wave_is_one_tile_per_sm() -> None:
    # 8 tiles of 128 x 32 on 28 SMs: one wave of one tile per SM (K unpadded), not 8 slots.
    m, n, k = np.array(1024.0), np.array(16.0), np.array(144.0)
    assert quantized_gemm_flops(m, n, k, 28, 1) == 28 * 128 * 32 * 144 * 2
    assert quantized_gemm_flops(m, n, k, 28) == 28 * 128 * 256 * 144 * 2  # FP16 unchanged


def test_batch_zero_or_beyond_memory_is_refused_naming_the_value() -> None:
    dev = DEVICES["gtx1080ti"]
    top = largest_batch(dev)
    assert 1000 < top < 100_000
    for bad in (0, -1, top + 1, 2.5, True):
        with pytest.raises(ValueError, match=rf"batch must be an integer from 1 to {top}"):
            predict_tss(dev, bad)  # type: ignore[arg-type]
    assert np.all(np.isfinite(predict_tss(dev, top)))


def test_shipped_fit_predicts_all_cells_fast_and_within_the_goals() -> None:
    cal = load_calibration()
    predict_tss("rtx2080ti", 256)  # warm the caches
    start = time.perf_counter()
    thr = predict_tss("rtx2080ti", 256, cal)
    assert time.perf_counter() - start < 0.5 and thr.shape == (15625,)
    for device, batch, seconds in cell_measurements(batches=(1, 256)):
        got = scores(
            batch / tss_batch_seconds(device, batch, cal.params, all_ops()), batch / seconds
        )
        roof = scores(batch / roofline_batch_seconds(device, batch, all_ops()), batch / seconds)
        assert got["mdape_percent"] < 15 and got["mdape_percent"] < roof["mdape_percent"]
        assert got["spearman"] > 0.95


def test_the_cell_fit_recovers_its_own_figures() -> None:
    """Synthetic latencies from known figures are fitted back (the fit, not the data)."""
    cal = load_calibration()
    ops = all_ops()[::50]
    truth = cal.params
    measured = [
        (dev, b, tss_batch_seconds(dev, b, truth, ops))
        for dev in HELP_DEVICES.values()
        for b in (1, 256)
    ]
    got = fit_cell_figures(measured, truth, ops)
    assert got.fp32_efficiency == pytest.approx(truth.fp32_efficiency, rel=1e-3)
    assert got.conv_host_seconds == pytest.approx(truth.conv_host_seconds, rel=1e-3)


def _write(tmp_path: Path, change: dict[str, object]) -> Path:
    data = json.loads(DEFAULT_CALIBRATION.read_text())
    data["params"].update(change.get("params", {}))  # type: ignore[arg-type]
    data.update({k: v for k, v in change.items() if k != "params"})
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            {"params": {"tensor_efficiency": "0.5"}},
            "params.tensor_efficiency must be a finite number, got '0.5'",
        ),
        (
            {"params": {"host_seconds": True}},
            "params.host_seconds must be a finite number, got True",
        ),
        (
            {"params": {"fp32_efficiency": None}},
            "params.fp32_efficiency must be a finite number, got None",
        ),
        (
            {"params": {"pool_tap_rate": [1]}},
            r"params.pool_tap_rate must be a finite number, got \[1\]",
        ),
        ({"params": {"kernel_seconds": 10**400}}, "params.kernel_seconds must be a finite number"),
        ({"params": {"memory_efficiency": 2.0}}, "memory_efficiency = 2.0 not in"),
        ({"provenance": ["x"]}, r"provenance must be a JSON object, got \['x'\]"),
        ({"fitted_on": 3}, "fitted_on must be a string, got 3"),
        ({"format": 4}, "older nasfilter .format 4, twelve figures"),
        ({"format": True}, "not a nasfilter calibration of format 5"),
    ],
)
def test_bad_calibration_files_are_refused_naming_field_and_value(
    tmp_path: Path, change: dict[str, object], words: str
) -> None:
    with pytest.raises(CalibrationFileError, match=words):
        load_calibration(_write(tmp_path, change))


def test_a_nan_is_refused_not_replaced_by_another_figure(tmp_path: Path) -> None:
    # GpuModelParams fills a NaN depthwise figure from the grouped one; a file may not.
    path = _write(tmp_path, {})
    path.write_text(
        path.read_text().replace(
            '"depthwise_efficiency": 0.', '"depthwise_efficiency": NaN, "x": 0.'
        )
    )
    with pytest.raises(CalibrationFileError, match="NaN is not a number a calibration may hold"):
        load_calibration(path)


def test_backend_predicts_a_device_file_nobody_measured(tmp_path: Path) -> None:
    from nasfilter.oracle.calibrated import CalibratedBackend

    path = tmp_path / "lab.json"
    spec = {
        "name": "lab",
        "peak_tflops": 50,
        "bandwidth_tbs": 0.7,
        "fp32_peak_tflops": 15,
        "tensor_cores": True,
        "sm_count": 60,
        "memory_gb": 12,
        "l2_mb": 6,
    }
    path.write_text(json.dumps(spec))
    thr = CalibratedBackend(str(path)).predict_tss(256)
    assert thr.shape == (15625,) and np.all(np.isfinite(thr) & (thr > 0))
    # more bandwidth and FP32 rate: never slower
    faster = dict(spec, name="lab2", bandwidth_tbs=1.4, fp32_peak_tflops=30)
    path.write_text(json.dumps(faster))
    assert np.all(CalibratedBackend(str(path)).predict_tss(256) >= thr)


def test_a_data_sheet_device_file_predicts_a_gpu_left_out_of_the_fit(tmp_path: Path) -> None:
    """The Titan Xp from its data sheet alone (typed here from NVIDIA's spec page: 3840 CUDA
    cores x 2 x 1.582 GHz = 12.15 TFLOP/s FP32, 547.6 GB/s, 30 SMs, 12 GB, 3 MB L2, no tensor
    cores), with the cell figures fitted on the three other GPUs only, against HELP's measured
    Titan Xp latencies: the goals for a GPU left out (docs/gpu-model.md)."""
    from nasfilter.bench.tss_data import load_latency
    from nasfilter.oracle.calibrated import CalibratedBackend, Calibration

    ops = all_ops()
    others = [m for m in cell_measurements() if m[0] != "titanxp"]
    sub = [(d, b, s[::25]) for d, b, s in others]  # every 25th network: a quick fit
    params = fit_cell_figures(sub, load_calibration().params, ops[::25])
    path = tmp_path / "my-titanxp.json"
    spec = {
        "name": "my-titanxp",
        "peak_tflops": 12.15 / 64,
        "bandwidth_tbs": 0.5476,
        "fp32_peak_tflops": 12.15,
        "tensor_cores": False,
        "sm_count": 30,
        "memory_gb": 12,
        "l2_mb": 3,
    }
    path.write_text(json.dumps(spec))
    backend = CalibratedBackend(str(path))
    backend.calibration = Calibration(params, "cells without the Titan Xp", {})
    for batch, mdape in ((1, 20.0), (256, 12.0)):
        got = scores(backend.predict_tss(batch), batch / load_latency("titanxp", batch))
        assert got["mdape_percent"] <= mdape and got["spearman"] >= 0.95, (batch, got)
