"""Experiment results in one embedded SQLite database (the SQLite storage).

Tables (schema version :data:`SCHEMA_VERSION`):

- ``meta``: the schema version.
- ``provenance``: one row per distinct table or oracle description (``kind`` is ``"table"``
  or ``"oracle"``, ``label``, ``json``).
- ``specs``: one row per :class:`~nasfilter.experiment.RunSpec` (its fields, its canonical
  ``key`` and the provenance of its table and oracle).
- ``runs``: one row per (spec, seed): why it stopped, the searcher's and filter's
  parameters, real seconds. Unique on (spec, seed).
- ``events``: one row per run holding its event columns (:data:`nasfilter.events.COLUMNS`)
  as zlib-compressed little-endian arrays (``kind`` uint8, the
  :class:`~nasfilter.events.EventKind` code; ``trial``, ``index``, ``seed`` int32;
  ``worker`` int16; ``accuracy``, ``utilization``, ``throughput``, ``cost``,
  ``worker_seconds`` float64; ``end`` as its float64 bits XOR those of ``worker_seconds``,
  ``start`` XOR those of ``end - cost``, exact and nearly free with one worker);
  :meth:`Store.events` decodes them (:func:`nasfilter.events.from_disk`). A scan of the
  whole space is 32768 proxy events, which as rows would dwarf everything else.
- ``scores``: a cache of what :mod:`nasfilter.results` computes from the events (summary,
  final metrics, curves), tagged with the metrics version; ``nasfilter compare
  --recompute`` rewrites it.

Safety: WAL journal (readers never block the writer), each run written in one transaction
(a run is all there or absent, whatever interrupts the writer), a busy timeout so that two
processes can write one database, and ``INSERT OR IGNORE`` on (spec, seed) so that a run
computed twice is stored once. A database of another schema version is refused before
anything is read from it, naming the version and the migration command
(``nasfilter migrate-db``; :func:`nasfilter.migration.migrate`).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nasfilter.events import DISK_DTYPES, TRACE_LIMIT, disk_sizes, from_disk, to_disk
from nasfilter.files import (
    atomic_write,
    check_not_input,
    check_sqlite_writable,
    connect_sqlite_readonly,
    sqlite_uri,
    write_csv,
)
from nasfilter.storage import (
    Storage,
    StoredRun,
    StoredScores,
    changed_inputs,
    input_id,
    run_info,
    scored_summary,
)

if TYPE_CHECKING:  # pragma: no cover
    from nasfilter.experiment import RunRecord, RunSpec

SCHEMA_VERSION = 3
MIGRATABLE = ("1", "2")  # older schema versions nasfilter.migration rewrites in this one
BUSY_TIMEOUT = 60.0  # seconds a writer waits for another one

_SPEC_COLUMNS = (
    "searcher",
    "filter",
    "dataset",
    "budget",
    "proxy_cost",
    "table_path",
    "oracle",
    "device",
    "oracle_cache",
    "max_idle",
    "n_ticks",
    "workers",
    "budget_clock",
)
_EVENT_DTYPES = DISK_DTYPES  # the event columns on disk (nasfilter.events.COLUMNS)
EVENTS_TABLE = "run_id INTEGER PRIMARY KEY REFERENCES runs(id), n INTEGER NOT NULL, " + ", ".join(
    f'"{c}" BLOB NOT NULL' for c in _EVENT_DTYPES
)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS provenance (
    id INTEGER PRIMARY KEY, kind TEXT NOT NULL, label TEXT NOT NULL,
    json TEXT NOT NULL, UNIQUE (kind, json));
CREATE TABLE IF NOT EXISTS specs (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
    searcher TEXT NOT NULL, filter TEXT NOT NULL, dataset TEXT NOT NULL,
    budget REAL NOT NULL, proxy_cost REAL NOT NULL, table_path TEXT,
    oracle TEXT NOT NULL, device TEXT, oracle_cache TEXT,
    max_idle INTEGER NOT NULL, n_ticks INTEGER NOT NULL,
    workers INTEGER NOT NULL, budget_clock TEXT NOT NULL,
    table_provenance INTEGER NOT NULL REFERENCES provenance(id),
    oracle_provenance INTEGER NOT NULL REFERENCES provenance(id));
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, spec_id INTEGER NOT NULL REFERENCES specs(id),
    seed INTEGER NOT NULL, status TEXT NOT NULL, info TEXT NOT NULL, created TEXT NOT NULL,
    UNIQUE (spec_id, seed));
CREATE TABLE IF NOT EXISTS events ({EVENTS_TABLE});
CREATE TABLE IF NOT EXISTS scores (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id), version INTEGER NOT NULL,
    summary TEXT NOT NULL, metrics TEXT NOT NULL, curve_names TEXT NOT NULL,
    curves BLOB NOT NULL);
"""


class StoreError(ValueError):
    """The file is not a nasfilter results database, has another schema version, is
    damaged, locked or on a full disk; the message names the file (and the run)."""


def database_problem(path: Path, exc: Exception, timeout: float = BUSY_TIMEOUT) -> StoreError:
    """A :class:`StoreError` naming ``path`` and saying what to do about an SQLite error."""
    text = str(exc)
    where = repr(str(path))
    if "locked" in text or "busy" in text:
        return StoreError(
            f"results database {where} is locked by another program (waited {timeout:g} s: "
            f"{text}); try again when that program has finished"
        )
    if "full" in text or "I/O error" in text:
        return StoreError(
            f"cannot write results database {where}: {text} (the disk may be full or failing; "
            "free some space and run the command again: runs already stored are kept)"
        )
    if "malformed" in text or "not a database" in text or isinstance(exc, zlib.error):
        return StoreError(
            f"results database {where} is damaged ({text}); restore it from a copy, or "
            "write the runs again to a new --db file"
        )
    return StoreError(f"results database {where}: {text}")


# Bounds of what a database row may claim, so that a crafted row cannot make a reader
# inflate gigabytes: a run logs at most TRACE_LIMIT events (plus a few recommendations).
MAX_EVENTS = 2 * TRACE_LIMIT
MAX_CURVE_CELLS = 64 * 100_000  # curves x ticks


def inflate_exactly(blob: bytes, size: int, what: str) -> bytes:
    """``blob`` decompressed, which must be exactly ``size`` bytes; zlib.error otherwise,
    without ever inflating more than ``size + 1`` bytes."""
    if not isinstance(blob, bytes):
        raise zlib.error(f"{what} is not a compressed blob")
    inflater = zlib.decompressobj()
    data = inflater.decompress(blob, size + 1)
    if len(data) != size or not inflater.eof:
        raise zlib.error(
            f"{what} does not hold {size} bytes as its row says (it inflates to "
            f"{'more' if len(data) > size else len(data)})"
        )
    return data


def _json_number(x: Any) -> Any:
    """JSON for a float that may be NaN or infinite (as strings), else the value."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, np.generic):
        return _json_number(x.item())
    return x


def _from_json_number(x: Any) -> Any:
    return float(x) if x in ("nan", "inf", "-inf") else x


def encode_events(events: dict[str, np.ndarray]) -> list[bytes]:
    """The compressed blobs of the event columns, in :data:`_EVENT_DTYPES` order."""
    return [zlib.compress(data, 1) for data in to_disk(events)]


def _decode_events(n: int, blobs: tuple[bytes, ...]) -> dict[str, np.ndarray]:
    if not 0 <= n <= MAX_EVENTS:
        raise zlib.error(f"the events row claims {n} events (at most {MAX_EVENTS})")
    sizes = disk_sizes(n)
    raw = {
        name: inflate_exactly(blob, sizes[name], f"column {name!r}")
        for name, blob in zip(_EVENT_DTYPES, blobs, strict=True)
    }
    try:
        return from_disk(n, raw)
    except ValueError as exc:
        raise zlib.error(str(exc)) from None


class Store(Storage):
    """A results database at ``path`` (created if missing). Use as a context manager.

    Another program's SQLite database (tables, but no nasfilter ``meta`` table) is refused
    untouched, so that results never get mixed into it.

    Args:
        path: the SQLite file.
        timeout: seconds a write waits while another process writes.
        create: when False (for readers such as ``nasfilter compare``), a file that does
            not exist or holds no results schema is refused instead of being set up, and
            the file is opened read-only (it may sit in a read-only folder).
        readonly: True to only read (:attr:`readonly`; the default when not ``create``);
            False with ``create=False`` opens an existing database to write its scores
            cache (``compare --recompute``). A writer refuses a file or folder this user
            cannot write with PermissionError naming it.

    Attributes:
        duplicates: runs :meth:`add_run` found already stored (by another writer) and
            skipped, since this object was opened.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        timeout: float = BUSY_TIMEOUT,
        create: bool = True,
        readonly: bool | None = None,
    ) -> None:
        self.path = Path(path)
        self.duplicates = 0
        self.readonly = not create if readonly is None else readonly
        if create and self.readonly:
            raise ValueError("a Store cannot both create a database and be read-only")
        if self.path.is_dir():
            raise StoreError(f"database path {str(self.path)!r} is a directory")
        if not create and not self.path.is_file():
            raise StoreError(f"results database {str(self.path)!r} does not exist")
        if not self.readonly:
            check_sqlite_writable(self.path, "results database")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if not self.readonly:
                self._con = sqlite3.connect(
                    sqlite_uri(self.path), timeout=timeout, isolation_level=None, uri=True
                )
            else:  # a reader: never writes, and works on a read-only file and folder
                self._con = connect_sqlite_readonly(self.path, "results database")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open results database {str(self.path)!r}: {exc}") from exc
        self._timeout = timeout
        try:
            self._con.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._refuse_foreign(create)
            if self._has_meta():
                self._check_version()  # refuse another version before touching the file
            if not self.readonly:
                self._con.execute("PRAGMA journal_mode = WAL")
                self._con.execute("PRAGMA synchronous = NORMAL")
                self._con.execute("PRAGMA foreign_keys = ON")
            if create:
                with self._write():
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            self._con.execute(statement)
                    self._check_version()
            else:
                self._check_version()
        except StoreError:
            self._con.close()
            raise
        except sqlite3.DatabaseError as exc:
            self._con.close()
            text = str(exc)
            if "locked" in text or "busy" in text or "full" in text or "I/O" in text:
                raise database_problem(self.path, exc, timeout) from exc
            raise StoreError(
                f"{str(self.path)!r} is not a nasfilter results database: {exc}"
            ) from exc

    @contextmanager
    def _guard(self, run_id: int | None = None) -> Iterator[None]:
        """Turn SQLite's and zlib's errors inside into a StoreError naming the database
        (and the run)."""
        try:
            yield
        except (sqlite3.DatabaseError, zlib.error) as exc:
            problem = database_problem(self.path, exc, self._timeout)
            if run_id is not None:
                problem.args = (f"run {run_id}: {problem.args[0]}",)
            raise problem from exc

    def _refuse_readonly(self, what: str) -> None:
        if self.readonly:
            raise StoreError(
                f"{self.describe()} was opened read-only, so {what} cannot be written; open "
                "it with Store(path) or Store(path, create=False, readonly=False)"
            )

    # ------------------------------------------------------------------ plumbing
    def _refuse_foreign(self, create: bool) -> None:
        """StoreError, before anything is written, unless the file is empty (and ``create``)
        or already holds nasfilter's schema version."""
        tables = {
            row[0]
            for row in self._con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if not tables and create:
            return
        if (
            "meta" in tables
            and self._con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        ):
            return
        if not tables:
            raise StoreError(
                f"{str(self.path)!r} is not a nasfilter results database (it holds no "
                "results); write one with `nasfilter run --db ...`"
            )
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise StoreError(
            f"{str(self.path)!r} is not a nasfilter results database: it holds other tables "
            f"({shown}); give --db a new file"
        )

    def _check_version(self) -> None:
        """Record the schema version in a new database; StoreError for another version."""
        row = self._con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            self._con.execute(
                "INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        elif row[0] != str(SCHEMA_VERSION):
            how = (
                f"migrate it with `nasfilter migrate-db --db {self.path}` (the old file is "
                "kept beside it), or use a new --db file"
                if row[0] in MIGRATABLE
                else "use a new --db file, or the nasfilter version that wrote it"
            )
            raise StoreError(
                f"{str(self.path)!r} has results schema version {row[0]}; this nasfilter "
                f"reads and writes version {SCHEMA_VERSION}: {how}"
            )

    def _has_meta(self) -> bool:
        return (
            self._con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone()
            is not None
        )

    def describe(self) -> str:
        return repr(str(self.path))

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Store:
        return self

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; BEGIN IMMEDIATE takes the write lock up front. SQLite's
        errors (a full disk, a lock held too long) come out as a StoreError naming the
        file; a transaction SQLite already rolled back is not rolled back twice."""
        con = self._con
        with self._guard():
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                if con.in_transaction:
                    try:
                        con.execute("ROLLBACK")
                    except sqlite3.DatabaseError:  # pragma: no cover (SQLite gave up already)
                        pass
                raise
            con.execute("COMMIT")

    def _provenance_id(self, con: sqlite3.Connection, kind: str, data: dict[str, Any]) -> int:
        text = json.dumps(data, sort_keys=True, default=str)
        con.execute(
            "INSERT OR IGNORE INTO provenance (kind, label, json) VALUES (?, ?, ?)",
            (kind, str(data.get("label", "")), text),
        )
        row = con.execute(
            "SELECT id FROM provenance WHERE kind = ? AND json = ?", (kind, text)
        ).fetchone()
        return int(row[0])

    # -------------------------------------------------------------------- writing
    def add_spec(
        self, spec: RunSpec, table_provenance: dict[str, Any], oracle_provenance: dict[str, Any]
    ) -> None:
        """Record ``spec`` and the provenance of its table and oracle. StoreError when the
        spec is stored already with other inputs (its table or oracle changed since: a
        resumed run would mix both), naming what changed."""
        self._refuse_readonly("a run spec")
        with self._write() as con:
            self._refuse_changed_inputs(con, spec, table_provenance, oracle_provenance)
            table_id = self._provenance_id(con, "table", table_provenance)
            oracle_id = self._provenance_id(con, "oracle", oracle_provenance)
            values = (
                spec.searcher,
                spec.filter,
                spec.dataset,
                spec.budget,
                spec.proxy_cost,
                spec.table,
                spec.oracle,
                spec.device,
                spec.oracle_cache,
                spec.max_idle,
                spec.n_ticks,
                spec.workers,
                spec.budget_clock,
            )
            con.execute(
                f"INSERT OR IGNORE INTO specs (key, {', '.join(_SPEC_COLUMNS)}, "
                f"table_provenance, oracle_provenance) VALUES "
                f"({', '.join('?' * (len(_SPEC_COLUMNS) + 3))})",
                (spec.key(), *values, table_id, oracle_id),
            )

    def _refuse_changed_inputs(
        self, con: sqlite3.Connection, spec: RunSpec, table: dict[str, Any], oracle: dict[str, Any]
    ) -> None:
        row = con.execute(
            "SELECT tp.json, op.json FROM specs JOIN provenance tp ON specs.table_provenance = "
            "tp.id JOIN provenance op ON specs.oracle_provenance = op.id WHERE specs.key = ?",
            (spec.key(),),
        ).fetchone()
        if row is None:
            return
        changes = changed_inputs(json.loads(row[0]), json.loads(json.dumps(table, default=str)))
        changes += changed_inputs(
            json.loads(row[1]), json.loads(json.dumps(oracle, default=str)), "oracle"
        )
        if changes:
            raise StoreError(
                f"{self.describe()} holds runs of {spec.label!r} made with other inputs: "
                f"{'; '.join(changes)}. Resuming would mix both in one result; restore the "
                "inputs those runs used, or write the new runs to a new --db file"
            )

    def _spec_id(self, con: sqlite3.Connection, spec: RunSpec) -> int:
        row = con.execute("SELECT id FROM specs WHERE key = ?", (spec.key(),)).fetchone()
        if row is None:
            raise LookupError(f"spec {spec.label!r} is not in {str(self.path)!r}; add_spec first")
        return int(row[0])

    def add_run(self, record: RunRecord) -> int | None:
        """Write one run (status, info, events, and its scores as a cache) in one
        transaction; return its id, or None if that (spec, seed) is already stored."""
        self._refuse_readonly("a run")
        events = record.events
        blobs = encode_events(events)
        with self._write() as con:
            spec_id = self._spec_id(con, record.spec)
            cur = con.execute(
                "INSERT OR IGNORE INTO runs (spec_id, seed, status, info, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    spec_id,
                    record.seed,
                    str(record.summary["status"]),
                    json.dumps(run_info(record), sort_keys=True),
                    datetime.now(timezone.utc).isoformat(timespec="seconds"),
                ),
            )
            if cur.rowcount == 0:
                self.duplicates += 1
                return None
            run_id = cur.lastrowid
            assert run_id is not None
            con.execute(
                f"INSERT INTO events VALUES (?, ?, {', '.join('?' * len(_EVENT_DTYPES))})",
                (run_id, len(events["index"]), *blobs),
            )
            if record.scores_version is not None:
                self._put_scores(
                    con,
                    run_id,
                    record.scores_version,
                    scored_summary(record.summary),
                    record.metrics,
                    record.curves,
                )
            return int(run_id)

    def _put_scores(
        self,
        con: sqlite3.Connection,
        run_id: int,
        version: int,
        summary: dict[str, Any],
        metrics: dict[str, float],
        curves: dict[str, np.ndarray],
    ) -> None:
        names = list(curves)
        stacked = np.stack([np.asarray(curves[k], dtype="<f8") for k in names])
        con.executemany(
            "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    version,
                    json.dumps({k: _json_number(v) for k, v in summary.items()}, default=str),
                    json.dumps({k: _json_number(v) for k, v in metrics.items()}),
                    json.dumps([names, list(stacked.shape)]),
                    zlib.compress(stacked.tobytes(), 1),
                )
            ],
        )

    def put_scores(
        self,
        run_id: int,
        version: int,
        summary: dict[str, Any],
        metrics: dict[str, float],
        curves: dict[str, np.ndarray],
    ) -> None:
        self._refuse_readonly("its scores cache")
        with self._guard(run_id):
            self._require_run(run_id)
        with self._write() as con:
            self._put_scores(con, run_id, version, summary, metrics, curves)

    def _require_run(self, run_id: int) -> None:
        """LookupError naming the database when no run has id ``run_id``."""
        if self._con.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise LookupError(f"no run {run_id} in {str(self.path)!r}")

    # -------------------------------------------------------------------- reading
    def completed(self) -> set[tuple[str, int]]:
        """Every stored (spec key, seed)."""
        with self._guard():
            rows = self._con.execute(
                "SELECT specs.key, runs.seed FROM runs JOIN specs ON runs.spec_id = specs.id"
            ).fetchall()
        return {(key, int(seed)) for key, seed in rows}

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._guard():
            cur = self._con.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def stored_runs(self) -> list[StoredRun]:
        """Every stored run; StoreError naming the database and the run for a run whose
        spec, info or provenance is missing or corrupt."""
        rows = self._query(
            "SELECT runs.id, specs.key, runs.seed, runs.status, runs.info, tp.json AS tj, "
            "tp.label AS tl, op.json AS oj, op.label AS ol FROM runs "
            "LEFT JOIN specs ON runs.spec_id = specs.id "
            "LEFT JOIN provenance tp ON specs.table_provenance = tp.id "
            "LEFT JOIN provenance op ON specs.oracle_provenance = op.id ORDER BY runs.id"
        )
        specs: dict[str, RunSpec] = {}
        return [self._stored_run(row, specs) for row in rows]

    def _stored_run(self, row: dict[str, Any], specs: dict[str, RunSpec]) -> StoredRun:
        from nasfilter.experiment import RunSpec

        run_id = row["id"]
        where = f"run {run_id} of {self.describe()}"
        if row["key"] is None or row["tj"] is None or row["oj"] is None:
            what = "run spec" if row["key"] is None else "table and oracle provenance"
            raise StoreError(
                f"{where} has lost its {what} (rows deleted from the database); restore "
                "the database from a copy, or run again into a new --db file"
            )
        try:
            if row["key"] not in specs:
                specs[row["key"]] = RunSpec.from_key(row["key"])
            info = json.loads(row["info"])
            if not isinstance(info, dict) or not isinstance(row["seed"], int):
                raise ValueError("its info is not a JSON object, or its seed no integer")
            table, oracle = json.loads(row["tj"]), json.loads(row["oj"])
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise StoreError(
                f"{where} is corrupt: {exc}; restore the database from a copy, or run "
                "again into a new --db file"
            ) from exc
        return StoredRun(
            int(run_id),
            specs[row["key"]],
            int(row["seed"]),
            str(row["status"]),
            info,
            str(row["tl"]),
            str(row["ol"]),
            input_id(table),
            input_id(oracle),
        )

    def provenance(self) -> list[dict[str, Any]]:
        """Every stored table and oracle description, with its JSON decoded."""
        rows = self._query("SELECT id, kind, label, json FROM provenance ORDER BY id")
        for row in rows:
            try:
                row["data"] = json.loads(row.pop("json"))
            except ValueError as exc:
                raise StoreError(
                    f"provenance row {row['id']} of {self.describe()} is corrupt: {exc}"
                ) from exc
        return rows

    def events(self, run_id: int) -> dict[str, np.ndarray]:
        """The event columns of one run, as :meth:`nasfilter.events.EventLog.arrays`.
        Each column inflates to no more than its row's event count implies; StoreError
        naming the run for a blob that does not match it."""
        with self._guard(run_id):
            row = self._con.execute(
                f"SELECT n, {', '.join(f'{chr(34)}{c}{chr(34)}' for c in _EVENT_DTYPES)} "
                "FROM events WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                raise LookupError(f"no run {run_id} in {str(self.path)!r}")
            if not isinstance(row[0], int):
                raise zlib.error(f"the events row's count is {row[0]!r}, not an integer")
            return _decode_events(int(row[0]), tuple(row[1:]))

    def scores(self, run_id: int) -> StoredScores | None:
        with self._guard(run_id):
            row = self._con.execute(
                "SELECT version, summary, metrics, curve_names, curves FROM scores "
                "WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                self._require_run(run_id)
                return None
            try:
                return _decode_scores(*row)
            except (ValueError, TypeError, AttributeError) as exc:
                raise zlib.error(f"its cached scores are corrupt: {exc}") from exc

    # -------------------------------------------------------------------- export
    def rows(self, what: str = "runs", trust_plugins: bool = False) -> list[dict[str, Any]]:
        """Rows of ``what``: "runs" (one per run, with its metrics, computed by
        :mod:`nasfilter.results`; ``trust_plugins`` as there), "events" (one row per
        event, with run_id) or "provenance"."""
        if what == "runs":
            from nasfilter.results import load_results

            return [r.row() for r in load_results(self, trust_plugins=trust_plugins)]
        if what == "provenance":
            return [{**r, "data": json.dumps(r["data"], sort_keys=True)} for r in self.provenance()]
        if what == "events":
            out: list[dict[str, Any]] = []
            for found in self._query("SELECT run_id FROM events ORDER BY run_id"):
                run_id = found["run_id"]
                cols = self.events(int(run_id))
                names = list(cols)
                lists = [cols[k].tolist() for k in names]
                out.extend(
                    {"run_id": run_id, **dict(zip(names, vals, strict=True))}
                    for vals in zip(*lists, strict=True)
                )
            return out
        raise ValueError(f"unknown export {what!r}; choose one of runs, events, provenance")

    def to_pandas(self, what: str = "runs") -> Any:
        """A pandas DataFrame of ``what`` (see :meth:`rows`); needs the pandas extra."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover
            raise ImportError("to_pandas needs pandas: pip install nasfilter[pandas]") from exc
        return pd.DataFrame(self.rows(what))

    def export_csv(
        self, path: str | os.PathLike[str], what: str = "runs", trust_plugins: bool = False
    ) -> Path:
        """Write ``what`` (see :meth:`rows`) as CSV with a header row; return the path.
        ValueError when ``path`` is this database (or a file SQLite keeps beside it)."""
        target = Path(path)
        check_not_input(target, "export_csv", {"the database": self.path}, ("the database",))
        rows = self.rows(what, trust_plugins=trust_plugins)
        if rows:
            write_csv(target, rows)
        else:  # nothing to export: an empty file
            with atomic_write(target, "w"):
                pass
        return target


def _decode_scores(
    version: int, summary: str, metrics: str, names_shape: str, blob: bytes
) -> StoredScores:
    """A scores row decoded, the curves inflated no further than their stated shape."""
    names, shape = json.loads(names_shape)
    if (
        not isinstance(names, list)
        or not all(isinstance(k, str) for k in names)
        or not isinstance(shape, list)
        or len(shape) != 2
        or not all(isinstance(d, int) and d >= 0 for d in shape)
        or shape[0] != len(names)
        or shape[0] * shape[1] > MAX_CURVE_CELLS
    ):
        raise ValueError(f"curve names and shape {names_shape[:200]!r} do not match")
    data = inflate_exactly(blob, shape[0] * shape[1] * 8, "the curves")
    stacked = np.frombuffer(data, dtype="<f8").reshape(shape)
    curves = {
        k: (stacked[i].astype(np.int64) if k == "n_evaluations" else stacked[i].copy())
        for i, k in enumerate(names)
    }
    return StoredScores(
        int(version),
        {k: _from_json_number(v) for k, v in json.loads(summary).items()},
        {k: _from_json_number(v) for k, v in json.loads(metrics).items()},
        curves,
    )
