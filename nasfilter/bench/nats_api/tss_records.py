"""nats_bench's topology-space record queries answered from the shipped real tss data.

:mod:`nasfilter.bench.tss_data` holds, per architecture and dataset (records ``cifar10-valid``,
``cifar100``, ``ImageNet16-120``): the hp-200 x-valid accuracy of each training seed (777,
888 and, for 8169 architectures, 999; float32 as the source gives it), the hp-12 x-valid
accuracy averaged over that run's seeds, the measured hp-200 training time (NATS's per-epoch
train time is the same in the hp-12 and hp-200 records), NATS's own latency, params and
FLOPs. These records answer nats_bench's queries from that, with its semantics:

- per seed at hp 200 (``is_random`` a seed, or True for nats_bench's ``random.choice``),
  the seed mean with ``is_random=False``;
- at hp 12 only the seed mean exists, so ``is_random=True`` gives the seed mean (without a
  draw) and an explicit seed is refused;
- train times: ``epochs x`` the measured per-epoch time (real, derived from the sum);
- x-valid times are **modelled** (:data:`~nasfilter.bench.tss_real.VALID_PASS_RATIO` times the
  epoch's training time), as the tss tables charge them;
- costs of record ``cifar10`` (train+valid) are those of the same CIFAR-10 network.

Everything else (test accuracies, losses, train accuracies, curves before the last epoch,
the ``cifar10`` record's accuracies, hp-12 seed lists) raises
:class:`~nasfilter.bench.nats_api.compact.NeedsFullBenchmarkError` (a record or value missing:
:class:`~nasfilter.bench.nats_api.compact.MissingRecordError`, a ``KeyError`` too) naming it.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from nasfilter.bench.nats_api.compact import MissingRecordError, NeedsFullBenchmarkError
from nasfilter.bench.nats_api.records import check_iepoch, mean
from nasfilter.bench.tss_data import SEEDS, TssArrays, load_tss_arrays
from nasfilter.bench.tss_real import VALID_PASS_RATIO

HPS = ("12", "200")
EPOCHS = {"12": 12, "200": 200}
RECORDS = ("cifar10-valid", "cifar10", "cifar100", "ImageNet16-120")
HELD_RECORDS = ("cifar10-valid", "cifar100", "ImageNet16-120")
_DATASET = {"cifar10-valid": "cifar10", "cifar10": "cifar10", "cifar100": "cifar100",
            "ImageNet16-120": "ImageNet16-120"}
CLASSES = {"cifar10-valid": 10, "cifar10": 10, "cifar100": 100, "ImageNet16-120": 120}
HOLDS = ("the shipped real tss data holds the hp-200 x-valid accuracy per seed and the hp-12 "
         "x-valid accuracy (seed mean) of records cifar10-valid, cifar100 and ImageNet16-120, "
         "the measured training times, NATS's latency, params and FLOPs")
HOW = "for the rest, use nats_bench itself on NATS-Bench's tss archive (NATS-tss-v1_0-3ffb9)"


class Partial(dict[str, Any]):
    """A nats_bench answer holding only the keys the shipped data has; reading another key
    raises :class:`MissingRecordError` naming it (a ``KeyError``, as a plain dict)."""

    def __missing__(self, key: Any) -> Any:
        raise MissingRecordError(f"{key!r}: not held; {HOLDS} (test accuracies, losses and "
                                 f"curves are not public); {HOW}")


class UnknownSettingError(KeyError):
    """An hp the topology space does not have (a ``KeyError``, as nats_bench raises)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def refuse(what: str) -> NeedsFullBenchmarkError:
    return NeedsFullBenchmarkError(f"{what}: {HOLDS}; {HOW}")


def check_hp(hp: Any) -> str:
    """``str(hp)`` if it is 12 or 200; a KeyError (as nats_bench) naming the settings."""
    if str(hp) not in HPS:
        raise UnknownSettingError(f"hp={hp!r} is not a training setting of the topology "
                                  f"space; the settings are {list(HPS)}")
    return str(hp)


@functools.cache
def _arrays(record: str) -> TssArrays:
    return load_tss_arrays(_DATASET[record])


class TssRecords:
    """Answers nats_bench's record queries from the shipped real tss data (see module)."""

    full = False

    def hps(self) -> list[str]:
        return list(HPS)

    def epochs(self, hp: str) -> int:
        return EPOCHS[check_hp(hp)]

    def dataset_names(self, hp: str) -> list[str]:
        return list(RECORDS)

    def arrays(self, record: str) -> TssArrays:
        """The arrays of ``record``; KeyError (as nats_bench) naming the records."""
        if record not in RECORDS:
            raise KeyError(f"{record!r}: not a record of NATS-Bench's topology space "
                           f"({list(RECORDS)})")
        return _arrays(record)

    def _held(self, record: str) -> TssArrays:
        arrays = self.arrays(record)
        if record not in HELD_RECORDS:
            raise MissingRecordError(f"the accuracies and times of record {record!r} (trained "
                                     f"on train+valid): {HOLDS}; {HOW}")
        return arrays

    def seeds(self, index: int, hp: str, record: str) -> list[int]:
        """The hp-200 run's seeds (sorted); hp 12 keeps no per-seed values, so refused."""
        arrays = self._held(record)
        if check_hp(hp) == "12":
            raise refuse(f"the seeds of hp 12 on {record!r} (only their mean accuracy is "
                         "public)")
        row = arrays.hp200_valid_acc[index].tolist()
        return [s for s, v in zip(SEEDS, row, strict=True) if v == v]

    def _epoch_time(self, index: int, record: str) -> float:
        return float(self._held(record).hp200_train_time_s[index]) / 200

    def get_metrics(self, index: int, hp: str, record: str, setname: str, iepoch: Any = None,
                    is_random: Any = False) -> dict[str, Any]:
        """``ArchResults.get_metrics`` where held: the last epoch's x-valid accuracy and the
        times (train real, x-valid modelled); anything else refused by name."""
        arrays = self._held(record)
        hp = check_hp(hp)
        epochs = EPOCHS[hp]
        epoch = check_iepoch(iepoch, epochs, hp)
        name = "x-valid" if setname == "valid" else setname
        what = f"{name} at hp {hp}, epoch {epoch} on {record!r}"
        if name not in ("train", "x-valid"):
            raise refuse(f"{what} (test accuracies are not public)")
        if epoch != epochs - 1:
            raise refuse(f"{what} (only the last epoch, {epochs - 1}, is held; no curves)")
        acc = self._accuracy(arrays, index, hp, record, is_random)
        per = self._epoch_time(index, record)
        if name == "x-valid":
            per *= VALID_PASS_RATIO[arrays.dataset]
        out = Partial(iepoch=epoch, cur_time=per, all_time=per * epochs)
        if name == "x-valid":
            out["accuracy"] = acc
        return out

    def _accuracy(self, arrays: TssArrays, index: int, hp: str, record: str,
                  is_random: Any) -> float:
        if hp == "12":
            if isinstance(is_random, bool):
                return float(arrays.hp12_valid_acc[index])
            raise refuse(f"hp 12, seed {is_random!r} on {record!r} (only the seed mean is "
                         "public: is_random=False)")
        seeds = self.seeds(index, hp, record)
        column = arrays.hp200_valid_acc[index]
        if isinstance(is_random, bool) and not is_random:
            return float(mean([float(column[SEEDS.index(s)]) for s in seeds]))
        if isinstance(is_random, bool) or is_random not in seeds:
            raise ValueError(f"can not find random seed ({is_random}) from {seeds}")
        return float(column[SEEDS.index(is_random)])

    def latency(self, index: int, hp: str, record: str) -> Any:
        check_hp(hp)
        return float(self.arrays(record).hp200_latency_s[index])

    def get_compute_costs(self, index: int, hp: str, record: str) -> dict[str, Any]:
        """FLOPs, params, latency and the real ``T-train`` keys; the x-valid and test times
        are not public (reading them raises naming the key)."""
        hp = check_hp(hp)
        arrays = self.arrays(record)
        info = Partial(flops=float(arrays.flops_M[index]), params=float(arrays.params_M[index]),
                       latency=float(arrays.hp200_latency_s[index]))
        if record in HELD_RECORDS:
            per = self._epoch_time(index, record)
            info["T-train@epoch"] = per
            info["T-train@total"] = per * EPOCHS[hp]
        return info

    def config(self, index: int, record: str, arch_str: str) -> dict[str, Any]:
        self.arrays(record)
        return {"name": "infer.tiny", "C": 16, "N": 5, "arch_str": arch_str,
                "num_classes": CLASSES[record]}

    def present_count(self) -> int:
        return int(np.size(self.arrays("cifar10-valid").params_M))


__all__ = ["HPS", "RECORDS", "MissingRecordError", "NeedsFullBenchmarkError", "Partial",
           "TssRecords", "UnknownSettingError", "check_hp"]
