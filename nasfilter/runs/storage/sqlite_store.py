"""Experiment results in one embedded SQLite database (the SQLite storage).

Tables (schema version :data:`SCHEMA_VERSION`):

- ``meta``: the schema version.
- ``provenance``: one row per distinct table or oracle description (``kind`` is ``"table"``
  or ``"oracle"``, ``label``, ``json``).
- ``specs``: one row per :class:`~nasfilter.runs.records.RunSpec` (its fields, its canonical
  ``key`` and the provenance of its table and oracle).
- ``runs``: one row per (spec, seed): why it stopped, the searcher's and filter's
  parameters, real seconds. Unique on (spec, seed).
- ``events``: one row per run holding its event columns (:data:`nasfilter.sim.events.COLUMNS`)
  as zlib streams of little-endian arrays (``kind`` uint8, the
  :class:`~nasfilter.sim.events.EventKind` code; ``trial``, ``index``, ``seed`` int32;
  ``worker``, ``hp``, ``epochs`` int16; ``accuracy``, ``utilization``, ``throughput``,
  ``cost``, ``worker_seconds`` float64; ``end`` as its float64 bits XOR those of
  ``worker_seconds``, ``start`` XOR those of ``end - cost``, exact and nearly free with one
  worker); :meth:`Store.events` decodes them (:func:`nasfilter.sim.events.from_disk`). A scan of
  the whole space is 32768 proxy events, which as rows would dwarf everything else.
  The columns added to schema 3 later (:data:`nasfilter.sim.events.OPTIONAL`: ``proxy``,
  int16, the zero-cost proxy's code) are nullable: a database written before them gains
  them (``ALTER TABLE``, its rows NULL) when opened to write, is read as it is when opened
  to read, and a NULL or missing one reads as its fill (-1), so older runs load, compare
  and resume unchanged. The names behind the ``proxy`` codes are the run's
  ``info["zerocost_proxies"]``.
- ``scores``: a cache of what :mod:`nasfilter.runs.results` computes from the events (summary,
  final metrics, curves), tagged with the metrics version; ``nasfilter compare
  --recompute`` rewrites it.

Safety: WAL journal (readers never block the writer), each run written in one transaction
(a run is all there or absent, whatever interrupts the writer), a busy timeout so that two
processes can write one database, and ``INSERT OR IGNORE`` on (spec, seed) so that a run
computed twice is stored once. A database of another schema version is refused before
anything is read from it, naming the version and the migration command
(``nasfilter migrate-db``; :func:`nasfilter.runs.storage.migration.migrate`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from datetime import datetime, timezone
from typing import Any

import numpy as np

from nasfilter.runs.records import RunRecord, RunSpec, ScoredRun, StoredScores, record_and_scores
from nasfilter.runs.storage.base import Storage, changed_inputs, input_id
from nasfilter.runs.storage.codec import (
    BUSY_TIMEOUT,
    MAX_CURVE_CELLS,
    MAX_EVENTS,
    StoreError,
    database_problem,
    decode_scores,
    encode_scores,
    inflate_exactly,
)
from nasfilter.runs.storage.sqlite_file import MIGRATABLE, SCHEMA_VERSION, ResultsFile
from nasfilter.sim.events import DISK_DTYPES, OPTIONAL, disk_sizes, from_disk, to_disk

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
_EVENT_DTYPES = DISK_DTYPES  # the event columns on disk (nasfilter.sim.events.COLUMNS)
EVENTS_TABLE = "run_id INTEGER PRIMARY KEY REFERENCES runs(id), n INTEGER NOT NULL, " + ", ".join(
    f'"{c}" BLOB' + ("" if c in OPTIONAL else " NOT NULL") for c in _EVENT_DTYPES
)
_QUOTED_EVENT_COLUMNS = ", ".join(f'"{c}"' for c in _EVENT_DTYPES)

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


# A column whose first SAMPLE_BYTES shrink by less than half at zlib level 1 is stored at
# level 0, zlib's stored blocks: a plain copy, 40-90x cheaper than deflating it. Such are a
# proxy scan's columns: its utilization and throughput readings (distinct float64s, about
# 0.8 at level 1: some 20 % more bytes stored) and the scanned indices (a permutation in
# int32, about 0.62: some 60 % more bytes on that column, about 8 % more on the whole
# nine-seed comparison's file, for about 9 ms less a run). Any zlib stream inflates the
# same, so the reader and the schema are unchanged.
SAMPLE_BYTES = 4096
INCOMPRESSIBLE = 0.5


def column_level(data: bytes) -> int:
    """The zlib level to store one event column at: 0 when its first :data:`SAMPLE_BYTES`
    deflate to more than :data:`INCOMPRESSIBLE` of their size, else 1."""
    sample = data[:SAMPLE_BYTES]
    if len(sample) < SAMPLE_BYTES:  # short: deflating it all costs nothing
        return 1
    return 0 if len(zlib.compress(sample, 1)) > INCOMPRESSIBLE * len(sample) else 1


def encode_events(events: dict[str, np.ndarray]) -> list[bytes]:
    """The zlib blobs of the event columns, in :data:`_EVENT_DTYPES` order, each at
    :func:`column_level`."""
    return [zlib.compress(data, column_level(data)) for data in to_disk(events)]


def _decode_events(
    n: int, blobs: tuple[bytes | None, ...], names: tuple[str, ...] = tuple(_EVENT_DTYPES)
) -> dict[str, np.ndarray]:
    """The event arrays of one events row: ``blobs`` of the columns ``names``; an
    :data:`~nasfilter.sim.events.OPTIONAL` one absent or NULL reads as its fill."""
    if not 0 <= n <= MAX_EVENTS:
        raise zlib.error(f"the events row claims {n} events (at most {MAX_EVENTS})")
    sizes = disk_sizes(n)
    raw = {
        name: inflate_exactly(blob, sizes[name], f"column {name!r}")  # type: ignore[arg-type]
        for name, blob in zip(names, blobs, strict=True)
        if not (blob is None and name in OPTIONAL)
    }
    try:
        return from_disk(n, raw)
    except ValueError as exc:
        raise zlib.error(str(exc)) from None


class Store(ResultsFile, Storage):
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
        self.duplicates = 0
        ResultsFile.__init__(self, path, timeout, create, readonly, _SCHEMA)
        try:
            self._event_columns = self._add_optional_columns()
        except StoreError:
            self._con.close()
            raise

    def _add_optional_columns(self) -> tuple[str, ...]:
        """The event columns to read, in :data:`_EVENT_DTYPES` order: the optional ones only
        where the table holds them, after adding (when writing) those a database written
        before them lacks."""
        with self._guard():
            have = {row[1] for row in self._con.execute('PRAGMA table_info("events")')}
            missing = [c for c in OPTIONAL if c not in have]
            if missing and not self.readonly:
                with self._write() as con:
                    for name in missing:
                        con.execute(f'ALTER TABLE events ADD COLUMN "{name}" BLOB')
                have.update(missing)
        # a required column is always asked for: a table without it is damaged, and says so
        return tuple(c for c in _EVENT_DTYPES if c in have or c not in OPTIONAL)

    def __enter__(self) -> Store:
        return self

    # -------------------------------------------------------------------- writing
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
                float(spec.budget.seconds),
                spec.proxy_cost,
                spec.table,
                spec.oracle,
                spec.device,
                spec.oracle_cache,
                spec.max_idle,
                spec.n_ticks,
                spec.workers,
                spec.budget.clock,
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

    def add_run(self, run: RunRecord | ScoredRun, scores: StoredScores | None = None) -> int | None:
        """Write one run (status, info, events, and ``scores`` as its cache) in one
        transaction; return its id, or None if that (spec, seed) is already stored."""
        self._refuse_readonly("a run")
        record, scores = record_and_scores(run, scores)
        if record.spec is None or record.seed is None:
            raise ValueError("a stored run needs its spec and seed (run_one makes them)")
        events = record.require_events()
        blobs = encode_events(events)
        with self._write() as con:
            spec_id = self._spec_id(con, record.spec)
            cur = con.execute(
                "INSERT OR IGNORE INTO runs (spec_id, seed, status, info, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    spec_id,
                    record.seed,
                    str(record.status),
                    json.dumps(record.stored_info(), sort_keys=True),
                    datetime.now(timezone.utc).isoformat(timespec="seconds"),
                ),
            )
            if cur.rowcount == 0:
                self.duplicates += 1
                return None
            run_id = cur.lastrowid
            assert run_id is not None
            con.execute(
                f"INSERT INTO events (run_id, n, {_QUOTED_EVENT_COLUMNS}) "
                f"VALUES (?, ?, {', '.join('?' * len(_EVENT_DTYPES))})",
                (run_id, len(events["index"]), *blobs),
            )
            if scores is not None:
                self._put_scores(con, run_id, scores)
            return int(run_id)

    @staticmethod
    def _put_scores(con: sqlite3.Connection, run_id: int, scores: StoredScores) -> None:
        con.executemany(  # one row; executemany, where a test strikes with Ctrl-C
            "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?, ?)",
            [(run_id, scores.version, *encode_scores(scores))],
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
            self._put_scores(con, run_id, StoredScores(version, summary, metrics, curves))

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

    def stored_runs(self) -> list[RunRecord]:
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

    def _stored_run(self, row: dict[str, Any], specs: dict[str, RunSpec]) -> RunRecord:
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
        spec = specs[row["key"]]
        return RunRecord(
            spec,
            int(row["seed"]),
            str(row["status"]),
            {},
            info,
            workers=spec.workers,
            run_id=int(run_id),
            table_label=str(row["tl"]),
            oracle_label=str(row["ol"]),
            table_id=input_id(table),
            oracle_id=input_id(oracle),
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
        """The event columns of one run, as :meth:`nasfilter.sim.events.EventLog.arrays`.
        Each column inflates to no more than its row's event count implies; StoreError
        naming the run for a blob that does not match it."""
        with self._guard(run_id):
            names = self._event_columns
            row = self._con.execute(
                f"SELECT n, {', '.join(f'{chr(34)}{c}{chr(34)}' for c in names)} "
                "FROM events WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                raise LookupError(f"no run {run_id} in {str(self.path)!r}")
            if not isinstance(row[0], int):
                raise zlib.error(f"the events row's count is {row[0]!r}, not an integer")
            return _decode_events(int(row[0]), tuple(row[1:]), names)

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
                return decode_scores(*row)
            except (ValueError, TypeError, AttributeError) as exc:
                raise zlib.error(f"its cached scores are corrupt: {exc}") from exc


__all__ = [  # the store's names, and the file plumbing's that its users import from here
    "BUSY_TIMEOUT",
    "MAX_CURVE_CELLS",
    "MAX_EVENTS",
    "MIGRATABLE",
    "SCHEMA_VERSION",
    "Store",
    "StoreError",
    "database_problem",
    "inflate_exactly",
]
