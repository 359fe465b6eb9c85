"""The per-architecture measurement cache: one embedded SQLite file, safe for many writers.

A row is keyed by (dataset, backend, backend config, device fingerprint, schema version,
architecture) and holds the whole :class:`~nasfilter.oracle.measurement.Measurement` as JSON,
plus its throughput and utilization as columns for fast batch reads. The first four parts of
the key (with the schema) form a :class:`Group`: one backend on one device for one dataset.

Several processes may write at once: the file is in WAL mode, every write is one short
``BEGIN IMMEDIATE`` transaction, and a key already present is never replaced
(``INSERT OR IGNORE``), so a key is measured at most once by a sweep that checks first. Only
ok rows are stored; rows with NaN, infinite or non-positive throughput are refused. A file
that is not a nasfilter cache (another SQLite database, a corrupt file, anything else) is
refused with a clear message and never written to.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn

import numpy as np

from nasfilter.files import check_sqlite_writable, connect_sqlite_readonly, sqlite_uri
from nasfilter.oracle.measurement import (
    SCHEMA_VERSION,
    InvalidMeasurement,
    Measurement,
    Status,
    canonical_json,
    config_space,
)

APPLICATION_ID = 0x4E415346  # "NASF" in the SQLite header: marks a nasfilter cache
CACHE_FORMAT = 2  # layout of the tables below
_SQLITE_MAGIC = b"SQLite format 3\x00"
_BUSY_TIMEOUT_S = 60.0


class CacheFileError(ValueError):
    """The cache path holds something that is not a nasfilter measurement cache."""


class CacheWriteError(OSError):
    """The cache could not be written: the disk is full, or it failed (an I/O error)."""


def _write_failure(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is SQLite saying the disk is full or failed, not a damaged file."""
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    return (
        name == "SQLITE_FULL"
        or name.startswith("SQLITE_IOERR")
        or ("disk is full" in text or "disk I/O error" in text)
    )


def _write_error(path: Path, exc: sqlite3.Error, what: str) -> CacheWriteError:
    cause = "the disk is full" if "full" in str(exc) else "the disk failed to write"
    return CacheWriteError(
        f"cannot write measurement cache {str(path)!r}: {cause} ({exc}); {what}. Free some "
        "space (or choose another --cache path) and run again"
    )


def _remove_unfinished(path: Path) -> None:
    """Delete a cache file this process created and could not set up (with its side
    files): an empty file or one without the nasfilter mark holds nothing of anyone's."""
    try:
        with path.open("rb") as fh:
            head = fh.read(72)
    except OSError:
        return
    if len(head) == 72 and int.from_bytes(head[68:72], "big") == APPLICATION_ID:
        return  # another process finished it meanwhile: it is theirs
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@dataclass(frozen=True)
class Group:
    """One backend on one device for one dataset: every cache key but the architecture.

    ``config`` and ``device`` are canonical JSON strings (see ``canonical_json``).
    """

    dataset: str
    backend: str
    config: str
    device: str
    schema: int = SCHEMA_VERSION

    @classmethod
    def of(cls, m: Measurement) -> Group:
        return cls(m.dataset, m.backend, m.config_key, m.device_key, m.schema)

    @classmethod
    def make(
        cls, dataset: str, backend: str, config: dict[str, Any], device: dict[str, Any]
    ) -> Group:
        return cls(dataset, backend, canonical_json(config), canonical_json(device))

    @property
    def config_dict(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.config)
        return value

    @property
    def device_dict(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.device)
        return value

    def params(self) -> tuple[str, str, str, str, int]:
        return (self.dataset, self.backend, self.config, self.device, self.schema)

    @functools.cached_property
    def parsed(self) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
        """``config`` and ``device`` parsed once, for the rows read back (each row copies
        them, :meth:`Measurement.from_dict`): a cache hit then parses only its own row."""
        return json.loads(self.config), json.loads(self.device)


_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS groups (
    id INTEGER PRIMARY KEY,
    dataset TEXT NOT NULL,
    backend TEXT NOT NULL,
    config TEXT NOT NULL,
    device TEXT NOT NULL,
    schema INTEGER NOT NULL,
    UNIQUE (dataset, backend, config, device, schema)
);
CREATE TABLE IF NOT EXISTS measurements (
    group_id INTEGER NOT NULL REFERENCES groups (id),
    arch INTEGER NOT NULL CHECK (arch >= 0 AND arch < 32768),
    throughput REAL NOT NULL CHECK (throughput > 0 AND throughput < 1e308),
    utilization REAL NOT NULL,
    row TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (group_id, arch)
) WITHOUT ROWID;
"""

_WHERE_GROUP = "dataset=? AND backend=? AND config=? AND device=? AND schema=?"
_NO_GROUP = -1


_WRITER_HINT = "choose another --cache path"
_READER_HINT = "give --oracle-cache a cache filled by `nasfilter measure` (or its .npz export)"


def _check_file(path: Path, hint: str = _WRITER_HINT) -> None:
    """Refuse anything at ``path`` that is not an SQLite file (an empty file is fine)."""
    if not path.exists():
        return
    if not path.is_file():
        raise CacheFileError(f"cache path {str(path)!r} exists and is not a file")
    with path.open("rb") as fh:
        head = fh.read(len(_SQLITE_MAGIC))
    if head and head != _SQLITE_MAGIC:
        raise CacheFileError(
            f"{str(path)!r} is not a nasfilter measurement cache (not an SQLite database); "
            f"refusing to touch it: {hint}"
        )


_KEY_FIELDS = ("dataset", "backend", "config", "device", "schema")  # held by `groups`


def _slim_json(m: Measurement) -> str:
    """The row as JSON without the fields its group already holds."""
    data = m.to_dict()
    for key in (*_KEY_FIELDS, "achieved_flops", "utilization"):
        data.pop(key, None)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _inflate(
    text: str,
    group: Group,
    config: dict[str, Any] | None = None,
    device: dict[str, Any] | None = None,
) -> Measurement:
    data = json.loads(text)
    group_config, group_device = group.parsed
    data.update(
        dataset=group.dataset,
        backend=group.backend,
        config=group_config if config is None else config,
        device=group_device if device is None else device,
        schema=group.schema,
    )
    return Measurement.from_dict(data)


class MeasurementCache:
    """An open cache file. Use as a context manager or call :meth:`close`.

    Args:
        path: the SQLite file; created (with its folder) if absent, unless ``readonly``.
        readonly: open an existing cache for reading only (it may sit in a read-only
            folder); writes then fail. When False, a file or folder this user cannot write
            raises PermissionError naming it.
    """

    def __init__(self, path: str | os.PathLike[str], readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._ids: dict[Group, int] = {}
        self._hint = _READER_HINT if readonly else _WRITER_HINT
        _check_file(self.path, self._hint)
        if readonly and not self.path.is_file():
            raise CacheFileError(f"measurement cache {str(self.path)!r} does not exist")
        created = not readonly and not self.path.exists()
        if not readonly:
            check_sqlite_writable(self.path, "measurement cache")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        try:
            if readonly:
                self._conn = connect_sqlite_readonly(self.path, "measurement cache")
            else:
                self._conn = sqlite3.connect(
                    sqlite_uri(self.path), timeout=_BUSY_TIMEOUT_S, isolation_level=None, uri=True
                )
        except sqlite3.Error as exc:
            raise CacheFileError(f"cannot open cache {str(self.path)!r}: {exc}") from exc
        try:
            self._setup()
        except CacheFileError:
            self._conn.close()
            raise
        except sqlite3.Error as exc:
            self._conn.close()
            if created:  # never leave a half-created file behind
                _remove_unfinished(self.path)
            if not readonly and _write_failure(exc):
                left = " and no file is left" if created else ""
                raise _write_error(self.path, exc, f"nothing was written{left}") from exc
            self._refuse(exc)

    def _refuse(self, exc: sqlite3.Error) -> NoReturn:
        """Raise CacheFileError for an SQLite error met while opening the file."""
        if isinstance(exc, sqlite3.OperationalError) and (
            "locked" in str(exc) or "busy" in str(exc)
        ):
            raise CacheFileError(
                f"cache {str(self.path)!r} stayed locked by another process for "
                f"{_BUSY_TIMEOUT_S:g} s ({exc}); try again when it is done"
            ) from exc
        raise CacheFileError(
            f"{str(self.path)!r} is not a usable nasfilter measurement cache ({exc}); "
            f"it may be corrupt; refusing to touch it: {self._hint}"
        ) from exc

    # ------------------------------------------------------------------ set-up
    def _setup(self) -> None:
        c = self._conn
        c.execute("BEGIN")  # one snapshot: another process may be creating the tables now
        try:
            app_id = c.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            c.execute("COMMIT")
        if self.readonly and app_id != APPLICATION_ID:
            raise CacheFileError(
                f"{str(self.path)!r} is not a nasfilter measurement cache (application id "
                f"{app_id:#x}, tables {sorted(tables)}); fill one with `nasfilter measure`"
            )
        if app_id != APPLICATION_ID and (app_id != 0 or tables):
            raise CacheFileError(
                f"{str(self.path)!r} is an SQLite database but not a nasfilter measurement "
                f"cache (application id {app_id:#x}, tables {sorted(tables)}); refusing to "
                f"touch it: {self._hint}"
            )
        if not self.readonly:
            self._set_wal()
            c.execute("PRAGMA synchronous=NORMAL")
        if app_id != APPLICATION_ID:  # a new file: create the tables
            c.execute("BEGIN IMMEDIATE")
            try:
                if c.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                    for statement in _DDL.strip().split(";"):
                        if statement.strip():
                            c.execute(statement)
                    c.execute(
                        "INSERT OR IGNORE INTO meta VALUES ('format', ?)", (str(CACHE_FORMAT),)
                    )
                    c.execute(f"PRAGMA application_id={APPLICATION_ID}")
                c.execute("COMMIT")
            except BaseException:
                if c.in_transaction:  # a failed COMMIT may have rolled back already
                    c.execute("ROLLBACK")
                raise
        row = c.execute("SELECT value FROM meta WHERE key='format'").fetchone()
        if row is None or row[0] != str(CACHE_FORMAT):
            found = None if row is None else row[0]
            raise CacheFileError(
                f"{str(self.path)!r} has cache format {found}; this nasfilter reads format "
                f"{CACHE_FORMAT}: "
                + ("use a new --cache path" if not self.readonly else self._hint)
            )

    def _set_wal(self) -> None:
        """Switch to WAL mode. SQLite answers "locked" at once (not after its busy timeout)
        when another process switches at the same moment, so retry for a while."""
        deadline = time.monotonic() + _BUSY_TIMEOUT_S
        delay = 0.001
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> MeasurementCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ writes
    @staticmethod
    def _check(m: Measurement) -> None:
        if not isinstance(m, Measurement):
            raise InvalidMeasurement(f"only Measurement rows can be cached, got {m!r}")
        if m.status is not Status.OK:
            raise InvalidMeasurement(
                f"architecture {m.arch}: only ok measurements are cached, got status "
                f"{m.status.value!r} ({m.error})"
            )
        thr = m.throughput
        if not (math.isfinite(thr) and thr > 0):
            raise InvalidMeasurement(
                f"architecture {m.arch}: throughput {thr!r} is not finite and > 0; not cached"
            )
        size = config_space(m.config).size
        if not 0 <= m.arch < size:
            raise InvalidMeasurement(f"architecture index {m.arch} is not in [0, {size - 1}]")

    def _group_id(self, group: Group, create: bool = False) -> int:
        """The id of ``group`` (created inside the caller's transaction if ``create``)."""
        gid = self._ids.get(group)
        if gid is not None:
            return gid
        c = self._conn
        if create:
            c.execute(
                "INSERT OR IGNORE INTO groups (dataset, backend, config, device, schema) "
                "VALUES (?,?,?,?,?)",
                group.params(),
            )
        row = c.execute(f"SELECT id FROM groups WHERE {_WHERE_GROUP}", group.params()).fetchone()
        if row is None:
            return _NO_GROUP
        self._ids[group] = int(row[0])
        return int(row[0])

    def put_many(self, rows: Iterable[Measurement]) -> int:
        """Store rows in one transaction; keys already present are kept as they were.

        Returns the number of new rows. Raises InvalidMeasurement (and stores nothing) if any
        row is not ok or has NaN, infinite or non-positive throughput.
        """
        batch = list(rows)
        for m in batch:
            self._check(m)
        if not batch:
            return 0
        c = self._conn
        now = time.time()
        c.execute("BEGIN IMMEDIATE")
        try:
            ids: dict[Group, int] = {}
            records = []
            for m in batch:
                group = Group.of(m)
                if group not in ids:
                    ids[group] = self._group_id(group, create=True)
                records.append(
                    (ids[group], m.arch, m.throughput, m.utilization, _slim_json(m), now)
                )
            before = c.total_changes
            c.executemany("INSERT OR IGNORE INTO measurements VALUES (?,?,?,?,?,?)", records)
            added = c.total_changes - before
            c.execute("COMMIT")
        except BaseException as exc:
            if c.in_transaction:  # a failed COMMIT may have rolled back already
                c.execute("ROLLBACK")
            self._ids.clear()  # ids created in the rolled-back transaction are gone
            if isinstance(exc, sqlite3.Error) and _write_failure(exc):
                raise _write_error(
                    self.path,
                    exc,
                    f"these {len(batch)} rows were not stored; the rows stored before are intact",
                ) from exc
            raise
        return added

    def put(self, m: Measurement) -> bool:
        """Store one row; False if its key was already cached (the old row is kept)."""
        return self.put_many([m]) == 1

    # ------------------------------------------------------------------- reads
    def get(self, group: Group, arch: int) -> Measurement | None:
        """The cached row of ``arch`` in ``group``, or None."""
        row = self._conn.execute(
            "SELECT row FROM measurements WHERE group_id=? AND arch=?",
            (self._group_id(group), int(arch)),
        ).fetchone()
        return None if row is None else _inflate(row[0], group)

    def contains(self, group: Group, arch: int) -> bool:
        """Whether ``arch`` is cached in ``group``."""
        row = self._conn.execute(
            "SELECT 1 FROM measurements WHERE group_id=? AND arch=?",
            (self._group_id(group), int(arch)),
        ).fetchone()
        return row is not None

    def cached_indices(self, group: Group) -> np.ndarray:
        """Sorted int64 array (k,) of the architectures cached in ``group``."""
        rows = self._conn.execute(
            "SELECT arch FROM measurements WHERE group_id=? ORDER BY arch",
            (self._group_id(group),),
        ).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def columns(self, group: Group) -> tuple[np.ndarray, np.ndarray]:
        """(throughput, utilization), each float64 (size,) of the group's space (sss:
        32768), NaN where not cached."""
        size = config_space(group.config_dict).size
        thr = np.full(size, np.nan)
        util = np.full(size, np.nan)
        rows = self._conn.execute(
            "SELECT arch, throughput, utilization FROM measurements WHERE group_id=?",
            (self._group_id(group),),
        ).fetchall()
        if rows:
            arr = np.asarray(rows, dtype=np.float64)
            idx = arr[:, 0].astype(np.int64)
            thr[idx] = arr[:, 1]
            util[idx] = arr[:, 2]
        return thr, util

    def rows(self, group: Group) -> Iterator[Measurement]:
        """Every cached row of ``group``, by architecture."""
        config, device = group.config_dict, group.device_dict
        for (text,) in self._conn.execute(
            "SELECT row FROM measurements WHERE group_id=? ORDER BY arch",
            (self._group_id(group),),
        ):
            yield _inflate(text, group, config, device)

    def groups(self, dataset: str | None = None, backend: str | None = None) -> list[GroupInfo]:
        """The groups holding rows, with their row counts, optionally filtered."""
        sql = (
            "SELECT g.dataset, g.backend, g.config, g.device, g.schema, COUNT(m.arch) "
            "FROM groups g JOIN measurements m ON m.group_id = g.id GROUP BY g.id ORDER BY g.id"
        )
        out = []
        for ds, be, cfg, dev, schema, n in self._conn.execute(sql):
            if (dataset is None or ds == dataset) and (backend is None or be == backend):
                out.append(GroupInfo(Group(ds, be, cfg, dev, schema), int(n)))
        return out

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0])


@dataclass(frozen=True)
class GroupInfo:
    group: Group
    n_rows: int
