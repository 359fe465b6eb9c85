"""The results database and every file a command writes, under faults and crafted input:
migrations with a ``-wal``, plugins named inside a database, outputs onto inputs, results
mixed across settings, decompression bombs, file names that are not UTF-8, damaged,
locked, unreadable and full databases, and CSV cells a spreadsheet would run.

Full disks are real: a small ``tmpfs`` (where this process may mount one, as root).
Read-only cases run the CLI unprivileged (``setpriv``), as in ``test_filesystem_faults``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nasfilter.cli import main
from nasfilter.runs.export import export_csv
from nasfilter.runs.storage.migration import migrate
from nasfilter.runs.storage.sqlite_store import Store, StoreError
from tests.runs.test_filesystem_faults import NOBODY, run_as, shared_dir, unprivileged
from tests.runs.test_store import _v1_database
from tests.tables import random_table

REPO = Path(__file__).parent.resolve().parents[1]
__all__ = ["shared_dir", "unprivileged"]  # fixtures shared with test_filesystem_faults


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def make_db(path: Path, *extra: str, seeds: str = "0", budget: str = "3000") -> Path:
    argv = ["run", "--searchers", "random", "--seeds", seeds, "--budget", budget, "--db"]
    assert main([*argv, str(path), "--no-progress", "--jobs", "1", *extra]) == 0
    return path


def nasfilter(*args: str | bytes, cwd: Path | None = None, shell_tail: str = "") -> tuple[int, str]:
    """The CLI in a fresh process: (exit status, stdout + stderr)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "nasfilter", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=300,
    )
    return proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", "backslashreplace")


def count(db: Path, table: str) -> int:
    con = sqlite3.connect(db)
    try:
        return int(con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        con.close()


def execute(db: Path, sql: str, params: tuple[object, ...] = ()) -> None:
    con = sqlite3.connect(db)
    con.execute(sql, params)
    con.commit()
    con.close()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs: a disk that really fills up."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("a full disk needs a small tmpfs, which only root may mount here")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)])
    if done.returncode != 0:
        pytest.skip("this sandbox cannot mount a tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` until ``leave`` bytes are free."""
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with open(disk / "filler", "wb") as fh:
        fh.write(b"\0" * max(0, free - leave))


# ---------------------------------------------------------------- bug 1: migrate-db
_HOLD_OPEN = """
import os, sqlite3, sys
sys.path.insert(0, {repo!r})
path = {path!r}
keep = sqlite3.connect(path)  # held open: no connection's close checkpoints the -wal
keep.execute("PRAGMA journal_mode=WAL")
keep.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # maps the -shm, as readers do
{body}
os._exit(0)
"""


def _in_wal(path: Path, body: str) -> None:
    script = _HOLD_OPEN.format(repo=str(REPO), path=str(path), body=body)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
    assert Path(f"{path}-wal").stat().st_size > 0


_SECOND_RUN = """
con = sqlite3.connect(path)
con.execute("INSERT INTO runs SELECT 2, spec_id, 1, status, best_index, best_valid_acc, "
            "wall_seconds, searcher_config, filter_config, hv_ratio FROM runs WHERE id = 1")
con.execute("INSERT INTO events SELECT 2, n, kind, \\"index\\", value, throughput, seed, cost, "
            "clock FROM events WHERE run_id = 1")
con.commit()
con.close()
"""


def _runs_in(path: Path) -> int:
    con = sqlite3.connect(path)  # reads the file with its own -wal, as SQLite pairs them
    try:
        return int(con.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    finally:
        con.close()


def test_migrate_keeps_the_run_that_is_only_in_the_wal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "old.db"
    _v1_database(db)
    _in_wal(db, _SECOND_RUN)
    code, out, err = cli("migrate-db", "--db", str(db), capsys=capsys)
    assert code == 0, err
    assert "migrated 2 runs" in out
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    assert _runs_in(db) == 2 and count(db, "events") == 2
    assert _runs_in(tmp_path / "old.db.v1") == 2  # the kept copy holds every run too
    code, out, err = cli("compare", "--db", str(db), capsys=capsys)
    assert code == 0, err
    assert "malformed" not in err and "2 " in out


@pytest.mark.slow  # test_migrate_keeps_the_run_that_is_only_in_the_wal covers it, faster
def test_migrate_a_database_whose_every_page_is_in_the_wal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "old.db"
    _in_wal(db, "from pathlib import Path\nfrom tests.runs.test_store import _v1_database\n"
            "_v1_database(Path(path))")  # fmt: skip
    alone = tmp_path / "main-only.db"
    shutil.copyfile(db, alone)
    assert count(alone, "sqlite_master") == 0  # the main file alone holds no table yet
    alone.unlink()
    code, out, err = cli("migrate-db", "--db", str(db), capsys=capsys)
    assert code == 0, err
    assert "migrated 1 runs" in out
    assert _runs_in(db) == 1
    with Store(db, create=False) as store:
        assert len(store.stored_runs()) == 1
    assert _runs_in(tmp_path / "old.db.v1") == 1


def test_migrate_never_deletes_a_users_migrating_file(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    _v1_database(db)
    before = db.read_bytes()
    mine = tmp_path / "old.db.migrating"
    mine.write_text("my notes")
    with pytest.raises(StoreError, match=r"old\.db\.migrating' exists.*never deletes"):
        migrate(db)
    assert mine.read_text() == "my notes" and db.read_bytes() == before
    assert not (tmp_path / "old.db.v1").exists()


def test_migrate_on_a_folder_says_it_is_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli("migrate-db", "--db", str(tmp_path), capsys=capsys)
    assert code == 2 and "is a folder" in err and "does not exist" not in err


@pytest.mark.parametrize("name", ["a#h.db", "b?q=1.db", "c%41.db"])
def test_migrate_quotes_database_paths_in_sqlite_uris(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    db = tmp_path / name
    _v1_database(db)
    code, out, err = cli("migrate-db", "--db", str(db), capsys=capsys)
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, f"{name}.v1"])
    code, out, err = cli("compare", "--db", str(db), capsys=capsys)
    assert code == 0 and "reinforce" in out, err


@pytest.mark.parametrize(("mode", "words"), [(0o444, "read-only"), (0o666, "another user")])
def test_migrate_does_not_replace_another_users_database_in_a_shared_folder(
    unprivileged: list[str], shared_dir: Path, mode: int, words: str
) -> None:
    if mode == 0o666 and unprivileged != NOBODY:
        pytest.skip("only another user than root can show the owner check")
    db = shared_dir / "old.db"
    _v1_database(db)
    db.chmod(mode)  # root's, in a folder everyone may write
    before, inode = db.read_bytes(), db.stat().st_ino
    code, text = run_as(unprivileged, "migrate-db", "--db", str(db), home=Path("/tmp"))
    assert code == 2 and "Traceback" not in text, text
    assert words in text and str(db) in text
    assert db.stat().st_ino == inode and db.read_bytes() == before and db.stat().st_uid == 0
    assert sorted(p.name for p in shared_dir.iterdir()) == ["old.db"]


# ------------------------------------------------- bug 2: no code run from a data file
def _craft_spec(db: Path, **fields: object) -> None:
    """Rewrite the spec of ``db``'s runs, as a hostile file would."""
    con = sqlite3.connect(db)
    (key,) = con.execute("SELECT key FROM specs").fetchone()
    con.execute("UPDATE specs SET key = ?", (json.dumps({**json.loads(key), **fields}),))
    con.commit()
    con.close()


def test_compare_never_imports_a_plugin_named_in_the_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = make_db(tmp_path / "crafted.db")
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').close()\nX = 1\n")
    _craft_spec(db, oracle=f"{evil}:X")
    execute(db, "DELETE FROM scores")  # computing them would need the oracle
    code, _, err = cli("compare", "--db", str(db), capsys=capsys)
    assert code == 2 and not marker.exists()
    assert f"{evil}:X" in err and "--trust-plugins" in err and "run 1" in err
    with Store(db, create=False) as store, pytest.raises(ValueError, match="trust_plugins"):
        export_csv(store, tmp_path / "r.csv")
    assert not marker.exists()
    cli("compare", "--db", str(db), "--trust-plugins", capsys=capsys)  # the user opts in
    assert marker.exists()


def test_stored_scores_of_a_plugin_oracle_run_are_read_without_importing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = make_db(tmp_path / "r.db")
    _craft_spec(db, oracle=f"{tmp_path / 'absent.py'}:X")
    code, out, err = cli("compare", "--db", str(db), capsys=capsys)
    assert code == 0 and "random" in out, err


def test_scoring_on_other_accuracies_never_imports_a_plugin_named_in_the_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import numpy as np

    db = make_db(tmp_path / "crafted.db")  # its scores stay cached: compare alone reads them
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').close()\nX = 1\n")
    _craft_spec(db, oracle=f"{evil}:X")
    acc = tmp_path / "acc.npy"
    np.save(acc, np.linspace(40.0, 90.0, 32768))
    for command in (("compare",), ("report", "--out", str(tmp_path / "report"))):
        code, _, err = cli(*command, "--db", str(db), "--score-with", str(acc), capsys=capsys)
        assert code == 2 and not marker.exists()
        assert f"{evil}:X" in err and "--trust-plugins" in err


# -------------------------------------------------- bug 3: never write onto an input
def test_export_csv_never_replaces_its_own_database(tmp_path: Path) -> None:
    db = make_db(tmp_path / "r.db")
    before = db.read_bytes()
    with Store(db, create=False) as store:
        for target in (db, Path(f"{db}-wal"), tmp_path / "." / "r.db"):
            with pytest.raises(ValueError, match="refusing to write over an input"):
                export_csv(store, target)
    assert db.read_bytes() == before
    with Store(db, create=False) as store:
        assert len(store.stored_runs()) == 1


def test_reproduce_never_writes_over_an_input_inside_its_out_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nasfilter.study.reproduce import check_out_dir

    out = tmp_path / "D"
    out.mkdir()
    cache = out / "metrics.csv"  # a file reproduce writes
    cache.write_bytes(b"the user's cache")
    args = ["reproduce", "--out", str(out), "--oracle-cache", str(cache), "--force"]
    code, _, err = cli(*args, "--oracle", "onnxruntime", "--quiet", capsys=capsys)
    assert code == 2 and "lies inside the output folder" in err and "even with --force" in err
    assert cache.read_bytes() == b"the user's cache"
    with pytest.raises(ValueError, match=r"--table .* lies inside"):
        check_out_dir(out, True, {"--table": out / "survey" / "t.npz"})
    assert check_out_dir(out, True, {"--table": tmp_path / "t.npz"}) == out


# --------------------------------------- bug 4: one row per experiment, a seed counted once
def _rows(out: str, method: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(method)]


def test_compare_keeps_runs_of_other_proxy_costs_and_oracles_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    make_db(db, "--proxy-cost", "0")
    make_db(db, "--proxy-cost", "50")
    make_db(db, "--oracle", "roofline")
    make_db(db, "--oracle", "roofline[batch=1]")
    code, out, err = cli("compare", "--db", str(db), capsys=capsys)
    assert code == 0, err
    header = next(line for line in out.splitlines() if line.startswith("method"))
    assert "proxy cost s" in header and "oracle spec" in header
    rows = _rows(out, "random")
    assert len(rows) == 4 and len(set(rows)) == 4
    end = header.index(" seeds") + len(" seeds")  # a right-aligned column
    assert [r[end - 6 : end].strip() for r in rows] == ["1"] * 4, rows


def _table(path: Path, seed: int) -> Path:
    random_table(seed).save(path)
    return path


def test_a_moved_table_counts_each_seed_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    first = _table(tmp_path / "t.npz", 1)
    make_db(db, "--table", str(first))
    moved = tmp_path / "moved.npz"
    first.rename(moved)
    make_db(db, "--table", str(moved), seeds="0-1")
    code, out, err = cli("compare", "--db", str(db), capsys=capsys)
    assert code == 0, err
    (row,) = _rows(out, "random")
    assert row.split()[1] == "2"  # seeds 0 and 1, not 0, 0 and 1
    assert "repeat a seed" in out


def test_resuming_after_the_table_changed_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    table = _table(tmp_path / "t.npz", 1)
    make_db(db, "--table", str(table))
    _table(table, 2)  # replaced in place: other numbers under the same name
    argv = ["run", "--searchers", "random", "--seeds", "0-1", "--budget", "3000"]
    code, _, err = cli(*argv, "--table", str(table), "--db", str(db), "--no-progress",
                       "--jobs", "1", capsys=capsys)  # fmt: skip
    assert code == 2 and "made with other inputs" in err and "content (sha256)" in err
    assert count(db, "runs") == 1


# ----------------------------------------------------------- bug 6: decompression bombs
def _bomb(size: int) -> bytes:
    """A zlib stream of ``size`` zero bytes, built a megabyte at a time (small in memory)."""
    deflater = zlib.compressobj(9)
    chunk = b"\0" * (1 << 20)
    parts = [deflater.compress(chunk) for _ in range(size >> 20)]
    return b"".join(parts) + deflater.flush()


def _peak_bytes(fn: object, *args: object) -> tuple[BaseException | None, int]:
    tracemalloc.start()
    try:
        fn(*args)  # type: ignore[operator]
        raised = None
    except BaseException as exc:
        raised = exc
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return raised, peak


def _load(db: Path) -> None:
    from nasfilter.runs.results import load_results

    with Store(db, create=False) as store:
        load_results(store)


@pytest.mark.slow
@pytest.mark.parametrize("column", ["events", "scores"])
def test_a_blob_that_inflates_past_its_stated_size_is_refused_in_bounded_memory(
    tmp_path: Path, column: str
) -> None:
    db = make_db(tmp_path / "bomb.db")
    bomb = _bomb(256 << 20)  # 256 MiB of zeros in about 250 KB
    if column == "events":
        execute(db, "DELETE FROM scores")
        execute(db, 'UPDATE events SET "accuracy" = ?', (bomb,))
    else:
        execute(db, "UPDATE scores SET curves = ?", (bomb,))
    raised, peak = _peak_bytes(_load, db)
    assert isinstance(raised, StoreError), raised
    assert "run 1" in str(raised) and "bomb.db" in str(raised)
    assert peak < 64 << 20, f"inflated {peak / 2**20:.0f} MiB"


def test_an_events_row_whose_count_does_not_match_its_blobs_is_refused(tmp_path: Path) -> None:
    db = make_db(tmp_path / "r.db")
    execute(db, "DELETE FROM scores")
    execute(db, "UPDATE events SET n = n - 1")
    with Store(db, create=False) as store, pytest.raises(StoreError, match=r"run 1.*bytes"):
        store.events(1)
    execute(db, "UPDATE events SET n = 1000000000000")
    with Store(db, create=False) as store, pytest.raises(StoreError, match="claims"):
        store.events(1)


@pytest.mark.slow
# ------------------------------------------------------ bug 7: names that are not UTF-8
@pytest.mark.parametrize("name", [b"bad\xff.db", "lat\u00e9.db".encode("latin-1")])
def test_database_names_that_are_not_utf8(tmp_path: Path, name: bytes) -> None:
    db = os.fsencode(tmp_path) + b"/" + name
    argv = ["run", "--searchers", "random", "--seeds", "0", "--budget", "2000"]
    code, text = nasfilter(*argv, "--no-progress", "--jobs", "1", "--db", db)
    assert code == 0, text
    assert os.path.exists(db)
    code, text = nasfilter("compare", "--db", db)
    assert code == 0 and "random" in text and "codec" not in text, text
    csv_path = os.fsencode(tmp_path) + b"/out\xfe.csv"
    code, text = nasfilter("compare", "--db", db, "--csv", csv_path, "--json")
    assert code == 0 and os.path.exists(csv_path), text


def test_an_out_folder_whose_name_is_not_utf8_gets_its_files(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from nasfilter.files import atomic_write
    from nasfilter.study.plots import save_figure
    from nasfilter.study.reproduce import check_out_dir

    out = Path(os.fsdecode(os.fsencode(tmp_path) + b"/out\xff"))
    assert check_out_dir(out, False) == out
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    files = save_figure(fig, out, "fig3")
    plt.close(fig)
    with atomic_write(out / "summary.json", "w") as fh:
        fh.write("{}")
    assert files.svg.exists() and (out / "summary.json").read_text() == "{}"
    assert os.fsencode(tmp_path) + b"/out\xff" in [os.fsencode(p) for p in tmp_path.iterdir()]


# ------------------------------------------------------ damaged and crafted databases
def _no_traceback(code: int, err: str) -> None:
    assert code == 2 and "Traceback" not in err and "error:" in err, err


def test_damaged_database_pages_are_named_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = make_db(tmp_path / "r.db", seeds="0-2")
    data = bytearray(db.read_bytes())
    keep = 6 * 4096  # the schema pages stay: the file opens, its rows do not read
    data[keep:] = b"\xa5" * (len(data) - keep)
    db.write_bytes(bytes(data))
    code, _, err = cli("compare", "--db", str(db), capsys=capsys)
    _no_traceback(code, err)
    assert str(db) in err
    argv = ["run", "--searchers", "random", "--seeds", "3", "--budget", "2000", "--db", str(db)]
    code, _, err = cli(*argv, "--no-progress", "--jobs", "1", capsys=capsys)
    _no_traceback(code, err)
    assert str(db) in err


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("UPDATE events SET \"accuracy\" = x'00112233'", "damaged"),
        ("UPDATE scores SET curves = x'00112233'", "damaged"),
        ("UPDATE scores SET curve_names = '[[\"clock\"], [5, 5]]'", "damaged"),
        ("UPDATE runs SET info = '{not json'", "corrupt"),
        ("UPDATE specs SET key = '{\"searcher\": 5}'", "corrupt"),
        ("DELETE FROM provenance", "lost its table and oracle provenance"),
    ],
)
def test_corrupt_rows_name_the_database_and_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sql: str, words: str
) -> None:
    db = make_db(tmp_path / "r.db")
    if "events" in sql:
        execute(db, "DELETE FROM scores")
    execute(db, sql)
    code, out, err = cli("compare", "--db", str(db), capsys=capsys)
    _no_traceback(code, err)
    assert words in err and "run 1" in err and str(db) in err, err
    assert "no runs yet" not in out


def test_a_read_only_store_refuses_writes_by_name(tmp_path: Path) -> None:
    from nasfilter.runs.experiment import RunSpec, provenance, run_one

    db = make_db(tmp_path / "r.db")
    spec = RunSpec("random", budget=1000.0, n_ticks=3)
    with Store(db, create=False) as store:
        with pytest.raises(StoreError, match=r"opened read-only.*run spec"):
            store.add_spec(spec, *provenance(spec))
        with pytest.raises(StoreError, match="opened read-only"):
            store.add_run(run_one(spec, 0))


def test_a_locked_database_is_called_locked(tmp_path: Path) -> None:
    db = make_db(tmp_path / "r.db")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="is locked by another program") as caught:
            Store(db, timeout=0.2)
        assert "not a nasfilter results database" not in str(caught.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_an_unreadable_database_says_read_permission(
    unprivileged: list[str], shared_dir: Path
) -> None:
    db = make_db(shared_dir / "r.db")
    db.chmod(0o000)
    code, text = run_as(unprivileged, "compare", "--db", str(db), home=Path("/tmp"))
    assert code == 2 and "Traceback" not in text, text
    assert "no read permission" in text and str(db) in text


def test_csv_cells_are_never_spreadsheet_formulas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import csv

    db = make_db(tmp_path / "r.db")
    _craft_spec(db, searcher="=HYPERLINK(1).py:X")  # a plugin file of that name
    out = tmp_path / "r.csv"
    code, _, err = cli("compare", "--db", str(db), "--csv", str(out), capsys=capsys)
    assert code == 0, err
    for path in (out, tmp_path / "export.csv"):
        if path.name == "export.csv":
            with Store(db, create=False) as store:
                export_csv(store, path)
        (row,) = csv.DictReader(path.open(encoding="utf-8"))
        assert row["searcher"] == "'=HYPERLINK(1).py:X"
        assert row["best_index"] == str(int(row["best_index"]))  # numbers stay numbers
    from nasfilter.files import csv_cell

    assert [csv_cell(v) for v in ("+1", "-x", "@a", "\tb", "\rc", "ok", -1)] == [
        "'+1", "'-x", "'@a", "'\tb", "'\rc", "ok", -1,
    ]  # fmt: skip


def test_compare_keeps_the_scores_it_computes_in_a_writable_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import nasfilter.runs.results as results

    db = make_db(tmp_path / "r.db", seeds="0-2")
    code, before, _ = cli("compare", "--db", str(db), "--json", capsys=capsys)
    execute(db, "DELETE FROM scores")  # as after migrate-db
    code, first, _ = cli("compare", "--db", str(db), "--json", capsys=capsys)
    assert code == 0 and json.loads(first) == json.loads(before)
    assert count(db, "scores") == 3

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("compare recomputed a score it had kept")

    monkeypatch.setattr(results, "score_spec_events", never)
    code, again, _ = cli("compare", "--db", str(db), "--json", capsys=capsys)
    assert code == 0 and json.loads(again) == json.loads(before)


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "--db", "{db}", "--csv", ""],
        ["demo", "--db", "", "--seeds", "0", "--budget", "1000"],
        ["reproduce", "--out", "", "--seeds", "0"],
        ["run", "--searchers", "random", "--db", ""],
        ["migrate-db", "--db", ""],
    ],
)
def test_empty_file_names_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    db = make_db(tmp_path / "r.db")
    listing = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = cli(*[a.format(db=db) for a in argv], capsys=capsys)
    assert code == 2 and "is empty; give a" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == listing


@pytest.mark.parametrize("flag", ["--db", "--csv", "--out"])
def test_a_symlink_loop_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    db = make_db(tmp_path / "r.db")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    argv = {
        "--db": ["compare", "--db", str(loop)],
        "--csv": ["compare", "--db", str(db), "--csv", str(loop)],
        "--out": ["reproduce", "--out", str(loop), "--seeds", "0"],
    }[flag]
    code, _, err = cli(*argv, capsys=capsys)
    assert code == 2 and "symbolic link loop" in err and flag in err, err
    assert loop.is_symlink()
    code, _, err = cli("run", "--searchers", "random", "--db", str(loop), capsys=capsys)
    assert code == 2 and "symbolic link loop" in err, err


def test_closed_standard_output_is_no_error(tmp_path: Path) -> None:
    db = make_db(tmp_path / "r.db")
    script = f'"{sys.executable}" -m nasfilter compare --db "{db}" >&-'
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


# ------------------------------------------------------------------------- full disks
def test_run_onto_a_full_disk_names_the_database_and_keeps_its_runs(
    small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = make_db(small_disk / "r.db")
    fill(small_disk, leave=8 << 10)
    argv = ["run", "--searchers", "random", "--seeds", "1-6", "--budget", "20000"]
    code, _, err = cli(*argv, "--db", str(db), "--no-progress", "--jobs", "1", capsys=capsys)
    _no_traceback(code, err)
    assert str(db) in err and "disk may be full" in err
    assert "cannot rollback" not in err and "not a nasfilter results database" not in err
    (small_disk / "filler").unlink()
    with Store(db, create=False) as store:
        assert 0 in {run.seed for run in store.stored_runs()}  # what was stored is intact


def test_a_new_database_on_a_nearly_full_disk_says_disk(
    small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(small_disk, leave=24 << 10)
    argv = ["run", "--searchers", "random", "--seeds", "0-3", "--budget", "20000"]
    db = small_disk / "new.db"
    code, _, err = cli(*argv, "--db", str(db), "--no-progress", "--jobs", "1", capsys=capsys)
    _no_traceback(code, err)
    assert "disk may be full" in err and "not a nasfilter results database" not in err


def test_measure_onto_a_full_disk_names_the_cache(
    small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = small_disk / "c.db"
    fill(small_disk, leave=4 << 10)
    argv = ["measure", "--backend", "roofline", "--archs", "sample:400", "--quiet"]
    code, _, err = cli(*argv, "--cache", str(cache), capsys=capsys)
    _no_traceback(code, err)
    assert str(cache) in err and "disk is full" in err
    assert "cannot rollback" not in err and "may be corrupt" not in err
    assert not cache.exists() or cache.stat().st_size > 0  # no empty cache left behind


def test_compare_csv_onto_a_full_disk_names_the_file(
    tmp_path: Path, small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = make_db(tmp_path / "r.db", seeds="0-5")
    fill(small_disk, leave=0)
    out = small_disk / "r.csv"
    code, _, err = cli("compare", "--db", str(db), "--csv", str(out), capsys=capsys)
    _no_traceback(code, err)
    assert str(out) in err and "disk is full" in err
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]  # no part of a file


def test_a_figure_onto_a_full_disk_is_named_and_never_truncated(small_disk: Path) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from nasfilter.study.plots import save_figure

    fig, ax = plt.subplots()
    ax.plot(np.arange(20_000), np.random.default_rng(0).random(20_000))
    fill(small_disk, leave=16 << 10)
    with pytest.raises(OSError, match=r"fig3\.(png|svg).*disk is full"):
        save_figure(fig, small_disk, "fig3")
    plt.close(fig)
    left = {p.name for p in small_disk.iterdir()}
    assert left <= {"filler", "fig3.png"}, left  # no truncated fig3.svg, no temporary file
    if "fig3.png" in left:  # written whole before the disk filled
        assert (small_disk / "fig3.png").read_bytes().endswith(b"IEND\xaeB`\x82")


def test_inputs_that_only_look_different_do_not_block_a_resume() -> None:
    from nasfilter.runs.storage.base import changed_inputs

    old = {"rms": float("nan"), "shape": [3, 4], "label": "t", "sha256": "ab"}
    assert changed_inputs(old, {**old, "shape": (3, 4), "new_field": 1}) == []
    (change,) = changed_inputs(old, {**old, "sha256": "cd"})
    assert "content (sha256)" in change and "'ab'" in change and "'cd'" in change
