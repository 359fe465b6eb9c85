"""Sweeps fanned out over a local Ray instance (roofline and onnxruntime backends)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import ray

from nasfilter.bench.datasets import get_dataset
from nasfilter.oracle.base import BackendSpec
from nasfilter.oracle.cache import MeasurementCache
from nasfilter.oracle.roofline import RooflineBackend, roofline
from nasfilter.oracle.sweep import sweep

CIFAR = get_dataset("cifar10")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.ray
def test_ray_roofline_sweep_matches_local(local_ray: None, tmp_path: Path) -> None:
    archs = list(range(0, 32768, 7))
    with MeasurementCache(tmp_path / "ray.sqlite") as cache:
        summary = sweep(
            RooflineBackend("a100"), archs, CIFAR, cache, executor="ray", chunk_size=1000
        )
        assert summary.executor == "ray"
        assert (summary.n_measured, summary.n_cached, summary.n_failed) == (len(archs), 0, 0)
        group = next(iter(cache.groups())).group
        thr, util = cache.columns(group)
        again = sweep(RooflineBackend("a100"), archs, CIFAR, cache, executor="ray")
        assert (again.n_measured, again.n_cached) == (0, len(archs))
    expected = roofline("a100", CIFAR)
    np.testing.assert_allclose(thr[archs], expected.throughput[archs], rtol=1e-12)
    np.testing.assert_allclose(util[archs], expected.utilization[archs], rtol=1e-12)
    assert np.isnan(thr[1])


@pytest.mark.ray
def test_ray_onnxruntime_sweep_from_a_spec(local_ray: None, tmp_path: Path) -> None:
    spec = BackendSpec(
        "onnxruntime",
        None,
        {"window": 0.04, "trials": 2, "warmup": 1, "batch": 8, "peak_flops": 1e11},
    )
    with MeasurementCache(tmp_path / "ray.sqlite") as cache:
        summary = sweep(spec, [0, 12, 284], CIFAR, cache, executor="ray", chunk_size=2)
        assert (summary.n_measured, summary.n_failed) == (3, 0), summary.failures
        info = next(iter(cache.groups()))
        assert info.n_rows == 3 and info.group.backend == "onnxruntime"
        rows = list(cache.rows(info.group))
    assert [m.arch for m in rows] == [0, 12, 284]
    assert all(m.throughput > 0 and m.device["kind"] == "cpu" for m in rows)
