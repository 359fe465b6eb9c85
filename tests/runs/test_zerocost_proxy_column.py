"""Which zero-cost proxy each ``zerocost`` event read: the ``proxy`` event column, its names
in the run's info, a store round trip, and databases written before the column existed
(built here with raw SQL and hand-packed blobs, not through the current store)."""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import zlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from nasfilter.cli import main
from nasfilter.cli.compare import proxy_counts, zerocost_lines
from nasfilter.runs.experiment import RunSpec, run_one
from nasfilter.runs.export import rows as export_rows
from nasfilter.runs.inputs import provenance
from nasfilter.runs.results import load_results
from nasfilter.runs.run_summary import UNNAMED_PROXY, zerocost_by_proxy
from nasfilter.runs.storage.sqlite_store import Store

ZC_SPEC = RunSpec(
    "random", "zerocost-frontiers[score=synflow]", dataset="cifar10", budget=2000.0,
    table="tss-real", oracle="measured", device="2080ti",
)  # fmt: skip
OLD_SPEC = ZC_SPEC  # a run with zero-cost queries, stored as before the proxy column

# The schema-3 tables as nasfilter wrote them before the proxy column (copied text, so that
# this test does not build the old database with the code under test).
OLD_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE provenance (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, label TEXT NOT NULL,
    json TEXT NOT NULL, UNIQUE (kind, json));
CREATE TABLE specs (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
    searcher TEXT NOT NULL, filter TEXT NOT NULL, dataset TEXT NOT NULL,
    budget REAL NOT NULL, proxy_cost REAL NOT NULL, table_path TEXT,
    oracle TEXT NOT NULL, device TEXT, oracle_cache TEXT,
    max_idle INTEGER NOT NULL, n_ticks INTEGER NOT NULL,
    workers INTEGER NOT NULL, budget_clock TEXT NOT NULL,
    table_provenance INTEGER NOT NULL REFERENCES provenance(id),
    oracle_provenance INTEGER NOT NULL REFERENCES provenance(id));
CREATE TABLE runs (id INTEGER PRIMARY KEY, spec_id INTEGER NOT NULL REFERENCES specs(id),
    seed INTEGER NOT NULL, status TEXT NOT NULL, info TEXT NOT NULL, created TEXT NOT NULL,
    UNIQUE (spec_id, seed));
CREATE TABLE events (run_id INTEGER PRIMARY KEY REFERENCES runs(id), n INTEGER NOT NULL,
    "kind" BLOB NOT NULL, "trial" BLOB NOT NULL, "index" BLOB NOT NULL,
    "accuracy" BLOB NOT NULL, "utilization" BLOB NOT NULL, "throughput" BLOB NOT NULL,
    "seed" BLOB NOT NULL, "cost" BLOB NOT NULL, "worker_seconds" BLOB NOT NULL,
    "start" BLOB NOT NULL, "end" BLOB NOT NULL, "worker" BLOB NOT NULL, "hp" BLOB NOT NULL,
    "epochs" BLOB NOT NULL);
CREATE TABLE scores (run_id INTEGER PRIMARY KEY REFERENCES runs(id), version INTEGER NOT NULL,
    summary TEXT NOT NULL, metrics TEXT NOT NULL, curve_names TEXT NOT NULL,
    curves BLOB NOT NULL);
"""
OLD_KINDS = ("evaluate", "proxy", "ask", "drop", "recommend", "partial", "zerocost")


def _old_blobs(ev: dict[str, np.ndarray]) -> list[bytes]:
    """The 14 old event columns packed by hand (numpy and zlib only): kind uint8; trial,
    index, seed int32; worker, hp, epochs int16; floats float64, ``end`` XOR the bits of
    ``worker_seconds`` and ``start`` XOR those of ``end - cost``."""
    bits = lambda x: np.asarray(x, dtype="<f8").view("<u8")  # noqa: E731
    kind = np.array([OLD_KINDS.index(k) for k in ev["kind"]], dtype="<u1")
    cols = [
        kind, ev["trial"].astype("<i4"), ev["index"].astype("<i4"),
        ev["accuracy"].astype("<f8"), ev["utilization"].astype("<f8"),
        ev["throughput"].astype("<f8"), ev["seed"].astype("<i4"), ev["cost"].astype("<f8"),
        ev["worker_seconds"].astype("<f8"),
        bits(ev["start"]) ^ bits(ev["end"] - ev["cost"]),
        bits(ev["end"]) ^ bits(ev["worker_seconds"]),
        ev["worker"].astype("<i2"), ev["hp"].astype("<i2"), ev["epochs"].astype("<i2"),
    ]  # fmt: skip
    return [zlib.compress(np.ascontiguousarray(c).tobytes(), 1) for c in cols]


def _old_database(path: Path, record: object) -> None:
    """A schema-3 database without the proxy column, holding ``record``'s run (seed 0)."""
    ev = record.events  # type: ignore[attr-defined]
    con = sqlite3.connect(path)
    con.executescript(OLD_SCHEMA)
    con.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    for i, (kind, data) in enumerate(
        zip(("table", "oracle"), provenance(OLD_SPEC), strict=True), 1
    ):
        text = json.dumps(data, sort_keys=True, default=str)
        con.execute("INSERT INTO provenance VALUES (?, ?, ?, ?)",
                    (i, kind, str(data.get("label", "")), text))  # fmt: skip
    s = OLD_SPEC
    con.execute(
        "INSERT INTO specs VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 2)",
        (s.key(), s.searcher, s.filter, s.dataset, float(s.budget.seconds), s.proxy_cost,
         s.table, s.oracle, s.device, s.oracle_cache, s.max_idle, s.n_ticks, s.workers,
         s.budget.clock),
    )  # fmt: skip
    info = {"searcher_config": {}, "filter_config": {}, "wall_seconds": 0.1}
    con.execute("INSERT INTO runs VALUES (1, 1, 0, ?, ?, '2026-12-01T00:00:00+00:00')",
                (record.status, json.dumps(info)))  # type: ignore[attr-defined]  # fmt: skip
    con.execute(f"INSERT INTO events VALUES (1, ?, {', '.join('?' * 14)})",
                (len(ev["kind"]), *_old_blobs(ev)))  # fmt: skip
    con.commit()
    con.close()


@pytest.fixture(scope="module")
def old_run() -> object:
    return run_one(OLD_SPEC, 0)


def _compare(db: Path, *flags: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["compare", "--db", str(db), *flags]) == 0
    return out.getvalue()


def test_a_zerocost_run_names_synflow_after_a_store_round_trip(tmp_path: Path, old_run) -> None:
    run = old_run
    assert run.record.info["zerocost_proxies"] == ["synflow"]
    ev = run.record.events
    is_zc = ev["kind"] == "zerocost"
    assert is_zc.sum() > 100  # the filter read the score of every scanned architecture
    assert set(ev["proxy"][is_zc].tolist()) == {0}
    assert set(ev["proxy"][~is_zc].tolist()) == {-1}
    with Store(tmp_path / "zc.db") as store:
        store.add_spec(ZC_SPEC, *provenance(ZC_SPEC))
        store.add_run(run)
    with Store(tmp_path / "zc.db", create=False) as store:
        (back,) = store.stored_runs()
        events = store.events(back.run_id)
    names = back.info["zerocost_proxies"]
    assert [names[c] for c in events["proxy"][events["kind"] == "zerocost"]] == ["synflow"] * int(
        is_zc.sum()
    )
    counts = zerocost_by_proxy(events, names)
    assert list(counts) == ["synflow"] and counts["synflow"]["n"] == int(is_zc.sum())
    assert counts["synflow"]["seconds"] == pytest.approx(float(ev["cost"][is_zc].sum()))
    with Store(tmp_path / "zc.db", create=False) as store:
        exported = export_rows(store, "events")
    assert [r["proxy_name"] for r in exported if r["kind"] == "zerocost"] == ["synflow"] * int(
        is_zc.sum()
    )
    assert {r["proxy_name"] for r in exported if r["kind"] != "zerocost"} == {""}
    (row,) = json.loads(_compare(tmp_path / "zc.db", "--json"))
    assert row["zerocost_proxies"] == counts
    text = _compare(tmp_path / "zc.db")
    assert f"zerocost-frontiers[score='synflow']: synflow {int(is_zc.sum())} a run" in text


def test_an_old_database_loads_compares_and_resumes_unchanged(tmp_path: Path, old_run) -> None:
    record = old_run.record
    db = tmp_path / "old.db"
    _old_database(db, record)
    before = db.read_bytes()
    with Store(db, create=False) as store:  # a reader: the file is left as it was
        (stored,) = store.stored_runs()
        events = store.events(stored.run_id)
        (scored,) = load_results(store)
    assert db.read_bytes() == before
    for name, column in record.events.items():  # every old column as it was written
        if name != "proxy":
            np.testing.assert_array_equal(events[name], column, err_msg=name)
    assert (events["proxy"] == -1).all()
    n_zc = int((events["kind"] == "zerocost").sum())
    assert n_zc > 100  # old zero-cost events: read, counted, naming no proxy
    (row,) = json.loads(_compare(db, "--json"))
    assert row["zerocost_proxies"] == {UNNAMED_PROXY: {"n": n_zc, "seconds": pytest.approx(
        float(events["cost"][events["kind"] == "zerocost"].sum()))}}  # fmt: skip
    assert scored.metrics == pytest.approx(old_run.metrics, nan_ok=True)
    assert scored.summary["n_evaluations"] == old_run.summary["n_evaluations"]
    # resuming: a writer adds the column (NULL in the old row) and stores a new run
    with Store(db) as store:
        store.add_spec(OLD_SPEC, *provenance(OLD_SPEC))
        assert store.add_run(run_one(OLD_SPEC, 1)) is not None
    con = sqlite3.connect(db)
    nulls = con.execute('SELECT run_id, "proxy" IS NULL FROM events ORDER BY run_id').fetchall()
    con.close()
    assert nulls == [(1, 1), (2, 0)]
    with Store(db, create=False) as store:
        runs = store.stored_runs()
        again = store.events(runs[0].run_id)
        new = store.events(runs[1].run_id)
        assert runs[1].info["zerocost_proxies"] == ["synflow"]
        assert set(new["proxy"][new["kind"] == "zerocost"].tolist()) == {0}
    for name, column in events.items():
        np.testing.assert_array_equal(again[name], column, err_msg=name)


def test_old_zerocost_events_count_under_no_name() -> None:
    ev = {"kind": np.array(["zerocost", "evaluate", "zerocost"]), "cost": np.array([0.5, 9, 0.25])}
    assert zerocost_by_proxy(ev, None) == {UNNAMED_PROXY: {"n": 2, "seconds": 0.75}}
    ev["proxy"] = np.array([1, -1, 0])
    assert zerocost_by_proxy(ev, ["synflow", "snip"]) == {
        "synflow": {"n": 1, "seconds": 0.25},
        "snip": {"n": 1, "seconds": 0.5},
    }
    assert zerocost_by_proxy({"kind": np.array(["evaluate"]), "cost": np.array([1.0])}) == {}


def test_compare_lines_name_the_proxy() -> None:
    rows = [
        {"searcher": "random", "filter": "z", "zerocost_seconds": 3.0, "n_zerocost": 10,
         "zerocost_proxies": {"synflow": {"n": 10, "seconds": 3.0}}},
        {"searcher": "random", "filter": "z", "zerocost_seconds": 1.0, "n_zerocost": 4,
         "zerocost_proxies": {"synflow": {"n": 4, "seconds": 1.0}}},
    ]  # fmt: skip
    assert zerocost_lines(rows) == [
        "zero-cost queries  random + z: synflow 7 a run, 2.0 s charged a run "
        "(modelled; not in proxy s)"
    ]


def test_compare_reads_the_events_of_a_run_that_named_two_proxies() -> None:
    asked: list[int] = []

    def events(run_id: int) -> dict[str, np.ndarray]:
        asked.append(run_id)
        return {
            "kind": np.array(["zerocost", "zerocost", "evaluate", "zerocost"]),
            "cost": np.array([0.25, 0.125, 100.0, 0.375]),
            "proxy": np.array([0, 1, -1, 1]),
        }

    store = SimpleNamespace(events=events)
    summary = {"n_zerocost": 3, "zerocost_seconds": 0.75}
    two = SimpleNamespace(  # listed without its events, as compare reads it
        run_id=7, summary=summary, info={"zerocost_proxies": ["synflow", "snip"]}, events={}
    )
    assert proxy_counts(two, store) == {
        "synflow": {"n": 1, "seconds": 0.25},
        "snip": {"n": 2, "seconds": 0.5},
    }
    assert asked == [7]
    one = SimpleNamespace(
        run_id=8, summary=summary, info={"zerocost_proxies": ["synflow"]}, events={}
    )
    assert proxy_counts(one, store) == {"synflow": {"n": 3, "seconds": 0.75}}
    assert asked == [7]  # one proxy: the summary's totals suffice, no events read
