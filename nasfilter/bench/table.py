"""The benchmark table: one dataset's records for every architecture, as numpy columns.

Rows are indexed by the NATS architecture index (0..32767). A table comes from a real
NATS-Bench archive (``nasfilter.bench.convert``), from the shipped real accuracies with modelled
times (``nasfilter.bench.sss_real``) or from the embedded synthetic surrogate
(``nasfilter.bench.surrogate``); its :class:`Provenance` says which, what its accuracy columns
hold, what is real and what is modelled, and every output that shows a number from it
carries that label. Tables are looked up by name or path in ``nasfilter.bench.lookup``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.spaces import SSS, TSS, Space, get_space
from nasfilter.bench.spaces.sss import ArchLike
from nasfilter.files import MAX_META_BYTES, atomic_write, read_npz

SCHEMA_VERSION = 1
SEARCH_EPOCHS = 12  # hp "12": what a search is charged for and sees (docs/facts.md §2)
FINAL_EPOCHS = 90  # hp "90": the reported test accuracy

OBSERVED_HP12 = "valid@12"  # hp-12 x-valid accuracy after the last epoch, per seed
SCORED_TEST90 = "test@90"  # hp-90 test accuracy on the final record

#: The scored-column name of accuracies a user supplies (``user:<file name>``): nasfilter
#: says where they come from, never what they are (nasfilter.runs.rescore).
USER_SCORED = "user:"

_SCORE_WORDS = {
    SCORED_TEST90: "test accuracy after 90 epochs",
    "valid@90": "validation accuracy after 90 epochs",
    "valid@200": "validation accuracy after 200 epochs, seed mean",
}

_FLOAT_COLUMNS = ("test_acc", "train_time", "valid_time", "latency", "params", "macs")
#: Every per-architecture array of a table, in the order files and digests use.
ARRAY_COLUMNS = ("valid_acc", *_FLOAT_COLUMNS, "present")


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
    # What the two accuracy columns hold, as short names: ``valid_acc`` (what searches
    # observe) and ``test_acc`` (what scores runs: the true front and every metric).
    observed: str = OBSERVED_HP12
    scored: str = SCORED_TEST90
    # Which numbers are real and which modelled, for a table that mixes both ("" = the
    # table is all one kind, as ``synthetic`` says).
    real: str = ""
    modelled: str = ""

    @property
    def label(self) -> str:
        """A short human label, shown in CLI output, result files and plot titles; a table
        scored on a user's accuracies (``scored`` ``user:<file>``) says so at its end."""
        if self.synthetic:
            label = f"SYNTHETIC {self.synthetic_kind} (not NATS-Bench data)"
        elif self.real or self.modelled:
            label = "; ".join(part for part in (self.real, self.modelled) if part)
        else:
            label = f"NATS-Bench archive {Path(self.source).name}"
        if self.scored.startswith(USER_SCORED):
            label += (f" [scored here on {self.scored.removeprefix(USER_SCORED)} "
                      "(user-supplied), not on the table's own column]")  # fmt: skip
        return label

    @property
    def synthetic_kind(self) -> str:
        """What a SYNTHETIC table is, in a few words: ``extra["kind"]`` where its generator
        set one, a NATS-format archive where nasfilter wrote the archive it was converted
        from, else the embedded surrogate."""
        if "kind" in self.extra:
            return str(self.extra["kind"])
        if "written_by" in self.extra:
            return "NATS-format archive written by nasfilter"
        return "surrogate"

    @property
    def legacy_record(self) -> bool:
        """Whether the columns hold what the record keys ``valid_acc_hp12`` and
        ``test_acc_hp90`` name (a converted archive and the surrogate)."""
        return (self.observed, self.scored) == (OBSERVED_HP12, SCORED_TEST90)


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
        space: the search space the rows index, a class attribute:
        :data:`~nasfilter.bench.spaces.SSS`
            here, :data:`~nasfilter.bench.spaces.TSS` for a :class:`TssTable` (15625 rows).
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
    space: ClassVar[Space] = SSS  # TssTable: TSS

    def __post_init__(self) -> None:
        n_rows = self.space.size
        n_seeds = len(self.seeds)
        if n_seeds == 0:
            raise ValueError("a table needs at least one training seed")
        if self.valid_acc.shape != (n_rows, n_seeds):
            raise ValueError(
                f"valid_acc must have shape ({n_rows}, {n_seeds}), got {self.valid_acc.shape}"
            )
        for name in (*_FLOAT_COLUMNS, "present"):
            arr = getattr(self, name)
            if arr.shape != (n_rows,):
                raise ValueError(f"column {name!r} must have shape ({n_rows},), got {arr.shape}")
        if self.present.dtype != np.bool_:
            raise ValueError(f"column 'present' must be boolean, got {self.present.dtype}")
        for name in ARRAY_COLUMNS:
            getattr(self, name).setflags(write=False)

    # ----------------------------------------------------------------- queries
    @property
    def synthetic(self) -> bool:
        return self.provenance.synthetic

    @property
    def label(self) -> str:
        return f"{self.provenance.label}, {self.dataset.name}"

    @property
    def score_label(self) -> str:
        """What ``test_acc`` (the accuracy that scores runs) holds, in words."""
        prov = self.provenance
        if prov.scored.startswith(USER_SCORED):
            return f"accuracy from {prov.scored.removeprefix(USER_SCORED)} (user-supplied)"
        words = _SCORE_WORDS.get(prov.scored, prov.scored)
        if prov.scored == prov.observed and len(self.seeds) == 1:
            words = f"{words}, seed {self.seeds[0]}"
        return f"real {words}" if prov.real else words

    @property
    def n_present(self) -> int:
        return int(self.present.sum())

    @property
    def is_complete(self) -> bool:
        return self.n_present == self.space.size

    @property
    def flops(self) -> np.ndarray:
        """FLOPs per image (= 2 x MACs, docs/facts.md §1), shape (32768,)."""
        return self.macs * 2e6

    @property
    def eval_cost(self) -> np.ndarray:
        """Simulated seconds one hp-12 evaluation costs: 12 x train + 1 x valid, shape (32768,).

        This is ``simulate_train_eval``'s ``time_cost`` (docs/facts.md §2).
        """
        return self.eval_epochs * self.train_time + self.valid_time

    @property
    def eval_epochs(self) -> int:
        """Training epochs one search evaluation charges: 12 (hp 12), or what the table's
        provenance sets (``extra["eval_epochs"]``: 200 for ``tss-real-hp200``)."""
        return int(self.provenance.extra.get("eval_epochs", SEARCH_EPOCHS))

    def require(self, arch: ArchLike) -> int:
        """The index of ``arch``; raise MissingArchitectureError if its row is absent."""
        index = self.space.index_of(arch)
        if not self.present[index]:
            raise MissingArchitectureError(
                f"architecture {self.space.arch(index)} (index {index}) is missing from the "
                f"partial table {self.label!r} ({self.n_present} of {self.space.size} rows present)"
            )
        return index

    def record(self, arch: ArchLike) -> dict[str, Any]:
        """One architecture's record as plain Python values (the `nasfilter show` keys)."""
        a = self.space.parse(arch)
        index = self.require(a)
        rec: dict[str, Any] = {
            "index": index,
            ("channels" if self.space is SSS else "arch"): str(a),
            "dataset": self.dataset.name,
            "macs": float(self.macs[index]),
            "flops": float(self.flops[index]),
            "params": float(self.params[index]),
            "seeds": list(self.seeds),
            "observed": self.provenance.observed,
            "observed_acc": [float(x) for x in self.valid_acc[index]],
            "scored": self.provenance.scored,
            "score_acc": float(self.test_acc[index]),
            "train_seconds_per_epoch": float(self.train_time[index]),
            "valid_seconds_per_epoch": float(self.valid_time[index]),
            "latency": float(self.latency[index]),
            "synthetic": self.synthetic,
            "source": self.provenance.source,
            "label": self.provenance.label,
        }
        if self.space is not SSS:
            rec["space"] = self.space.name
        if self.provenance.legacy_record:  # the names of a converted archive's columns
            rec["valid_acc_hp12"] = rec["observed_acc"]
            rec["test_acc_hp90"] = rec["score_acc"]
        return rec

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
            **({} if self.space is SSS else {"space": self.space.name}),
        }
        columns = {name: getattr(self, name) for name in ARRAY_COLUMNS}
        with atomic_write(target) as fh:
            np.savez(fh, meta=np.array(json.dumps(meta)), **columns)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BenchmarkTable:
        """Read a table written by :meth:`save`; raise ValueError on a foreign or corrupt file,
        or on values no benchmark holds (see :func:`check_values`)."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(
                f"a table path must be a str or os.PathLike (a .npz written by `nasfilter "
                f"convert`), got {type(path).__name__} {path!r}"
            )
        source = Path(path)
        kind, origin = "nasfilter table", "`nasfilter convert`"
        meta = _read_meta(source, read_npz(source, kind, origin, {"meta": MAX_META_BYTES}))
        seeds = _check_seeds(source, meta.get("seeds"))
        space = get_space(meta.get("space", "sss"))
        per_row = 8 * space.size  # bytes: float64 is the widest a column may hold
        limits = {"valid_acc": per_row * len(seeds), "present": per_row}
        limits.update({key: per_row for key in _FLOAT_COLUMNS})
        data = read_npz(source, kind, origin, limits)
        missing = sorted(set(limits) - set(data))
        if missing:
            raise ValueError(f"{str(source)!r} is not a nasfilter table: missing columns {missing}")
        for key in ("valid_acc", *_FLOAT_COLUMNS):
            if not np.issubdtype(data[key].dtype, np.floating):
                raise ValueError(
                    f"{str(source)!r} is not a nasfilter table: column {key!r} holds "
                    f"{data[key].dtype} values, expected floating point numbers"
                )
        table_class = TssTable if space is not SSS else cls
        try:
            table = table_class(
                dataset=get_dataset(meta["dataset"]),
                seeds=seeds,
                provenance=Provenance(**meta["provenance"]),
                **{key: data[key] for key in limits},
            )
        except (KeyError, TypeError, ValueError) as exc:
            what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"{str(source)!r} is not a usable nasfilter table: {what}") from exc
        check_values(table, str(source))
        return table


class TssTable(BenchmarkTable):
    """A :class:`BenchmarkTable` of the topology space: 15625 rows, NATS-tss indices."""

    space: ClassVar[Space] = TSS


def _read_meta(source: Path, data: dict[str, Any]) -> dict[str, Any]:
    """The table's JSON metadata, checked for its schema version."""
    if "meta" not in data:
        raise ValueError(f"{str(source)!r} is not a nasfilter table: missing columns ['meta']")
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
    return dict(meta)


def _check_seeds(source: Path, seeds: object) -> tuple[int, ...]:
    """The metadata's training seeds: a non-empty list of distinct integers."""
    if not isinstance(seeds, list) or not seeds:
        raise ValueError(
            f"{str(source)!r} is not a usable nasfilter table: metadata 'seeds' must be a "
            f"non-empty list of integers, got {seeds!r}"
        )
    for i, seed in enumerate(seeds):
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(
                f"{str(source)!r} is not a usable nasfilter table: metadata 'seeds' holds "
                f"{seed!r} at index {i}; seeds are integers"
            )
        if seed in seeds[:i]:
            raise ValueError(
                f"{str(source)!r} is not a usable nasfilter table: metadata 'seeds' holds seed "
                f"{seed} twice (index {seeds.index(seed)} and {i}); each seed is one training "
                "run, so they must be distinct. Convert the archive again with `nasfilter convert`."
            )
    return tuple(seeds)


# column -> (low, high, NaN allowed in a present row, what the column holds)
_RANGES: dict[str, tuple[float, float, bool, str]] = {
    "valid_acc": (0.0, 100.0, True, "accuracies in percent, in [0, 100]"),
    "test_acc": (0.0, 100.0, True, "accuracies in percent, in [0, 100]"),
    "train_time": (0.0, np.inf, False, "seconds per epoch, finite and >= 0"),
    "valid_time": (0.0, np.inf, False, "seconds per epoch, finite and >= 0"),
    "latency": (0.0, np.inf, True, "seconds per batch, finite and >= 0"),
    "params": (0.0, np.inf, False, "millions of parameters, finite and >= 0"),
    "macs": (0.0, np.inf, False, "millions of MACs, finite and >= 0"),
}


def check_values(table: BenchmarkTable, source: str) -> None:
    """Raise ValueError naming ``source``, the column, the first bad value and its index
    when a present row holds a value no benchmark holds (a negative time, a 300 % accuracy,
    an infinite or, where a row needs it, a NaN value). Absent rows are not checked."""
    present = table.present
    for name, (low, high, nan_ok, what) in _RANGES.items():
        column = getattr(table, name)
        with np.errstate(invalid="ignore"):
            bad = ~((column >= low) & (column <= min(high, np.finfo(np.float64).max)))
        if nan_ok:
            bad &= ~np.isnan(column)
        if bad.ndim == 2:
            bad = bad.any(axis=1)
        bad &= present  # absent rows are NaN by design
        if not bad.any():
            continue
        index = int(np.flatnonzero(bad)[0])
        value = column[index]
        shown = [float(v) for v in value] if np.ndim(value) else float(value)
        raise ValueError(
            f"table {source!r}: column {name!r} holds {shown} at architecture index {index} "
            f"({table.space.arch(index)}); it holds {what}. The file is damaged or was not "
            "written by `nasfilter convert`: convert the archive again"
        )
