"""A file of one-network layer tables keyed by (model, image size), for repeated fits.

Analysing a timm model takes about a second; a calibration reads some 1,400 (model, size)
pairs. :class:`CachedTables` wraps any table source (``(model, img_size) -> LayerTable``),
remembers each answer, failures included (their message, so a model that cannot be analysed
is not tried again), and saves them to one ``.npz`` file (no pickles: arrays and JSON text).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.layers import _ARRAYS, LayerTable

STORE_FORMAT = 1
Key = tuple[str, int]


class CachedTables:
    """A table source that remembers, and stores in ``path`` (``.npz``) when saved.

    Calling it raises ValueError with the stored message for a model that failed before.
    """

    def __init__(self, source: Callable[[str, int], LayerTable], path: str | Path | None = None):
        self.source = source
        self.path = Path(path) if path is not None else None
        self.tables: dict[Key, LayerTable] = {}
        self.errors: dict[Key, str] = {}
        self.misses = 0
        if self.path is not None and self.path.exists():
            self.tables, self.errors = load_tables(self.path)

    def __call__(self, model: str, img_size: int) -> LayerTable:
        key = (model, int(img_size))
        if key in self.tables:
            return self.tables[key]
        if key in self.errors:
            raise ValueError(self.errors[key])
        self.misses += 1
        try:
            table = self.source(model, int(img_size))
        except (ValueError, LookupError, RuntimeError, NotImplementedError, TypeError) as exc:
            self.errors[key] = f"{type(exc).__name__}: {exc}"[:500]
            raise
        if table.n_networks != 1:
            raise ValueError(f"a table source must give one network, got {table.n_networks}")
        self.tables[key] = table
        return table

    def save(self) -> None:
        """Write every remembered table and failure to ``path`` (if one was given)."""
        if self.path is not None:
            save_tables(self.path, self.tables, self.errors)


def save_tables(path: str | Path, tables: dict[Key, LayerTable], errors: dict[Key, str]) -> None:
    """Write tables (B = 1 each) and failure messages to one ``.npz`` file (atomically)."""
    from nasfilter.files import atomic_write

    keys = sorted(tables)
    index = {
        "format": STORE_FORMAT,
        "keys": [list(k) for k in keys],
        "names": [list(tables[k].names) for k in keys],
        "kinds": [list(tables[k].kinds) for k in keys],
        "errors": [[m, s, msg] for (m, s), msg in sorted(errors.items())],
    }
    arrays: dict[str, Any] = {
        name: np.concatenate([getattr(tables[k], name)[0] for k in keys]) if keys else np.zeros(0)
        for name in (*_ARRAYS, "present")
    }
    with atomic_write(path) as fh:
        np.savez_compressed(fh, index=np.array(json.dumps(index)), **arrays)


def load_tables(path: str | Path) -> tuple[dict[Key, LayerTable], dict[Key, str]]:
    """Read :func:`save_tables`'s file; ValueError if it is not one."""
    try:
        with np.load(path, allow_pickle=False) as data:
            index = json.loads(str(data["index"]))
            arrays: dict[str, Any] = {name: data[name] for name in (*_ARRAYS, "present")}
    except (OSError, KeyError, ValueError) as exc:
        raise ValueError(f"{str(path)!r} is not a layer-table store: {exc}") from exc
    if index.get("format") != STORE_FORMAT:
        raise ValueError(f"{str(path)!r} is a layer-table store of another format")
    tables: dict[Key, LayerTable] = {}
    start = 0
    for key, names, kinds in zip(index["keys"], index["names"], index["kinds"], strict=True):
        stop = start + len(names)
        fields = {name: arrays[name][None, start:stop] for name in _ARRAYS}
        tables[(str(key[0]), int(key[1]))] = LayerTable(
            names=tuple(names),
            kinds=tuple(kinds),
            present=arrays["present"][None, start:stop].astype(bool),
            **fields,
        )
        start = stop
    errors = {(str(m), int(s)): str(msg) for m, s, msg in index["errors"]}
    return tables, errors
