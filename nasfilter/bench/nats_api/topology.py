"""``NATStopology``: nats_bench 1.8's topology-space API over the shipped real tss data.

``create('real', 'tss')`` returns one. Its members keep nats_bench's signatures, return types
and randomness (one ``random.choice`` over the sorted seed list of an hp-200 run on Python's
global ``random``; ``random()`` one ``random.randint``) wherever the shipped data holds the
value (:mod:`nasfilter.bench.nats_api.tss_records` says what it holds). Differences, all named:

- values it does not hold (test accuracies, losses, train accuracies, curves, the ``cifar10``
  record's accuracies, x-valid and test times in ``get_cost_info``) are left out of the
  answer and reading them raises :class:`~nasfilter.bench.nats_api.compact.MissingRecordError`
  naming the key; asking for them directly raises
  :class:`~nasfilter.bench.nats_api.compact.NeedsFullBenchmarkError`;
- hp 12 has the seed mean only: ``is_random=True`` answers it without drawing a seed (so
  hp-12 searches consume no ``random`` draws), an explicit seed is refused;
- the x-valid time (``valid-per-time``, part of ``simulate_train_eval``'s time cost) is
  **modelled**; the accuracies, the training time and the latency are real;
- accuracies are float32 values as the source ships them (nats_bench holds float64: equal
  after rounding to float32); seed means are averaged from them;
- a malformed arch string, a size-space arch, or an index outside ``0..15624`` given to a
  query raises ValueError naming it (``query_index_by_arch`` still returns -1 for a string,
  as nats_bench); ``get_unique_str`` of such a string raises too, where nats_bench reads
  ``meta_archs[-1]`` (the last cell) and answers for it.
"""

from __future__ import annotations

import functools
import numbers
import random
import time
import warnings
from typing import Any

import numpy as np

from nasfilter.bench.nats_api.results import NO_WEIGHTS, ArchInfo
from nasfilter.bench.nats_api.tss_records import HPS, Partial, TssRecords, check_hp, refuse
from nasfilter.bench.spaces import TSS

LABEL = ("real NATS-Bench tss data (hp-200 x-valid per seed, hp-12 x-valid seed mean, measured "
         "training times, NATS latency); x-valid times modelled; no test accuracies")
_COMMENT = {
    "cifar10-valid": "In this dict, train-loss/accuracy/time is the metric on the train set of "
    "CIFAR-10. The test-loss/accuracy/time is the performance of the CIFAR-10 test set after "
    "training on the train set by {:} epochs. The per-time and total-time indicate the per "
    "epoch and total time costs, respectively.",
}
_DATASETS = ("cifar10", "cifar100", "ImageNet16-120")


def _remap(dataset: str, metric_on_set: str) -> tuple[str, str]:
    """nats_bench's ``remap_dataset_set_names``."""
    if dataset == "cifar10" and metric_on_set == "valid":
        return "cifar10-valid", "x-valid"
    if dataset == "cifar10" and metric_on_set in ("test", "train"):
        return "cifar10", "ori-test" if metric_on_set == "test" else "train"
    if dataset in ("cifar100", "ImageNet16-120") and metric_on_set in ("valid", "test"):
        return dataset, "x-valid" if metric_on_set == "valid" else "x-test"
    return dataset, metric_on_set


def _time_string() -> str:
    return "[{:}]".format(time.strftime("%Y-%m-%d %X", time.gmtime(time.time())))


_NODE_INPUTS = ((0,), (0, 1), (0, 1, 2))  # the inputs of cell nodes 1, 2, 3, in edge order


def unique_str(arch: str) -> str:
    """xautodl's ``CellStructure.to_unique_str(consider_zero=True)`` of a tss arch string: one
    string per class of cells that compute the same function (``none`` and a zero input give
    ``#``, ``skip_connect`` passes its input's string on, each node sorts and joins its inputs
    with ``+``). ValueError naming a string that is no tss cell."""
    ops = iter(TSS.parse(arch).ops)
    nodes = {0: "0"}
    for node, inputs in enumerate(_NODE_INPUTS, start=1):
        parts = []
        for xin in inputs:
            op = next(ops)
            if op == "none" or nodes[xin] == "#":
                parts.append("#")
            elif op == "skip_connect":
                parts.append(nodes[xin])
            else:
                parts.append(f"({nodes[xin]})@{op}")
        nodes[node] = "+".join(sorted(parts))
    return nodes[len(_NODE_INPUTS)]


@functools.cache
def _names() -> tuple[str, ...]:
    return tuple(str(TSS.arch(i)) for i in range(TSS.size))


class NATStopology:
    """The NATS-Bench topology-space API (nats_bench 1.8) over the shipped real data."""

    def __init__(self, fast_mode: bool = False, verbose: bool = True) -> None:
        self._records = TssRecords()
        self.filename = "real"
        self._fast_mode = fast_mode
        self.verbose = verbose
        self._used_time: Any = 0
        self.evaluated_indexes: set[int] = set() if fast_mode else set(range(TSS.size))
        if verbose:
            print(f"{_time_string()} Create NATS-Bench (topology) done with "
                  f"{len(self.evaluated_indexes)}/{TSS.size} architectures avaliable. {LABEL}")

    is_size = property(lambda self: False)
    is_topology = property(lambda self: True)
    full_epochs_in_paper = property(lambda self: 200)
    full_train_epochs = property(lambda self: 200)
    search_space_name = property(lambda self: "topology")
    fast_mode = property(lambda self: self._fast_mode)
    archive_dir = property(lambda self: None)
    used_time = property(lambda self: self._used_time)

    @property
    def avaliable_hps(self) -> list[str]:
        return list(HPS) if self.evaluated_indexes else []

    @property
    def meta_archs(self) -> list[str]:
        """Every arch string, in index order (a new list)."""
        return list(_names())

    @property
    def archstr2index(self) -> dict[str, int]:
        """Arch string -> index (a new dict)."""
        return {name: i for i, name in enumerate(_names())}

    def reset_time(self) -> None:
        self._used_time = 0

    def __len__(self) -> int:
        return TSS.size

    def __getitem__(self, index: int) -> str:
        return self.arch(index)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({len(self.evaluated_indexes)}/{TSS.size} "
                f"architectures, fast_mode={self.fast_mode}, file=real, {LABEL})")

    def arch(self, index: Any) -> str:
        """The arch string of ``index`` (0..15624)."""
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise TypeError(f"architecture index {index!r} ({type(index).__name__}): an index "
                            f"is an integer in [0, {TSS.size - 1}]")
        return str(TSS.arch(TSS.check_index(index)))

    def random(self) -> int:
        """A random index, from Python's global ``random`` (as nats_bench)."""
        return random.randint(0, TSS.size - 1)

    def query_index_by_arch(self, arch: Any) -> int:
        """nats_bench's: an index is checked, a string or an object with ``tostr`` looked up
        (-1 when it is not a topology arch string)."""
        if isinstance(arch, int) and not isinstance(arch, bool):
            if 0 <= arch < TSS.size:
                return arch
            raise ValueError(f"Invalid architecture index {arch} vs [0, {TSS.size}): a tss "
                             f"index is in 0..{TSS.size - 1}")
        text = arch.tostr() if hasattr(arch, "tostr") else arch
        if isinstance(text, str):
            try:
                return TSS.index_of(text) if "~" in text else -1
            except ValueError:
                return -1
        return -1

    def _index(self, arch: Any) -> int:
        """The index of ``arch``; a ValueError naming a string that is no tss architecture."""
        index = self.query_index_by_arch(arch)
        if index < 0:
            text = arch.tostr() if hasattr(arch, "tostr") else arch
            TSS.parse(text)  # raises naming the op, the edge count or the other space
            raise ValueError(f"{arch!r} is not a tss architecture: give an index in "
                             f"[0, {TSS.size - 1}] or a string such as {TSS.example!r}")
        if self.fast_mode:
            self.evaluated_indexes.add(index)
        return index

    def get_unique_str(self, arch: Any) -> str:
        """nats_bench's: the isomorphism class string of ``arch`` (an index, a string or an
        object with ``tostr``), :func:`unique_str`; it loads no record, as nats_bench."""
        index = self.query_index_by_arch(arch)
        if index < 0:
            TSS.parse(arch.tostr() if hasattr(arch, "tostr") else arch)
            raise ValueError(f"{arch!r} is not a tss architecture: give an index in "
                             f"[0, {TSS.size - 1}] or a string such as {TSS.example!r}")
        return unique_str(_names()[index])

    def get_more_info(self, index: Any, dataset: str, iepoch: Any = None, hp: Any = "12",
                      is_random: Any = True) -> dict[str, Any]:
        """nats_bench's ``get_more_info``: the keys the data holds (others raise by name)."""
        index = self._index(index)
        hp = check_hp(hp)
        if isinstance(is_random, bool) and is_random and hp == "200":
            is_random = random.choice(self._records.seeds(index, hp, dataset))
        train = self._records.get_metrics(index, hp, dataset, "train", iepoch, is_random)
        total = train["iepoch"] + 1
        info = Partial({"train-per-time": train["all_time"] / total,
                        "train-all-time": train["all_time"]})
        if dataset in _COMMENT:
            info["comment"] = _COMMENT[dataset].format(hp)
        valid = self._records.get_metrics(index, hp, dataset, "x-valid", iepoch, is_random)
        info["valid-accuracy"] = valid["accuracy"]
        info["valid-per-time"] = valid["all_time"] / total
        info["valid-all-time"] = valid["all_time"]
        return info

    def simulate_train_eval(self, arch: Any, dataset: str, iepoch: Any = None, hp: Any = "12",
                            account_time: bool = True) -> tuple[Any, Any, Any, Any]:
        """(x-valid accuracy, latency, time cost, total time), charging the clock: the time
        cost is the real training time plus one modelled x-valid pass."""
        index = self._index(arch)
        if dataset not in _DATASETS:
            raise ValueError(f"Invalid dataset name : {dataset} vs {_DATASETS}")
        record = "cifar10-valid" if dataset == "cifar10" else dataset
        info = self.get_more_info(index, record, iepoch=iepoch, hp=hp, is_random=True)
        time_cost = info["train-all-time"] + info["valid-per-time"]
        latency = self.get_latency(index, dataset, hp=hp)
        if account_time:
            self._used_time += time_cost
        return info["valid-accuracy"], latency, time_cost, self._used_time

    def get_cost_info(self, index: Any, dataset: str, hp: Any = "12") -> dict[str, Any]:
        return self._records.get_compute_costs(self._index(index), check_hp(hp), dataset)

    def get_latency(self, index: Any, dataset: str, hp: Any = "12") -> Any:
        """NATS's latency, seconds per batch of 256 (the same for every record and hp)."""
        return self._records.latency(self._index(index), check_hp(hp), dataset)

    def get_net_config(self, index: Any, dataset: str) -> dict[str, Any]:
        index = self._index(index)
        return self._records.config(index, dataset, self.arch(index))

    def query_meta_info_by_index(self, arch_index: Any, hp: Any = "12") -> ArchInfo:
        """nats_bench's ``ArchResults`` queries of ``arch_index`` at setting ``hp``."""
        index = self._index(arch_index)
        return ArchInfo(self._records, index, check_hp(hp), self.arch(index))

    def query_by_index(self, arch_index: Any, dataname: str | None = None,
                       hp: Any = "12") -> Any:
        info = self.query_meta_info_by_index(arch_index, hp)
        if dataname is None:
            return info
        if dataname not in info.get_dataset_names():
            raise ValueError(f"invalid dataset-name : {dataname} vs. "
                             f"{info.get_dataset_names()}")
        return info.query(dataname)

    def get_net_param(self, index: Any, dataset: str, seed: int | None, hp: Any = "12") -> Any:
        self.query_meta_info_by_index(index, hp)
        raise NotImplementedError(NO_WEIGHTS)

    def statistics(self, dataset: str, hp: Any) -> dict[int, int]:
        """{number of hp-200 seeds: number of loaded architectures with that many}."""
        hp = check_hp(hp)
        nums: dict[int, int] = {}
        for index in self.evaluated_indexes:
            n = len(self._records.seeds(index, hp, dataset))
            nums[n] = nums.get(n, 0) + 1
        return nums

    def find_best(self, dataset: str, metric_on_set: str, flop_max: float | None = None,
                  param_max: float | None = None, hp: Any = "12",
                  enforce_all: bool | None = None) -> tuple[int, Any]:
        """(index, accuracy) of the highest last-epoch accuracy (hp 200: seed mean) under the
        FLOPs and params limits, as nats_bench; only validation sets are held."""
        record, setname = _remap(dataset, metric_on_set)
        hp = check_hp(hp)
        self._records.get_metrics(0, hp, record, setname, None, False)  # refuses what it lacks
        if enforce_all is None:
            enforce_all = bool(self.fast_mode)
        if enforce_all:
            assert self.fast_mode, ("enforce_all can only be set when fast_mode=True; if you "
                                    "are using non-fast-mode, please set it as False")
            indexes = np.arange(TSS.size)
        else:
            indexes = np.asarray(sorted(self.evaluated_indexes), dtype=np.int64)
        arrays = self._records.arrays(record)
        keep = np.ones(indexes.size, dtype=bool)
        if flop_max is not None:
            keep &= arrays.flops_M[indexes] <= flop_max
        if param_max is not None:
            keep &= arrays.params_M[indexes] <= param_max
        indexes = indexes[keep]
        if indexes.size == 0:
            return -1, None
        if hp == "12":
            accs = arrays.hp12_valid_acc[indexes].astype(np.float64)
        else:
            accs = np.nanmean(arrays.hp200_valid_acc[indexes].astype(np.float64), axis=1)
        best = int(indexes[int(np.argmax(accs))])
        return best, self._records.get_metrics(best, hp, record, setname, None, False)["accuracy"]

    def query_info_str_by_arch(self, arch: Any, hp: str = "12") -> str:
        """nats_bench prints losses and test accuracies here, which are not public: refused."""
        self._index(arch)
        check_hp(hp)
        raise refuse("the info text of query_info_str_by_arch / show (it prints losses and "
                     "test accuracies, which are not public)")

    def query_by_arch(self, arch: Any, hp: str) -> str:
        return self.query_info_str_by_arch(arch, hp)

    def show(self, index: int = -1) -> None:
        self.query_info_str_by_arch(max(index, 0))

    def clear_params(self, index: int, hp: str | None = None) -> None:
        """Nothing to clear: no weights are kept."""
        if index not in self.evaluated_indexes:
            warnings.warn(f"The {index}-th architecture is not in the benchmark data yet, "
                          "no need to clear params.", stacklevel=2)

    def reload(self, archive_root: str | None = None, index: int | None = None) -> None:
        """Mark ``index`` (None: every architecture) as loaded; the data is in memory."""
        indexes = range(TSS.size) if index is None else [TSS.check_index(index)]
        self.evaluated_indexes.update(indexes)


__all__ = ["LABEL", "NATStopology", "unique_str"]
