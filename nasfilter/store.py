"""Experiment results in one embedded SQLite database.

Tables (schema version :data:`SCHEMA_VERSION`):

- ``provenance``: one row per distinct table or oracle description (``kind`` is ``"table"``
  or ``"oracle"``, ``label``, ``json``).
- ``specs``: one row per :class:`~nasfilter.experiment.RunSpec` (its fields, its canonical
  ``key`` and the provenance of its table and oracle).
- ``runs``: one row per (spec, seed): why it stopped, simulated seconds (accuracy and proxy
  apart), counts, the best architecture, the final metrics. Unique on (spec, seed).
- ``curves``: every metric at each tick of simulated time, one row per (run, tick).
- ``events``: one row per run holding its event columns as zlib-compressed little-endian
  arrays (``kind`` uint8, 0 = evaluate, 1 = proxy; ``arch`` int32; ``value``, ``throughput``,
  ``cost``, ``clock`` float64; ``seed`` int32); :meth:`Store.events` decodes them. A scan of
  the whole space is 32768 proxy events, which as rows would dwarf everything else.

Safety: WAL journal (readers never block the writer), each run written in one transaction
(a run is all there or absent, whatever interrupts the writer), a busy timeout so that two
processes can write one database, and ``INSERT OR IGNORE`` on (spec, seed) so that a run
computed twice is stored once.
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

from nasfilter.files import atomic_write, check_sqlite_writable, connect_sqlite_readonly
from nasfilter.metrics import METRICS
from nasfilter.problem import EVALUATE, PROXY

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from nasfilter.experiment import RunRecord, RunSpec

SCHEMA_VERSION = 1
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
)
_SUMMARY_COLUMNS = (
    "status",
    "clock",
    "evaluation_seconds",
    "proxy_seconds",
    "n_evaluations",
    "n_proxy",
    "n_asked",
    "n_dropped",
    "best_index",
    "best_valid_acc",
    "wall_seconds",
)
_METRIC_COLUMNS = (*METRICS, "front_size", "n_evaluated")
_EVENT_DTYPES = {
    "kind": "<u1",
    "index": "<i4",
    "value": "<f8",
    "throughput": "<f8",
    "seed": "<i4",
    "cost": "<f8",
    "clock": "<f8",
}
_KIND_CODES = {EVALUATE: 0, PROXY: 1}
_KIND_NAMES = np.asarray([EVALUATE, PROXY])

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
    table_provenance INTEGER NOT NULL REFERENCES provenance(id),
    oracle_provenance INTEGER NOT NULL REFERENCES provenance(id));
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, spec_id INTEGER NOT NULL REFERENCES specs(id),
    seed INTEGER NOT NULL, status TEXT NOT NULL,
    clock REAL, evaluation_seconds REAL, proxy_seconds REAL,
    n_evaluations INTEGER, n_proxy INTEGER, n_asked INTEGER, n_dropped INTEGER,
    best_index INTEGER, best_valid_acc REAL, wall_seconds REAL,
    {", ".join(f"{m} REAL" for m in METRICS)}, front_size INTEGER, n_evaluated INTEGER,
    searcher_config TEXT, filter_config TEXT, created TEXT NOT NULL,
    UNIQUE (spec_id, seed));
CREATE TABLE IF NOT EXISTS curves (
    run_id INTEGER NOT NULL REFERENCES runs(id), tick INTEGER NOT NULL,
    clock REAL NOT NULL, n_evaluations INTEGER NOT NULL,
    {", ".join(f"{m} REAL" for m in METRICS)},
    PRIMARY KEY (run_id, tick));
CREATE TABLE IF NOT EXISTS events (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id), n INTEGER NOT NULL,
    {", ".join(f'"{c}" BLOB NOT NULL' for c in _EVENT_DTYPES)});
"""


class StoreError(ValueError):
    """The file is not a nasfilter results database, or has another schema version."""


def _real(x: Any) -> float | None:
    """SQLite cannot hold NaN (it becomes NULL); inf is kept."""
    value = float(x)
    return None if math.isnan(value) else value


class Store:
    """A results database at ``path`` (created if missing). Use as a context manager.

    Another program's SQLite database (tables, but no nasfilter ``meta`` table) is refused
    untouched, so that results never get mixed into it.

    Args:
        path: the SQLite file.
        timeout: seconds a write waits while another process writes.
        create: when False (for readers such as ``nasfilter compare``), a file that does
            not exist or holds no results schema is refused instead of being set up, and
            the file is opened read-only (it may sit in a read-only folder). When True, a
            file or folder this user cannot write raises PermissionError naming it.

    Attributes:
        duplicates: runs :meth:`add_run` found already stored (by another writer) and
            skipped, since this object was opened.
    """

    def __init__(
        self, path: str | os.PathLike[str], timeout: float = BUSY_TIMEOUT, create: bool = True
    ) -> None:
        self.path = Path(path)
        self.duplicates = 0
        if self.path.is_dir():
            raise StoreError(f"database path {str(self.path)!r} is a directory")
        if not create and not self.path.is_file():
            raise StoreError(f"results database {str(self.path)!r} does not exist")
        if create:
            check_sqlite_writable(self.path, "results database")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if create:
                self._con = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            else:  # a reader: never writes, and works on a read-only file and folder
                self._con = connect_sqlite_readonly(self.path, "results database")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open results database {str(self.path)!r}: {exc}") from exc
        try:
            self._con.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._refuse_foreign(create)
            if create:
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
            raise StoreError(
                f"{str(self.path)!r} is not a nasfilter results database: {exc}"
            ) from exc

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
            raise StoreError(
                f"{str(self.path)!r} has results schema version {row[0]}; this "
                f"nasfilter writes version {SCHEMA_VERSION}: use a new --db file"
            )

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; BEGIN IMMEDIATE takes the write lock up front."""
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
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
    ) -> int:
        """Record ``spec`` and the provenance of its table and oracle; return its id."""
        with self._write() as con:
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
            )
            con.execute(
                f"INSERT OR IGNORE INTO specs (key, {', '.join(_SPEC_COLUMNS)}, "
                f"table_provenance, oracle_provenance) VALUES "
                f"({', '.join('?' * (len(_SPEC_COLUMNS) + 3))})",
                (spec.key(), *values, table_id, oracle_id),
            )
            return self._spec_id(con, spec)

    def _spec_id(self, con: sqlite3.Connection, spec: RunSpec) -> int:
        row = con.execute("SELECT id FROM specs WHERE key = ?", (spec.key(),)).fetchone()
        if row is None:
            raise LookupError(f"spec {spec.label!r} is not in {str(self.path)!r}; add_spec first")
        return int(row[0])

    def add_run(self, record: RunRecord) -> int | None:
        """Write one run, its curves and events in one transaction; return its id, or None
        if that (spec, seed) is already stored."""
        summary, metrics = record.summary, record.metrics
        events = record.events
        blobs = []
        for name, dtype in _EVENT_DTYPES.items():
            column = events[name]
            if name == "kind":
                column = np.where(column == EVALUATE, _KIND_CODES[EVALUATE], _KIND_CODES[PROXY])
            blobs.append(zlib.compress(np.ascontiguousarray(column, dtype=dtype).tobytes(), 1))
        curves = record.curves
        n_ticks = len(curves["clock"])
        curve_rows: list[list[Any]] = [
            [i, float(curves["clock"][i]), int(curves["n_evaluations"][i])]
            + [_real(curves[m][i]) for m in METRICS]
            for i in range(n_ticks)
        ]
        with self._write() as con:
            spec_id = self._spec_id(con, record.spec)
            columns = (
                "spec_id",
                "seed",
                *_SUMMARY_COLUMNS,
                *_METRIC_COLUMNS,
                "searcher_config",
                "filter_config",
                "created",
            )
            values = [
                spec_id,
                record.seed,
                summary["status"],
                *(_real(summary[c]) for c in _SUMMARY_COLUMNS[1:4]),
                *(int(summary[c]) for c in _SUMMARY_COLUMNS[4:9]),
                _real(summary["best_valid_acc"]),
                _real(summary["wall_seconds"]),
                *(_real(metrics[m]) for m in METRICS),
                int(metrics["front_size"]),
                int(metrics["n_evaluated"]),
                json.dumps(summary["searcher_config"], sort_keys=True),
                json.dumps(summary["filter_config"], sort_keys=True),
                datetime.now(timezone.utc).isoformat(timespec="seconds"),
            ]
            cur = con.execute(
                f"INSERT OR IGNORE INTO runs ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' * len(columns))})",
                values,
            )
            if cur.rowcount == 0:
                self.duplicates += 1
                return None
            run_id = cur.lastrowid
            assert run_id is not None
            con.executemany(
                f"INSERT INTO curves VALUES ({', '.join('?' * (len(METRICS) + 4))})",
                [[run_id, *row] for row in curve_rows],
            )
            con.execute(
                f"INSERT INTO events VALUES (?, ?, {', '.join('?' * len(_EVENT_DTYPES))})",
                (run_id, len(events["index"]), *blobs),
            )
            return int(run_id)

    # -------------------------------------------------------------------- reading
    def completed(self) -> set[tuple[str, int]]:
        """Every stored (spec key, seed)."""
        rows = self._con.execute(
            "SELECT specs.key, runs.seed FROM runs JOIN specs ON runs.spec_id = specs.id"
        ).fetchall()
        return {(key, int(seed)) for key, seed in rows}

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        cur = self._con.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def runs(self) -> list[dict[str, Any]]:
        """One dict per run: its spec's fields, its summary and final metrics, in id order.

        Metrics that were NaN (nothing evaluated) read back as None.
        """
        return self._query(
            "SELECT runs.id AS run_id, specs.key AS spec_key, "
            f"{', '.join('specs.' + c for c in _SPEC_COLUMNS)}, "
            "runs.seed, "
            f"{', '.join('runs.' + c for c in (*_SUMMARY_COLUMNS, *_METRIC_COLUMNS))}, "
            "runs.searcher_config, runs.filter_config, runs.created, "
            "tp.label AS table_label, op.label AS oracle_label "
            "FROM runs JOIN specs ON runs.spec_id = specs.id "
            "JOIN provenance tp ON specs.table_provenance = tp.id "
            "JOIN provenance op ON specs.oracle_provenance = op.id ORDER BY runs.id"
        )

    def curves(self, run_id: int | None = None) -> list[dict[str, Any]]:
        """Metric curves, one dict per (run, tick), for one run or all."""
        where, params = ("WHERE run_id = ?", (run_id,)) if run_id is not None else ("", ())
        return self._query(f"SELECT * FROM curves {where} ORDER BY run_id, tick", params)

    def provenance(self) -> list[dict[str, Any]]:
        """Every stored table and oracle description, with its JSON decoded."""
        rows = self._query("SELECT id, kind, label, json FROM provenance ORDER BY id")
        for row in rows:
            row["data"] = json.loads(row.pop("json"))
        return rows

    def events(self, run_id: int) -> dict[str, np.ndarray]:
        """The event columns of one run, as :meth:`nasfilter.problem.EventLog.arrays`."""
        row = self._con.execute(
            f"SELECT n, {', '.join(f'{chr(34)}{c}{chr(34)}' for c in _EVENT_DTYPES)} "
            "FROM events WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise LookupError(f"no run {run_id} in {str(self.path)!r}")
        n = int(row[0])
        out: dict[str, np.ndarray] = {"step": np.arange(n, dtype=np.int64)}
        for (name, dtype), blob in zip(_EVENT_DTYPES.items(), row[1:], strict=True):
            arr = np.frombuffer(zlib.decompress(blob), dtype=dtype)
            if name == "kind":
                out[name] = _KIND_NAMES[arr]
            elif dtype.startswith("<f"):
                out[name] = arr.astype(np.float64)
            else:
                out[name] = arr.astype(np.int64)
        return out

    # -------------------------------------------------------------------- export
    def rows(self, what: str = "runs") -> list[dict[str, Any]]:
        """Rows of ``what``: "runs", "curves", "events" (one row per event, with run_id)
        or "provenance"."""
        if what == "runs":
            return self.runs()
        if what == "curves":
            return self.curves()
        if what == "provenance":
            return [{**r, "data": json.dumps(r["data"], sort_keys=True)} for r in self.provenance()]
        if what == "events":
            out: list[dict[str, Any]] = []
            for (run_id,) in self._con.execute("SELECT run_id FROM events ORDER BY run_id"):
                cols = self.events(int(run_id))
                names = list(cols)
                lists = [cols[k].tolist() for k in names]
                out.extend(
                    {"run_id": run_id, **dict(zip(names, vals, strict=True))}
                    for vals in zip(*lists, strict=True)
                )
            return out
        raise ValueError(f"unknown export {what!r}; choose one of runs, curves, events, provenance")

    def to_pandas(self, what: str = "runs") -> pd.DataFrame:
        """A pandas DataFrame of ``what`` (see :meth:`rows`); needs the pandas extra."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover
            raise ImportError("to_pandas needs pandas: pip install nasfilter[pandas]") from exc
        return pd.DataFrame(self.rows(what))

    def export_csv(self, path: str | os.PathLike[str], what: str = "runs") -> Path:
        """Write ``what`` (see :meth:`rows`) as CSV with a header row; return the path."""
        import csv

        rows = self.rows(what)
        target = Path(path)
        with atomic_write(target, "w") as fh:  # never half a file, nor a clobbered one
            if not rows:
                return target
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return target
