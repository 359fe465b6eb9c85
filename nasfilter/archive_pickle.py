"""Unpickle NATS-Bench archive files without running code named inside them.

A NATS-Bench archive is bz2-compressed pickles, and a pickle can name any importable callable
(``os.system``, ``builtins.eval``) for the unpickler to call. Real archives name only three:
``collections.OrderedDict`` (the per-setting records and training times), and
``numpy.core.multiarray.scalar`` with ``numpy.dtype`` (the ``params`` and ``latency`` values
are numpy float64 scalars). :func:`load_archive_pickle` allows exactly those, and numpy
scalars only of numeric dtypes, and refuses any other name with :class:`UnsafeArchiveError`
before anything is called.

What remains trusted: the values themselves (a crafted archive can still hold wrong numbers,
or a huge list that takes memory to build), and numpy's own scalar and dtype constructors.
"""

from __future__ import annotations

import bz2
import io
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# (module, name) -> the object the unpickler may use for it.
_ALLOWED: dict[tuple[str, str], Callable[..., Any]] = {
    ("collections", "OrderedDict"): __import__("collections").OrderedDict,
    ("numpy", "dtype"): np.dtype,
}
_SCALAR_MODULES = ("numpy.core.multiarray", "numpy._core.multiarray")
_NUMERIC_KINDS = "biuf"  # bool, signed, unsigned, float


class UnsafeArchiveError(ValueError):
    """An archive file names a callable that real NATS-Bench archives never use."""


def _numeric_scalar(dtype: Any, data: bytes | None = None) -> Any:
    """numpy's scalar reconstructor, for numeric dtypes only (no object scalars)."""
    if not isinstance(dtype, np.dtype) or dtype.kind not in _NUMERIC_KINDS:
        raise UnsafeArchiveError(
            f"numpy scalar of dtype {dtype!r} refused: NATS-Bench archives hold only numeric "
            "scalars"
        )
    if not isinstance(data, bytes) or len(data) != dtype.itemsize:
        raise UnsafeArchiveError(f"malformed numpy scalar of dtype {dtype} in the archive")
    return np.frombuffer(data, dtype=dtype)[0]


class _ArchiveUnpickler(pickle.Unpickler):
    """An unpickler whose globals are the allow-list above; ``where`` names the file."""

    def __init__(self, file: io.BufferedIOBase, where: str) -> None:
        super().__init__(file)
        self.where = where

    def find_class(self, module: str, name: str) -> Any:
        if module in _SCALAR_MODULES and name == "scalar":
            return _numeric_scalar
        found = _ALLOWED.get((module, name))
        if found is None:
            raise UnsafeArchiveError(
                f"{self.where!r} names {module}.{name}, which real NATS-Bench archives never "
                "hold; refusing to unpickle it (nothing from it was run). Use an archive "
                "downloaded from the NATS-Bench project."
            )
        return found


def loads_archive_pickle(data: bytes, where: str = "<bytes>") -> Any:
    """Unpickle ``data`` (uncompressed) with the archive allow-list."""
    return _ArchiveUnpickler(io.BytesIO(data), where).load()


def load_archive_pickle(path: str | os.PathLike[str]) -> Any:
    """Read one bz2-compressed archive pickle with the allow-list (UnsafeArchiveError)."""
    where = str(path)
    with bz2.open(Path(path), "rb") as fh:
        return _ArchiveUnpickler(fh, where).load()
