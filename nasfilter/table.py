"""The benchmark table: one dataset's records for every architecture, as numpy columns.

Rows are indexed by the NATS architecture index (0..32767). A table comes from a real
NATS-Bench archive (``nasfilter.convert``) or from the embedded synthetic surrogate
(``nasfilter.surrogate``); its :class:`Provenance` says which, and every output that shows
a number from it carries that label.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.datasets import Dataset, get_dataset
from nasfilter.files import atomic_write, read_npz
from nasfilter.space import N_ARCHS, ArchLike, as_arch

SCHEMA_VERSION = 1
SEARCH_EPOCHS = 12  # hp "12": what a search is charged for and sees (docs/facts.md §2)
FINAL_EPOCHS = 90  # hp "90": the reported test accuracy

_FLOAT_COLUMNS = ("test_acc", "train_time", "valid_time", "latency", "params", "macs")


class MissingArchitectureError(LookupError):
    """An architecture's row is absent from a partial table."""


@dataclass(frozen=True)
class Provenance:
    """Where a table's numbers come from."""

    synthetic: bool
    source: str  # archive path, or the generator's name for the surrogate
    description: str = ""
    checksum: str | None = None  # sha256 of the archive's files
    nats_bench_version: str | None = None
    created: str | None = None  # ISO-8601 UTC
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """A short human label, shown in CLI output, result files and plot titles."""
        if self.synthetic:
            return "SYNTHETIC surrogate (not NATS-Bench data)"
        return f"NATS-Bench archive {Path(self.source).name}"


@dataclass(frozen=True, eq=False)
class BenchmarkTable:
    """Every architecture's record for one dataset. Arrays have one row per NATS index.

    Attributes:
        dataset: the dataset these records are for.
        seeds: the training seeds of the hp-12 runs, shape (S,).
        valid_acc: validation accuracy (percent) after 12 epochs, shape (32768, S); NaN
            where a seed's run is absent.
        test_acc: test accuracy (percent) after 90 epochs, mean over seeds, shape (32768,).
        train_time: training seconds per epoch on the search record, shape (32768,).
        valid_time: validation seconds per epoch on the search record, shape (32768,).
        latency: NATS-Bench latency, seconds per batch, shape (32768,).
        params: parameters in millions, shape (32768,).
        macs: multiply-accumulates per image in millions, shape (32768,).
        present: whether the row holds real data, shape (32768,); absent rows are NaN.
        provenance: where the numbers come from.
    """

    dataset: Dataset
    seeds: tuple[int, ...]
    valid_acc: np.ndarray
    test_acc: np.ndarray
    train_time: np.ndarray
    valid_time: np.ndarray
    latency: np.ndarray
    params: np.ndarray
    macs: np.ndarray
    present: np.ndarray
    provenance: Provenance

    def __post_init__(self) -> None:
        n_seeds = len(self.seeds)
        if n_seeds == 0:
            raise ValueError("a table needs at least one training seed")
        if self.valid_acc.shape != (N_ARCHS, n_seeds):
            raise ValueError(
                f"valid_acc must have shape ({N_ARCHS}, {n_seeds}), got {self.valid_acc.shape}"
            )
        for name in (*_FLOAT_COLUMNS, "present"):
            arr = getattr(self, name)
            if arr.shape != (N_ARCHS,):
                raise ValueError(f"column {name!r} must have shape ({N_ARCHS},), got {arr.shape}")
        if self.present.dtype != np.bool_:
            raise ValueError(f"column 'present' must be boolean, got {self.present.dtype}")
        for name in ("valid_acc", *_FLOAT_COLUMNS, "present"):
            getattr(self, name).setflags(write=False)

    # ----------------------------------------------------------------- queries
    @property
    def synthetic(self) -> bool:
        return self.provenance.synthetic

    @property
    def label(self) -> str:
        return f"{self.provenance.label}, {self.dataset.name}"

    @property
    def n_present(self) -> int:
        return int(self.present.sum())

    @property
    def is_complete(self) -> bool:
        return self.n_present == N_ARCHS

    @property
    def flops(self) -> np.ndarray:
        """FLOPs per image (= 2 x MACs, docs/facts.md §1), shape (32768,)."""
        return self.macs * 2e6

    @property
    def eval_cost(self) -> np.ndarray:
        """Simulated seconds one hp-12 evaluation costs: 12 x train + 1 x valid, shape (32768,).

        This is ``simulate_train_eval``'s ``time_cost`` (docs/facts.md §2).
        """
        return SEARCH_EPOCHS * self.train_time + self.valid_time

    def require(self, arch: ArchLike) -> int:
        """The index of ``arch``; raise MissingArchitectureError if its row is absent."""
        index = as_arch(arch).index
        if not self.present[index]:
            raise MissingArchitectureError(
                f"architecture {as_arch(index)} (index {index}) is missing from the partial "
                f"table {self.label!r} ({self.n_present} of {N_ARCHS} rows present)"
            )
        return index

    def record(self, arch: ArchLike) -> dict[str, Any]:
        """One architecture's record as plain Python values (the `nasfilter show` keys)."""
        a = as_arch(arch)
        index = self.require(a)
        return {
            "index": index,
            "channels": str(a),
            "dataset": self.dataset.name,
            "macs": float(self.macs[index]),
            "flops": float(self.flops[index]),
            "params": float(self.params[index]),
            "seeds": list(self.seeds),
            "valid_acc_hp12": [float(x) for x in self.valid_acc[index]],
            "test_acc_hp90": float(self.test_acc[index]),
            "train_seconds_per_epoch": float(self.train_time[index]),
            "valid_seconds_per_epoch": float(self.valid_time[index]),
            "latency": float(self.latency[index]),
            "synthetic": self.synthetic,
            "source": self.provenance.source,
            "label": self.provenance.label,
        }

    # --------------------------------------------------------------- file I/O
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the table as an uncompressed ``.npz``, atomically (temp file, then rename)."""
        target = Path(path)
        if target.suffix != ".npz":
            raise ValueError(f"table files end in .npz, got {str(target)!r}")
        meta = {
            "schema_version": SCHEMA_VERSION,
            "dataset": self.dataset.name,
            "seeds": list(self.seeds),
            "provenance": asdict(self.provenance),
        }
        columns = {name: getattr(self, name) for name in ("valid_acc", *_FLOAT_COLUMNS, "present")}
        with atomic_write(target) as fh:
            np.savez(fh, meta=np.array(json.dumps(meta)), **columns)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BenchmarkTable:
        """Read a table written by :meth:`save`; raise ValueError on a foreign or corrupt file."""
        source = Path(path)
        data = read_npz(source, "nasfilter table", "`nasfilter convert`")
        required = {"meta", "valid_acc", *_FLOAT_COLUMNS, "present"}
        missing = sorted(required - set(data))
        if missing:
            raise ValueError(f"{str(source)!r} is not a nasfilter table: missing columns {missing}")
        try:
            meta = json.loads(str(data["meta"]))
            version = meta["schema_version"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{str(source)!r} has unreadable table metadata: {exc}") from exc
        if version != SCHEMA_VERSION:
            raise ValueError(
                f"{str(source)!r} has table schema version {version}; this nasfilter reads "
                f"version {SCHEMA_VERSION}. Convert the archive again with `nasfilter convert`."
            )
        for key in ("valid_acc", *_FLOAT_COLUMNS):
            if not np.issubdtype(data[key].dtype, np.floating):
                raise ValueError(
                    f"{str(source)!r} is not a nasfilter table: column {key!r} holds "
                    f"{data[key].dtype} values, expected floating point numbers"
                )
        try:
            return cls(
                dataset=get_dataset(meta["dataset"]),
                seeds=tuple(int(s) for s in meta["seeds"]),
                provenance=Provenance(**meta["provenance"]),
                **{key: data[key] for key in ("valid_acc", *_FLOAT_COLUMNS, "present")},
            )
        except (KeyError, TypeError, ValueError) as exc:
            what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"{str(source)!r} is not a usable nasfilter table: {what}") from exc


def load_table(path: str | os.PathLike[str] | None, dataset: str = "cifar10") -> BenchmarkTable:
    """A converted table from ``path``, or the embedded synthetic surrogate when it is None.

    When a path is given, ``dataset`` must match the file's dataset.
    """
    ds = get_dataset(dataset)
    if path is None:
        from nasfilter.surrogate import embedded_table

        return embedded_table(ds.name)
    table = BenchmarkTable.load(path)
    if table.dataset != ds:
        raise ValueError(
            f"table {str(path)!r} holds dataset {table.dataset.name!r}, not {ds.name!r}; "
            "convert the archive for that dataset or pass the matching --dataset"
        )
    return table
