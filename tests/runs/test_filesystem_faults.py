"""Faults of files and processes, each reproduced with real files and real processes: files
lost or overwritten, read-only databases and caches, a huge budget, synthetic data passed off
as real, and messages that did not say what was wrong.

Read-only cases need an unprivileged process, since root ignores file modes: the CLI runs as
``nobody`` (``setpriv``), or, where ``nobody`` cannot read this Python, as root without the
two capabilities that let root ignore file modes. Without ``setpriv`` (as root) they skip.
"""

from __future__ import annotations

import configparser
import csv
import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.lookup import load_table
from nasfilter.bench.spaces.sss import N_ARCHS, Arch, arch_from_index
from nasfilter.cli import build_parser, main
from nasfilter.filters import FILTERS
from nasfilter.runs.runner import run_search
from nasfilter.searchers import SEARCHERS
from nasfilter.searchers.base import Searcher
from nasfilter.sim.problem import Budget, Problem
from tests.tables import random_table

REPO = Path(__file__).parent.resolve().parents[1]
FIXTURE = REPO / "tests" / "data" / "nats-sss" / "NATS-sss-v1_0-50262-simple"
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def make_db(path: Path, *extra: str, budget: str = "3000") -> Path:
    argv = ["run", "--searchers", "random", "--seeds", "0", "--budget", budget, "--db"]
    assert main([*argv, str(path), "--no-progress", "--jobs", "1", *extra]) == 0
    return path


def make_cache(path: Path) -> Path:
    argv = ["measure", "--backend", "roofline", "--archs", "sample:5", "--quiet"]
    assert main([*argv, "--cache", str(path)]) == 0
    return path


# ---------------------------------------------------------------- unprivileged processes
def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(PYTHONPATH=str(REPO), HOME=str(home), COLUMNS="200")
    return env


@pytest.fixture(scope="module")
def unprivileged() -> list[str]:
    """A command prefix under which file modes apply to the CLI."""
    if os.geteuid() != 0:
        return []  # an ordinary user: modes apply already
    if shutil.which("setpriv") is None:
        pytest.skip(
            "setpriv (util-linux) is not installed: as root, file modes are ignored, so a "
            "read-only file cannot be reproduced without dropping privileges"
        )
    probe = subprocess.run(
        [*NOBODY, sys.executable, "-c", "import nasfilter"],
        env=_env(Path("/tmp")),
        capture_output=True,
        timeout=60,
    )
    if probe.returncode == 0:
        return NOBODY
    # nobody cannot run this Python (installed under /root, say): stay root, without the
    # capabilities that let root write read-only files and folders.
    return NO_DAC


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder under /tmp that nobody may enter (pytest's tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="nasfilter-ro-", dir="/tmp"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        for p in [folder, *folder.rglob("*")]:
            if p.is_dir():
                p.chmod(0o777)
        shutil.rmtree(folder)


def run_as(prefix: list[str], *args: str, home: Path, timeout: float = 300) -> tuple[int, str]:
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "nasfilter", *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout + proc.stderr


def read_only(folder: Path, db: Path, folder_too: bool) -> None:
    db.chmod(0o444)
    if folder_too:
        folder.chmod(0o555)


# ------------------------------------------------------------------ bug 1: overwrites
def test_compare_never_writes_its_csv_over_its_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = make_db(tmp_path / "x.db")
    before = db.read_bytes()
    for force in ([], ["--force"]):
        code, _, err = cli("compare", "--db", str(db), "--csv", str(db), *force, capsys=capsys)
        assert code == 2 and "is the command's input --db" in err and "even with --force" in err
        assert db.read_bytes() == before
    code, out, _ = cli("compare", "--db", str(db), capsys=capsys)
    assert code == 0 and "random" in out  # still a readable database


def test_compare_refuses_an_existing_csv_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = make_db(tmp_path / "x.db")
    target = tmp_path / "notes.csv"
    target.write_text("my notes\n")
    code, _, err = cli("compare", "--db", str(db), "--csv", str(target), capsys=capsys)
    assert code == 2 and "already exists; pass --force" in err
    assert target.read_text() == "my notes\n"
    code, _, _ = cli("compare", "--db", str(db), "--csv", str(target), "--force", capsys=capsys)
    assert code == 0
    rows = list(csv.DictReader(target.open()))
    assert len(rows) == 1 and rows[0]["searcher"] == "random"


def test_outputs_never_replace_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = random_table(3).save(tmp_path / "t.npz")
    before = table.read_bytes()
    # run --db over its own --table
    argv = ["run", "--searchers", "random", "--seeds", "0", "--budget", "2000"]
    code, _, err = cli(*argv, "--table", str(table), "--db", str(table), capsys=capsys)
    assert code == 2 and "is the command's input --table" in err
    # measure --export over its own --cache
    cache = tmp_path / "c.npz"
    argv = ["measure", "--backend", "roofline", "--archs", "sample:3", "--cache", str(cache)]
    code, _, err = cli(*argv, "--export", str(cache), "--force", capsys=capsys)
    assert code == 2 and "is the command's input --cache" in err
    assert table.read_bytes() == before and not cache.exists()


@pytest.mark.slow
# ---------------------------------------------------- bugs 2-4: read-only files and folders
@pytest.mark.subprocess
def test_run_into_a_read_only_database_names_the_file(
    unprivileged: list[str], shared_dir: Path
) -> None:
    db = make_db(shared_dir / "r.db")
    read_only(shared_dir, db, folder_too=False)
    listing = sorted(p.name for p in shared_dir.iterdir())
    code, text = run_as(
        unprivileged,
        *("run", "--searchers", "random", "--seeds", "0-1", "--budget", "1000"),
        *("--db", str(db), "--no-progress"),
        home=shared_dir,
    )
    assert code == 2, text
    assert "Traceback" not in text
    assert f"cannot write to results database '{db}'" in text and "no write permission" in text
    assert sorted(p.name for p in shared_dir.iterdir()) == listing  # no -wal/-shm left


@pytest.mark.slow
@pytest.mark.subprocess
def test_run_into_a_read_only_folder_says_so(unprivileged: list[str], shared_dir: Path) -> None:
    db = make_db(shared_dir / "r.db")
    db.chmod(0o644)
    shared_dir.chmod(0o555)
    argv = ("run", "--searchers", "random", "--seeds", "0-1", "--budget", "1000")
    code, text = run_as(unprivileged, *argv, "--db", str(db), "--no-progress", home=Path("/tmp"))
    if unprivileged == NOBODY:  # nobody may not write root's 0644 file either
        assert code == 2 and "the file is read-only for this user" in text, text
    else:
        assert code == 2 and f"its folder '{shared_dir}' is not writable" in text, text
        assert "r.db-wal" in text
    assert "not a nasfilter" not in text and "Traceback" not in text
    new = shared_dir / "new.db"
    code, text = run_as(unprivileged, *argv, "--db", str(new), "--no-progress", home=Path("/tmp"))
    assert code == 2 and f"cannot create results database '{new}'" in text, text
    assert "no write permission" in text and not new.exists()


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_read_only_sqlite_side_file_is_named(unprivileged: list[str], shared_dir: Path) -> None:
    db = make_db(shared_dir / "r.db")
    shm = Path(f"{db}-shm")
    shm.write_bytes(b"")
    shm.chmod(0o444)  # left by a reader that could not remove it, say
    argv = ("run", "--searchers", "random", "--seeds", "1", "--budget", "1000", "--db", str(db))
    code, text = run_as(unprivileged, *argv, "--no-progress", home=Path("/tmp"))
    assert code == 2 and "Traceback" not in text, text
    if unprivileged != NOBODY:  # nobody is refused root's database itself first
        assert f"SQLite's file '{shm}' beside it is read-only" in text, text
    assert "not a nasfilter" not in text


@pytest.mark.subprocess
def test_measure_into_a_read_only_cache_names_the_file(
    unprivileged: list[str], shared_dir: Path
) -> None:
    cache = make_cache(shared_dir / "c.db")
    read_only(shared_dir, cache, folder_too=False)
    listing = sorted(p.name for p in shared_dir.iterdir())
    code, text = run_as(
        unprivileged,
        *("measure", "--backend", "roofline", "--archs", "sample:9", "--cache", str(cache)),
        home=shared_dir,
    )
    assert code == 2 and "Traceback" not in text, text
    assert f"cannot write to measurement cache '{cache}'" in text and "no write permission" in text
    assert sorted(p.name for p in shared_dir.iterdir()) == listing


@pytest.mark.subprocess
@pytest.mark.parametrize("folder_too", [False, True], ids=["file", "file-and-folder"])
def test_compare_reads_a_read_only_database(
    unprivileged: list[str], shared_dir: Path, folder_too: bool
) -> None:
    db = make_db(shared_dir / "r.db")
    read_only(shared_dir, db, folder_too)
    listing = sorted(p.name for p in shared_dir.iterdir())
    code, text = run_as(unprivileged, "compare", "--db", str(db), home=Path("/tmp"))
    assert code == 0, text
    assert "random" in text and "attempt to write" not in text
    assert sorted(p.name for p in shared_dir.iterdir()) == listing  # nothing left behind


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("cache", ["missing", "stale"])
def test_compare_scores_a_read_only_database_in_memory(
    unprivileged: list[str], shared_dir: Path, cache: str
) -> None:
    """compare would cache the scores it lacks (after a migration, or a metrics change);
    a read-only database is scored in memory instead, and left exactly as it was."""
    db = make_db(shared_dir / "r.db")
    code, before = run_as(unprivileged, "compare", "--db", str(db), "--json", home=Path("/tmp"))
    assert code == 0, before
    con = sqlite3.connect(db)
    if cache == "missing":
        con.execute("DELETE FROM scores")
    else:  # written by another metrics version, with other values
        con.execute("UPDATE scores SET version = version - 1, metrics = '{}'")
    con.commit()
    con.close()
    read_only(shared_dir, db, folder_too=True)
    content = db.read_bytes()
    code, text = run_as(unprivileged, "compare", "--db", str(db), "--json", home=Path("/tmp"))
    assert code == 0, text
    assert json.loads(text) == json.loads(before)  # the same numbers, computed afresh
    assert db.read_bytes() == content and sorted(p.name for p in shared_dir.iterdir()) == ["r.db"]
    # --recompute rewrites the cache: refused by name, with the missing permission
    code, text = run_as(unprivileged, "compare", "--db", str(db), "--recompute", home=Path("/tmp"))
    assert code == 2 and "Traceback" not in text, text
    assert str(db) in text and "no write permission" in text, text
    assert db.read_bytes() == content


def test_a_reading_store_never_writes_scores(tmp_path: Path) -> None:
    from nasfilter.runs.results import load_results
    from nasfilter.runs.storage.sqlite_store import Store, StoreError

    db = make_db(tmp_path / "r.db")
    with Store(db) as store:
        (cached,) = load_results(store)
    con = sqlite3.connect(db)
    con.execute("DELETE FROM scores")
    con.commit()
    con.close()
    with Store(db, create=False) as reader:
        assert reader.readonly
        (fresh,) = load_results(reader)  # scored in memory
        with pytest.raises(StoreError, match="opened read-only"):
            reader.put_scores(fresh.run_id, 1, fresh.summary, fresh.metrics, fresh.curves)
    assert fresh.metrics == cached.metrics
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM scores").fetchone() == (0,)
    con.close()
    with Store(db, create=False, readonly=False) as writer:  # compare --recompute
        load_results(writer, recompute=True)
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM scores").fetchone() == (1,)
    con.close()
    with pytest.raises(ValueError, match="both create"):
        Store(db, readonly=True)


@pytest.mark.subprocess
def test_a_read_only_oracle_cache_is_read(unprivileged: list[str], shared_dir: Path) -> None:
    cache = make_cache(shared_dir / "c.db")
    read_only(shared_dir, cache, folder_too=True)
    argv = ("show", "0", "--oracle", "roofline", "--oracle-cache", str(cache), "--json")
    code, text = run_as(unprivileged, *argv, home=Path("/tmp"))
    # sample:5 need not hold index 0; either way the cache was read, not refused
    assert code == 0, text
    assert '"oracle"' in text and sorted(p.name for p in shared_dir.iterdir()) == ["c.db"]


@pytest.mark.subprocess
def test_a_database_with_unsaved_changes_in_a_read_only_folder_is_refused_by_name(
    unprivileged: list[str], shared_dir: Path
) -> None:
    db = make_db(shared_dir / "r.db")
    # A writer that died left a -wal holding a committed run that the main file lacks.
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_autocheckpoint = 0")
    con.execute("INSERT INTO meta VALUES ('note', 'unsaved')")
    con.commit()
    wal = Path(f"{db}-wal")
    copy = {p.name: p.read_bytes() for p in (db, wal)}
    con.close()  # checkpoints: put the un-checkpointed files back
    for name, data in copy.items():
        (shared_dir / name).write_bytes(data)
    for p in shared_dir.iterdir():
        p.chmod(0o444)
    shared_dir.chmod(0o555)
    code, text = run_as(unprivileged, "compare", "--db", str(db), home=Path("/tmp"))
    assert code == 2 and f"cannot read results database '{db}'" in text, text
    assert "unsaved changes in r.db-wal" in text


@pytest.mark.slow
@pytest.mark.subprocess
def test_outputs_into_a_read_only_folder_name_flag_and_folder(
    unprivileged: list[str], shared_dir: Path, tmp_path: Path
) -> None:
    db = make_db(shared_dir / "r.db")
    db.chmod(0o444)
    out = shared_dir / "out"
    out.mkdir()
    out.chmod(0o555)
    cases = [
        (("compare", "--db", str(db), "--csv", f"{out}/r.csv"), "--csv"),
        (
            (
                "convert",
                str(FIXTURE),
                "--allow-partial",
                "--dataset",
                "cifar10",
                "-o",
                f"{out}/t.npz",
            ),
            "-o/--output",
        ),
        (("reproduce", "--out", f"{out}/study", "--seeds", "0", "--quiet"), "--out"),
    ]
    for argv, flag in cases:
        code, text = run_as(unprivileged, *argv, home=Path("/tmp"))
        assert code == 2 and "Traceback" not in text, text
        assert f"{flag} '{out}/" in text and f"the folder '{out}' is not writable" in text, text
        assert list(out.iterdir()) == []  # not even a temporary file


# --------------------------------------------------------------- bug 5: a huge budget
class Enumerate(Searcher):
    """Every architecture in index order, then the first again and again."""

    name = "enumerate"

    def reset(self) -> None:
        self._next = 0

    def propose(self) -> Arch:
        index = min(self._next, N_ARCHS)
        self._next += 1
        return arch_from_index(index % N_ARCHS)


class Same(Searcher):
    """Always the same architecture."""

    name = "same"

    def propose(self) -> Arch:
        return arch_from_index(7)


@pytest.fixture
def deadline() -> Iterator[None]:
    """Fail (rather than hang) a run that never stops: the bug these tests reproduce."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError("the run did not stop within 120 s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(120)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.usefixtures("deadline")
def test_a_run_stops_when_the_space_is_used_up() -> None:
    table = random_table(5)
    problem = Problem(table, np.random.default_rng(0), Budget(1e30))
    result = run_search(Enumerate(), problem, seed=0)
    assert result.status == "space-exhausted"
    assert result.n_evaluations == N_ARCHS and problem.clock < 1e30


@pytest.mark.usefixtures("deadline")
def test_a_run_stops_when_its_searcher_only_repeats() -> None:
    problem = Problem(random_table(5), np.random.default_rng(0), Budget(1e30))
    result = run_search(Same(), problem, seed=0, max_repeats=50)
    assert result.status == "converged" and result.n_evaluations == 51


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 4])
def test_a_bounded_trace_keeps_every_metric(workers: int) -> None:
    from nasfilter.oracle import proxy_table
    from nasfilter.runs.metrics import FrontReference
    from nasfilter.runs.results import run_summary, score_events, tick_times

    table = random_table(6)
    proxy = proxy_table("roofline", "v100", table.dataset)
    ref = FrontReference.build(table, proxy)
    results = {}
    for limit in (10**9, 300):
        problem = Problem(
            table, np.random.default_rng(1), Budget(2e6), proxy=proxy, trace_limit=limit
        )
        searcher = SEARCHERS.create("evolution")
        results[limit] = run_search(
            searcher, problem, filter=FILTERS.create("none"), seed=1, workers=workers
        )
    full, bounded = results[10**9], results[300]
    assert full.n_unlogged == 0 and bounded.n_unlogged > 1000
    assert len(bounded.events["index"]) + bounded.n_unlogged == len(full.events["index"])
    assert bounded.n_evaluations == full.n_evaluations and bounded.clock == full.clock
    assert bounded.best_index == full.best_index
    # What results compute from the stored events (and the counts the trace left out)
    times = tick_times(2e6, 50)
    metrics_full, curves_full = score_events(ref, table, full.events, times)
    metrics_bounded, curves_bounded = score_events(ref, table, bounded.events, times)
    assert metrics_bounded == metrics_full
    for name, curve in curves_full.items():
        if name != "n_evaluations":  # documented: counts the logged evaluations only
            np.testing.assert_array_equal(curves_bounded[name], curve, err_msg=name)
    summary_full = run_summary(full.events)
    summary_bounded = run_summary(bounded.events, bounded.unlogged)
    assert summary_bounded == pytest.approx(summary_full, rel=1e-12)
    assert summary_bounded["n_evaluations"] == full.n_evaluations


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_huge_budget_finishes_with_progress(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    start = time.monotonic()
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "nasfilter", "run", "--searchers", "random", "--seeds", "0"),
            *("--budget", "1e30", "--db", str(db), "--jobs", "1"),
        ],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,  # it grew memory for ever before
    )
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - start < 300
    assert "evaluations of" in proc.stderr and "architectures" in proc.stderr  # within a run
    proc = subprocess.run(
        [sys.executable, "-m", "nasfilter", "compare", "--db", str(db), "--json"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    # the count includes the evaluations the bounded trace left out
    assert row["status"] in ("converged", "space-exhausted")
    assert 32768 < row["n_evaluations"] < 2_000_000


# ---------------------------------------------------- bug 6: synthetic data stays labelled
def test_a_synthetic_table_keeps_its_label_through_the_nats_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("nats_bench", reason="the nats extra reads NATS archives")
    from nasfilter.testing.nats_archive import write_nats_archive

    surrogate = load_table("synthetic", "cifar10")
    assert surrogate.synthetic
    folder = write_nats_archive(surrogate, tmp_path, FIXTURE / "000000.pickle.pbz2", [0, 11, 284])
    out = tmp_path / "t.npz"
    argv = [
        "convert",
        str(folder),
        "--allow-partial",
        "--dataset",
        "cifar10",
        "--quiet",
        "-o",
        str(out),
    ]
    code, _, _ = cli(*argv, capsys=capsys)
    assert code == 0
    back = load_table(str(out), "cifar10")
    assert back.synthetic and back.provenance.label.startswith("SYNTHETIC")
    assert "NOT NATS-Bench's archive" in back.provenance.description
    code, text, _ = cli("show", "11", "--table", str(out), capsys=capsys)
    assert code == 0 and "SYNTHETIC" in text
    # The official archive carries no mark and converts as real data.
    real = tmp_path / "real.npz"
    code, _, _ = cli(
        "convert",
        str(FIXTURE),
        "--allow-partial",
        "--dataset",
        "cifar10",
        "--quiet",
        "-o",
        str(real),
        capsys=capsys,
    )
    assert code == 0 and not load_table(str(real), "cifar10").synthetic


# ------------------------------------------------------------------------ poor handling
@pytest.mark.parametrize("content", [b"meeting at 10\n", os.urandom(4096), b""])
def test_show_names_what_a_table_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(content)
    code, _, err = cli("show", "0", "--table", str(notes), capsys=capsys)
    assert code == 2 and "is not a nasfilter table" in err
    assert "the .npz file (a zip of arrays) that `nasfilter convert` writes" in err
    assert "allow_pickle" not in err and "unsafe" not in err


def test_missing_parent_folders_are_refused_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root_level = Path(f"/nasfilter-test-{uuid.uuid4().hex}")
    db = make_db(tmp_path / "x.db")
    missing = tmp_path / "missing"
    cases = [
        ("run", "--searchers", "random", "--seeds", "0", "--db", f"{root_level}/dir/r.db"),
        ("run", "--searchers", "random", "--seeds", "0", "--db", f"{missing}/r.db"),
        ("demo", "--seeds", "0", "--budget", "1000", "--db", f"{missing}/r.db"),
        ("measure", "--backend", "roofline", "--archs", "sample:3", "--cache", f"{missing}/c.db"),
        (
            "measure",
            *("--backend", "roofline", "--archs", "sample:3", "--cache", str(tmp_path / "c.db")),
            *("--export", f"{missing}/t.npz"),
        ),
        ("compare", "--db", str(db), "--csv", f"{missing}/r.csv"),
        (
            "convert",
            str(FIXTURE),
            "--allow-partial",
            "--dataset",
            "cifar10",
            "-o",
            f"{missing}/t.npz",
        ),
        ("reproduce", "--out", f"{missing}/study", "--seeds", "0"),
    ]
    for argv in cases:
        code, _, err = cli(*argv, capsys=capsys)
        flag = next(a for a in argv if a.startswith("-") and a in err)
        assert code == 2 and "does not exist; create it first" in err, (argv, err)
        assert flag in err
    assert not root_level.exists() and not missing.exists()
    assert not (tmp_path / "c.db").exists()


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["measure", "--backend", "roofline", "--archs", "sample:3", "--seed", "-1"], "--seed"),
        (["run", "--searchers", "random", "--jobs", "0"], "--jobs"),
        (["run", "--searchers", "random", "--budget", "nan"], "--budget"),
        (["run", "--searchers", "random", "--budget", "1e400"], "--budget"),
        (["run", "--searchers", "random", "--proxy-cost", "-1"], "--proxy-cost"),
        (["run", "--searchers", "random", "--dataset", "cifar11"], "--dataset"),
        (["run", "--searchers", "random", "--seeds", "x"], "--seeds"),
        (["reproduce", "--out", "o", "--jobs", "-2"], "--jobs"),
        (["measure", "--backend", "roofline", "--archs", "all", "--chunk-size", "0"], "--chunk"),
        (["measure", "--backend", "bogus", "--archs", "all"], "--backend"),
        (["measure", "--backend", "roofline", "--device", "nope", "--archs", "all"], "--device"),
        (["run", "--searchers", "random", "--device", "nope"], "--device"),
        (["run", "--searchers", "random", "--oracle", "bogus"], "--oracle"),
        (["run", "--searchers", "random", "--table", "/nonexistent.npz"], "--table"),
        (["run", "--searchers", ""], "--searchers"),
        (["run", "--searchers", "random", "--seeds", "99999999999999999999"], "--seeds"),
        (["show", "0", "--oracle", "bogus"], "--oracle"),
        (["show", "0", "--table", "/nonexistent.npz"], "--table"),
        (["show", "99999"], "ARCH"),
        (["reproduce", "--out", "o", "--device", "nope"], "--device"),
    ],
)
def test_argument_errors_name_their_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    target = "--cache" if argv[0] == "measure" else "--db"
    extra = [] if argv[0] in ("reproduce", "show") else [target, str(tmp_path / "x.db")]
    if argv[0] == "reproduce":
        argv = [a if a != "o" else str(tmp_path / "o") for a in argv]
    code, _, err = cli(*argv, *extra, capsys=capsys)
    assert code == 2 and flag in err and f"nasfilter {argv[0]}: error:" in err, err
    assert not (tmp_path / "x.db").exists() and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("argv", "listed"),
    [
        (
            ["run", "--searchers", "reinforce[bogus=1]"],
            ["lr=0.01: Adam learning rate, > 0", "momentum=0.9", "reward='accuracy'"],
        ),
        (
            ["run", "--searchers", "random", "--filters", "proxy-threshold[threshold=2]"],
            ["tolerance=0.05: relative slack (>= 0)", "scan=True"],
        ),
        (
            ["measure", "--backend", "roofline[bogus=1]", "--archs", "sample:3"],
            ["batch=1024: images per batch, a positive integer", "launch_overhead=3e-06"],
        ),
        (
            ["measure", "--backend", "calibrated[bogus=1]", "--archs", "sample:3"],
            ["calibration=None: a calibration file", "engine='fused'", "layout='nhwc'"],
        ),
        (["run", "--searchers", "random[depth=2]"], ["searcher 'random' takes no settings"]),
    ],
)
def test_a_bad_setting_lists_the_valid_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], listed: list[str]
) -> None:
    target = "--cache" if argv[0] == "measure" else "--db"
    code, _, err = cli(
        *argv,
        "--seeds" if argv[0] == "run" else "--seed",
        "0",
        target,
        str(tmp_path / "x.db"),
        capsys=capsys,
    )
    assert code == 2
    for text in listed:
        assert text in err, err


@pytest.mark.ray
@pytest.mark.subprocess
def test_an_unreachable_ray_address_fails_fast(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the ray extra")
    start = time.monotonic()
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "nasfilter", "measure", "--backend", "roofline"),
            *("--archs", "sample:3", "--cache", str(tmp_path / "c.db"), "--ray", "127.0.0.1:1"),
        ],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,  # it hung before
    )
    assert proc.returncode == 2, proc.stderr
    assert time.monotonic() - start < 60
    assert "--ray: cannot reach the Ray cluster at '127.0.0.1:1'" in proc.stderr
    assert len(proc.stderr.splitlines()) <= 3  # one clear error, not a flood of Ray's log


def test_compare_on_a_folder_says_it_is_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli("compare", "--db", str(tmp_path), capsys=capsys)
    assert code == 2 and "is a folder, not a results database" in err
    assert "does not exist" not in err


def test_csv_of_an_empty_database_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nasfilter.runs.storage.sqlite_store import Store

    db = tmp_path / "empty.db"
    Store(db).close()
    out = tmp_path / "r.csv"
    code, _, err = cli("compare", "--db", str(db), "--csv", str(out), capsys=capsys)
    assert code == 0 and not out.exists()
    assert "holds no runs yet, so no CSV was written" in err


def test_compare_tells_mixed_rows_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "mixed.db"
    make_db(db, budget="2000")
    make_db(db, budget="4000")
    make_db(db, "--dataset", "cifar100", budget="2000")
    code, out, _ = cli("compare", "--db", str(db), capsys=capsys)
    assert code == 0
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("method"))
    assert "dataset" in header and "budget s" in header
    rows = [line for line in lines if line.startswith("random")]
    assert len(rows) == 3 and len(set(rows)) == 3
    assert sorted(r.split()[1] for r in rows) == ["cifar10", "cifar10", "cifar100"]


def test_run_help_lists_every_searcher_and_filter() -> None:
    parser = build_parser()
    run_help = next(a for a in parser._actions if a.dest == "command").choices["run"].format_help()  # type: ignore[attr-defined]
    for registry in (SEARCHERS, FILTERS):
        for name, text in registry.describe().items():
            assert f"  {name}" in run_help and text in run_help


def test_version_comes_from_the_package_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    code, out, _ = cli("--version", capsys=capsys)
    assert code == 0 and out.strip() == f"nasfilter {config['metadata']['version']}"


def test_run_and_reproduce_default_to_the_same_jobs() -> None:
    parser = build_parser()
    run_args = parser.parse_args(["run", "--searchers", "random", "--db", "x.db"])
    rep_args = parser.parse_args(["reproduce", "--out", "o"])
    assert run_args.jobs is None and rep_args.jobs is None  # both: the CPUs


def test_readme_states_the_browser_requirement() -> None:
    readme = (REPO / "README.md").read_text()
    assert "needs one thing\nmore: **a headless Chromium**" in readme
    assert "needs root" in readme and "NASFILTER_CHROMIUM" in readme


def test_gpu_docs_say_which_code_runs_in_no_test() -> None:
    text = (REPO / "docs" / "oracle.md").read_text()
    assert "ran only against fakes" not in text
    section = text[text.index("**Run in no test at all**") :]
    for name in ("`load`", "`prepare`", "CUDA-graph capture", "`measure_gpu_peak`"):
        assert name in section[:600]


def test_an_oracle_cache_error_names_the_oracle_cache_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    code, _, err = cli(
        *("run", "--searchers", "random", "--seeds", "0", "--db", str(tmp_path / "r.db")),
        *("--oracle", "onnxruntime", "--oracle-cache", str(notes)),
        capsys=capsys,
    )
    assert code == 2 and "--oracle-cache" in err and "--cache path" not in err
    assert stat.S_IMODE(notes.stat().st_mode) and notes.read_text() == "hello\n"
