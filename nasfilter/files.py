"""Writing files so that a failure never leaves a half-written one behind, and the one rule
every writer follows: never write onto any input of the same operation."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

PathArg = str | os.PathLike[str] | None


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
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise named_os_error(exc, target) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def named_os_error(exc: OSError, target: Path) -> OSError:
    """``exc`` as an OSError of the same type whose message names ``target`` (a full disk's
    ``[Errno 28]`` names no file), saying that ``target`` was left as it was."""
    if exc.filename is not None and str(target) in str(exc):
        return exc
    reason = exc.strerror or str(exc)
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    hint = " (the disk is full: free some space)" if full else ""
    message = f"cannot write {str(target)!r}: {reason}{hint}; the file was left as it was"
    return type(exc)(exc.errno, message) if exc.errno is not None else OSError(message)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell that no spreadsheet runs as a formula: text beginning with ``=``, ``+``,
    ``-``, ``@``, a tab or a carriage return gets a leading ``'``; numbers stay numbers."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def write_csv(target: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write ``rows`` (dicts with the keys of the first; at least one) as CSV with a header,
    whole or not at all, every text cell made safe by :func:`csv_cell`."""
    import csv

    rows = list(rows)
    with atomic_write(target, "w") as fh:  # never half a file, nor a clobbered one
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)


# ------------------------------------------------------------------ inputs and outputs
def same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name one file (or one path, for files not yet there)."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:  # pragma: no cover (a race with a deletion)
        pass
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return os.path.abspath(a) == os.path.abspath(b)


def sqlite_family(path: Path) -> list[Path]:
    """``path`` and the files SQLite keeps beside it."""
    return [path, *(Path(f"{path}{s}") for s in ("-wal", "-shm", "-journal"))]


def check_not_input(
    target: Path, flag: str, inputs: Mapping[str, PathArg], databases: tuple[str, ...] = ()
) -> None:
    """ValueError when ``target`` is one of ``inputs`` (flag or name -> path); for the
    names in ``databases`` the SQLite side files (``-wal``, ``-shm``, ``-journal``) count
    too. The rule of every writer, whatever ``--force`` says."""
    for in_flag, in_path in inputs.items():
        if in_path is None:
            continue
        source = Path(in_path)
        family = sqlite_family(source) if in_flag in databases else [source]
        if any(same_file(target, p) for p in family):
            raise ValueError(
                f"{flag} {str(target)!r} is the command's input {in_flag} {str(in_path)!r}; "
                "refusing to write over an input, even with --force: choose another name"
            )


def check_path_text(path: PathArg, flag: str) -> None:
    """ValueError for an empty path (``''`` would mean the current folder) or a symbolic
    link that leads nowhere (a loop, or a missing target), naming ``flag``."""
    if path is None:
        return
    if not os.fspath(path):
        raise ValueError(f"{flag} is empty; give a file name")
    target = Path(path)
    if target.is_symlink() and not os.path.exists(target):
        try:
            target.resolve(strict=True)
            why = "its target does not exist"
        except RuntimeError:
            why = "it is a symbolic link loop"
        except OSError as exc:
            why = "it is a symbolic link loop" if exc.errno == errno.ELOOP else str(exc.strerror)
        raise ValueError(
            f"{flag} {str(target)!r} is a symbolic link that leads to no file ({why}); "
            "remove the link or give another name"
        )


def sqlite_uri(path: str | os.PathLike[str], **params: str) -> str:
    """An SQLite ``file:`` URI of ``path`` with its bytes percent-quoted, so that ``#``,
    ``?``, ``%`` and names that are not UTF-8 reach the file system as they are."""
    absolute = os.fsencode(os.path.abspath(os.fspath(path)))
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return "file:" + quote(absolute, safe=b"/") + (f"?{query}" if query else "")


MAX_META_BYTES = 4 << 20  # a JSON ``meta`` member: a few KB in every file nasfilter writes


def read_npz(
    path: str | os.PathLike[str], kind: str, origin: str, limits: Mapping[str, int]
) -> dict[str, Any]:
    """The arrays named in ``limits`` of the ``.npz`` at ``path`` (pickles refused).

    Only those members are read, and each only after its ``.npy`` header shows it holds at
    most ``limits[name]`` bytes, so a crafted member (an extra one, or one that inflates far
    beyond its declared shape) costs neither time nor memory. Absent members are left out of
    the result. ``kind`` ("nasfilter table", ...) and ``origin`` (the command that writes such
    files) name the file in the ValueError raised for a missing, foreign or corrupt file.
    """
    import zipfile

    source = Path(path)
    if source.is_dir():
        raise ValueError(f"{kind} file {str(source)!r} is a folder, not a file")
    if not source.is_file():
        raise ValueError(f"{kind} file {str(source)!r} does not exist or is not a file")
    expected = f"a {kind} is the .npz file (a zip of arrays) that {origin} writes"
    with source.open("rb") as fh:
        head = fh.read(4)
    if head not in (b"PK\x03\x04", b"PK\x05\x06"):
        what = "an empty file" if not head else "not an .npz file (not a zip archive)"
        raise ValueError(f"{str(source)!r} is not a {kind}: it is {what}; {expected}")
    try:
        with zipfile.ZipFile(source) as archive:
            present = set(archive.namelist())
            return {
                name: _read_member(archive, f"{name}.npy", limit)
                for name, limit in limits.items()
                if f"{name}.npy" in present
            }
    except _TooLarge as exc:
        raise ValueError(f"{str(source)!r} is not a {kind}: {exc}; {expected}") from None
    except ValueError as exc:
        if "pickle" not in str(exc):
            raise ValueError(f"{str(source)!r} is not a {kind}: {exc}; {expected}") from exc
        # numpy suggests loading "unsafely"; a nasfilter file never holds pickled objects.
        raise ValueError(
            f"{str(source)!r} is not a {kind}: it holds pickled Python objects, which "
            f"nasfilter never loads; {expected}"
        ) from exc
    except Exception as exc:  # zipfile, OSError, a damaged member, ...
        raise ValueError(
            f"{str(source)!r} is not a {kind} (it may be damaged: {exc}); {expected}"
        ) from exc


class _TooLarge(Exception):
    """A member's header declares more bytes than the file's metadata allows."""


def _read_member(archive: Any, member: str, limit: int) -> Any:
    """One ``.npy`` member, refused before decompression when it declares > ``limit`` bytes."""
    import numpy as np

    fmt = np.lib.format
    with archive.open(member) as fh:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:
            raise ValueError(f"member {member!r} has unsupported .npy version {version}")
        if dtype.hasobject:
            raise ValueError(f"member {member!r} holds pickled objects (allow_pickle=False)")
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if nbytes > limit:
            raise _TooLarge(
                f"member {member!r} declares {nbytes:,} bytes (shape {shape}, {dtype}), more "
                f"than the {limit:,} its metadata allows"
            )
        buffer = bytearray(nbytes)
        view = memoryview(buffer)
        got = 0
        while got < nbytes:  # only the declared bytes: whatever follows stays compressed
            n = fh.readinto(view[got:])
            if not n:
                raise ValueError(f"member {member!r} is truncated: {got} of {nbytes} bytes")
            got += n
    return np.frombuffer(buffer, dtype=dtype).reshape(shape, order="F" if fortran else "C")


def _folder_of(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def check_sqlite_writable(path: str | os.PathLike[str], what: str) -> None:
    """PermissionError naming ``path`` and the missing permission, before SQLite is opened
    for writing, when this user cannot write ``path`` or create its ``-wal`` and ``-shm``
    files beside it (SQLite would fail later, or leave those files behind).

    ``what`` names the file in the message ("results database", "measurement cache"). Root
    passes every check, as it does in the kernel.
    """
    target = Path(path)
    folder = _folder_of(target)
    if target.exists() and not os.access(target, os.W_OK):
        raise PermissionError(
            f"cannot write to {what} {str(target)!r}: the file is read-only for this user "
            "(no write permission); make it writable (chmod u+w) or give a new file"
        )
    for side in (Path(f"{target}-wal"), Path(f"{target}-shm"), Path(f"{target}-journal")):
        if side.exists() and not os.access(side, os.W_OK):
            raise PermissionError(
                f"cannot write to {what} {str(target)!r}: SQLite's file {str(side)!r} beside "
                "it is read-only for this user (no write permission); its owner can remove "
                "it once no program has the database open, or make it writable"
            )
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        verb = "write to" if target.exists() else "create"
        raise PermissionError(
            f"cannot {verb} {what} {str(target)!r}: its folder {str(folder)!r} is not "
            f"writable for this user (no write permission), and SQLite must create "
            f"{target.name}-wal and {target.name}-shm there; use a writable folder"
        )


def connect_sqlite_readonly(path: str | os.PathLike[str], what: str) -> Any:
    """An ``sqlite3`` connection that can only read ``path`` and leaves no file behind.

    A database with no ``-wal`` or ``-journal`` file beside it has no writer and nothing
    unsaved, so it is opened ``immutable`` (SQLite then creates no ``-wal``/``-shm`` files
    and needs no write permission anywhere). Otherwise it is opened ``mode=ro``, which
    reads what a running writer has committed to its ``-wal``; where that cannot work (a
    read-only folder), an empty ``-wal`` falls back to ``immutable``, and a ``-wal`` that
    holds data raises PermissionError (those rows would be missed), naming the file.
    """
    import sqlite3

    target = Path(path)
    side = [Path(f"{target}-wal"), Path(f"{target}-journal")]
    if not os.access(target, os.R_OK):
        raise PermissionError(
            f"cannot read {what} {str(target)!r}: the file is not readable for this user "
            "(no read permission); ask its owner, or make it readable (chmod u+r)"
        )
    immutable = sqlite_uri(target.resolve(), immutable="1")
    if not any(p.exists() for p in side):
        return sqlite3.connect(immutable, uri=True, isolation_level=None)
    con = sqlite3.connect(sqlite_uri(target.resolve(), mode="ro"), uri=True, isolation_level=None)
    try:
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return con
    except sqlite3.OperationalError as exc:
        con.close()
        wal = side[0]
        if (wal.exists() and wal.stat().st_size > 0) or side[1].exists():
            raise PermissionError(
                f"cannot read {what} {str(target)!r}: it has unsaved changes in "
                f"{wal.name if wal.exists() else side[1].name} that only a user who may "
                f"write its folder can read ({exc}); open it once where it is writable, or "
                "copy the files to a writable folder"
            ) from exc
        return sqlite3.connect(immutable, uri=True, isolation_level=None)


@contextmanager
def new_entries_removed_on_error(folder: Path) -> Iterator[None]:
    """On any exception inside, remove what appeared in ``folder`` since entering (and the
    folder itself if it was not there): a command that fails half-way (a full disk, Ctrl-C)
    leaves no partial set of outputs. Files it replaced stay replaced (each was written
    whole, by :func:`atomic_write`)."""
    import shutil

    before = set(os.listdir(folder)) if folder.is_dir() else None
    try:
        yield
    except BaseException:
        if before is None:
            shutil.rmtree(folder, ignore_errors=True)
        elif folder.is_dir():
            for name in set(os.listdir(folder)) - before:
                path = folder / name
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
        raise
