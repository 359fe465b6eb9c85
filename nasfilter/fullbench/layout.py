"""The on-disk layout of a full-fidelity benchmark folder (``nasfilter convert`` without
``--dataset``).

A folder holds ``index.json`` (settings, records, seeds, evaluation sets, each array's encoding,
provenance), ``present.npy`` (bool, 32768), ``rows.npy`` (int32, 32768: the row of each
architecture present, -1 if absent; R rows in all) and one subfolder per training setting,
record and seed::

    hp12/cifar10-valid/s0777/train.acc.npy     (R, epochs), or (R,) when every row is
    hp12/cifar10-valid/s0777/train.loss.npy     constant over epochs (per-epoch times are)
    hp12/cifar10-valid/s0777/train.time.npy
    hp12/cifar10-valid/s0777/x-valid.acc.npy   and .loss, .time, per evaluation set
    hp12/cifar10-valid/s0777/cost.npy          float64 (R, 3): flop (MMACs), params (M),
                                               latency (s per batch of 256; -1 if unknown)
    hp12/cifar10-valid/s0777/kinds.npy         uint8 (R,): which of flop, params, latency
                                               the archive held as numpy float64 (bits 1, 2, 4)
    hp12/cifar10-valid/seeds.npy               uint16 (R,): bit k set when the k-th seed
                                               of index.json's list has a run

Each curve is stored in the smallest lossless encoding (:mod:`.codec`): accuracies and times
come back bit for bit as the archive holds them (float64, or integers k/100 where that is
exact); losses and training accuracies may be float32 (no search reads them). Absent runs
are NaN.
Every ``.npy`` is opened memory-mapped on first use; nothing is read up front.
"""

from __future__ import annotations

from pathlib import Path

FORMAT_NAME = "nasfilter-full-nats-sss"
FORMAT_VERSION = 1
INDEX_FILE = "index.json"
PRESENT_FILE = "present.npy"
ROWS_FILE = "rows.npy"
SEEDS_FILE = "seeds.npy"
COST_STEM = "cost"
KINDS_STEM = "kinds"
COST_FIELDS = ("flop", "params", "latency")
KIND_BITS = {"flop": 1, "params": 2, "latency": 4}
MAX_SEEDS = 16  # bits of seeds.npy
TRAIN = "train"
METRICS = ("acc", "loss", "time")
FLOAT32_METRICS = {(TRAIN, "acc"), (TRAIN, "loss")}  # and every set's "loss"


def record_dir(root: Path, hp: str, dataset: str) -> Path:
    """The folder of one setting's record: ``root/hp12/cifar10-valid``."""
    return root / f"hp{hp}" / dataset


def seed_dir(root: Path, hp: str, dataset: str, seed: int) -> Path:
    """The folder of one run's arrays: ``root/hp12/cifar10-valid/s0777``."""
    return record_dir(root, hp, dataset) / f"s{seed:04d}"


def array_name(set_name: str, metric: str) -> str:
    """``train.acc``, ``x-valid.time``, ...: the stem of one run array's file."""
    return f"{set_name}.{metric}"


def is_float32(set_name: str, metric: str) -> bool:
    """Whether this metric is stored as float32 (losses and training accuracies)."""
    return metric == "loss" or (set_name, metric) in FLOAT32_METRICS
