"""Writing files so that a failure never leaves a half-written one behind."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success rename it over ``path``.

    On any exception the temporary file is removed and ``path`` is left as it was. The file
    gets the permissions ``open`` would give it (the umask applies), not mkstemp's 0600.
    ``mode`` is ``"wb"`` or ``"w"`` (UTF-8 text). Parent folders are created.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write mode must be 'wb' or 'w', got {mode!r}")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        encoding = None if mode == "wb" else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as fh:
            yield fh
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_npz(path: str | os.PathLike[str], kind: str, origin: str) -> dict[str, Any]:
    """Every array of the ``.npz`` at ``path`` (pickles refused), as name -> array.

    ``kind`` ("nasfilter table", ...) and ``origin`` (the command that writes such files)
    name the file in the ValueError raised for a missing, foreign or corrupt file.
    """
    import numpy as np

    source = Path(path)
    if not source.is_file():
        raise ValueError(f"{kind} file {str(source)!r} does not exist or is not a file")
    try:
        with np.load(source, allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}
    except Exception as exc:  # zipfile, OSError, pickle refusal, ...
        raise ValueError(
            f"{str(source)!r} is not a {kind} (.npz written by {origin}): {exc}"
        ) from exc
