"""Unpickle NATS-Bench archive files without running code named inside them.

A NATS-Bench archive is bz2-compressed pickles, and a pickle can name any importable callable
(``os.system``, ``builtins.eval``) for the unpickler to call. Real archives name only three:
``collections.OrderedDict`` (the per-setting records and training times), and
``numpy.core.multiarray.scalar`` with ``numpy.dtype`` (the ``params`` and ``latency`` values
are numpy float64 scalars). :func:`load_archive_pickle` allows exactly those, and numpy
scalars only of numeric dtypes, and refuses any other name with :class:`UnsafeArchiveError`
before anything is called.

Each file is inflated under a cap (:func:`inflate_cap`): a record of NATS-Bench's layout
inflates to about 2.5 times its compressed size (the meta file to about 10), so a file that
inflates beyond :data:`MAX_RATIO` times its compressed size (or :data:`MIN_CAP` bytes, if more)
is refused as a decompression bomb before it fills memory, and so is a pickle that declares
a string or bytes longer than what is left of the cap. A truncated, empty or foreign file is
refused with :class:`DamagedArchiveError`, one line naming the file.

What remains trusted: the values themselves (a crafted archive can still hold wrong numbers;
the converters check them), and numpy's own scalar and dtype constructors.
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


MAX_RATIO = 100  # inflated / compressed bytes: real records ~2.5, the meta file ~10
MIN_CAP = 4 << 20  # bytes: the cap of a small file


class UnsafeArchiveError(ValueError):
    """An archive file names a callable that real NATS-Bench archives never use."""


class DamagedArchiveError(ValueError):
    """An archive file that is truncated, empty, not a bz2 pickle, or inflates too far."""


def inflate_cap(compressed_bytes: int) -> int:
    """The most bytes a file of ``compressed_bytes`` may inflate to (see the module doc)."""
    return max(MIN_CAP, MAX_RATIO * compressed_bytes)


class _CappedReader(io.RawIOBase):
    """A binary stream over ``inner`` that refuses to give more than ``cap`` bytes in all,
    and refuses a request beyond the cap before reading it (a declared 1 TB string)."""

    def __init__(self, inner: io.BufferedIOBase, cap: int, where: str) -> None:
        super().__init__()
        self.inner, self.left, self.where, self.cap = inner, cap, where, cap

    def readable(self) -> bool:
        return True

    def _take(self, n: int) -> int:
        if n > self.left:
            raise DamagedArchiveError(
                f"{self.where!r} inflates beyond {self.cap} bytes ({MAX_RATIO} times its "
                "compressed size, or at least 4 MiB), more than any NATS-Bench archive file: "
                "refused as a damaged or crafted file (a decompression bomb)"
            )
        return n

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            data = self.inner.read(self.left + 1)
        else:
            data = self.inner.read(self._take(size))  # a declared length beyond the cap
        self.left -= self._take(len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        line = self.inner.readline(min(self.left + 1, size if size and size > 0 else 1 << 20))
        self.left -= self._take(len(line))
        return line


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
    """Read one bz2-compressed archive pickle with the allow-list (UnsafeArchiveError),
    inflated under :func:`inflate_cap`; DamagedArchiveError (naming the file) for a file
    that is truncated, empty, not a bz2 pickle, or inflates beyond the cap."""
    where = str(path)
    try:
        with open(Path(path), "rb") as raw:
            cap = inflate_cap(os.fstat(raw.fileno()).st_size)
            with bz2.open(raw, "rb") as fh:
                capped = io.BufferedReader(_CappedReader(fh, cap, where), 1 << 16)
                return _ArchiveUnpickler(capped, where).load()
    except (UnsafeArchiveError, DamagedArchiveError):
        raise
    except IsADirectoryError as exc:
        raise DamagedArchiveError(f"{where!r} is a folder, not an archive file") from exc
    except FileNotFoundError as exc:
        raise DamagedArchiveError(f"{where!r} is missing ({exc.strerror})") from exc
    except EOFError as exc:
        raise DamagedArchiveError(
            f"{where!r} is truncated or empty: it ends before its pickle does; download or "
            "copy the archive again"
        ) from exc
    except MemoryError as exc:
        raise DamagedArchiveError(
            f"{where!r} declares a value too large for memory, more than any NATS-Bench "
            "archive file holds: refused as a damaged or crafted file"
        ) from exc
    except (OSError, pickle.UnpicklingError, RecursionError, ValueError,
            TypeError, KeyError, IndexError, AttributeError, OverflowError) as exc:
        reason = f"{type(exc).__name__}: {exc}"[:200]
        raise DamagedArchiveError(
            f"{where!r} is not a readable NATS-Bench archive file (a bz2-compressed pickle): "
            f"{reason}"
        ) from exc
