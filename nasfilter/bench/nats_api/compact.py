"""nats_bench's record queries answered from compact tables (a ``.npz`` converted with
``--dataset``, the shipped real table, or the embedded SYNTHETIC surrogate, whose learning
curves :mod:`nasfilter.bench.nats_api.synthetic` adds on top).

A compact table holds two accuracy columns, and its provenance says what each is
(``observed`` and ``scored``, e.g. ``valid@12``: the hp-12 ``x-valid`` accuracy per seed on
the search record; ``test@90``: the hp-90 test accuracy of the final record, averaged over
seeds; ``valid@90``: the hp-90 ``x-valid`` accuracy, as the shipped real table holds for
both). It also holds the per-epoch train and x-valid seconds of the observed run, FLOPs,
parameters and latency. Every query is answered only from what the table holds, for that
record, training setting (hp), evaluation set and seed: anything else raises
:class:`NeedsFullBenchmarkError` (a record or hp the table lacks:
:class:`MissingRecordError`, also a ``KeyError`` as in nats_bench), naming what is missing
and the conversion that provides it. Times are the table's per-epoch seconds times the
epoch count (equal to nats_bench's sums up to float rounding).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.nats_api.records import NAME, check_iepoch, mean
from nasfilter.bench.table import BenchmarkTable

GENOTYPE = (
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|"
    "nor_conv_3x3~2|"
)
CLASSES = {"cifar10-valid": 10, "cifar10": 10, "cifar100": 100, "ImageNet16-120": 120}
NATS_RECORDS = tuple(CLASSES)
_EPOCHS = {"01": 1, "12": 12, "90": 90, "200": 200}
HOW = (
    "it needs a full-fidelity benchmark: nasfilter convert NATS-sss-v1_0-50262-simple "
    "-o NATS-full (no --dataset), then create('NATS-full', 'sss')"
)


class NeedsFullBenchmarkError(ValueError):
    """A query that a compact table cannot answer."""


class MissingRecordError(NeedsFullBenchmarkError, KeyError):
    """A record (dataset) or training setting (hp) that a compact table does not hold; a
    ``KeyError`` too, as nats_bench raises for one missing from its archive."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Held:
    """One accuracy column of a table, as nats_bench names it."""

    table: BenchmarkTable
    setname: str  # the evaluation set: "x-valid", "ori-test" or "x-test"
    per_seed: bool  # True: ``valid_acc`` (one value per seed); False: ``test_acc`` (seed mean)
    times: bool  # whether the table's per-epoch times are this run's


def _column(table: BenchmarkTable, short: str) -> tuple[str, str, str, bool] | None:
    """(hp, record, evaluation set, per seed) of a column named ``short`` (``valid@12``,
    ``valid@90``, ``test@90``); None for a name nats_bench's records do not have."""
    kind, _, hp = short.partition("@")
    hp = hp.zfill(2)
    ds = table.dataset
    if kind == "valid" and hp in _EPOCHS:
        return hp, ds.search_record, "x-valid", True
    if kind == "test" and hp in _EPOCHS:
        return hp, ds.final_record, "ori-test" if ds.final_record == "cifar10" else "x-test", False
    return None


def held_runs(tables: list[BenchmarkTable]) -> dict[tuple[str, str], Held]:
    """(hp, record) -> what the tables hold of that run (their provenance says which)."""
    held: dict[tuple[str, str], Held] = {}
    for table in tables:
        prov = table.provenance
        observed = _column(table, prov.observed)
        if observed is not None:
            hp, record, setname, _ = observed
            held[(hp, record)] = Held(table, setname, True, True)
        scored = _column(table, prov.scored)
        if scored is not None and prov.scored != prov.observed:
            hp, record, setname, _ = scored
            held[(hp, record)] = Held(table, setname, False, False)  # test_acc: a seed mean
    return held


def _words(hp: str, record: str, held: Held) -> str:
    what = "accuracy per seed" if held.per_seed else "accuracy averaged over seeds"
    return f"hp-{hp} {held.setname} {what} on {record!r}"


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
        self.held = held_runs(tables)
        self.present = np.logical_and.reduce([t.present for t in tables])
        self.names = list(self.by_record)

    def has_record(self, index: int) -> bool:
        return bool(self.present[index])

    def present_indices(self) -> list[int]:
        return np.flatnonzero(self.present).tolist()

    def holds(self) -> str:
        """What the tables hold, in words (for error messages)."""
        return "; ".join(_words(hp, rec, h) for (hp, rec), h in self.held.items())

    def hps(self) -> list[str]:
        return sorted({hp for hp, _ in self.held})

    def dataset_names(self, hp: str) -> list[str]:
        return [name for name in self.names if (hp, name) in self.held]

    def epochs(self, hp: str) -> int:
        return _EPOCHS[hp]

    def missing(self, what: str) -> MissingRecordError:
        """The error for a record or setting the tables lack, naming what they hold."""
        return MissingRecordError(f"{what} is not in this table, which holds only "
                                  f"{self.holds()}; {HOW}")

    def _table(self, dataset: str) -> BenchmarkTable:
        if dataset in self.by_record:
            return self.by_record[dataset][1]
        if dataset in NATS_RECORDS:
            raise self.missing(f"record {dataset!r}")
        raise KeyError(f"{dataset!r}: not a record of NATS-Bench ({list(NATS_RECORDS)})")

    def _held(self, hp: str, dataset: str) -> Held:
        self._table(dataset)
        found = self.held.get((hp, dataset))
        if found is None:
            raise self.missing(f"hp {hp} ({_EPOCHS.get(hp, '?')} epochs) on record {dataset!r}")
        return found

    def seeds(self, index: int, hp: str, dataset: str) -> list[int]:
        held = self._held(hp, dataset)
        if not held.per_seed:
            raise NeedsFullBenchmarkError(
                f"the seeds of hp {hp} on {dataset!r}: this table keeps that run's "
                f"{held.setname} accuracy averaged over seeds only; " + HOW)
        row = held.table.valid_acc[index]
        return [s for s, v in zip(held.table.seeds, row.tolist(), strict=True) if v == v]

    def get_metrics(self, index: int, hp: str, dataset: str, setname: str, iepoch: Any = None,
                    is_random: Any = False) -> dict[str, Any]:
        held = self._held(hp, dataset)
        epochs = _EPOCHS[hp]
        epoch = check_iepoch(iepoch, epochs, hp)
        name = "x-valid" if setname == "valid" else setname
        what = f"{name} at hp {hp}, epoch {epoch} on {dataset!r} (is_random={is_random!r})"
        if epoch != epochs - 1 or name not in ("train", held.setname):
            raise NeedsFullBenchmarkError(f"{what}: the table holds the last epoch of "
                                          f"{_words(hp, dataset, held)} only; " + HOW)
        if not held.per_seed:
            if is_random is not False:
                raise NeedsFullBenchmarkError(f"{what}: the table keeps the seed mean "
                                              "only (is_random=False); " + HOW)
            acc = None if name == "train" else float(held.table.test_acc[index])
            return {"iepoch": float(epoch), "loss": None, "accuracy": acc, "cur_time": None,
                    "all_time": None}
        return self._per_seed(index, hp, dataset, name, held, is_random)

    def _per_seed(self, index: int, hp: str, dataset: str, name: str, held: Held,
                  is_random: Any) -> dict[str, Any]:
        """One seed's (or the seed mean's) last-epoch metrics of a per-seed column."""
        table, epochs = held.table, _EPOCHS[hp]
        seeds = self.seeds(index, hp, dataset)
        if isinstance(is_random, bool) and is_random:
            is_random = seeds[random.randint(0, len(seeds) - 1)]
        if isinstance(is_random, bool):
            accs = [float(table.valid_acc[index, table.seeds.index(s)]) for s in seeds]
            acc = mean(accs)
        elif is_random in seeds:
            acc = float(table.valid_acc[index, table.seeds.index(is_random)])
        else:
            raise ValueError(f"can not find random seed ({is_random}) from {seeds}")
        per = float(table.train_time[index] if name == "train" else table.valid_time[index])
        return {"iepoch": epochs - 1, "loss": None, "accuracy": None if name == "train" else acc,
                "cur_time": per, "all_time": per * epochs}

    def has_valid(self, hp: str, dataset: str) -> bool:
        return self._held(hp, dataset).setname == "x-valid"

    def search_eval(self, index: int, hp: str, dataset: str, iepoch: Any,
                    seed: int) -> tuple[Any, Any]:
        """(valid accuracy, time cost) of one seed's run, as ``get_metrics`` gives."""
        train = self.get_metrics(index, hp, dataset, "train", iepoch, seed)
        valid = self.get_metrics(index, hp, dataset, "x-valid", iepoch, seed)
        return valid["accuracy"], train["all_time"] + valid["all_time"] / (train["iepoch"] + 1)

    def latency(self, index: int, hp: str, dataset: str) -> Any:
        return self.get_compute_costs(index, hp, dataset)["latency"]

    def get_compute_costs(self, index: int, hp: str, dataset: str) -> dict[str, Any]:
        """FLOPs, parameters and latency of the dataset's network (the same for every
        record and setting of the dataset), plus nats_bench's ``T-*`` time keys of the run
        whose times the table holds."""
        table = self._table(dataset)
        info: dict[str, Any] = {"flops": float(table.macs[index]),
                                "params": float(table.params[index]),
                                "latency": float(table.latency[index])}
        held = self.held.get((hp, dataset))
        if held is not None and held.times:
            epochs = _EPOCHS[hp]
            for key, column in (("train", table.train_time), ("x-valid", table.valid_time)):
                per = float(column[index])
                info[f"T-{key}@epoch"] = per
                info[f"T-{key}@total"] = per * epochs
        return info

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


__all__ = ["CompactRecords", "MissingRecordError", "NeedsFullBenchmarkError", "compact_records",
           "mean"]
