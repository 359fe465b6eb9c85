"""nats_bench's per-architecture computations (``ArchResults.get_metrics``,
``get_compute_costs``, ``ResultsCount.get_train``/``get_eval``/``get_times``) on a full
benchmark, with the same Python float arithmetic in the same order, so every value comes
back bit for bit as ``nats_bench`` 1.8 computes it from the archive.
"""

from __future__ import annotations

import numbers
import random
from typing import Any

import numpy as np

from nasfilter.bench.fullbench.bench import FullBenchmark

NAME = "infer.shape.tiny"
_SEARCH_CURVES = ("train.time", "x-valid.time", "x-valid.acc")


class MissingEpochError(KeyError):
    """The x-valid set is not evaluated at that epoch (NATS-Bench's tss archive evaluates
    some sets at the last epoch only): ``simulate_train_eval`` falls back as nats_bench."""


def mean(values: list[Any]) -> Any:
    """nats_bench's ``mean``: ``sum(values) / len(values)``."""
    return sum(values) / len(values)


def check_iepoch(iepoch: Any, epochs: int, hp: str) -> int:
    """The epoch index ``iepoch`` names (None: the last), raising what nats_bench 1.8 raises
    for it: ValueError for a bool or an index outside ``0..epochs-1``, TypeError for an
    integral float or a non-number, KeyError for a fractional float. numpy integers are
    accepted."""
    if iepoch is None:
        return epochs - 1
    if isinstance(iepoch, bool):
        raise ValueError(f"iepoch={iepoch!r} is a bool, not an epoch index; hp {hp} has "
                         f"epochs 0..{epochs - 1} (None means the last)")
    if isinstance(iepoch, numbers.Integral):
        epoch = int(iepoch)
    elif isinstance(iepoch, numbers.Real) and float(iepoch).is_integer():
        raise TypeError(f"iepoch={iepoch!r} ({type(iepoch).__name__}) is not an integer; "
                        f"hp {hp} has epochs 0..{epochs - 1} (None means the last)")
    elif isinstance(iepoch, numbers.Real) and iepoch == iepoch:
        raise KeyError(f"iepoch={iepoch!r} is not a whole epoch; hp {hp} has epochs "
                       f"0..{epochs - 1} (None means the last)")
    else:
        raise TypeError(f"iepoch={iepoch!r} ({type(iepoch).__name__}) is not an epoch "
                        f"index; hp {hp} has epochs 0..{epochs - 1} (None means the last)")
    if epoch < 0 or epoch >= epochs:
        raise ValueError(f"invalid iepoch={epoch} < {epochs}: hp {hp} has epochs "
                         f"0..{epochs - 1} (None means the last)")
    return epoch


def _fix_legacy_issue(raw: list[Any], seeds: list[int]) -> list[Any]:
    """nats_bench 1.6's fix for FLOPs/params that differ between seeds: take seed 888's."""
    text = [f"{x:.5f}" for x in raw]
    if len(text) > 1 and len(set(text)) > 1:
        return [raw[seeds.index(888)]]
    return raw


class FullRecords:
    """Answers nats_bench's record queries from a :class:`FullBenchmark`."""

    full = True

    def __init__(self, bench: FullBenchmark) -> None:
        self.bench = bench
        self._costs: dict[tuple[int, str, str], dict[str, Any]] = {}
        self._hps = list(bench.hp_order)
        self._records = {hp: set(bench.records(hp)) for hp in self._hps}
        # Answers kept per architecture (the archive never changes): seeds, latency, and
        # search evaluations.
        self._seeds: dict[tuple[int, str, str], list[int]] = {}
        self._latency: dict[tuple[int, str, str], Any] = {}
        self._evals: dict[tuple[int, str, str, int, int], tuple[Any, Any]] = {}
        self._valid: dict[tuple[str, str], bool] = {}

    @property
    def present(self) -> np.ndarray:
        """bool (32768,): architectures with a record."""
        return np.asarray(self.bench.present)

    def has_record(self, index: int) -> bool:
        return self.bench.row(index) >= 0

    def present_indices(self) -> list[int]:
        return np.flatnonzero(self.present).tolist()

    def hps(self) -> list[str]:
        return self._hps

    def dataset_names(self, hp: str) -> list[str]:
        return self.bench.records(hp)

    def seeds(self, index: int, hp: str, dataset: str) -> list[int]:
        """The run seeds (sorted); KeyError naming the record if the architecture has no run
        on it (an unknown record, as nats_bench). Callers must not change the list."""
        found = self._seeds.get((index, hp, dataset))
        if found is not None:
            return found
        if dataset not in self._records[hp]:
            raise KeyError(
                f"{dataset!r}: not a record of hp {hp}; records are {self.bench.records(hp)}"
            )
        seeds = self.bench.span(index, hp, dataset)[1]
        if not seeds:
            raise KeyError(f"{dataset!r}: architecture {index} has no run on it at hp {hp}")
        self._seeds[(index, hp, dataset)] = seeds
        return seeds

    def epochs(self, hp: str) -> int:
        return self.bench.epochs(hp)

    def _check_epoch(self, hp: str, iepoch: Any) -> int:
        return check_iepoch(iepoch, self.bench.epochs(hp), hp)

    def _run(self, index: int, hp: str, dataset: str, seed: int, name: str, epoch: int) -> dict:
        b = self.bench
        times = b.series(index, hp, dataset, seed, name, "time")
        accs = b.series(index, hp, dataset, seed, name, "acc")
        if accs[epoch] != accs[epoch]:  # an epoch the archive does not evaluate (tss)
            raise KeyError(f"{name}@{epoch}")
        return {
            "iepoch": epoch,
            "loss": b.series(index, hp, dataset, seed, name, "loss")[epoch],
            "accuracy": accs[epoch],
            "cur_time": times[epoch],
            "all_time": sum(times[: epoch + 1]),
        }

    def get_metrics(
        self, index: int, hp: str, dataset: str, setname: str, iepoch: Any = None,
        is_random: Any = False,
    ) -> dict[str, Any]:
        """``ArchResults.get_metrics``: one seed's metrics (``is_random`` a seed, or True for
        a ``random.randint`` draw) or the mean over seeds (False)."""
        seeds = self.seeds(index, hp, dataset)
        epoch = self._check_epoch(hp, iepoch)
        name = "x-valid" if setname == "valid" else setname
        if name != "train" and name not in self.bench.eval_sets(hp, dataset):
            raise ValueError(
                f"{name}@{epoch} not in the evaluation sets of {dataset!r}: "
                f"{self.bench.eval_sets(hp, dataset)}"
            )
        if isinstance(is_random, bool) and is_random:
            return self._run(index, hp, dataset, seeds[random.randint(0, len(seeds) - 1)],
                             name, epoch)
        if isinstance(is_random, bool):
            runs = [self._run(index, hp, dataset, s, name, epoch) for s in seeds]
            return {key: mean([r[key] for r in runs]) for key in runs[0]}
        if isinstance(is_random, int):
            if is_random not in seeds:
                raise ValueError(f"can not find random seed ({is_random}) from {seeds}")
            return self._run(index, hp, dataset, is_random, name, epoch)
        raise ValueError(f"invalid value for is_random: {is_random}")

    def has_valid(self, hp: str, dataset: str) -> bool:
        """Whether the record has an ``x-valid`` set (what a search reads)."""
        key = (hp, dataset)
        found = self._valid.get(key)
        if found is None:
            found = self._valid[key] = "x-valid" in self.bench.record(hp, dataset)["eval_sets"]
        return found

    def search_eval(self, index: int, hp: str, dataset: str, iepoch: Any,
                    seed: int) -> tuple[Any, Any]:
        """``simulate_train_eval``'s (valid accuracy, time cost) for one drawn seed: the
        x-valid accuracy at the epoch, training time summed to it plus the mean x-valid time
        (``get_more_info``'s train-all-time + valid-per-time), reading only those curves."""
        epoch = self._check_epoch(hp, iepoch)  # first: True == 1.0 == 1 as a cache key
        key = (index, hp, dataset, epoch, seed)
        found = self._evals.get(key)
        if found is not None:
            return found
        total = epoch + 1
        train, valid, accs = self.bench.curves(index, hp, dataset, seed, _SEARCH_CURVES)
        if accs[epoch] != accs[epoch]:  # not evaluated at that epoch (tss): nats_bench's way
            raise MissingEpochError(f"x-valid@{epoch}")
        found = self._evals[key] = (accs[epoch], sum(train[:total]) + sum(valid[:total]) / total)
        return found

    def latency(self, index: int, hp: str, dataset: str) -> Any:
        """``get_compute_costs(...)["latency"]``, reading only the costs."""
        key = (index, hp, dataset)
        if key in self._latency:
            return self._latency[key]
        self.seeds(index, hp, dataset)  # KeyError without a run
        latencies = [x for x in self.bench.latencies(index, hp, dataset) if x > 0]
        found = self._latency[key] = mean(latencies) if latencies else None
        return found

    def get_compute_costs(self, index: int, hp: str, dataset: str) -> dict[str, Any]:
        """``ArchResults.get_compute_costs``: flops, params, latency and time totals (computed
        once per architecture, setting and record; a new dict each call)."""
        key = (index, hp, dataset)
        info = self._costs.get(key)
        if info is None:
            info = self._costs[key] = self._compute_costs(index, hp, dataset)
        return dict(info)

    def _compute_costs(self, index: int, hp: str, dataset: str) -> dict[str, Any]:
        seeds = self.seeds(index, hp, dataset)
        costs = [self.bench.cost(index, hp, dataset, s) for s in seeds]
        flops = _fix_legacy_issue([c["flop"] for c in costs], seeds)
        params = _fix_legacy_issue([c["params"] for c in costs], seeds)
        latencies = [c["latency"] for c in costs if c["latency"] > 0]
        info: dict[str, Any] = {
            "flops": mean(flops),
            "params": mean(params),
            "latency": mean(latencies) if latencies else None,
        }
        times: dict[str, list[Any]] = {}
        for seed in seeds:
            for name in ("train", *self.bench.eval_sets(hp, dataset)):
                series = self.bench.series(index, hp, dataset, seed, name, "time")
                times.setdefault(f"T-{name}@epoch", []).append(mean(series))
                times.setdefault(f"T-{name}@total", []).append(sum(series))
        for key, values in times.items():
            info[key] = mean(values)
        return info

    def config(self, index: int, dataset: str, arch_str: str) -> dict[str, Any]:
        """``get_net_config``: the network configuration on ``dataset``."""
        hp = self.bench.hp_order[0]
        self.seeds(index, hp, dataset)  # KeyError without a run
        cell = self.bench.layout.get("cell")
        if cell is not None:  # tss: nats_bench's dict_keys order
            return {"name": self.bench.layout["config_name"], "C": cell["C"], "N": cell["N"],
                    "arch_str": arch_str,
                    "num_classes": self.bench.record(hp, dataset)["class_num"]}
        return {
            "name": NAME,
            "channels": arch_str,
            "genotype": self.bench.layout["genotype"],
            "num_classes": self.bench.record(hp, dataset)["class_num"],
        }
