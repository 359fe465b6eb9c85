"""The calibrated oracle for the NATS space: labels, limits, agreement with the roofline's
physics where the two must agree, and the shipped calibration's provenance."""

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.layer_table import LayerTable
from nasfilter.bench.timm_data import DATA as TIMM_DIR
from nasfilter.oracle.calibrated import (
    DEFAULT_CALIBRATION,
    Calibration,
    CalibrationFileError,
    calibrated,
    load_calibration,
)
from nasfilter.oracle.devices import DEVICES, DeviceSpec, MissingDeviceFieldError
from nasfilter.oracle.gpumodel import PARAM_RANGES, GpuModelParams
from nasfilter.oracle.registry import create
from nasfilter.oracle.roofline import roofline

# Test figures (not a product calibration): ideal efficiencies, no kernel cost.
IDEAL = Calibration(GpuModelParams(1.0, 1.0, 0.0, 1.0, 4.0, 2.0, 1.0, 1.0, 2.0), "TEST ideal", {})
TYPICAL = Calibration(
    GpuModelParams(
        0.8,
        0.85,
        5e-6,
        0.3,
        4.0,
        1.0,
        0.2,
        0.5,
        2.0,
        fp32_efficiency=0.6,
        host_seconds=2e-5,
        conv_host_seconds=9e-5,
        pool_tap_rate=4e9,
    ),
    "TEST typical",
    {},
)


def test_ideal_model_is_never_faster_than_the_plain_roofline() -> None:
    # Same batch, same peak and bandwidth (A100: no measured caps), no overheads, and no L2
    # (the roofline has none): tiles and waves only add work, so every network takes at
    # least the roofline's time.
    no_l2 = replace(DEVICES["a100"], l2_bytes=None)
    cal = calibrated(no_l2, "cifar10", IDEAL, batch=1024)
    roof = roofline(no_l2, "cifar10", batch=1024, launch_overhead=0.0)
    assert np.all(cal.throughput <= roof.throughput * (1 + 1e-12))
    # With its 40 MB L2, reads of small tensors just written come from it: faster, never slower.
    with_l2 = calibrated("a100", "cifar10", IDEAL, batch=1024)
    assert np.all(with_l2.throughput >= cal.throughput) and np.any(
        with_l2.throughput > 1.01 * cal.throughput
    )
    # Where compute is what counts (a device with unlimited bandwidth), the widest network
    # fills its tiles (64 channels, K = 576; only partial last waves cost, e.g. the 8x8 stage's
    # 1,024 tiles on 864 slots take 2 waves) and the narrowest wastes 3/4 of each tile (8 output
    # channels in the narrowest, 32-wide tile).
    spec = DeviceSpec("fast-memory", 100e12, 1e18, sm_count=108, memory_bytes=80e9)
    cal = calibrated(spec, "cifar10", IDEAL, batch=1024)
    roof = roofline(spec, "cifar10", batch=1024, launch_overhead=0.0)
    assert cal.throughput[32767] / roof.throughput[32767] > 0.85
    assert 0.2 < cal.throughput[0] / roof.throughput[0] < 0.35


def test_utilization_is_throughput_times_flops_over_the_peak() -> None:
    res = calibrated("v100", "cifar10", TYPICAL)
    assert np.allclose(res.utilization, res.throughput * res.flops_per_image / 100e12)
    assert res.peak_flops == 100e12 and res.peak_source == "measured"
    assert np.all(res.utilization > 0) and np.all(res.utilization <= 1)


def test_largest_batch_follows_memory() -> None:
    v100 = calibrated("v100", "cifar10", TYPICAL).batch  # 16 GB
    small = DeviceSpec("small", 125e12, 0.9e12, sm_count=80, memory_bytes=1e9)
    one_gb = calibrated(small, "cifar10", TYPICAL).batch
    assert np.all(one_gb <= v100 / 8)
    assert np.all(np.log2(v100) % 1 == 0)  # powers of two
    assert one_gb[0] > one_gb[32767]  # a small network fits more images


def test_eager_nchw_is_slowest_fused_fastest() -> None:
    kw = {"batch": 1024}
    fused = calibrated("rtx3090", "cifar10", TYPICAL, **kw).throughput
    nhwc = calibrated("rtx3090", "cifar10", TYPICAL, engine="eager", layout="nhwc", **kw)
    nchw = calibrated("rtx3090", "cifar10", TYPICAL, engine="eager", layout="nchw", **kw)
    assert np.all(fused > nhwc.throughput) and np.all(nhwc.throughput > nchw.throughput)


def test_labels_name_the_model_and_its_fit_data() -> None:
    proxy = calibrated("h100", "cifar100", TYPICAL).proxy_table()
    assert proxy.label.startswith("calibrated h100") and "TEST typical" in proxy.label
    assert proxy.provenance["backend"] == "calibrated"
    assert proxy.provenance["config"]["fitted_on"] == "TEST typical"


def test_bad_settings_and_devices_are_named() -> None:
    with pytest.raises(ValueError, match="engine must be one of"):
        calibrated("v100", "cifar10", TYPICAL, engine="jit")
    with pytest.raises(ValueError, match="layout must be one of"):
        calibrated("v100", "cifar10", TYPICAL, layout="chwn")
    with pytest.raises(ValueError, match="batch must be 'max'"):
        calibrated("v100", "cifar10", TYPICAL, batch=0)
    with pytest.raises(MissingDeviceFieldError, match="lacks sm_count, memory_bytes"):
        calibrated("mygpu:100:1", "cifar10", TYPICAL)


def test_calibration_files_are_checked(tmp_path: Path) -> None:
    with pytest.raises(CalibrationFileError, match="does not exist"):
        load_calibration(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CalibrationFileError, match="not readable JSON"):
        load_calibration(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": 5, "params": {"tensor_efficiency": 0.5}}))
    with pytest.raises(CalibrationFileError, match="exactly the keys"):
        load_calibration(other)
    # A six-figure file of the model before layouts were predicted: refit, not misread.
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": 1, "params": {"tensor_efficiency": 0.5}}))
    with pytest.raises(CalibrationFileError, match=r"older nasfilter.*nasfilter calibrate"):
        load_calibration(old)
    good = tmp_path / "good.json"
    TYPICAL.save(good)
    assert load_calibration(good).params == TYPICAL.params
    with pytest.raises(FileExistsError, match="--force"):
        TYPICAL.save(good)


def test_the_shipped_calibration_is_physical_and_names_its_data() -> None:
    cal = load_calibration()
    for name, value in cal.params.to_dict().items():
        lo, hi = PARAM_RANGES[name]
        assert lo <= value <= hi, name
    assert "rtx3090" in cal.fitted_on and "rtx4090" in cal.fitted_on
    files = [f for s in cal.provenance["sets"] for f in s["files"]]
    assert len(files) == 4
    for f in files:  # the shipped measurements it was fitted on, byte for byte
        digest = hashlib.sha256((TIMM_DIR / f["file"]).read_bytes()).hexdigest()
        assert digest == f["sha256"], f["file"]
    assert cal.provenance["samples"] >= 300 and DEFAULT_CALIBRATION.is_file()


def test_the_backend_measures_rows_with_the_batch_it_chose() -> None:
    from nasfilter.bench.datasets import get_dataset

    backend = create("calibrated", "v100")
    row = backend.measure(12, get_dataset("cifar10"))
    assert row.backend == "calibrated" and row.max_batch == row.batch_size
    assert row.config["fitted_on"] == load_calibration().fitted_on
    assert create("calibrated", "v100").spec().device == "v100"


def test_predict_throughput_of_one_torch_model_matches_the_fit_data_path() -> None:
    from nasfilter.bench.network import layer_table
    from nasfilter.oracle import calibration as calib
    from nasfilter.oracle.calibrated import predict_throughput
    from tests.oracle.test_calibration import _synthetic_table

    table = _synthetic_table(np.random.default_rng(9), 224)  # SYNTHETIC
    for layout in ("nchw", "nhwc"):
        sample = calib.Sample(calib.BenchmarkRow("m", 224, 512, 1.0, 1.0), layout, table)
        sset = calib.SampleSet(calib.get_device("rtx4090"), [sample], [])
        expected = calib.predict(sset, TYPICAL.params)[0]  # the path the fit used
        got = predict_throughput(table, "rtx4090", 512, layout, calibration=TYPICAL)
        assert got == pytest.approx(expected, rel=1e-12)
    nhwc = predict_throughput(table, "rtx4090", 512, "nhwc", calibration=TYPICAL)
    assert nhwc > predict_throughput(table, "rtx4090", 512, "nchw", calibration=TYPICAL)
    with pytest.raises(ValueError, match="one-network"):
        predict_throughput(layer_table("cifar10"), "rtx4090", 512)  # 32768 networks


def test_per_layer_seconds_add_up_to_the_predicted_throughput() -> None:
    from nasfilter.bench.network import layer_table
    from nasfilter.oracle.calibrated import predict_layers, predict_throughput

    full = layer_table("cifar10")
    one = LayerTable(
        **{k: (v[:1] if isinstance(v, np.ndarray) else v) for k, v in full.__dict__.items()}
    )
    for layout in ("nchw", "nhwc"):
        seconds, bound = predict_layers(one, "rtx4090", 256, layout, "eager", TYPICAL)
        assert seconds.shape == bound.shape == (one.n_layers,)
        thr = predict_throughput(one, "rtx4090", 256, layout, "eager", TYPICAL)
        assert thr == pytest.approx(256 / seconds.sum())
        assert set(bound) <= {"compute", "memory", "kernel", "eager", "layout"}
        # Absent layers (the identity skips of this network) take no time.
        assert np.all(seconds[~one.present[0]] == 0)


def test_a_fixed_batch_above_what_fits_the_memory_is_refused_naming_it() -> None:
    small = DeviceSpec("small", 125e12, 0.9e12, sm_count=80, memory_bytes=1e9)
    with pytest.raises(ValueError, match=r"batch must be .*got 0"):
        calibrated(small, "cifar10", TYPICAL, batch=0)
    with pytest.raises(ValueError, match=r"from 1 to \d+ .*small's 1 GB.*got 10000000") as exc:
        calibrated(small, "cifar10", TYPICAL, batch=10_000_000)
    top = int(str(exc.value).split(" to ")[1].split(" ")[0])
    # By hand: the widest network holds a 64-channel 32x32 map in and out of a layer, FP16:
    # 2 x 64 x 1024 x 2 B = 262 kB per image, so at most 0.9 GB / 262 kB = 3433 images.
    assert 3433 / 4 < top <= 3433
    assert calibrated(small, "cifar10", TYPICAL, batch=top).batch[0] == top
    with pytest.raises(ValueError, match=rf"from 1 to {top} .*got {top + 1}"):
        calibrated(small, "cifar10", TYPICAL, batch=top + 1)


def test_the_provenance_records_the_batch_that_was_asked_for() -> None:
    fixed = calibrated("v100", "cifar10", batch=64)
    assert fixed.batch_setting == 64 and (fixed.batch == 64).all()
    assert fixed.proxy_table().provenance["config"]["batch"] == 64
    largest = calibrated("v100", "cifar10")
    assert largest.proxy_table().provenance["config"]["batch"] == "max"
    assert largest.batch.min() > 64  # each network at the largest batch that fits
