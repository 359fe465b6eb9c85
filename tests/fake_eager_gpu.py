"""A fake CUDA GPU for torch-cuda's real ``measure()`` on tss cells, whose machine takes
:data:`HOST_FACTOR` times the cells' model's host time of each network, so that the host
figure a measurement implies is known (tests of ``host-figure`` and of the GPU check)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.datasets import Dataset
from nasfilter.bench.tss_layers import tss_units
from nasfilter.oracle import tss_measure
from nasfilter.oracle.calibration_file import load_calibration
from nasfilter.oracle.cells import all_ops, unit_seconds
from nasfilter.oracle.devices import get_device
from nasfilter.oracle.timing import Timer
from nasfilter.oracle.tss_measure import TssTorchCuda
from tests.fake_tensorrt import Clock, FakeTorch, OutOfMemoryError

HOST_FACTOR = 1.3  # the fake machine's host is this much slower than the fit's


def modelled_host(device: str, archs: np.ndarray, batch: int = 1) -> np.ndarray:
    """The model's host seconds per batch of ``archs`` on ``device``, (K,)."""
    _, host = unit_seconds(get_device(device), batch, load_calibration().params)
    out: np.ndarray = tss_units("cifar10").counts(all_ops()[archs]) @ host
    return out


class FakeEagerGpu(TssTorchCuda):
    """torch-cuda's real measure() on a fake GPU whose machine takes HOST_FACTOR times the
    model's host time of each network on ``like`` (so the figure to recover is known)."""

    like = "titanxp"
    too_large: tuple[int, ...] = ()  # networks that run out of memory

    def __init__(self, device: str | None = None, **kw: Any) -> None:
        self.clock = Clock()
        super().__init__(device, peak_flops=1e15, window=0.01, trials=3, **kw)

    def _require(self) -> Any:
        return FakeTorch(self.clock, 1 << 40)

    def load(self, arch: int, dataset: Dataset) -> Any:
        return arch

    def prepare(self, net: Any, dataset: Dataset, batch: int) -> Callable[[], object]:
        if net in self.too_large:
            raise OutOfMemoryError(f"CUDA out of memory at batch {batch}")
        seconds = HOST_FACTOR * float(modelled_host(self.like, np.array([net]), batch)[0])

        def run() -> None:
            self.clock.now += seconds

        return run

    def release(self) -> None:
        pass

    def timer(self) -> Timer:
        return self.clock.timer



def use_fake_eager_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """``measure --space tss --backend torch-cuda[...]`` runs on :class:`FakeEagerGpu`."""
    monkeypatch.setitem(tss_measure._REAL, "torch-cuda", FakeEagerGpu)
