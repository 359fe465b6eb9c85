"""The cells each run of the tss study evaluated, kept beside ``results.json``.

A run's HV ratio is computed over the cells it evaluated by its budget, so with those cells
the study's runs can be scored on other accuracies without being run again
(:mod:`nasfilter.study.tss.rescore`). Each (dataset, GPU, batch) block keeps them in one
``.npz`` (:func:`cells_name`), named by the block's ``"cells"`` field: under the key
:func:`cells_key` (the method's row in the block, the seed, the budget) the distinct cells of
that run, int64, sorted.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.spaces import TSS
from nasfilter.files import atomic_write


def cells_name(dataset: str, device: str, batch: int) -> str:
    """The file name of a block's cells: ``cells-<dataset>-<device>-b<batch>.npz``."""
    return f"cells-{dataset}-{device}-b{batch}.npz"


def cells_key(row: int, seed: int, budget: float) -> str:
    """The key of one run's cells: its method's ``row`` in the block, its seed and budget (s)."""
    return f"m{row}-s{seed}-t{budget:.0f}"


def save_cells(path: Path, cells: Mapping[str, np.ndarray]) -> None:
    """Write ``cells`` ({:func:`cells_key`: int64 (n,)}) to ``path``, whole or not at all."""
    with atomic_write(path, "wb") as fh:
        arrays: dict[str, Any] = {k: np.asarray(v, dtype=np.int64) for k, v in cells.items()}
        np.savez_compressed(fh, **arrays)


def load_cells(path: Path) -> dict[str, np.ndarray]:
    """The cells of ``path``; ValueError naming the file when it is missing, not a cells file,
    or holds a key's cells that are not distinct sorted tss indices."""
    if not path.is_file():
        raise ValueError(f"cells file {str(path)!r} is missing; it is written beside "
                         "results.json by reproduce --space tss (run it again, --resume "
                         "reruns the blocks without one)")  # fmt: skip
    try:
        with np.load(path, allow_pickle=False) as data:
            cells = {key: data[key] for key in data.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(f"cells file {str(path)!r} is not a .npz of cells: {exc}") from exc
    for key, value in cells.items():
        if (value.ndim != 1 or value.dtype.kind not in "iu"
                or (len(value) and (value[0] < 0 or value[-1] >= TSS.size))
                or np.any(np.diff(value) <= 0)):  # fmt: skip
            raise ValueError(f"cells file {str(path)!r}: {key} does not hold distinct sorted "
                             f"cell indices in 0..{TSS.size - 1}")  # fmt: skip
    return cells


__all__ = ["cells_key", "cells_name", "load_cells", "save_cells"]
