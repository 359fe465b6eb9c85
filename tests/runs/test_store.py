"""The SQLite results store: round trips, provenance, exports, WAL, atomic runs, two
writer processes, and foreign files."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from nasfilter.runs.experiment import RunSpec, provenance, run_experiment, run_one
from nasfilter.runs.export import export_csv, to_pandas
from nasfilter.runs.export import rows as export_rows
from nasfilter.runs.results import METRICS_VERSION, load_results
from nasfilter.runs.storage.base import InMemoryStorage, Storage
from nasfilter.runs.storage.migration import migrate
from nasfilter.runs.storage.sqlite_store import SCHEMA_VERSION, Store, StoreError


def rows(store: Storage) -> list[dict[str, object]]:
    return [r.row() for r in load_results(store)]


SPEC = RunSpec("reinforce-mnas", "proxy-threshold", budget=70_000.0, n_ticks=8)
EMPTY = RunSpec("random", "drop-all", budget=1000.0, n_ticks=4, max_idle=20)


def stored(store: Store, spec: RunSpec, seed: int) -> int:
    store.add_spec(spec, *provenance(spec))
    run_id = store.add_run(run_one(spec, seed))
    assert run_id is not None
    return run_id


@pytest.mark.parametrize(("kind", "workers"), [("sqlite", 1), ("sqlite", 4), ("memory", 1)])
def test_a_run_round_trips(tmp_path: Path, kind: str, workers: int) -> None:
    spec = dataclasses.replace(SPEC, workers=workers)
    record = run_one(spec, 0)
    store: Storage = Store(tmp_path / "r.db") if kind == "sqlite" else InMemoryStorage()
    with store:
        store.add_spec(spec, *provenance(spec))
        run_id = store.add_run(record)
        assert run_id is not None
        events = store.events(run_id)
        for name, column in record.events.items():
            np.testing.assert_array_equal(events[name], column)
            assert events[name].dtype.kind == column.dtype.kind or name == "kind"
        assert set(events["kind"]) == {"drop", "evaluate", "proxy", "recommend"}
        if workers > 1:  # the wall clock is not the worker-seconds: stored exactly anyway
            assert not np.array_equal(events["end"], events["worker_seconds"])
        (run,) = store.stored_runs()
        assert run.spec == spec and run.seed == 0 and run.status == record.status
        assert run.info["searcher_config"] == record.info["searcher_config"]
        (row,) = rows(store)
        assert row["searcher"] == spec.searcher and row["filter"] == spec.filter
        assert row["proxy_seconds"] == record.summary["proxy_seconds"] > 0
        assert row["evaluation_seconds"] == record.summary["evaluation_seconds"] > 0
        for name, value in record.metrics.items():
            assert row[name] == pytest.approx(value)
        scores = store.scores(run_id)
        assert scores is not None and scores.version == METRICS_VERSION
        np.testing.assert_allclose(scores.curves["hv_ratio"], record.curves["hv_ratio"])
        assert store.add_run(record) is None  # (spec, seed) is stored once
        assert len(store.stored_runs()) == 1 and store.duplicates == 1


def test_provenance_names_the_table_and_the_oracle(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        stored(store, SPEC, 0)
        (row,) = rows(store)
        assert row["table_label"].startswith("real NATS-Bench accuracies")  # the default
        # the default oracle is the calibrated model: its label names the data it was fitted on
        assert row["oracle_label"].startswith("calibrated v100")
        assert "fit: timm-format measurements on rtx3090+rtx4090" in row["oracle_label"]
        kinds = {p["kind"]: p["data"] for p in store.provenance()}
        assert kinds["table"]["synthetic"] is False and kinds["table"]["path"] == "real"
        assert kinds["table"]["modelled"] == "modelled times"
        assert kinds["oracle"]["backend"] == "calibrated"
        assert kinds["oracle"]["config"]["fitted_on"].startswith("timm-format measurements")


def test_nan_and_inf_metrics_of_an_empty_run_read_back(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        stored(store, EMPTY, 0)
        (row,) = rows(store)
        assert row["status"] == "stalled" and row["n_evaluations"] == 0
        assert math.isnan(row["best_acc"]) and row["hv_ratio"] == 0.0
        assert row["igd_plus"] == float("inf") and row["best_index"] == -1


@pytest.mark.slow
def test_exports_to_csv_and_pandas(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        run_id = stored(store, SPEC, 0)
        stored(store, SPEC, 1)
        path = export_csv(store, tmp_path / "runs.csv")
        with path.open() as fh:
            exported = list(csv.DictReader(fh))
        assert [int(r["seed"]) for r in exported] == [0, 1]
        assert float(exported[0]["hv_ratio"]) == pytest.approx(rows(store)[0]["hv_ratio"])
        frame = to_pandas(store, "runs")
        assert list(frame["seed"]) == [0, 1] and "recall" in frame.columns
        events = to_pandas(store, "events")
        n0 = len(store.events(run_id)["index"])
        assert (events["run_id"] == run_id).sum() == n0
        assert {"evaluate", "proxy", "drop"} <= set(events["kind"])
        with pytest.raises(ValueError, match="unknown export 'foo'"):
            export_rows(store, "foo")


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
    """Delegates to a connection, but Ctrl-C strikes while the scores are being written."""

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
        for table in ("runs", "scores", "events"):
            assert real.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
        assert real.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert store.add_run(record) is not None  # the same run can be written afterwards
        assert store.scores(1) is not None


def _write(db: str, seeds: list[int]) -> None:
    specs = [SPEC, EMPTY]
    with Store(db) as store:
        run_experiment(specs, seeds, store=store, jobs=1)


@pytest.mark.slow
@pytest.mark.subprocess
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
        runs = rows(store)
        pairs = [(r["searcher"], r["filter"], r["seed"]) for r in runs]
        assert len(pairs) == len(set(pairs)) == 8
        con = store._con
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("SELECT count(*) FROM events").fetchone()[0] == 8
        assert con.execute("SELECT count(*) FROM scores").fetchone()[0] == 8
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


def test_scores_are_recomputed_from_events_after_a_metric_changes(tmp_path: Path) -> None:
    from nasfilter.runs.results import StaleMetricsError

    db = tmp_path / "r.db"
    with Store(db) as store:
        run_id = stored(store, SPEC, 0)
        fresh = rows(store)[0]
        # Pretend the scores were written by an older metrics version, with another value.
        old = store.scores(run_id)
        assert old is not None
        store.put_scores(run_id, METRICS_VERSION - 1, old.summary, {**old.metrics,
                         "hv_ratio": 0.5}, old.curves)  # fmt: skip
        with pytest.raises(StaleMetricsError, match="compare --db PATH --recompute"):
            load_results(store)
        (again,) = load_results(store, recompute=True)
        assert again.metrics["hv_ratio"] == pytest.approx(fresh["hv_ratio"])
        cached = store.scores(run_id)
        assert cached is not None and cached.version == METRICS_VERSION
    # Scores deleted outright are computed from the events when next read.
    con = sqlite3.connect(db)
    con.execute("DELETE FROM scores")
    con.commit()
    con.close()
    with Store(db) as store:
        assert rows(store)[0]["hv_ratio"] == pytest.approx(fresh["hv_ratio"])


def _v1_database(path: Path) -> None:
    """A schema-1 database as nasfilter wrote it before trials: one REINFORCE run."""
    import zlib

    record = run_one(SPEC, 0)
    ev = record.events
    charged = np.isin(ev["kind"], ("evaluate", "proxy"))
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE provenance (id INTEGER PRIMARY KEY, kind TEXT NOT NULL,
            label TEXT NOT NULL, json TEXT NOT NULL, UNIQUE (kind, json));
        CREATE TABLE specs (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
            table_provenance INTEGER NOT NULL, oracle_provenance INTEGER NOT NULL);
        CREATE TABLE runs (id INTEGER PRIMARY KEY, spec_id INTEGER NOT NULL,
            seed INTEGER NOT NULL, status TEXT NOT NULL, best_index INTEGER,
            best_valid_acc REAL, wall_seconds REAL, searcher_config TEXT, filter_config TEXT,
            hv_ratio REAL);
        CREATE TABLE events (run_id INTEGER PRIMARY KEY, n INTEGER NOT NULL,
            "kind" BLOB, "index" BLOB, "value" BLOB, "throughput" BLOB, "seed" BLOB,
            "cost" BLOB, "clock" BLOB);
        """
    )
    table_prov, oracle_prov = provenance(SPEC)
    con.execute("INSERT INTO provenance VALUES (1, 'table', 't', ?)", (json.dumps(table_prov),))
    con.execute("INSERT INTO provenance VALUES (2, 'oracle', 'o', ?)", (json.dumps(oracle_prov),))
    con.execute("INSERT INTO specs VALUES (1, ?, 1, 2)", (SPEC.key(),))
    s = record.summary
    con.execute(
        "INSERT INTO runs VALUES (1, 1, 0, ?, ?, ?, 0.1, ?, ?, 0.123)",
        (record.status, s["best_index"], s["best_valid_acc"],
         json.dumps(record.info["searcher_config"]), json.dumps(record.info["filter_config"])),
    )  # fmt: skip
    dtypes = {"kind": "<u1", "index": "<i4", "value": "<f8", "throughput": "<f8",
              "seed": "<i4", "cost": "<f8", "clock": "<f8"}  # fmt: skip
    old = dict(ev, clock=ev["worker_seconds"])  # v1 named the worker-seconds "clock"
    old["value"] = np.where(ev["kind"] == "proxy", ev["utilization"], ev["accuracy"])
    cols = {k: old[k][charged] for k in dtypes}
    cols["kind"] = np.where(cols["kind"] == "evaluate", 0, 1)
    blobs = [zlib.compress(np.asarray(cols[k], dtype=d).tobytes()) for k, d in dtypes.items()]
    con.execute("INSERT INTO events VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)", (int(charged.sum()),
                *blobs))  # fmt: skip
    con.commit()
    con.close()


def test_an_old_schema_is_refused_untouched_then_migrated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nasfilter.cli import main

    db = tmp_path / "old.db"
    _v1_database(db)
    before = db.read_bytes()
    for create in (True, False):
        with pytest.raises(StoreError, match=r"schema version 1; .*nasfilter migrate-db --db"):
            Store(db, create=create)
    assert main(["compare", "--db", str(db)]) == 2
    assert "schema version 1" in capsys.readouterr().err
    assert db.read_bytes() == before  # never half-read, never altered
    assert main(["migrate-db", "--db", str(db)]) == 0
    assert "migrated 1 runs" in capsys.readouterr().out
    assert (tmp_path / "old.db.v1").read_bytes() == before  # the old file is kept
    with Store(db, create=False) as store:
        (row,) = rows(store)
    record = run_one(SPEC, 0)
    for name in ("hv_ratio", "recall", "selected_acc", "n_evaluations", "proxy_seconds"):
        assert row[name] == pytest.approx(record.metrics.get(name, record.summary.get(name)))
    assert row["best_index"] == record.summary["best_index"]
    with pytest.raises(StoreError, match=f"already has schema version {SCHEMA_VERSION}"):
        migrate(db)
