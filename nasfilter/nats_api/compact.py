"""nats_bench's record queries answered from compact tables (a ``.npz`` converted with
``--dataset``, or the embedded SYNTHETIC surrogate, whose learning curves
:mod:`nasfilter.nats_api.synthetic` adds on top).

A compact table keeps only what a hp-12 search reads: per seed, the last-epoch validation
accuracy of the search record; per-epoch times; the hp-90 test accuracy averaged over
seeds; FLOPs, parameters and latency. Queries of anything else (other epochs or settings,
losses, training accuracy, single hp-90 seeds) raise :class:`NeedsFullBenchmarkError`,
which names the conversion that provides them. Times are the table's per-epoch seconds
times the epoch count (equal to nats_bench's sums up to float rounding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nasfilter.datasets import get_dataset
from nasfilter.nats_api.records import NAME, mean
from nasfilter.table import BenchmarkTable

GENOTYPE = (
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|"
    "nor_conv_3x3~2|"
)
CLASSES = {"cifar10-valid": 10, "cifar10": 10, "cifar100": 100, "ImageNet16-120": 120}
_EPOCHS = {"12": 12, "90": 90}
HOW = (
    "it needs a full-fidelity benchmark: nasfilter convert NATS-sss-v1_0-50262-simple "
    "-o NATS-full (no --dataset), then create('NATS-full', 'sss')"
)


class NeedsFullBenchmarkError(ValueError):
    """A query that a compact table cannot answer."""


class CompactRecords:
    """Answers the queries a compact table can (see the module docstring)."""

    full = False

    def __init__(self, tables: list[BenchmarkTable]) -> None:
        self.by_record: dict[str, tuple[str, BenchmarkTable]] = {}
        for table in tables:
            ds = table.dataset
            self.by_record[ds.search_record] = ("search", table)
            if ds.final_record != ds.search_record:
                self.by_record[ds.final_record] = ("final", table)
        self.present = np.logical_and.reduce([t.present for t in tables])
        self.names = list(self.by_record)

    def has_record(self, index: int) -> bool:
        return bool(self.present[index])

    def present_indices(self) -> list[int]:
        return np.flatnonzero(self.present).tolist()

    def hps(self) -> list[str]:
        return list(_EPOCHS)

    def dataset_names(self, hp: str) -> list[str]:
        return list(self.names)

    def epochs(self, hp: str) -> int:
        return _EPOCHS[hp]

    def _table(self, dataset: str) -> BenchmarkTable:
        if dataset not in self.by_record:
            raise KeyError(f"{dataset!r}: not a record of this benchmark; it has {self.names}")
        return self.by_record[dataset][1]

    def seeds(self, index: int, hp: str, dataset: str) -> list[int]:
        table = self._table(dataset)
        if hp != "12" or dataset != table.dataset.search_record:
            raise NeedsFullBenchmarkError(f"the seeds of hp {hp} on {dataset!r}: " + HOW)
        row = table.valid_acc[index]
        return [s for s, v in zip(table.seeds, row.tolist(), strict=True) if v == v]

    def get_metrics(self, index: int, hp: str, dataset: str, setname: str, iepoch: Any = None,
                    is_random: Any = False) -> dict[str, Any]:
        table = self._table(dataset)
        epochs = _EPOCHS[hp]
        epoch = epochs - 1 if iepoch is None else iepoch
        if epoch < 0 or epoch >= epochs:
            raise ValueError(f"invalid iepoch={epoch} < {epochs}: hp {hp} has epochs "
                             f"0..{epochs - 1} (None means the last)")
        what = f"{setname} at hp {hp}, epoch {epoch} on {dataset!r} (is_random={is_random!r})"
        name = "x-valid" if setname == "valid" else setname
        ds = table.dataset
        if hp == "12" and dataset == ds.search_record and epoch == epochs - 1:
            if name in ("train", "x-valid") and not isinstance(is_random, bool):
                seeds = self.seeds(index, hp, dataset)
                if is_random not in seeds:
                    raise ValueError(f"can not find random seed ({is_random}) from {seeds}")
                slot = table.seeds.index(is_random)
                per = float(table.train_time[index] if name == "train" else table.valid_time[index])
                acc = None if name == "train" else float(table.valid_acc[index, slot])
                return {"iepoch": epoch, "loss": None, "accuracy": acc, "cur_time": per,
                        "all_time": per * epochs}
        test_set = "ori-test" if ds.final_record == "cifar10" else "x-test"
        if (hp, dataset, name, is_random) == ("90", ds.final_record, test_set, False) and (
            epoch == epochs - 1
        ):
            return {"iepoch": float(epoch), "loss": None,
                    "accuracy": float(table.test_acc[index]), "cur_time": None, "all_time": None}
        if (hp, dataset, name, is_random) == ("90", ds.final_record, "train", False):
            return {"iepoch": float(epoch), "loss": None, "accuracy": None, "cur_time": None,
                    "all_time": None}
        raise NeedsFullBenchmarkError(f"{what}: " + HOW)

    def has_valid(self, hp: str, dataset: str) -> bool:
        return True

    def search_eval(self, index: int, hp: str, dataset: str, iepoch: Any,
                    seed: int) -> tuple[Any, Any]:
        """(valid accuracy, time cost) of one seed's hp-12 run, as ``get_metrics`` gives."""
        train = self.get_metrics(index, hp, dataset, "train", iepoch, seed)
        valid = self.get_metrics(index, hp, dataset, "x-valid", iepoch, seed)
        return valid["accuracy"], train["all_time"] + valid["all_time"] / (train["iepoch"] + 1)

    def latency(self, index: int, hp: str, dataset: str) -> Any:
        return self.get_compute_costs(index, hp, dataset)["latency"]

    def get_compute_costs(self, index: int, hp: str, dataset: str) -> dict[str, Any]:
        table = self._table(dataset)
        return {"flops": float(table.macs[index]), "params": float(table.params[index]),
                "latency": float(table.latency[index])}

    def config(self, index: int, dataset: str, arch_str: str) -> dict[str, Any]:
        self._table(dataset)
        return {"name": NAME, "channels": arch_str, "genotype": GENOTYPE,
                "num_classes": CLASSES[dataset]}


def compact_records(tables: list[BenchmarkTable]) -> CompactRecords:
    """Records over one table per dataset (no two of the same dataset)."""
    names = [t.dataset.name for t in tables]
    if len(set(names)) != len(names):
        raise ValueError(f"one table per dataset, got {names}")
    for name in names:
        get_dataset(name)
    return CompactRecords(tables)


__all__ = ["CompactRecords", "NeedsFullBenchmarkError", "compact_records", "mean"]
