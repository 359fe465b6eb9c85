"""What the analytic backends (roofline, calibrated) share: rows read off one prediction.

An analytic backend predicts all 32768 architectures of a dataset at once
(:meth:`AnalyticBackend.result`); measuring an architecture only reads its row.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from nasfilter.bench.datasets import Dataset
from nasfilter.bench.proxy import ProxyTable
from nasfilter.oracle.base import Backend
from nasfilter.oracle.devices import DeviceSpec
from nasfilter.oracle.measurement import Measurement, Status


class Prediction(Protocol):
    """The per-architecture arrays an analytic prediction holds, each shape (32768,)."""

    @property
    def device(self) -> DeviceSpec: ...
    @property
    def dataset(self) -> Dataset: ...
    @property
    def label(self) -> str: ...
    @property
    def throughput(self) -> np.ndarray: ...
    @property
    def utilization(self) -> np.ndarray: ...
    @property
    def flops_per_image(self) -> np.ndarray: ...
    @property
    def batch_seconds(self) -> np.ndarray: ...
    @property
    def peak_flops(self) -> float: ...
    @property
    def peak_source(self) -> str: ...
    def config(self) -> dict[str, Any]: ...
    def proxy_table(self) -> ProxyTable: ...


def prediction_proxy_table(
    res: Prediction, backend: str, note: str, extra: Mapping[str, Any] | None = None
) -> ProxyTable:
    """The simulator's view of ``res``: copies of its utilization and throughput, (32768,),
    under its label, with the provenance of an analytic prediction made by ``backend``.

    ``extra`` holds the backend's own provenance keys, placed after ``peak_flops``; ``note``
    says what kind of prediction it is (never a measurement).
    """
    return ProxyTable(
        utilization=np.array(res.utilization),
        throughput=np.array(res.throughput),
        label=res.label,
        provenance={
            "backend": backend,
            "dataset": res.dataset.name,
            "device": res.device.to_dict(),
            "config": res.config(),
            "peak_flops": res.peak_flops,
            **(extra or {}),
            "synthetic": True,
            "note": note,
        },
    )


class AnalyticBackend(Backend):
    """A backend whose measurement of one architecture is a row of a whole-space prediction."""

    device: DeviceSpec

    @abc.abstractmethod
    def result(self, dataset: str | Dataset) -> Prediction:
        """The prediction for every architecture of ``dataset`` (computed once per backend)."""

    @abc.abstractmethod
    def batch_of(self, prediction: Any, arch: int) -> tuple[int, int | None]:
        """``(batch size, largest batch or None when memory is not modelled)`` of ``arch``."""

    def _row(self, res: Prediction, arch: int, config: dict[str, Any]) -> Measurement:
        batch, max_batch = self.batch_of(res, arch)
        return Measurement(
            arch=arch,
            dataset=res.dataset.name,
            backend=self.name,
            config=config,
            device=self.device.to_dict(),
            status=Status.OK,
            throughput=float(res.throughput[arch]),
            batch_size=batch,
            max_batch=max_batch,
            flops_per_image=float(res.flops_per_image[arch]),
            peak_flops=res.peak_flops,
            peak_source=res.peak_source,
            timings={"batch_seconds": float(res.batch_seconds[arch])},
        )

    def measure(self, arch: int, dataset: Dataset) -> Measurement:
        return self._row(self.result(dataset), int(arch), self.config)

    def measure_many(self, archs: Sequence[int], dataset: Dataset) -> Iterator[Measurement]:
        res = self.result(dataset)
        config = self.config
        for arch in archs:
            yield self._row(res, int(arch), config)
