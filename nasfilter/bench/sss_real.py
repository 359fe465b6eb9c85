"""The real table: NATS-Bench's measured accuracies of all 32768 architectures, modelled times.

Accuracies are **real**: NATS-Bench's hp-90 validation accuracy (``x-valid`` after the last
of 90 epochs, seed 777) of every architecture, on the search record of each dataset
(``cifar10-valid`` for CIFAR-10, ``cifar100``, ``ImageNet16-120``). They ship as package data
(``nasfilter/data/nats_sss_real/``, MIT license, exported by LightOn; see the README there)
and each file's SHA-256 is checked before use.

Searches observe that accuracy (one seed, so every query of an architecture sees the same
value), and since no real test accuracy for the whole space ships, the same accuracy scores
runs: the true front and every metric. Times are **modelled**: the per-epoch train and
valid seconds and the latency are the surrogate's time model (``nasfilter.bench.surrogate``,
calibrated on the real times of the official fixture), and an evaluation charges what the
study's budget assumes, 12 epochs of training plus one validation
(:attr:`~nasfilter.bench.table.BenchmarkTable.eval_cost`). MACs and parameters are exact.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
from importlib import resources
from pathlib import Path

import numpy as np

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.spaces import SSS
from nasfilter.bench.surrogate import embedded_table
from nasfilter.bench.table import BenchmarkTable, Provenance

SOURCE = "NATS-Bench NATS-sss-v1_0-50262, hp-90 x-valid accuracies (LightOn export, MIT)"
SEED = 777  # the one training seed of NATS-Bench's hp-90 runs
OBSERVED = "valid@90"  # short name of what the accuracy columns hold
REAL = "real NATS-Bench accuracies (hp-90 x-valid, seed 777)"
MODELLED = "modelled times"

# File and SHA-256 of each dataset's accuracies (README of the data folder).
FILES: dict[str, tuple[str, str]] = {
    "cifar10": (
        "cifar10_accs.npy",
        "fb28ab473ad084d0360626c58f750e92e237ac4fe253e5a2cc42bab8c9c6c745",
    ),
    "cifar100": (
        "cifar100_accs.npy",
        "10669ea2ccd27c5532503ea4ca98eff1ea60ae400596232af52780db6cabccca",
    ),
    "ImageNet16-120": (
        "ImageNet16-120_accs.npy",
        "1902b051be94e395e3349c617d5c904220b2d5cb32e5bc6d43aac2a82b6db7bb",
    ),
}


class ChecksumError(ValueError):
    """A shipped data file does not hold the bytes it was released with."""


def data_folder() -> Path:
    """The folder of the shipped accuracy files."""
    return Path(str(resources.files("nasfilter") / "data" / "nats_sss_real"))


def read_accuracies(
    dataset: str | Dataset, folder: str | os.PathLike[str] | None = None
) -> np.ndarray:
    """The real hp-90 validation accuracies (percent) of ``dataset``, float64 (32768,).

    ``folder`` defaults to the shipped data. Raises ChecksumError, naming the file and both
    checksums, if the file's SHA-256 is not the released one; ValueError if it is missing.
    """
    ds = get_dataset(dataset)
    name, expected = FILES[ds.name]
    path = (data_folder() if folder is None else Path(folder)) / name
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ValueError(
            f"cannot read the real accuracies of {ds.name} at {str(path)!r}: {exc}; "
            "reinstall nasfilter, or pass --table synthetic to use the surrogate"
        ) from exc
    actual = hashlib.sha256(raw).hexdigest()
    if actual != expected:
        raise ChecksumError(
            f"{str(path)!r} has SHA-256 {actual}, not the released {expected}; the file is "
            "damaged or altered, so nasfilter refuses it. Reinstall nasfilter to restore it"
        )
    acc = np.load(io.BytesIO(raw), allow_pickle=False)
    if acc.shape != (SSS.size,) or acc.dtype != np.float64:  # pragma: no cover - checksummed
        raise ValueError(f"{str(path)!r} holds {acc.dtype} {acc.shape}, not float64 (32768,)")
    return acc


def build_real_table(
    dataset: str | Dataset, folder: str | os.PathLike[str] | None = None
) -> BenchmarkTable:
    """The real table of ``dataset`` afresh (uncached; see :func:`real_table`)."""
    ds = get_dataset(dataset)
    acc = read_accuracies(ds, folder)
    times = embedded_table(ds.name)  # the surrogate's modelled times, exact MACs and params
    return BenchmarkTable(
        dataset=ds,
        seeds=(SEED,),
        valid_acc=acc[:, None].copy(),
        test_acc=acc,
        train_time=times.train_time,
        valid_time=times.valid_time,
        latency=times.latency,
        params=times.params,
        macs=times.macs,
        present=np.ones(SSS.size, dtype=bool),
        provenance=Provenance(
            synthetic=False,
            source=SOURCE,
            description=(
                f"Real: NATS-Bench's hp-90 validation accuracy (x-valid after 90 epochs, "
                f"seed {SEED}, record {ds.search_record}) of all 32768 architectures; searches "
                "observe it and it scores runs (no real test accuracy ships). Modelled: the "
                "train / valid seconds per epoch and the latency (the surrogate's time model, "
                "calibrated on the fixture's real times); an evaluation charges 12 training "
                "epochs plus one validation. MACs and params exact (docs/real-results.md)."
            ),
            checksum=FILES[ds.name][1],
            nats_bench_version="NATS-sss-v1_0-50262",
            observed=OBSERVED,
            scored=OBSERVED,
            real=REAL,
            modelled=MODELLED,
            extra={
                "file": FILES[ds.name][0],
                "record": ds.search_record,
                "hp": "90",
                "real_detail": (
                    f"the accuracies: NATS-Bench's hp-90 validation accuracy (x-valid after "
                    f"90 epochs, seed {SEED}, record {ds.search_record})"
                ),
                "modelled_detail": (
                    "the times: s/epoch train and valid, latency (the surrogate's time model); "
                    "an evaluation charges 12 training epochs + 1 validation"
                ),
            },
        ),
    )


@functools.cache
def _cached(name: str) -> BenchmarkTable:
    return build_real_table(name)


def real_table(dataset: str | Dataset = "cifar10") -> BenchmarkTable:
    """The real table of ``dataset``, built once per process (read-only arrays)."""
    return _cached(get_dataset(dataset).name)
