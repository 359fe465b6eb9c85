"""Rewriting a results database of an older schema version in the current one
(``nasfilter migrate-db``).

The migration reads the old database through SQLite (what its ``-wal`` holds included),
writes the new one beside it as ``DB.migrating`` (a file it creates itself, never one that
was there), and checks that both hold the same runs and event rows. Only then are the old
file and its ``-wal``/``-shm`` renamed together to ``DB.v<version>`` (SQLite pairs them by
name) and the new one put in its place, with the old file's mode (and, for root, owner).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.files import (
    check_path_text,
    check_sqlite_writable,
    connect_sqlite_readonly,
    sqlite_family,
    sqlite_uri,
)
from nasfilter.runs.records import RunRecord, RunSpec
from nasfilter.runs.storage.sqlite_store import (
    EVENTS_TABLE,
    MAX_EVENTS,
    SCHEMA_VERSION,
    Store,
    StoreError,
    database_problem,
    encode_events,
    inflate_exactly,
)
from nasfilter.sim.events import DISK_DTYPES, EVENT_KINDS, PROXY

_V1_EVENT_DTYPES = {
    "kind": "<u1",
    "index": "<i4",
    "value": "<f8",
    "throughput": "<f8",
    "seed": "<i4",
    "cost": "<f8",
    "clock": "<f8",
}


def _v1_runs(con: sqlite3.Connection) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(spec key, run row, event columns in the current layout) of every v1 run."""
    cur = con.execute(
        "SELECT specs.key, runs.id, runs.seed, runs.status, runs.best_index, "
        "runs.best_valid_acc, runs.wall_seconds, runs.searcher_config, runs.filter_config "
        "FROM runs JOIN specs ON runs.spec_id = specs.id ORDER BY runs.id"
    )
    names = [d[0] for d in cur.description]
    for values in cur.fetchall():
        row = dict(zip(names, values, strict=True))
        blobs = con.execute(
            f"SELECT n, {', '.join(f'{chr(34)}{c}{chr(34)}' for c in _V1_EVENT_DTYPES)} "
            "FROM events WHERE run_id = ?",
            (row["id"],),
        ).fetchone()
        if blobs is None:
            raise StoreError(f"run {row['id']} has no events row; the database is damaged")
        n = int(blobs[0])
        if not 0 <= n <= MAX_EVENTS:
            raise zlib.error(f"run {row['id']}'s events row claims {n} events")
        old = {
            name: np.frombuffer(inflate_exactly(blob, n * np.dtype(dtype).itemsize, name), dtype)
            for (name, dtype), blob in zip(_V1_EVENT_DTYPES.items(), blobs[1:], strict=True)
        }
        kind = np.where(old["kind"] == 0, "evaluate", "proxy")
        is_eval = kind == "evaluate"
        cost, clock = old["cost"].astype(np.float64), old["clock"].astype(np.float64)
        value = old["value"].astype(np.float64)
        events: dict[str, Any] = {
            "kind": kind,
            "trial": np.full(len(kind), -1),
            "index": old["index"].astype(np.int64),
            "accuracy": np.where(is_eval, value, math.nan),
            "utilization": np.where(is_eval, math.nan, value),
            "throughput": old["throughput"].astype(np.float64),
            "seed": old["seed"].astype(np.int64),
            "cost": cost,
            "worker_seconds": clock,
            "start": clock - cost,  # one worker: the wall clock was the charged seconds
            "end": clock,
            "worker": np.where(is_eval, 0, -1),
            "hp": np.full(len(kind), -1),  # v1 had no partial evaluations
            "epochs": np.full(len(kind), -1),
            "proxy": np.full(len(kind), -1),  # nor zero-cost queries
        }
        if row["best_index"] is not None and row["best_index"] >= 0:
            # v1 stored the selected architecture (the searcher's recommendation when it
            # made one); keep it as the run's final recommendation.
            end = float(clock[-1]) if len(clock) else 0.0
            extra = _v1_recommendation(int(row["best_index"]), row["best_valid_acc"], end)
            events = {k: np.append(v, extra[k]) for k, v in events.items()}
        events["step"] = np.arange(len(events["kind"]), dtype=np.int64)
        yield row["key"], row, events


def _v1_recommendation(index: int, accuracy: float | None, end: float) -> dict[str, Any]:
    """The recommend event (one row of each column) of a v1 run's selected architecture,
    at worker-seconds and wall clock ``end``."""
    nan = math.nan
    return dict(
        kind="recommend", trial=-1, index=index, accuracy=nan if accuracy is None else accuracy,
        utilization=nan, throughput=nan, seed=-1, cost=0.0, worker_seconds=end, start=end,
        end=end, worker=-1, hp=-1, epochs=-1, proxy=-1,
    )  # fmt: skip


def _migrate_v1(source: Path, target: Path) -> int:
    """Copy a schema-1 database into a new one of the current schema at ``target``;
    return the runs."""
    con = connect_sqlite_readonly(source, "results database")
    try:
        prov = {
            int(i): json.loads(text)
            for i, text in con.execute("SELECT id, json FROM provenance").fetchall()
        }
        specs = con.execute(
            "SELECT key, table_provenance, oracle_provenance FROM specs ORDER BY id"
        ).fetchall()
        n = 0
        with Store(target) as store:
            for key, table_id, oracle_id in specs:
                store.add_spec(RunSpec.from_key(key), prov[table_id], prov[oracle_id])
            for key, row, events in _v1_runs(con):
                info = {
                    "wall_seconds": row["wall_seconds"],
                    "searcher_config": json.loads(row["searcher_config"] or "{}"),
                    "filter_config": json.loads(row["filter_config"] or "{}"),
                }
                spec = RunSpec.from_key(key)
                record = RunRecord(
                    spec, int(row["seed"]), str(row["status"]), events, info, spec.workers
                )
                n += store.add_run(record) is not None
    finally:
        con.close()
    return n


# Schema 2 differs from 3 only in its events: one ``value`` column (accuracy for evaluate and
# recommend events, utilization for proxy ones), ``clock`` for the worker-seconds, and no
# partial evaluations (no ``hp`` and ``epochs`` columns).
_V2_EVENT_DTYPES = {
    "kind": "<u1",
    "trial": "<i4",
    "index": "<i4",
    "value": "<f8",
    "throughput": "<f8",
    "seed": "<i4",
    "cost": "<f8",
    "clock": "<f8",
    "start": "<f8",
    "end": "<f8",
    "worker": "<i2",
}


def _v2_events(run_id: int, n: int, blobs: tuple[bytes, ...]) -> dict[str, np.ndarray]:
    """The event arrays (current columns) of one schema-2 events row."""
    if not isinstance(n, int) or not 0 <= n <= MAX_EVENTS:
        raise zlib.error(f"run {run_id}'s events row claims {n!r} events")
    old = {
        name: np.frombuffer(inflate_exactly(blob, n * np.dtype(dtype).itemsize, name), dtype)
        for (name, dtype), blob in zip(_V2_EVENT_DTYPES.items(), blobs, strict=True)
    }
    if np.any(old["kind"] >= len(EVENT_KINDS)):
        raise zlib.error(f"run {run_id}'s column 'kind' holds an unknown event kind")
    kind = np.asarray(EVENT_KINDS)[old["kind"]]
    clock, cost = old["clock"].astype(np.float64), old["cost"].astype(np.float64)
    value = old["value"].astype(np.float64)
    is_proxy = kind == PROXY
    end = (old["end"].view("<u8") ^ clock.view("<u8")).view("<f8")
    start = (old["start"].view("<u8") ^ (end - cost).view("<u8")).view("<f8")
    return {
        "step": np.arange(n, dtype=np.int64),
        "kind": kind,
        "trial": old["trial"].astype(np.int64),
        "index": old["index"].astype(np.int64),
        "accuracy": np.where(is_proxy, math.nan, value),
        "utilization": np.where(is_proxy, value, math.nan),
        "throughput": old["throughput"].astype(np.float64),
        "seed": old["seed"].astype(np.int64),
        "cost": cost,
        "worker_seconds": clock,
        "start": start.astype(np.float64),
        "end": end.astype(np.float64),
        "worker": old["worker"].astype(np.int64),
        "hp": np.full(n, -1, dtype=np.int64),  # v2 had no partial evaluations
        "epochs": np.full(n, -1, dtype=np.int64),
        "proxy": np.full(n, -1, dtype=np.int64),  # nor zero-cost queries
    }


def _migrate_v2(source: Path, target: Path) -> int:
    """Copy a schema-2 database to ``target`` and rewrite its events in the current
    columns (the other tables are unchanged); return the runs."""
    con = connect_sqlite_readonly(source, "results database")
    new = sqlite3.connect(sqlite_uri(target), uri=True, isolation_level=None)
    try:
        con.backup(new)
        names = ", ".join(f'"{c}"' for c in _V2_EVENT_DTYPES)
        rows = new.execute(f"SELECT run_id, n, {names} FROM events ORDER BY run_id").fetchall()
        encoded = [
            (run_id, n, *encode_events(_v2_events(run_id, n, tuple(blobs))))
            for run_id, n, *blobs in rows
        ]
        new.execute("BEGIN IMMEDIATE")
        new.execute("DROP TABLE events")
        new.execute(f"CREATE TABLE events ({EVENTS_TABLE})")
        holes = ", ".join("?" * (2 + len(DISK_DTYPES)))
        new.executemany(f"INSERT INTO events VALUES ({holes})", encoded)
        new.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
        )
        new.execute("COMMIT")
        return int(new.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    finally:
        new.close()
        con.close()


MIGRATIONS = {"1": _migrate_v1, "2": _migrate_v2}


def schema_version(path: str | os.PathLike[str]) -> str | None:
    """The schema version recorded in the database at ``path``, or None if it has none."""
    con = connect_sqlite_readonly(path, "results database")
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError:
        return None
    finally:
        con.close()
    return None if row is None else str(row[0])


def _counts(path: Path) -> tuple[int, int]:
    """(runs, event rows) stored in the database at ``path``."""
    con = connect_sqlite_readonly(path, "results database")
    try:
        runs = con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        events = con.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    finally:
        con.close()
    return int(runs), int(events)


def _check_may_replace(source: Path) -> os.stat_result:
    """PermissionError unless this user may replace ``source`` as its owner would: the new
    file would belong to whoever migrates (root keeps the owner)."""
    st = source.stat()
    if not os.access(source, os.W_OK):
        raise PermissionError(
            f"cannot migrate {str(source)!r}: the file is read-only for this user (no write "
            "permission), and migrating replaces it; ask its owner to migrate it"
        )
    if os.geteuid() != 0 and st.st_uid != os.geteuid():
        raise PermissionError(
            f"cannot migrate {str(source)!r}: it belongs to another user (uid {st.st_uid}), and "
            "migrating replaces the file, which would then be yours; ask its owner to migrate it"
        )
    check_sqlite_writable(source, "results database")
    return st


def _check_free(source: Path, kept: Path, temp: Path) -> None:
    for p in sqlite_family(kept):
        if p.exists() or p.is_symlink():
            raise StoreError(f"{str(p)!r} exists; move it away before migrating {str(source)!r}")
    for p in sqlite_family(temp):
        if p.exists() or p.is_symlink():
            raise StoreError(
                f"{str(p)!r} exists, and migrating {str(source)!r} writes its new database "
                "there; nasfilter never deletes a file it did not make: move it away (or "
                "delete it, if it is left over from an interrupted migration)"
            )


def _build(source: Path, temp: Path, version: str, st: os.stat_result) -> int:
    """Write the migrated database at ``temp`` (a file this call creates) and check it
    against ``source``; return the runs copied. ``temp`` is removed on any failure."""
    fd = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, stat.S_IMODE(st.st_mode))
    os.close(fd)
    try:
        before = _counts(source)
        n = MIGRATIONS[version](source, temp)
        con = sqlite3.connect(sqlite_uri(temp), uri=True, isolation_level=None)
        try:  # one self-contained file: no -wal to lose in the renames
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.execute("PRAGMA journal_mode = DELETE")
        finally:
            con.close()
        after = _counts(temp)
        if after != before or n != before[0]:
            raise StoreError(
                f"migrating {str(source)!r} copied {after[0]} runs and {after[1]} event rows "
                f"of {before[0]} and {before[1]}; the database was left as it was"
            )
        os.chmod(temp, stat.S_IMODE(st.st_mode))
        if os.geteuid() == 0:
            os.chown(temp, st.st_uid, st.st_gid)
        return n
    except BaseException:
        for p in sqlite_family(temp):
            p.unlink(missing_ok=True)
        raise


def migrate(path: str | os.PathLike[str]) -> tuple[Path, int]:
    """Rewrite the database at ``path`` in the current schema; return (where the old file
    was kept, runs copied). Metrics are recomputed from the events when next read.

    The original is left untouched until the new database holds as many runs and event
    rows; an interruption leaves it as it was. StoreError for a file that needs no or no
    known migration, PermissionError for one this user may not replace.
    """
    check_path_text(path, "--db")
    source = Path(path)
    if source.is_dir():
        raise StoreError(f"{str(source)!r} is a folder, not a results database file")
    if not source.is_file():
        raise StoreError(f"results database {str(source)!r} does not exist")
    try:
        version = schema_version(source)
    except sqlite3.DatabaseError as exc:
        raise database_problem(source, exc) from exc
    if version == str(SCHEMA_VERSION):
        raise StoreError(f"{str(source)!r} already has schema version {SCHEMA_VERSION}")
    if version not in MIGRATIONS:
        raise StoreError(
            f"{str(source)!r} has no known results schema version to migrate from "
            f"(found {version!r}; migrations exist from {', '.join(MIGRATIONS)})"
        )
    st = _check_may_replace(source)
    kept = source.with_name(f"{source.name}.v{version}")
    temp = source.with_name(f"{source.name}.migrating")
    _check_free(source, kept, temp)
    try:
        n = _build(source, temp, version, st)
    except (sqlite3.DatabaseError, zlib.error) as exc:
        raise database_problem(source, exc) from exc
    old, new = sqlite_family(source), sqlite_family(kept)
    for side, moved in [*zip(old[1:], new[1:], strict=True), (old[0], new[0])]:
        if side.exists():
            os.replace(side, moved)  # the old file and its -wal stay a pair
    os.replace(temp, source)
    return kept, n
