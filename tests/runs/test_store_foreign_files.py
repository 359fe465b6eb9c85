"""The results store never writes into another program's database, `compare` never sets up
or alters the file it reads, and a run stored first by another writer is counted as such."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from nasfilter.cli import main
from nasfilter.runs.experiment import RunSpec, provenance, run_one
from nasfilter.runs.storage.sqlite_store import Store, StoreError

SPEC = RunSpec("random", budget=5000.0, n_ticks=3)


def foreign_db(path: Path) -> bytes:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO customers (name) VALUES ('ada')")
    con.commit()
    con.close()
    return path.read_bytes()


def test_a_foreign_database_is_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "theirs.db"
    before = foreign_db(db)
    for create in (True, False):
        with pytest.raises(StoreError, match=r"not a nasfilter results database.*customers"):
            Store(db, create=create)
    assert db.read_bytes() == before
    assert not Path(f"{db}-wal").exists()  # the journal mode was not switched to WAL


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "--json"],
        ["compare"],
        ["run", "--searchers", "random", "--seeds", "0", "--budget", "1000", "--no-progress"],
    ],
)
def test_the_cli_refuses_a_foreign_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    db = tmp_path / "theirs.db"
    before = foreign_db(db)
    assert main([*argv, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"nasfilter {argv[0]}: error:" in err and "not a nasfilter results database" in err
    assert db.read_bytes() == before


def test_compare_reads_without_setting_anything_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    assert main(["compare", "--db", str(empty), "--json"]) == 2
    assert "holds no results" in capsys.readouterr().err
    assert empty.stat().st_size == 0  # no schema was written into it
    with pytest.raises(StoreError, match="does not exist"):
        Store(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()
    fresh = tmp_path / "fresh.db"
    Store(fresh).close()  # a results database with no run yet
    assert main(["compare", "--db", str(fresh), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_a_run_stored_first_by_another_writer_is_counted(tmp_path: Path) -> None:
    record = run_one(SPEC, 0)
    db = tmp_path / "r.db"
    with Store(db) as first, Store(db) as second:
        first.add_spec(SPEC, *provenance(SPEC))
        assert first.add_run(record) is not None and first.duplicates == 0
        assert second.add_run(record) is None
        assert second.duplicates == 1 and len(second.stored_runs()) == 1
