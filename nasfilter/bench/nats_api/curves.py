"""Learning curves of a full-fidelity benchmark for ``Problem.evaluate_at``
(:class:`nasfilter.bench.fidelity.LearningCurves`), with ``nats_bench``'s arithmetic."""

from __future__ import annotations

import os

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.fullbench.bench import FullBenchmark
from nasfilter.bench.nats_api.records import FullRecords


class BenchmarkCurves:
    """Learning curves of a full-fidelity benchmark folder, for one dataset's search record
    (``cifar10-valid`` for CIFAR-10), with ``nats_bench``'s arithmetic."""

    synthetic = False

    def __init__(self, bench: FullBenchmark | str | os.PathLike[str], dataset: str) -> None:
        full = bench if isinstance(bench, FullBenchmark) else FullBenchmark.open(bench)
        self.dataset = get_dataset(dataset).name
        self.synthetic = full.synthetic
        self._record = get_dataset(dataset).search_record
        self._records = FullRecords(full)

    def hps(self) -> list[str]:
        """The settings that hold this dataset's search record (an archive written with
        fewer records may lack it at some)."""
        return [hp for hp in self._records.hps()
                if self._record in self._records.dataset_names(hp)]

    def epochs(self, hp: str) -> int:
        return self._records.epochs(hp)

    def seeds(self, index: int, hp: str) -> list[int]:
        return self._records.seeds(index, hp, self._record)

    def evaluation(self, index: int, hp: str, seed: int, iepoch: int) -> tuple[float, float]:
        acc, cost = self._records.search_eval(index, hp, self._record, iepoch, seed)
        return float(acc), float(cost)

    def epoch_times(self, index: int, hp: str, seed: int) -> tuple[list[float], list[float]]:
        """Seconds of training and of validation (x-valid) of each epoch of one run."""
        train, valid = self._records.bench.curves(
            index, hp, self._record, seed, ("train.time", "x-valid.time")
        )
        return [float(t) for t in train], [float(v) for v in valid]


__all__ = ["BenchmarkCurves"]
