"""``NATSsize``: nats_bench 1.8's size-space API over a converted benchmark.

Every public member keeps nats_bench's signature, semantics, return types and exception
types (see ``nats_bench/api_size.py`` and ``api_utils.py``, MIT). Randomness is nats_bench's:
``get_more_info(..., is_random=True)`` (and so ``simulate_train_eval``) makes exactly one
``random.choice`` over the architecture's sorted seed list on Python's **global** ``random``,
and ``random()`` one ``random.randint``, so scripts that draw their architectures from the
same stream follow the same trajectory as on nats_bench. This package is the one place in
nasfilter that touches global random state, on purpose, for that compatibility.

Differences: ``verbose`` prints only the creation line; ``show(-1)`` prints every loaded
architecture (nats_bench 1.8 raises a KeyError there); ``arch(True)`` raises TypeError (a
bool is not an index; nats_bench reads it as 1); ``query_meta_info_by_index`` and
``query_by_index`` answer with :class:`~nasfilter.bench.nats_api.results.ArchInfo` and
:class:`~nasfilter.bench.nats_api.results.RunInfo` (nats_bench's ``ArchResults`` and
``ResultsCount`` queries); ``get_net_param`` raises NotImplementedError, as no weights ship.
"""

from __future__ import annotations

import copy
import functools
import numbers
import random
import time
import warnings
from typing import Any

from nasfilter.bench.nats_api.records import MissingEpochError
from nasfilter.bench.nats_api.results import NO_WEIGHTS, ArchInfo
from nasfilter.bench.nats_api.text import print_information
from nasfilter.bench.spaces import SSS
from nasfilter.bench.spaces.sss import all_channels

DATASETS = ("cifar10", "cifar100", "ImageNet16-120")
_RECORDS = ("cifar10-valid", "cifar10", "cifar100", "ImageNet16-120")
_COMMENT = {
    "cifar10-valid": "In this dict, train-loss/accuracy/time is the metric on the train set of "
    "CIFAR-10. The test-loss/accuracy/time is the performance of the CIFAR-10 test set after "
    "training on the train set by {:} epochs. The per-time and total-time indicate the per "
    "epoch and total time costs, respectively.",
    "cifar10": "In this dict, train-loss/accuracy/time is the metric on the train+valid sets of "
    "CIFAR-10. The test-loss/accuracy/time is the performance of the CIFAR-10 test set after "
    "training on the train+valid sets by {:} epochs. The per-time and total-time indicate the "
    "per epoch and total time costs, respectively.",
}


_DIGIT = {str(c): k for k, c in enumerate((8, 16, 24, 32, 40, 48, 56, 64))}


@functools.cache
def _arch_names() -> tuple[list[str], dict[str, int]]:
    """``meta_archs`` and ``archstr2index``, built once per process on first use."""
    names = [":".join(str(c) for c in row) for row in all_channels().tolist()]
    return names, {arch: i for i, arch in enumerate(names)}


def _index_of(arch: str) -> int:
    """``archstr2index.get(arch, -1)`` without building the dict: the index of a canonical
    channel string such as ``8:16:24:32:40`` (layer 1 the most significant base-8 digit)."""
    parts = arch.split(":")
    if len(parts) != 5:
        return -1
    index = 0
    for part in parts:
        digit = _DIGIT.get(part)
        if digit is None:
            return -1
        index = index * 8 + digit
    return index


def _arch_name(index: int) -> str:
    """``meta_archs[index]`` without building the list."""
    digits = []
    for _ in range(5):
        index, digit = divmod(index, 8)
        digits.append(str(8 * (digit + 1)))
    return ":".join(reversed(digits))


def check_index(index: Any, size: int = SSS.size) -> int:
    """``index`` as an int: TypeError unless it is an integer (int or numpy integer, not a
    bool), as nats_bench's list lookup raises for a float; ``size``: the space's (sss)."""
    if isinstance(index, bool) or not isinstance(index, numbers.Integral):
        raise TypeError(f"architecture index {index!r} ({type(index).__name__}): an index is "
                        f"an integer (int or numpy integer) in [0, {size})")
    return int(index)


def _time_string() -> str:
    return "[{:}]".format(time.strftime("%Y-%m-%d %X", time.gmtime(time.time())))


def _per(all_time: Any, total: Any) -> Any:
    """Per-epoch time; None where a compact table does not know the time."""
    return None if all_time is None else all_time / total


def _remap(dataset: str, metric_on_set: str) -> tuple[str, str]:
    """nats_bench's ``remap_dataset_set_names``."""
    if dataset == "cifar10" and metric_on_set == "valid":
        return "cifar10-valid", "x-valid"
    if dataset == "cifar10" and metric_on_set == "test":
        return "cifar10", "ori-test"
    if dataset in ("cifar100", "ImageNet16-120") and metric_on_set == "valid":
        return dataset, "x-valid"
    if dataset in ("cifar100", "ImageNet16-120") and metric_on_set == "test":
        return dataset, "x-test"
    return dataset, metric_on_set


class NATSsize:
    """The NATS-Bench size-space API (nats_bench 1.8) over a nasfilter benchmark."""

    def __init__(self, records: Any, filename: str, fast_mode: bool, verbose: bool,
                 label: str | None = None) -> None:
        self._records = records
        self.filename = filename
        self._label = label  # "SYNTHETIC ..." for the embedded surrogate, else None
        self._search_space_name = self._space_word
        self._fast_mode = fast_mode
        self._archive_dir = None
        self._full_train_epochs = self._paper_epochs
        self.verbose = verbose
        self.reset_time()
        self.evaluated_indexes: set[int] = set()
        self._avaliable_hps: set[str] = set()
        if not fast_mode:
            for index in records.present_indices():
                self._load(index)
        if verbose:
            print(f"{_time_string()} Create NATS-Bench ({self._space_word}) done with "
                  f"{len(self.evaluated_indexes)}/{self._n_archs} architectures "
                  f"avaliable.{' ' + label if label else ''}")

    # ------------------------------------------------------------ properties
    is_size = property(lambda self: self._space_word == "size")
    is_topology = property(lambda self: self._space_word == "topology")
    full_epochs_in_paper = property(lambda self: self._paper_epochs)
    used_time = property(lambda self: self._used_time)
    search_space_name = property(lambda self: self._search_space_name)
    fast_mode = property(lambda self: self._fast_mode)
    archive_dir = property(lambda self: self._archive_dir)
    full_train_epochs = property(lambda self: self._full_train_epochs)

    @property
    def meta_archs(self) -> list[str]:
        """Every architecture string, in index order (built on first use)."""
        return self._names()[0]

    @property
    def archstr2index(self) -> dict[str, int]:
        """Architecture string -> index (built on first use)."""
        return self._names()[1]

    # The space: the size space here; NATStopologyFull overrides these five.
    _space_word = "size"
    _paper_epochs = 90
    _n_archs = SSS.size

    @staticmethod
    def _names() -> tuple[list[str], dict[str, int]]:
        return _arch_names()

    @staticmethod
    def _name(index: int) -> str:
        return _arch_name(index)

    @staticmethod
    def _lookup(text: str) -> int:
        return _index_of(text)

    @property
    def avaliable_hps(self) -> list[str]:
        return list(copy.deepcopy(self._avaliable_hps))

    def reset_time(self) -> None:
        self._used_time: Any = 0

    def __getitem__(self, index: int) -> str:
        return copy.deepcopy(self.meta_archs[index])

    def __len__(self) -> int:
        return self._n_archs

    def __repr__(self) -> str:
        tail = f", {self._label}" if self._label else ""
        return (f"{type(self).__name__}({len(self.evaluated_indexes)}/{self._n_archs} "
                f"architectures, fast_mode={self.fast_mode}, file={self.filename}{tail})")

    def arch(self, index: int) -> str:
        index = check_index(index, self._n_archs)
        if index < 0 or index >= self._n_archs:
            raise ValueError(f"invalid index : {index} vs. {self._n_archs}.")
        return self._name(index)

    def random(self) -> int:
        """A random index, from Python's global ``random`` (as nats_bench)."""
        return random.randint(0, self._n_archs - 1)

    # ------------------------------------------------------------ loading
    def _load(self, index: int) -> None:
        self.evaluated_indexes.add(index)
        for hp in self._records.hps():
            self._avaliable_hps.add(hp)

    def reload(self, archive_root: str | None = None, index: int | None = None) -> None:
        """Mark ``index`` (None: every architecture) as loaded; AssertionError for one
        without a record, as nats_bench. ``archive_root`` is ignored: data is memory-mapped."""
        indexes = list(range(len(self))) if index is None else [index]
        for idx in indexes:
            if not 0 <= idx < self._n_archs:
                raise ValueError(f"invalid index of {idx}")
            assert self._records.has_record(idx), (
                f"invalid data path : architecture {idx} ({self._name(idx)}) has no "
                f"record in {self.filename}"
            )
            self._load(idx)

    def _prepare_info(self, index: int) -> None:
        if index not in self.evaluated_indexes and self.fast_mode:
            self.reload(None, index)

    def _loaded(self, index: int) -> bool:
        self._prepare_info(index)
        return index in self.evaluated_indexes

    def clear_params(self, index: int, hp: str | None = None) -> None:
        """Nothing to clear (no weights are kept); checks as nats_bench does."""
        if index not in self.evaluated_indexes:
            warnings.warn(f"The {index}-th architecture is not in the benchmark data yet, "
                          "no need to clear params.", stacklevel=2)
        elif hp is not None and str(hp) not in self._records.hps():
            raise ValueError(f"The {index}-th architecture only has hyper-parameters of "
                             f"{self._records.hps()} instead of {hp}.")

    # ------------------------------------------------------------ queries
    def query_index_by_arch(self, arch: Any) -> int:
        if isinstance(arch, int):
            if 0 <= arch < len(self):
                return arch
            raise ValueError(f"Invalid architecture index {arch} vs [0, {len(self)}].")
        if isinstance(arch, str):
            return self._lookup(arch)
        if hasattr(arch, "tostr"):
            text = arch.tostr()
            if isinstance(text, str):
                return self._lookup(text)
            return self.archstr2index.get(text, -1)
        return -1

    def _hp(self, index: int, hp: Any) -> str:
        """``arch2infos_dict[index][str(hp)]``'s checks: KeyError for an unknown setting
        (on a compact table, naming what it holds and the conversion for the rest)."""
        if str(hp) not in self._records.hps():
            if not self._records.full and str(hp) in ("01", "12", "90"):
                raise self._records.missing(f"hp {str(hp)!r}")
            raise KeyError(f"hp={hp!r} is not a training setting here; the settings are "
                           f"{self._records.hps()}")
        return str(hp)

    def _metrics(self, index: int, hp: str, dataset: str, setname: str, iepoch: Any,
                 seed: Any, optional: bool) -> dict[str, Any] | None:
        try:
            return self._records.get_metrics(index, hp, dataset, setname, iepoch, seed)
        except Exception:
            if optional:
                return None
            raise

    def get_more_info(self, index: Any, dataset: str, iepoch: Any = None, hp: Any = "12",
                      is_random: Any = True) -> dict[str, Any]:
        index = self.query_index_by_arch(index)
        if not self._loaded(index):
            raise ValueError(f"Did not find {index} from arch2infos_dict.")
        hp = self._hp(index, hp)
        if isinstance(is_random, bool) and is_random:
            is_random = random.choice(self._records.seeds(index, hp, dataset))
        train = self._records.get_metrics(index, hp, dataset, "train", iepoch, is_random)
        total = train["iepoch"] + 1
        xinfo: dict[str, Any] = {
            "train-loss": train["loss"], "train-accuracy": train["accuracy"],
            "train-per-time": _per(train["all_time"], total), "train-all-time": train["all_time"],
        }
        if dataset in _COMMENT:
            xinfo["comment"] = _COMMENT[dataset].format(hp)
        sets = self._sets(dataset)
        infos = {
            prefix: self._metrics(index, hp, dataset, name, iepoch, is_random,
                                  optional=not (dataset == "cifar10-valid" and prefix == "valid"))
            for prefix, name in sets
        }
        for prefix in ("valid", "test", "valtest"):
            info = infos.get(prefix)
            if info is not None:
                xinfo[f"{prefix}-loss"] = info["loss"]
                xinfo[f"{prefix}-accuracy"] = info["accuracy"]
                xinfo[f"{prefix}-per-time"] = _per(info["all_time"], total)
                xinfo[f"{prefix}-all-time"] = info["all_time"]
        return xinfo

    @staticmethod
    def _sets(dataset: str) -> list[tuple[str, str]]:
        """(key prefix, evaluation set) pairs that ``get_more_info`` reports for a record."""
        if dataset == "cifar10-valid":
            return [("valid", "x-valid"), ("test", "ori-test")]
        if dataset == "cifar10":
            return [("test", "ori-test"), ("valid", "x-valid")]
        return [("test", "x-test"), ("valid", "x-valid"), ("valtest", "ori-test")]

    def simulate_train_eval(self, arch: Any, dataset: str, iepoch: Any = None, hp: Any = "12",
                            account_time: bool = True) -> tuple[Any, Any, Any, Any]:
        """(validation accuracy, latency, time cost, total time), charging the clock."""
        index = self.query_index_by_arch(arch)
        if dataset not in DATASETS:
            raise ValueError(f"Invalid dataset name : {dataset} vs {DATASETS}")
        record = "cifar10-valid" if dataset == "cifar10" else dataset
        found = self._search_eval(index, record, iepoch, hp)
        if found is not None:
            valid_acc, time_cost = found
        else:
            info = self.get_more_info(index, record, iepoch=iepoch, hp=hp, is_random=True)
            if "valid-accuracy" in info:
                valid_acc = info["valid-accuracy"]
                time_cost = info["train-all-time"] + info["valid-per-time"]
            else:
                valid_acc = info["valtest-accuracy"]
                temp = self.get_more_info(index, dataset, iepoch=None, hp=hp, is_random=True)
                time_cost = info["train-all-time"] + temp["valid-per-time"]
        latency = self.get_latency(index, dataset, hp=hp)
        if account_time:
            self._used_time += time_cost
        return valid_acc, latency, time_cost, self._used_time

    def _search_eval(self, index: Any, record: str, iepoch: Any,
                     hp: Any) -> tuple[Any, Any] | None:
        """``get_more_info(index, record, iepoch, hp, is_random=True)``'s checks and its one
        ``random.choice``, then only the numbers ``simulate_train_eval`` returns; None
        (nothing drawn) for a record without an x-valid set, left to ``get_more_info``."""
        index = self.query_index_by_arch(index)
        if not self._loaded(index):
            raise ValueError(f"Did not find {index} from arch2infos_dict.")
        hp = self._hp(index, hp)
        seeds = self._records.seeds(index, hp, record)
        if not self._records.has_valid(hp, record):
            return None
        seed = random.choice(seeds)
        try:
            return self._records.search_eval(index, hp, record, iepoch, seed)
        except MissingEpochError:  # nats_bench: the ori-test accuracy, a second draw's time
            info = self.get_more_info(index, record, iepoch=iepoch, hp=hp, is_random=seed)
            temp = self.get_more_info(index, record, iepoch=None, hp=hp, is_random=True)
            return info["valtest-accuracy"], info["train-all-time"] + temp["valid-per-time"]

    def _meta(self, index: int, hp: Any) -> str:
        """``query_meta_info_by_index``'s checks; the setting's name."""
        if not self._loaded(index):
            raise ValueError(f"arch_index [{index}] does not in arch2infos")
        if str(hp) not in self._records.hps():
            if not self._records.full and str(hp) in ("01", "12", "90"):
                raise self._records.missing(f"hp {str(hp)!r}")
            raise ValueError(f"The {index}-th architecture only has hyper-parameters of "
                             f"{self._records.hps()} instead of {hp}.")
        return str(hp)

    def query_meta_info_by_index(self, arch_index: int, hp: Any = "12") -> ArchInfo:
        """nats_bench's ``ArchResults`` queries of ``arch_index`` at setting ``hp``."""
        self._prepare_info(arch_index)
        hp = self._meta(arch_index, hp)
        return ArchInfo(self._records, arch_index, hp, self._name(arch_index))

    def query_by_index(self, arch_index: int, dataname: str | None = None,
                       hp: Any = "12") -> Any:
        """The :class:`ArchInfo` (``dataname`` None), else ``{seed: RunInfo}`` of that record."""
        info = self.query_meta_info_by_index(arch_index, str(hp))
        if dataname is None:
            return info
        if dataname not in info.get_dataset_names():
            raise ValueError(f"invalid dataset-name : {dataname} vs. "
                             f"{info.get_dataset_names()}")
        return info.query(dataname)

    def get_net_param(self, index: int, dataset: str, seed: int | None,
                      hp: Any = "12") -> Any:
        """Trained weights: not provided (see :data:`~nasfilter.bench.nats_api.results.NO_WEIGHTS`);
        the index and setting are checked first, as nats_bench does."""
        self.query_meta_info_by_index(index, hp)
        raise NotImplementedError(NO_WEIGHTS)

    def get_cost_info(self, index: int, dataset: str, hp: Any = "12") -> dict[str, Any]:
        hp = self._meta(index, hp)
        return self._records.get_compute_costs(index, hp, dataset)

    def get_latency(self, index: int, dataset: str, hp: Any = "12") -> Any:
        """``get_cost_info(index, dataset, hp)["latency"]`` (seconds per batch of 256)."""
        hp = self._meta(index, hp)
        return self._records.latency(index, hp, dataset)

    def get_net_config(self, index: int, dataset: str) -> dict[str, Any]:
        if not self._loaded(index):
            raise ValueError(f"The arch_index={index} is not in arch2infos_dict.")
        return self._records.config(index, dataset, self._name(index))

    def query_info_str_by_arch(self, arch: Any, hp: str = "12") -> str | None:
        index = self.query_index_by_arch(arch)
        self._prepare_info(index)
        if index not in self.evaluated_indexes:
            warnings.warn(f"Find this arch-index : {index}, but this arch is not evaluated.",
                          stacklevel=2)
            return None
        if hp not in self._records.hps():
            raise ValueError(f"The {index}-th architecture only has hyper-parameters of "
                             f"{self._records.hps()} instead of {hp}.")
        lines = print_information(self._records, index, hp, self._name(index),
                                  f"arch-index={index}")
        if self._label:
            lines.append(self._label)
        return "\n".join(lines)

    def query_by_arch(self, arch: Any, hp: str) -> str | None:
        return self.query_info_str_by_arch(arch, hp)

    def find_best(self, dataset: str, metric_on_set: str, flop_max: float | None = None,
                  param_max: float | None = None, hp: str = "12",
                  enforce_all: bool | None = None) -> tuple[int, Any]:
        """(index, accuracy) of the best mean accuracy at the last epoch, under the limits."""
        dataset, metric_on_set = _remap(dataset, metric_on_set)
        if enforce_all is None:
            enforce_all = bool(self.fast_mode)
        if enforce_all:
            assert self.fast_mode, ("enforce_all can only be set when fast_mode=True; if you "
                                    "are using non-fast-mode, please set it as False")
            indexes = list(range(len(self)))
        else:
            indexes = sorted(self.evaluated_indexes)
        best, highest = -1, None
        for index in indexes:
            self._prepare_info(index)
            hp_key = self._hp(index, hp)
            cost = self._records.get_compute_costs(index, hp_key, dataset)
            if flop_max is not None and cost["flops"] > flop_max:
                continue
            if param_max is not None and cost["params"] > param_max:
                continue
            acc = self._records.get_metrics(index, hp_key, dataset, metric_on_set)["accuracy"]
            if best == -1 or highest < acc:
                best, highest = index, acc
        return best, highest

    def statistics(self, dataset: str, hp: Any) -> dict[int, int]:
        """{number of seeds: number of loaded architectures with that many runs}."""
        if dataset not in _RECORDS:
            raise ValueError(f"{dataset} not in {list(_RECORDS)}")
        hp = str(hp)
        nums: dict[int, int] = {}
        for index in self.evaluated_indexes:
            hp_key = self._hp(index, hp)
            try:
                n = len(self._records.seeds(index, hp_key, dataset))
            except KeyError:  # no run on that record
                n = 0
            nums[n] = nums.get(n, 0) + 1
        return nums

    def show(self, index: int = -1) -> None:
        """Print an architecture's information (index < 0: every loaded one)."""
        if index < 0:
            print(self)
            for i, idx in enumerate(sorted(self.evaluated_indexes)):
                print("\n" + "-" * 10 + f" The ({i:5d}/{len(self.evaluated_indexes):5d}) "
                      f"{idx:06d}-th architecture! " + "-" * 10)
                print(f"arch : {self._name(idx)}")
                self._show_one(idx)
        elif index < len(self.meta_archs):
            self._prepare_info(index)
            self._show_one(index)
        else:
            print(f"This index ({index}) is out of range (0~{len(self.meta_archs)}).")

    def _show_one(self, index: int) -> None:
        for hp in self._records.hps():
            lines = print_information(self._records, index, hp, self._name(index), None)
            print(">" * 40 + f" {self._records.epochs(hp):03d} epochs " + ">" * 40)
            print("\n".join(lines))
        print("<" * 40 + "------------" + "<" * 40)

