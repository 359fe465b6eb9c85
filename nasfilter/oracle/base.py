"""What every oracle backend provides, and the error for a backend that cannot run here."""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from nasfilter.bench.datasets import Dataset
from nasfilter.oracle.measurement import Measurement


class BackendUnavailable(RuntimeError):
    """A backend cannot run on this machine; the message names the cause and the fix."""


@dataclass(frozen=True)
class BackendSpec:
    """Enough to build a backend again in another process (a Ray worker): JSON-ready."""

    name: str
    device: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)


class Backend(abc.ABC):
    """Measures (or predicts) the throughput of architectures on one device.

    Subclasses set ``name``; ``uses_gpu`` asks a Ray cluster for a GPU per task;
    ``commit_every`` is how many rows a local sweep may buffer before writing them (1 for
    backends that take seconds per architecture, so that an interruption loses at most the
    architecture in flight).
    """

    name: ClassVar[str]
    uses_gpu: ClassVar[bool] = False
    commit_every: ClassVar[int] = 1

    @property
    @abc.abstractmethod
    def config(self) -> dict[str, Any]:
        """The settings that change a measurement, JSON-ready; part of the cache key."""

    @abc.abstractmethod
    def fingerprint(self) -> dict[str, Any]:
        """The device fingerprint, JSON-ready; part of the cache key."""

    @abc.abstractmethod
    def spec(self) -> BackendSpec:
        """How to build this backend again (see :func:`nasfilter.oracle.registry.create`)."""

    @abc.abstractmethod
    def measure(self, arch: int, dataset: Dataset) -> Measurement:
        """Measure one architecture (NATS index). Failures come back as a non-ok status."""

    def measure_many(self, archs: Sequence[int], dataset: Dataset) -> Iterator[Measurement]:
        """Measure each of ``archs`` in order; backends that can vectorize override this."""
        for arch in archs:
            yield self.measure(int(arch), dataset)
