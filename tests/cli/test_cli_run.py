"""`nasfilter run`, `compare` and `demo` end to end: output, JSON, resume after Ctrl-C or a
killed process, plugins on the command line, and bad input."""

from __future__ import annotations

import dataclasses
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.table import Provenance
from nasfilter.cli import main
from nasfilter.cli.run import parse_seeds
from nasfilter.runs.experiment import grid, run_experiment
from nasfilter.runs.storage.sqlite_store import Store
from tests.interrupts import sigint_default
from tests.tables import random_table

REPO = Path(__file__).parent.resolve().parents[1]
NASFILTER = [sys.executable, "-m", "nasfilter"]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def stored_rows(store: Store) -> list[dict[str, Any]]:
    from nasfilter.runs.results import load_results

    return [r.row() for r in load_results(store)]


def test_run_then_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "r.db")
    args = ["run", "--searchers", "random,reinforce[reward='mnas']", "--filters", "none",
            "proxy-threshold[tolerance=0.1]", "--seeds", "0-1", "--budget", "70000",
            "--db", db, "--jobs", "1", "--no-progress"]  # fmt: skip
    code, _, err = run_cli(args, capsys)
    assert code == 0 and "real NATS-Bench accuracies" in err and "wrote 8 runs" in err
    code, _, err = run_cli(args, capsys)
    assert code == 0 and "wrote 0 runs" in err and "skipped 8 already stored" in err

    code, out, _ = run_cli(["compare", "--db", db, "--json"], capsys)
    rows = json.loads(out)
    assert code == 0 and len(rows) == 8
    with Store(db) as store:
        stored = stored_rows(store)
    for row, ref in zip(rows, stored, strict=True):
        assert {"searcher", "filter", "seed", "hv_ratio", "igd_plus", "epsilon", "recall",
                "best_acc", "proxy_seconds", "evaluation_seconds"} <= set(row)  # fmt: skip
        for key in ("searcher", "filter", "seed", "hv_ratio", "recall", "proxy_seconds"):
            assert row[key] == ref[key]
    assert {r["searcher"] for r in rows} == {"random", "reinforce[reward='mnas']"}
    # the real table scores NATS-Bench's hp-90 validation accuracy: no key or label says test
    assert {r["accuracy"] for r in rows} == {"hp-90 validation acc"}
    assert not any("test" in key for r in rows for key in r)

    code, out, _ = run_cli(["compare", "--db", db, "--csv", str(tmp_path / "r.csv")], capsys)
    assert code == 0 and "real NATS-Bench accuracies" in out and "SYNTHETIC" not in out
    assert "best hp-90 validation acc (%)" in out and "selected hp-90 validation acc" in out
    assert "test" not in out.replace("proxy-threshold", "")
    assert "calibrated v100" in out and "±" in out
    assert "(fit: timm-format measurements on rtx3090+rtx4090" in out  # the default's fit data
    assert "reinforce[reward='mnas'] | proxy-threshold[tolerance=0.1]" in out
    assert (tmp_path / "r.csv").read_text().count("\n") == 9


def test_plugins_run_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "r.db")
    searcher = f"{REPO}/examples/custom_searcher.py:LocalSearch[patience=20]"
    flt = f"{REPO}/examples/custom_filter.py:FastEnough"
    code, _, err = run_cli(["run", "--searchers", searcher, "--filters", flt, "--seeds", "0",
                            "--budget", "20000", "--db", db, "--no-progress"], capsys)  # fmt: skip
    assert code == 0, err
    with Store(db) as store:
        (row,) = stored_rows(store)
    assert row["n_evaluations"] > 0 and row["proxy_seconds"] > 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--searchers", "reinforcement"],
            "asha, bohb, evolution, hyperband, mo-asha, model-based, model-based-hw, "
            "model-based-mf, optuna-nsga2, optuna-random, optuna-tpe, optuna-tpe-hyperband, "
            "random",
        ),
        (["--searchers", "random", "--filters", "paretoo"], "known filters: drop-all, none"),
        (["--searchers", "random", "--seeds", ","], "--seeds ',' is empty"),
        (["--searchers", "random", "--seeds", "5-2"], "cannot read --seeds '5-2'"),
        (["--searchers", "random", "--budget", "0"], "argument --budget: expected a finite"),
        (["--searchers", "random", "--budget", "-3"], "argument --budget: expected a finite"),
        (["--searchers", "evolution[population_size=-1]"], "population_size must be"),
        (["--searchers", "reinforce[lr=0]"], "lr must be > 0"),
        (["--searchers", "reinforce[w=nan]"], "w must be finite"),
        (["--searchers", "random", "--jobs", "0"], "argument --jobs: expected an integer >= 1"),
        (["--searchers", "random", "--table", "missing.npz"], "does not exist"),
    ],
)
def test_bad_input_fails_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    db = tmp_path / "r.db"
    code, _, err = run_cli(["run", "--db", str(db), "--seeds", "0", *extra], capsys)
    assert code == 2 and message in err
    assert not db.exists()


def test_parse_seeds() -> None:
    assert parse_seeds("0-8") == list(range(9))
    assert parse_seeds("0,3, 5") == [0, 3, 5]
    assert parse_seeds("0-2,7") == [0, 1, 2, 7]
    with pytest.raises(ValueError, match="cannot read --seeds"):
        parse_seeds("a")


def count_runs(db: Path) -> int:
    try:
        con = sqlite3.connect(db, timeout=5)
        try:
            return int(con.execute("SELECT count(*) FROM runs").fetchone()[0])
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


# 80 runs: long enough (several seconds) that the run is still going when the test has seen
# two of them stored and signals it, even on a loaded machine (a run is ~0.1 s now)
N_SEEDS = 40
GRID = ["run", "--searchers", "random", "reinforce", "--seeds", f"0-{N_SEEDS - 1}"]
GRID += ["--budget", "110000"]


def start_run(db: Path, workers: int = 1) -> subprocess.Popen[str]:
    command = [*NASFILTER, *GRID, "--db", str(db), "--jobs", "1", "--no-progress"]
    command += ["--workers", str(workers)]
    return subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=sigint_default,  # Ctrl-C works even where pytest runs in the background
    )  # fmt: skip


def wait_for_runs(proc: subprocess.Popen[str], db: Path, n: int) -> None:
    deadline = time.monotonic() + 60
    while count_runs(db) < n:
        assert proc.poll() is None, "the run finished before it could be interrupted"
        assert time.monotonic() < deadline
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize(("sig", "workers"), [(signal.SIGINT, 1), (signal.SIGKILL, 4)])
def test_an_interrupted_run_resumes_without_loss(
    tmp_path: Path, sig: signal.Signals, workers: int
) -> None:
    db = tmp_path / "r.db"
    proc = start_run(db, workers)
    wait_for_runs(proc, db, 2)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and "interrupted" in err
    else:
        assert proc.returncode == -signal.SIGKILL
    with Store(db) as store:
        partial = stored_rows(store)
        assert 2 <= len(partial) < 2 * N_SEEDS
        assert store._con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for row in partial:
            scores = store.scores(row["run_id"])
            assert scores is not None and len(scores.curves["hv_ratio"]) == 100
            kinds = store.events(row["run_id"])["kind"]
            assert (kinds == "evaluate").sum() == row["n_evaluations"]
    command = [*NASFILTER, *GRID, "--db", str(db), "--jobs", "2", "--no-progress"]
    command += ["--workers", str(workers)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"skipped {len(partial)} already stored" in done.stderr
    with Store(db) as store:
        final = stored_rows(store)
    assert final[: len(partial)] == partial
    fresh = run_experiment(grid(["random", "reinforce"], workers=workers), range(N_SEEDS), jobs=1)
    expected = {(r.spec.searcher, r.seed): r.metrics["hv_ratio"] for r in fresh}
    assert {(r["searcher"], r["seed"]): r["hv_ratio"] for r in final} == pytest.approx(expected)


@pytest.mark.slow
def test_demo_prints_the_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        ["demo", "--seeds", "0-1", "--budget", "80000", "--jobs", "1", "--no-progress"], capsys
    )
    assert code == 0
    for name in ("utilization-pareto", "reinforce-mnas", "random", "evolution"):
        assert f"\n{name} " in out
    assert "table : real NATS-Bench accuracies (hp-90 x-valid, seed 777); modelled times" in out
    assert "SYNTHETIC" not in out
    assert "they score every run, since no real test accuracy ships" in out
    assert "oracle: calibrated v100" in out and "HV ratio" in out and "±" in out
    assert "(fit: timm-format measurements on rtx3090+rtx4090" in out  # the default's fit data


def test_a_converted_table_is_used_and_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = Provenance(synthetic=False, source=str(tmp_path / "NATS-sss-v1_0-50262-simple"))
    path = dataclasses.replace(random_table(7), provenance=real).save(tmp_path / "t.npz")
    db = tmp_path / "r.db"
    args = ["run", "--searchers", "random", "--seeds", "0", "--budget", "20000", "--db", str(db)]
    code, _, err = run_cli([*args, "--table", str(path), "--no-progress"], capsys)
    assert code == 0, err
    with Store(db) as store:
        (row,) = stored_rows(store)
        (run,) = store.stored_runs()
        prov = next(p for p in store.provenance() if p["kind"] == "table")
    assert row["table_label"] == "NATS-Bench archive NATS-sss-v1_0-50262-simple"
    assert run.spec.table == str(path) and prov["data"]["synthetic"] is False
    assert prov["data"]["path"] == str(path)

    present = np.zeros(32768, dtype=bool)
    present[:100] = True
    partial = random_table(7, present=present).save(tmp_path / "partial.npz")
    code, _, err = run_cli([*args, "--table", str(partial), "--no-progress"], capsys)
    assert code == 2 and "holds 100 of 32768 architectures" in err


def test_compare_json_carries_every_metric() -> None:
    from nasfilter.cli.compare import JSON_FIELDS
    from nasfilter.runs.metrics import METRICS

    assert set(METRICS) <= set(JSON_FIELDS)


def test_workers_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "r.db")
    base = ["run", "--searchers", "random,reinforce", "--filters", "none", "proxy-threshold",
            "--seeds", "0", "--budget", "70000", "--db", db, "--no-progress",
            "--jobs", "1"]  # fmt: skip
    for bad in ("0", "-2", "5000"):
        code, _, err = run_cli([*base, "--workers", bad], capsys)
        assert code == 2 and f"--workers must be from 1 to 4096 simulated workers, got {bad}" in err
    assert not Path(db).exists()
    code, _, err = run_cli([*base, "--workers", "4"], capsys)
    assert code == 0 and "4 simulated worker(s) per run" in err
    code, out, _ = run_cli(["compare", "--db", db, "--json"], capsys)
    rows = json.loads(out)
    assert len(rows) == 4 and {r["workers"] for r in rows} == {4}
    for r in rows:  # four at a time: the wall clock ends well before the worker-seconds
        assert r["worker_seconds"] >= 70_000 > 2 * r["clock"] or r["proxy_seconds"] > 0
    code, out, _ = run_cli(["compare", "--db", db, "--recompute"], capsys)
    assert code == 0 and "(K=4)" in out and "recomputed the metrics of 4 runs" in out
    again = json.loads(run_cli(["compare", "--db", db, "--json"], capsys)[1])
    assert again == rows
