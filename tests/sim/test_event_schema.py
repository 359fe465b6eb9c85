"""The one event schema: kinds, named columns, the disk codec, and the schema-2 migration.

``tests/data/schema-v2.db`` was written by nasfilter before the event columns were renamed
(schema version 2: one ``value`` column for accuracy and utilization, ``clock`` for the
worker-seconds), with two runs: reinforce-mnas through proxy-threshold at K = 4 (3000
worker-seconds, roofline oracle, synthetic table, seed 0) and random alone (2000 s, seed 0).
"""

from __future__ import annotations

import shutil
import sqlite3
import zlib
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.surrogate import embedded_table
from nasfilter.oracle import proxy_table
from nasfilter.runs.experiment import RunSpec, run_one
from nasfilter.runs.results import load_results
from nasfilter.runs.storage.migration import migrate
from nasfilter.runs.storage.sqlite_store import SCHEMA_VERSION, Store, StoreError
from nasfilter.sim.events import COLUMNS, EVENT_COLUMNS, EVENT_KINDS, EventKind, from_disk, to_disk
from nasfilter.sim.problem import Budget, Problem

V2_DB = Path(__file__).parent.parent / "data" / "schema-v2.db"
V2_SPECS = (
    RunSpec(
        "reinforce-mnas", "proxy-threshold", budget=3000.0, table="synthetic",
        oracle="roofline", workers=4,
    ),
    RunSpec("random", budget=2000.0, table="synthetic", oracle="roofline"),
)  # fmt: skip


def test_kind_codes_are_the_documented_ones() -> None:
    # The codes on disk (docs/searchers.md): 0 evaluate, 1 proxy, 2 ask, 3 drop, 4 recommend,
    # 5 partial, 6 zerocost
    assert [(k.label, int(k)) for k in EventKind] == [
        ("evaluate", 0), ("proxy", 1), ("ask", 2), ("drop", 3), ("recommend", 4),
        ("partial", 5), ("zerocost", 6),
    ]  # fmt: skip
    assert EVENT_KINDS == (
        "evaluate", "proxy", "ask", "drop", "recommend", "partial", "zerocost"
    )  # fmt: skip


def test_no_column_means_two_things() -> None:
    assert EVENT_COLUMNS == (
        "kind", "trial", "index", "accuracy", "utilization", "throughput", "seed", "cost",
        "worker_seconds", "start", "end", "worker", "hp", "epochs", "proxy",
    )  # fmt: skip
    assert "value" not in EVENT_COLUMNS and "clock" not in EVENT_COLUMNS
    assert len({c.name for c in COLUMNS}) == len(COLUMNS)


def test_each_kind_fills_its_own_columns() -> None:
    table = embedded_table("cifar10")
    proxy = proxy_table("roofline", "v100", "cifar10")
    p = Problem(table, np.random.default_rng(0), Budget(10_000.0), proxy=proxy, proxy_cost=1.5)
    acc = p.evaluate(284)
    reading = p.query_proxy(7)
    p.record("recommend", -1, 284, acc)
    ev = p.log.arrays()
    assert ev["kind"].tolist() == ["evaluate", "proxy", "recommend"]
    assert ev["accuracy"][0] == acc and np.isnan(ev["utilization"][0])
    assert np.isnan(ev["accuracy"][1]) and ev["utilization"][1] == reading.utilization
    assert ev["throughput"][1] == reading.throughput == proxy.throughput[7]
    assert ev["accuracy"][2] == acc and ev["cost"][2] == 0.0
    cost = 12 * table.train_time[284] + table.valid_time[284]
    assert ev["worker_seconds"].tolist() == [cost, cost + 1.5, cost + 1.5]
    assert ev["start"].tolist() == [0.0, cost, cost + 1.5]  # wall clock, one worker
    with pytest.raises(ValueError, match="ask, drop or recommend"):
        p.record("evaluate", 0, 1)


def test_the_disk_codec_is_exact_with_several_workers() -> None:
    record = run_one(V2_SPECS[0], 1)
    ev = record.events
    assert not np.array_equal(ev["end"], ev["worker_seconds"])  # K = 4: the clocks differ
    raw = to_disk(ev)
    assert [len(b) for b in raw] == [len(ev["index"]) * np.dtype(c.disk).itemsize for c in COLUMNS]
    back = from_disk(len(ev["index"]), dict(zip(EVENT_COLUMNS, raw, strict=True)))
    assert list(back) == ["step", *EVENT_COLUMNS]
    for name, column in ev.items():
        np.testing.assert_array_equal(back[name], column, err_msg=name)
    bad = dict(zip(EVENT_COLUMNS, raw, strict=True), kind=bytes([9]) * len(ev["index"]))
    with pytest.raises(ValueError, match="unknown event kind"):
        from_disk(len(ev["index"]), bad)


def _v2_value_column(db: Path) -> np.ndarray:
    """The raw schema-2 ``value`` column of the first run, read without nasfilter."""
    con = sqlite3.connect(db)
    n, blob = con.execute('SELECT n, "value" FROM events ORDER BY run_id').fetchone()
    con.close()
    return np.frombuffer(zlib.decompress(blob), "<f8", count=n)


def test_a_schema_2_database_is_refused_then_migrated(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    shutil.copy(V2_DB, db)
    before = db.read_bytes()
    with pytest.raises(StoreError, match=r"schema version 2; .*nasfilter migrate-db --db"):
        Store(db, create=False)
    assert db.read_bytes() == before
    old_value = _v2_value_column(db)
    kept, n = migrate(db)
    assert n == 2 and kept.read_bytes() == before
    with Store(db, create=False) as store:
        runs = store.stored_runs()
        assert [(r.spec, r.seed) for r in runs] == [(s, 0) for s in V2_SPECS]
        events = [store.events(r.run_id) for r in runs]
        results = load_results(store)
    # A run is a pure function of its spec and seed: the old code's events are the current
    # code's, under the new column names; floats to the last few bits, which the CPU that
    # wrote the database may have computed otherwise (numpy's exp and log take other SIMD
    # paths with and without AVX-512, and the synthetic table's numbers use them).
    for spec, stored, result in zip(V2_SPECS, events, results, strict=True):
        fresh = run_one(spec, 0)
        assert list(stored) == list(fresh.events)
        for name, column in fresh.events.items():
            message = f"{spec.searcher} {name}"
            if column.dtype.kind == "f":
                np.testing.assert_allclose(stored[name], column, rtol=1e-12, err_msg=message)
            else:
                np.testing.assert_array_equal(stored[name], column, err_msg=message)
        assert result.metrics["hv_ratio"] == pytest.approx(fresh.metrics["hv_ratio"])
    first = events[0]
    proxy = first["kind"] == "proxy"
    assert proxy.any() and (~proxy).any()
    np.testing.assert_array_equal(first["utilization"][proxy], old_value[proxy])
    np.testing.assert_array_equal(first["accuracy"][~proxy], old_value[~proxy])
    with pytest.raises(StoreError, match=f"already has schema version {SCHEMA_VERSION}"):
        migrate(db)
