"""The SQLite results store: round trips, provenance, exports, WAL, atomic runs, two
writer processes, and foreign files."""

from __future__ import annotations

import csv
import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from nasfilter.experiment import RunSpec, provenance, run_experiment, run_one
from nasfilter.store import Store, StoreError

SPEC = RunSpec("reinforce-mnas", "proxy-threshold", budget=70_000.0, n_ticks=8)
EMPTY = RunSpec("random", "drop-all", budget=1000.0, n_ticks=4, max_idle=20)


def stored(store: Store, spec: RunSpec, seed: int) -> int:
    store.add_spec(spec, *provenance(spec))
    run_id = store.add_run(run_one(spec, seed))
    assert run_id is not None
    return run_id


def test_a_run_round_trips(tmp_path: Path) -> None:
    record = run_one(SPEC, 0)
    with Store(tmp_path / "r.db") as store:
        store.add_spec(SPEC, *provenance(SPEC))
        run_id = store.add_run(record)
        assert run_id is not None
        events = store.events(run_id)
        for name, column in record.events.items():
            np.testing.assert_array_equal(events[name], column)
            assert events[name].dtype.kind == column.dtype.kind or name == "kind"
        (row,) = store.runs()
        assert row["searcher"] == SPEC.searcher and row["filter"] == SPEC.filter
        assert row["seed"] == 0 and row["status"] == record.summary["status"]
        assert row["proxy_seconds"] == record.summary["proxy_seconds"] > 0
        assert row["evaluation_seconds"] == record.summary["evaluation_seconds"] > 0
        for name, value in record.metrics.items():
            assert row[name] == pytest.approx(value)
        curves = store.curves(run_id)
        assert [c["hv_ratio"] for c in curves] == pytest.approx(record.curves["hv_ratio"])
        assert store.add_run(record) is None  # (spec, seed) is stored once
        assert len(store.runs()) == 1


def test_provenance_names_the_table_and_the_oracle(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        stored(store, SPEC, 0)
        (row,) = store.runs()
        assert "SYNTHETIC" in row["table_label"]
        assert row["oracle_label"].startswith("roofline v100")
        kinds = {p["kind"]: p["data"] for p in store.provenance()}
        assert kinds["table"]["synthetic"] is True and kinds["table"]["path"] is None
        assert kinds["oracle"]["backend"] == "roofline"


def test_nan_metrics_of_an_empty_run_read_back_as_none(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        stored(store, EMPTY, 0)
        (row,) = store.runs()
        assert row["status"] == "stalled" and row["n_evaluations"] == 0
        assert row["best_test_acc"] is None and row["hv_ratio"] == 0.0
        assert row["igd_plus"] == float("inf")


def test_exports_to_csv_and_pandas(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        run_id = stored(store, SPEC, 0)
        stored(store, SPEC, 1)
        path = store.export_csv(tmp_path / "runs.csv")
        with path.open() as fh:
            rows = list(csv.DictReader(fh))
        assert [int(r["seed"]) for r in rows] == [0, 1]
        assert float(rows[0]["hv_ratio"]) == pytest.approx(store.runs()[0]["hv_ratio"])
        frame = store.to_pandas("runs")
        assert list(frame["seed"]) == [0, 1] and "recall" in frame.columns
        events = store.to_pandas("events")
        n0 = len(store.events(run_id)["index"])
        assert (events["run_id"] == run_id).sum() == n0
        assert set(events["kind"]) == {"evaluate", "proxy"}
        assert len(store.to_pandas("curves")) == 2 * SPEC.n_ticks
        with pytest.raises(ValueError, match="unknown export 'foo'"):
            store.rows("foo")


def test_wal_lets_a_reader_in_while_a_writer_holds_the_lock(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with Store(db) as store:
        stored(store, SPEC, 0)
        assert store._con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        store._con.execute("BEGIN IMMEDIATE")  # a writer in the middle of a transaction
        reader = sqlite3.connect(db, timeout=0.1)
        assert reader.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
        reader.close()
        store._con.execute("ROLLBACK")


class InterruptedConnection:
    """Delegates to a connection, but Ctrl-C strikes while the curves are being written."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con

    def __getattr__(self, name: str) -> object:
        return getattr(self.con, name)

    def executemany(self, *args: object) -> None:
        raise KeyboardInterrupt


def test_an_interrupted_write_leaves_no_partial_run(tmp_path: Path) -> None:
    record = run_one(SPEC, 0)
    with Store(tmp_path / "r.db") as store:
        store.add_spec(SPEC, *provenance(SPEC))
        real = store._con
        store._con = InterruptedConnection(real)  # type: ignore[assignment]
        with pytest.raises(KeyboardInterrupt):
            store.add_run(record)
        store._con = real
        for table in ("runs", "curves", "events"):
            assert real.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
        assert real.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert store.add_run(record) is not None  # the same run can be written afterwards
        assert len(store.curves()) == SPEC.n_ticks


def _write(db: str, seeds: list[int]) -> None:
    specs = [SPEC, EMPTY]
    with Store(db) as store:
        run_experiment(specs, seeds, store=store, jobs=1)


def test_two_writer_processes_share_one_database(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write, args=(db, s)) for s in ([0, 1, 2, 3], [3, 2, 1, 0])]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with Store(db) as store:
        runs = store.runs()
        pairs = [(r["searcher"], r["filter"], r["seed"]) for r in runs]
        assert len(pairs) == len(set(pairs)) == 8
        con = store._con
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("SELECT count(*) FROM events").fetchone()[0] == 8
        assert con.execute("SELECT count(*) FROM curves").fetchone()[0] == 4 * 8 + 4 * 4
        (row,) = [r for r in runs if r["searcher"] == SPEC.searcher and r["seed"] == 2]
        assert row["hv_ratio"] == pytest.approx(run_one(SPEC, 2).metrics["hv_ratio"])


def test_foreign_files_are_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a nasfilter results database"):
        Store(junk)
    old = tmp_path / "old.db"
    Store(old).close()
    con = sqlite3.connect(old)
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="schema version 99"):
        Store(old)
    with pytest.raises(StoreError, match="is a directory"):
        Store(tmp_path)
