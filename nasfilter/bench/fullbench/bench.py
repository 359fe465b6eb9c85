"""Read a full-fidelity benchmark folder lazily: index.json up front, arrays on first use."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.fullbench import codec
from nasfilter.bench.fullbench import layout as L
from nasfilter.bench.fullbench.index import (
    DamagedBenchmarkError,
    NotFullBenchmarkError,
    check_array,
    check_digest,
    how_to_convert,
    read_index,
    verify,
)

__all__ = ["DamagedBenchmarkError", "FullBenchmark", "NotFullBenchmarkError", "open_benchmark"]

_MAP_ABOVE = 1 << 20  # bytes: larger arrays are memory-mapped


class FullBenchmark:
    """One converted archive: every setting (hp), record, seed and epoch.

    Runs are addressed by (architecture index, hp such as ``"12"``, record such as
    ``"cifar10-valid"``, seed such as 777); curves are lists of Python floats, one per epoch.
    """

    def __init__(self, root: Path, index: dict[str, Any]) -> None:
        self.root = root
        self.index = index
        self.layout: dict[str, Any] = index["layout"]
        self.hp_order: list[str] = list(self.layout["order"])
        self._specs: dict[str, dict[str, Any]] = self.layout["arrays"]
        self._arrays: dict[tuple[str, ...], np.ndarray] = {}
        self._spans: dict[tuple[int, str, str], tuple[int, list[int]]] = {}
        self._present: np.ndarray | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> FullBenchmark:
        """Open a folder written by :func:`nasfilter.bench.fullbench.convert_full` (milliseconds:
        only the index is read). Each array is checked when first used, against the shape,
        dtype and sha256 the index records (one sequential read of that file, once);
        :meth:`verify` checks all. NotFullBenchmarkError (DamagedBenchmarkError) names the
        file at fault."""
        root = Path(path).expanduser()
        return cls(root, read_index(root))

    @property
    def space(self) -> str:
        """The search space of the archive: ``"sss"`` (folders written before tss had no
        ``space`` key) or ``"tss"``."""
        return str(self.index.get("space", "sss"))

    @property
    def n_archs(self) -> int:
        """The size of the space (32768 sss, 15625 tss)."""
        return int(self.index["n_archs"])

    def verify(self) -> None:
        """Check every array against the index: shape, dtype and sha256 (reads the whole
        folder; DamagedBenchmarkError naming the first damaged file)."""
        verify(self.root, self.index)

    # ---------------------------------------------------------------- structure
    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self.index["provenance"])

    @property
    def synthetic(self) -> bool:
        return bool(self.index["provenance"].get("synthetic"))

    @property
    def present(self) -> np.ndarray:
        """bool (32768,): architectures with a record."""
        if self._present is None:
            self._present = self._load(("present",))
        return self._present

    def setting(self, hp: str) -> dict[str, Any]:
        """The layout entry of setting ``hp``; KeyError (naming the settings) if unknown."""
        try:
            return self.layout["hps"][hp]
        except (KeyError, TypeError):
            raise KeyError(
                f"training setting hp={hp!r} is not in this benchmark; it has {self.hp_order}"
            ) from None

    def epochs(self, hp: str) -> int:
        return int(self.setting(hp)["epochs"])

    def records(self, hp: str) -> list[str]:
        """The record names of setting ``hp``, in the archive's order."""
        return list(self.setting(hp)["dataset_order"])

    def record(self, hp: str, dataset: str) -> dict[str, Any]:
        try:
            return self.setting(hp)["records"][dataset]
        except (KeyError, TypeError):
            raise KeyError(
                f"record {dataset!r} is not in this benchmark; hp {hp} has {self.records(hp)}"
            ) from None

    def eval_sets(self, hp: str, dataset: str) -> list[str]:
        return list(self.record(hp, dataset)["eval_sets"])

    # ---------------------------------------------------------------- runs
    def _load(self, key: tuple[str, ...]) -> np.ndarray:
        """The array ``key`` = (hp, record, stem) or (stem,), opened on first use: memory-mapped
        if large (held as a plain ndarray view of the map: indexing a memmap is slower)."""
        arr = self._arrays.get(key)
        if arr is None:
            rel = f"{key[0]}.npy" if len(key) == 1 else f"hp{key[0]}/{key[1]}/{key[2]}.npy"
            arr = self._read(rel)
            self._arrays[key] = arr
        return arr

    def _read(self, rel: str) -> np.ndarray:
        """``root/rel`` checked against the index (see :meth:`open`)."""
        path = self.root / rel
        spec = self.index["files"].get(rel)
        try:
            # Small arrays are read whole (mapping a file costs more than reading 1 MB).
            if os.path.getsize(path) > _MAP_ABOVE:
                arr = np.load(path, mmap_mode="r").view(np.ndarray)
            else:
                arr = np.load(path)
        except (OSError, ValueError, EOFError) as exc:
            raise DamagedBenchmarkError(
                f"{str(path)!r} is missing or unreadable ({type(exc).__name__}: "
                f"{str(exc)[:120]}); " + how_to_convert(self.root)
            ) from None
        check_array(self.root, rel, arr, spec)
        check_digest(self.root, rel, spec)  # one sequential read, once per process
        return arr

    def row(self, index: int) -> int:
        """The storage row of architecture ``index``; -1 if it has no record."""
        n_archs = self.n_archs
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not (
            0 <= index < n_archs
        ):
            raise IndexError(f"architecture index {index!r} is out of range 0..{n_archs - 1}")
        row = int(self._load(("rows",))[index])
        if not -1 <= row < int(self.index["n_present"]):
            raise DamagedBenchmarkError(
                f"{str(self.root / L.ROWS_FILE)!r} gives architecture {index} row {row}, "
                f"outside -1..{int(self.index['n_present']) - 1}; " + how_to_convert(self.root)
            )
        return row

    def span(self, index: int, hp: str, dataset: str) -> tuple[int, list[int]]:
        """(first run, seeds of the runs) of architecture ``index`` on a setting's record
        (looked up once, then kept: do not change the list)."""
        key = (index, hp, dataset)
        span = self._spans.get(key)
        if span is None:
            self.record(hp, dataset)  # KeyError naming what exists
            row = self.row(index)
            if row < 0:
                span = (0, [])
            else:
                offsets = self._load((hp, dataset, "offsets"))
                start, stop = int(offsets[row]), int(offsets[row + 1])
                span = (start, self._load((hp, dataset, "seeds"))[start:stop].tolist())
            self._spans[key] = span
        return span

    def seeds(self, index: int, hp: str, dataset: str) -> list[int]:
        """The sorted seeds of architecture ``index``'s runs (empty if it has none)."""
        return list(self.span(index, hp, dataset)[1])

    def _run(self, index: int, hp: str, dataset: str, seed: int) -> int:
        start, seeds = self.span(index, hp, dataset)
        if seed not in seeds:
            raise KeyError(f"architecture {index} has no run with seed {seed} on {dataset!r} "
                           f"at hp {hp}; its seeds are {seeds}")
        return start + seeds.index(seed)

    def series(
        self, index: int, hp: str, dataset: str, seed: int, set_name: str, metric: str
    ) -> list[float]:
        """One run's per-epoch ``metric`` (acc, loss or time) on ``set_name`` (or train)."""
        name = f"{set_name}.{metric}"
        run = self._run(index, hp, dataset, seed)
        try:
            spec = self._specs[f"{hp}/{dataset}"][name]
        except KeyError:
            raise KeyError(f"{set_name} is not an evaluation set of hp {hp} {dataset}") from None
        arr = self._arrays.get((hp, dataset, name))
        if arr is None:
            arr = self._load((hp, dataset, name))
        return codec.decode_row(arr, run, spec, int(self.layout["hps"][hp]["epochs"]))

    def curves(self, index: int, hp: str, dataset: str, seed: int,
               names: tuple[str, ...]) -> list[list[float]]:
        """Several per-epoch curves of one run (``names`` such as ``"x-valid.acc"``)."""
        run = self._run(index, hp, dataset, seed)
        specs = self._specs[f"{hp}/{dataset}"]
        epochs = int(self.layout["hps"][hp]["epochs"])
        out = []
        for name in names:
            arr = self._arrays.get((hp, dataset, name))
            if arr is None:
                arr = self._load((hp, dataset, name))
            out.append(codec.decode_row(arr, run, specs[name], epochs))
        return out

    def latencies(self, index: int, hp: str, dataset: str) -> list[Any]:
        """Each run's latency (s; -1.0 if unknown), in seed order, with the archive's types."""
        start, seeds = self.span(index, hp, dataset)
        stop = start + len(seeds)
        values = self._load((hp, dataset, L.COST_STEM))[start:stop, 2].tolist()
        kinds = self._load((hp, dataset, L.KINDS_STEM))[start:stop].tolist()
        bit = L.KIND_BITS["latency"]
        return [np.float64(v) if k & bit else v for v, k in zip(values, kinds, strict=True)]

    def cost(self, index: int, hp: str, dataset: str, seed: int) -> dict[str, Any]:
        """One run's flop (MMACs), params (M) and latency (s; -1.0 if unknown), with the
        archive's types (numpy float64 where the archive held numpy scalars)."""
        run = self._run(index, hp, dataset, seed)
        values = self._load((hp, dataset, L.COST_STEM))[run].tolist()
        kinds = int(self._load((hp, dataset, L.KINDS_STEM))[run])
        return {
            field: np.float64(v) if kinds & L.KIND_BITS[field] else v
            for field, v in zip(L.COST_FIELDS, values, strict=True)
        }

    def close(self) -> None:
        """Drop the memory maps opened so far."""
        self._arrays.clear()
        self._spans.clear()
        self._present = None


def open_benchmark(path: str | os.PathLike[str]) -> FullBenchmark:
    """:meth:`FullBenchmark.open`."""
    return FullBenchmark.open(path)
