"""The analytic roofline, device specs and the measurement row."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.costs import flops, network_costs
from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.spaces.sss import Arch
from nasfilter.oracle.devices import DEVICES, DeviceSpec, UnknownDeviceError, get_device
from nasfilter.oracle.measurement import InvalidMeasurement, Measurement, Status
from nasfilter.oracle.roofline import DEFAULT_BATCH, RooflineBackend, roofline

CIFAR = get_dataset("cifar10")


# ------------------------------------------------------------------------ devices
@pytest.mark.parametrize(
    ("name", "cmr"),
    [
        ("v100", 139),
        ("a100", 153),
        ("h100", 295),
        ("h200", 206),
        ("rtx3090", 76),
        ("rtx4090", 164),
    ],
)
def test_builtin_device_cmr_matches_the_data_sheets(name: str, cmr: int) -> None:
    # docs/facts.md §7: dense FP16 peak / memory bandwidth, FLOP/byte.
    assert round(get_device(name).cmr("spec")) == cmr


def test_default_device_is_the_v100_with_the_studys_measured_peak() -> None:
    dev = get_device(None)
    assert dev.name == "v100"
    assert dev.peak("measured") == 100e12 and dev.peak("spec") == 125e12


def test_user_device_from_string_and_json(tmp_path: Any) -> None:
    dev = get_device("mygpu:200:1.5")
    assert (dev.name, dev.peak_flops, dev.bandwidth) == ("mygpu", 200e12, 1.5e12)
    path = tmp_path / "dev.json"
    path.write_text(
        json.dumps(
            {"name": "x", "peak_tflops": 50, "bandwidth_tbs": 0.5, "measured_peak_tflops": 40}
        )
    )
    dev = get_device(str(path))
    assert dev.peak("measured") == 40e12 and dev.cmr("spec") == pytest.approx(100)


@pytest.mark.parametrize("bad", ["tpu", "x:abc:1", "x:-5:1", "missing.json"])
def test_unknown_or_bad_device_lists_the_known(bad: str) -> None:
    with pytest.raises(ValueError) as err:
        get_device(bad)
    if bad == "tpu":
        assert isinstance(err.value, UnknownDeviceError)
        for name in DEVICES:
            assert name in str(err.value)


def test_device_json_with_unknown_keys_is_refused(tmp_path: Any) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"name": "x", "peak_tflops": 1, "bandwidth_tbs": 1, "tflops": 3}))
    with pytest.raises(UnknownDeviceError, match="unknown keys"):
        get_device(str(path))


# -------------------------------------------------------------------- measurement
def _row(**kw: Any) -> Measurement:
    args: dict[str, Any] = {
        "arch": 3,
        "dataset": "cifar10",
        "backend": "test",
        "config": {"a": 1},
        "device": {"kind": "spec", "name": "t"},
        "status": Status.OK,
        "throughput": 1000.0,
        "batch_size": 8,
        "max_batch": 16,
        "flops_per_image": 2e6,
        "peak_flops": 1e10,
        "peak_source": "spec",
        "timings": {"median_s": 0.008},
    }
    args.update(kw)
    return Measurement(**args)


def test_measurement_derives_utilization_and_round_trips() -> None:
    m = _row()
    assert m.achieved_flops == 2e9
    assert m.utilization == pytest.approx(0.2)
    back = Measurement.from_dict(json.loads(m.to_json()))
    assert back == m
    failed = _row(status=Status.OOM, throughput=math.nan, error="oom at 1")
    assert math.isnan(failed.utilization)
    assert Measurement.from_dict(json.loads(failed.to_json())).status is Status.OOM


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 0.0, -3.0])
def test_ok_measurement_refuses_bad_throughput(bad: float) -> None:
    with pytest.raises(InvalidMeasurement, match="throughput"):
        _row(throughput=bad)


def test_failed_measurement_has_no_throughput() -> None:
    with pytest.raises(InvalidMeasurement):
        _row(status=Status.ERROR, throughput=5.0)


# ----------------------------------------------------------------------- roofline
def _hook_costs(arch: str) -> list[tuple[float, int]]:
    """(MACs per image, 1) per executed conv / linear / pooling module of the real network,
    found with forward hooks on xautodl's module (independent of nasfilter.bench.network)."""
    import torch

    from nasfilter.bench.network import build_network

    net = build_network(arch, CIFAR)
    found: list[tuple[float, int]] = []

    def hook(module: Any, inputs: Any, output: Any) -> None:
        x = inputs[0]
        if isinstance(module, torch.nn.Conv2d):
            k = module.kernel_size[0] * module.kernel_size[1]
            macs = k * module.in_channels * output[0].numel()
        elif isinstance(module, torch.nn.Linear):
            macs = module.in_features * module.out_features + module.out_features
        else:  # average pooling: one MAC per input element
            macs = x[0].numel()
        found.append((float(macs), 1))

    for module in net.modules():
        if isinstance(
            module,
            (torch.nn.Conv2d, torch.nn.Linear, torch.nn.AvgPool2d, torch.nn.AdaptiveAvgPool2d),
        ):
            module.register_forward_hook(hook)
    with torch.no_grad():
        net(torch.zeros(1, 3, 32, 32))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["8:8:8:8:8", "8:16:24:32:40", "64:64:64:64:64", "48:8:56:8:56"])
def test_compute_bound_limit_matches_the_real_network(arch: str) -> None:
    # With unlimited bandwidth every layer is compute-bound: the batch takes
    # sum(2 B MACs) / peak + layers x overhead, layers and MACs counted on the real module.
    ref = _hook_costs(arch)
    dev = DeviceSpec("fast-memory", 100e12, 1e30)
    batch, overhead = 512, 2e-6
    res = roofline(dev, CIFAR, batch=batch, launch_overhead=overhead, peak_source="spec")
    index = Arch.from_string(arch).index
    expected = sum(2 * batch * macs for macs, _ in ref) / 100e12 + len(ref) * overhead
    assert res.batch_seconds[index] == pytest.approx(expected, rel=1e-12)
    assert res.compute_bound[index][np.isfinite(res.layer_intensity[index])].all()


def test_memory_bound_stem_layer_by_hand() -> None:
    # 8:8:8:8:8, stem: conv 3x3, 3 -> 8 channels at 32 x 32, BN folded into an 8-element bias.
    # FP16 bytes at batch B: 2 x (B x (3 + 8) x 1024 + 3*3*3*8 + 8).
    dev = DeviceSpec("slow-memory", 1e30, 1e9)
    res = roofline(dev, CIFAR, batch=100, launch_overhead=0.0, peak_source="spec")
    stem = res.layer_names.index("stem.0")
    expected_bytes = 2 * (100 * 11 * 1024 + 27 * 8 + 8)
    assert res.layer_seconds[0, stem] == pytest.approx(expected_bytes / 1e9, rel=1e-12)
    flops_stem = 2 * 100 * 27 * 8 * 1024
    assert res.layer_intensity[0, stem] == pytest.approx(flops_stem / expected_bytes)


def test_roofline_on_the_whole_space() -> None:
    res = roofline("v100", CIFAR)
    n = len(res.throughput)
    assert n == 32768
    assert np.all(np.isfinite(res.throughput)) and np.all(res.throughput > 0)
    assert np.all(res.utilization > 0) and np.all(res.utilization <= 1)
    assert res.peak_flops == 100e12 and res.peak_source == "measured"
    # utilization = throughput x FLOPs / peak, with FLOPs = 2 x NATS MACs
    np.testing.assert_allclose(
        res.utilization, res.throughput * 2e6 * network_costs(CIFAR).macs / 100e12, rtol=1e-9
    )
    np.testing.assert_array_equal(res.flops_per_image, flops(CIFAR))
    # a layer is compute-bound exactly when its FLOP time exceeds its byte time
    assert res.cmr == pytest.approx(100e12 / 0.9e12)
    executed = np.isfinite(res.layer_intensity)
    assert executed.sum(axis=1).min() >= 20
    # the biggest network is far more compute-bound than the smallest
    frac = res.compute_bound_fraction
    assert frac[32767] > frac[0]
    assert res.utilization[32767] > res.utilization[0]
    assert res.throughput[0] > res.throughput[32767]


def test_more_overhead_or_smaller_batch_slows_every_network() -> None:
    base = roofline("a100", CIFAR)
    slow = roofline("a100", CIFAR, launch_overhead=10e-6)
    small = roofline("a100", CIFAR, batch=64)
    assert np.all(slow.throughput < base.throughput)
    assert np.all(small.throughput < base.throughput)


def test_proxy_table_and_backend_rows_agree() -> None:
    backend = RooflineBackend("h200")
    res = backend.result("ImageNet16-120")
    table = res.proxy_table()
    assert table.measured.all()
    assert table.provenance["synthetic"] is True
    rows = list(backend.measure_many([0, 12, 32767], get_dataset("ImageNet16-120")))
    for m in rows:
        assert m.throughput == table.throughput[m.arch]
        assert m.utilization == pytest.approx(table.utilization[m.arch], rel=1e-12)
        assert m.batch_size == DEFAULT_BATCH and m.max_batch is None
    assert backend.fingerprint()["name"] == "h200"


@pytest.mark.parametrize("kw", [{"batch": 0}, {"batch": 2.5}, {"launch_overhead": -1.0}])
def test_roofline_bad_settings(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        roofline("v100", CIFAR, **kw)


def test_roofline_pareto_count_matches_moocore() -> None:
    import moocore

    from nasfilter.oracle.sweep import pareto_count

    res = roofline("v100", CIFAR)
    points = np.stack([res.throughput, res.utilization], axis=1)
    expected = int(moocore.is_nondominated(points, maximise=True, keep_weakly=True).sum())
    assert pareto_count(res.throughput, res.utilization) == expected
    assert 10 < expected < 1000


def test_backend_spec_rebuilds_the_same_backend() -> None:
    from nasfilter.oracle.registry import from_spec

    custom = DeviceSpec("lab-gpu", 50e12, 0.5e12, measured_peak_flops=40e12)
    for backend in (RooflineBackend("a100", batch=256), RooflineBackend(custom)):
        again = from_spec(backend.spec())
        assert isinstance(again, RooflineBackend)
        assert again.device == backend.device
        assert again.config == backend.config
        assert again.fingerprint() == backend.fingerprint()
