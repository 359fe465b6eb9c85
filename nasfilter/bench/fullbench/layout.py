"""The on-disk layout of a full-fidelity benchmark folder (``nasfilter convert`` without
``--dataset``).

A folder holds ``index.json`` (settings, records, seeds, evaluation sets, each array's encoding,
provenance, and the ``space``: ``sss``, or ``tss`` for a topology-space archive; a folder
without the key is sss), ``present.npy`` (bool, ``n_archs``: 32768 sss, 15625 tss),
``rows.npy`` (int32, ``n_archs``: the row of each architecture present, -1 if absent; R
rows) and one subfolder per training setting and record, holding its runs (U of them, every
seed of every architecture, by row then seed)::

    hp12/cifar10-valid/offsets.npy       int64 (R + 1,): row r's runs are offsets[r]:offsets[r+1]
    hp12/cifar10-valid/seeds.npy         int64 (U,): each run's seed, sorted within a row
    hp12/cifar10-valid/cost.npy          float64 (U, 3): flop (MMACs), params (M), latency
                                         (s per batch of 256; -1 if unknown)
    hp12/cifar10-valid/kinds.npy         uint8 (U,): which of flop, params, latency the
                                         archive held as numpy float64 (bits 1, 2, 4)
    hp12/cifar10-valid/train.acc.npy     (U, epochs), or (U,) when every run is constant
    hp12/cifar10-valid/train.loss.npy    over epochs (per-epoch times are)
    hp12/cifar10-valid/train.time.npy
    hp12/cifar10-valid/x-valid.acc.npy   and .loss, .time, for each evaluation set

A missing seed is simply not among a row's runs. An epoch at which the archive does not
evaluate a set (NATS-Bench's tss archive evaluates some sets at the last epoch only) holds NaN
in that set's accuracy and loss; readers answer it with nats_bench's ``KeyError``. Each curve
is stored in the smallest lossless encoding (:mod:`.codec`): accuracies and times come back
bit for bit as the archive holds them (float64, or integers k/100 where that is exact);
losses and training accuracies may be float32 (no search reads them).
Every ``.npy`` is opened memory-mapped on first use; nothing is read up front.
"""

from __future__ import annotations

from pathlib import Path

FORMAT_NAME = "nasfilter-full-nats-sss"
FORMAT_VERSION = 3  # 3: index.json lists every array (shape, dtype, sha256)
INDEX_FILE = "index.json"
PRESENT_FILE = "present.npy"
ROWS_FILE = "rows.npy"
OFFSETS_FILE = "offsets.npy"
RUN_SEEDS_FILE = "seeds.npy"
COST_STEM = "cost"
KINDS_STEM = "kinds"
COST_FIELDS = ("flop", "params", "latency")
KIND_BITS = {"flop": 1, "params": 2, "latency": 4}
TRAIN = "train"
METRICS = ("acc", "loss", "time")
FLOAT32_METRICS = {(TRAIN, "acc"), (TRAIN, "loss")}  # and every set's "loss"


def record_dir(root: Path, hp: str, dataset: str) -> Path:
    """The folder of one setting's record: ``root/hp12/cifar10-valid``."""
    return root / f"hp{hp}" / dataset


def array_name(set_name: str, metric: str) -> str:
    """``train.acc``, ``x-valid.time``, ...: the stem of one run array's file."""
    return f"{set_name}.{metric}"


def is_float32(set_name: str, metric: str) -> bool:
    """Whether this metric is stored as float32 (losses and training accuracies)."""
    return metric == "loss" or (set_name, metric) in FLOAT32_METRICS
