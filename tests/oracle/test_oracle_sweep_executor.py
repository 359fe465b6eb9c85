"""The Ray executor's driver loop, over an in-process stand-in for ``ray`` (no cluster):
start or join, fan out in chunks, write each chunk as it arrives, shut down what it started.
The real Ray runs the same sweeps in tests/oracle/test_oracle_ray.py (marked ray)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.datasets import get_dataset
from nasfilter.oracle.cache import MeasurementCache
from nasfilter.oracle.roofline import RooflineBackend, roofline
from nasfilter.oracle.sweep import sweep

CIFAR = get_dataset("cifar10")


class FakeRay:
    """What the driver calls of ``ray``; tasks run at once, refs are their results."""

    def __init__(self, running: bool = False) -> None:
        self.running = running
        self.calls: list[str] = []
        self.chunks: list[int] = []

    def is_initialized(self) -> bool:
        return self.running

    def init(self, **kwargs: Any) -> None:
        self.calls.append("init")
        self.running = True

    def shutdown(self) -> None:
        self.calls.append("shutdown")
        self.running = False

    def remote(self, fn: Any) -> Any:
        def submit(*args: Any) -> Any:
            if len(args) == 3:  # measure_chunk(spec, indices, dataset)
                self.chunks.append(len(args[1]))
            return fn(*args)

        task = SimpleNamespace(remote=submit)
        return SimpleNamespace(options=lambda **_: task)

    def get(self, ref: Any) -> Any:
        return ref

    def wait(self, pending: list[Any], num_returns: int) -> tuple[list[Any], list[Any]]:
        return pending[:num_returns], pending[num_returns:]

    def cancel(self, ref: Any) -> None:
        self.calls.append("cancel")


@pytest.mark.parametrize("running", [False, True])
def test_chunks_are_written_as_they_arrive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, running: bool
) -> None:
    fake = FakeRay(running)
    monkeypatch.setitem(sys.modules, "ray", fake)
    archs = list(range(0, 2500, 10))  # 250 architectures
    rows: list[int] = []
    with MeasurementCache(tmp_path / "c.sqlite") as cache:
        summary = sweep(
            RooflineBackend("v100"), archs, CIFAR, cache, executor="ray", chunk_size=100,
            on_row=lambda m: rows.append(m.arch),
        )  # fmt: skip
        group = next(iter(cache.groups())).group
        thr, _ = cache.columns(group)
    assert summary.executor == "ray" and (summary.n_measured, summary.n_cached) == (250, 0)
    assert fake.chunks == [100, 100, 50]
    assert sorted(rows) == archs
    # Ray is shut down only when this sweep started it.
    assert fake.calls == ([] if running else ["init", "shutdown"])
    np.testing.assert_allclose(thr[archs], roofline("v100", CIFAR).throughput[archs], rtol=1e-12)


def test_a_bad_chunk_size_is_refused_before_ray_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    with MeasurementCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(ValueError, match="chunk_size must be an integer >= 1, got -2"):
            sweep(RooflineBackend("v100"), [1, 2], CIFAR, cache, executor="ray", chunk_size=-2)
    assert fake.calls == []
