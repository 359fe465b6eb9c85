"""The onnxruntime backend (real, tiny timing windows) and the cached CPU peak."""

from __future__ import annotations

import collections
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.datasets import get_dataset
from nasfilter.oracle import onnx_backend
from nasfilter.oracle.base import BackendUnavailable
from nasfilter.oracle.cpu_peak import cached_peak, measure_cpu_peak
from nasfilter.oracle.measurement import Status
from nasfilter.oracle.onnx_backend import OnnxRuntimeBackend, export_onnx, input_array
from nasfilter.oracle.registry import create
from nasfilter.oracle.timing import time_runs

CIFAR = get_dataset("cifar10")
QUICK = {"window": 0.04, "trials": 2, "warmup": 1, "peak_flops": 1e11}


@pytest.mark.slow
def test_exported_model_computes_what_the_torch_network_computes() -> None:
    import onnxruntime as ort
    import torch

    from nasfilter.bench.network import build_network

    data = export_onnx(284, get_dataset("cifar100"), 3)
    x = input_array((3, 3, 32, 32))
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    features, logits = session.run(None, {"input": x})
    with torch.no_grad():
        ref_features, ref_logits = build_network(284, "cifar100")(torch.from_numpy(x))
    assert logits.shape == (3, 100)
    np.testing.assert_allclose(logits, ref_logits.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(features, ref_features.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_graph_optimizations_fold_bn_and_fuse_the_residual_adds(tmp_path: Path) -> None:
    import onnx

    backend = OnnxRuntimeBackend(**QUICK)
    model = export_onnx(12, CIFAR, 2)
    before = collections.Counter(n.op_type for n in onnx.load_from_string(model).graph.node)
    assert before["BatchNormalization"] >= 1 and before["Add"] >= 5
    options_path = tmp_path / "optimized.onnx"
    backend.session(model, optimized_path=str(options_path))
    after = collections.Counter(n.op_type for n in onnx.load(options_path).graph.node)
    assert after["BatchNormalization"] == 0
    assert after["Add"] == 0
    assert after["Conv"] >= before["Conv"] - 1


@pytest.mark.slow
def test_measure_two_real_networks() -> None:
    backend = OnnxRuntimeBackend(batch=8, **QUICK)
    small, big = (backend.measure(i, CIFAR) for i in (0, 32767))
    for m in (small, big):
        assert m.status is Status.OK, m.error
        assert m.batch_size == 8 and m.max_batch is None
        assert m.peak_flops == 1e11
        assert m.utilization == pytest.approx(m.throughput * m.flops_per_image / 1e11)
        assert m.timings["median_s"] == pytest.approx(8 / m.throughput)
        assert m.timings["trials"] == 2 and m.timings["cv"] >= 0
        assert m.device["kind"] == "cpu" and m.device["logical_cpus"] >= 1
    # 64:64:64:64:64 costs 61 x the FLOPs of 8:8:8:8:8; it cannot be as fast
    assert small.throughput > 2 * big.throughput
    assert big.utilization > small.utilization
    assert small.config["graph_optimization"] == "all"


def test_failures_are_error_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kw: Any) -> bytes:
        raise RuntimeError("exporter exploded")

    monkeypatch.setattr(onnx_backend, "export_onnx", broken)
    m = OnnxRuntimeBackend(**QUICK).measure(0, CIFAR)
    assert m.status is Status.ERROR and "exporter exploded" in m.error


def test_missing_onnxruntime_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name)
    )
    with pytest.raises(BackendUnavailable, match=r"onnxruntime.*nasfilter\[onnx\]"):
        create("onnxruntime")


@pytest.mark.parametrize("kw", [{"batch": 0}, {"window": 0}, {"trials": 0}, {"device": "gpu"}])
def test_bad_settings(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        OnnxRuntimeBackend(**{**QUICK, **kw})


def test_time_runs_counts_and_medians() -> None:
    calls = []

    def timer(run: Any, n: int) -> float:
        for _ in range(n):
            run()
        return 0.01 * n  # each run takes 10 ms

    timing = time_runs(lambda: calls.append(1), window=0.3, trials=3, warmup=2, timer=timer)
    assert timing.runs_per_trial == 10 and timing.median == pytest.approx(0.01)
    assert timing.cv == pytest.approx(0.0)
    assert len(calls) == 2 + 3 * 10


def test_peak_is_measured_once_and_cached(tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    calls: list[int] = []

    def measure() -> float:
        calls.append(1)
        return 123e9

    key = {"kind": "cpu", "cpu": "test"}
    assert cached_peak(key, measure, path) == 123e9
    assert cached_peak(key, measure, path) == 123e9
    assert len(calls) == 1
    assert cached_peak({**key, "threads": 1}, measure, path) == 123e9
    assert len(calls) == 2
    assert len(json.loads(path.read_text())) == 2
    path.write_text("{not json")  # a damaged cache is measured again, not fatal
    assert cached_peak(key, measure, path) == 123e9 and len(calls) == 3


def test_gemm_peak_is_a_plausible_rate() -> None:
    peak = measure_cpu_peak(threads=1, sizes=(64, 128), repeats=3)
    assert 1e8 < peak < 1e13  # between 0.1 GFLOP/s and 10 TFLOP/s per core
