"""Faults of multi-seed experiments as a user meets them: a killed parent leaves no worker
behind, a killed worker gives a clear CLI error (no traceback), absurd seed ranges and tables
without test accuracy are refused by name; and what a searcher is told is validation
accuracy only, through a handle that holds no path to the table."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nasfilter.cli import main
from nasfilter.cli.run import MAX_SEEDS, parse_seeds
from nasfilter.runs.experiment import RunSpec, WorkerDied, grid, inputs, run_experiment
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import Reinforce
from nasfilter.sim.problem import ProxyReading
from nasfilter.sim.proxy_handle import ProxyHandle
from nasfilter.sim.trial import Trial
from tests.runs.test_experiment import KILL_MARKER
from tests.tables import random_proxy, random_table

REPO = Path(__file__).parent.resolve().parents[1]

# A parent with one spawned pool worker that blocks; it prints the worker's pid.
ORPHAN_SCRIPT = """
import multiprocessing, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from nasfilter.runs.worker_process import worker_init

if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=worker_init)
    print(pool.submit(os.getpid).result(), flush=True)
    pool.submit(time.sleep, 120)
    time.sleep(120)
"""


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, exited but not reaped, counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "Z" not in state.split()[1]


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_worker_exits_when_its_parent_is_killed() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", ORPHAN_SCRIPT], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    try:
        assert alive(worker)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 20
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(worker), "the orphaned worker kept running after its parent died"
    finally:
        if alive(worker):
            os.kill(worker, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_killed_worker_is_a_clear_cli_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "kill-once"
    marker.touch()
    monkeypatch.setenv(KILL_MARKER, str(marker))
    db = tmp_path / "r.db"
    argv = ["run", "--searchers", "random", "tests.runs.test_experiment:Killer", "--seeds", "0-2",
            "--budget", "20000", "--db", str(db), "--jobs", "2", "--no-progress"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "nasfilter run: error: a worker process died" in err
    assert "run the same command again to resume" in err and "Traceback" not in err
    assert main(argv) == 0  # the marker is gone: the rerun completes the grid
    assert "the database holds 6 runs" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.subprocess
def test_without_a_store_a_killed_worker_says_nothing_was_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "kill-once"
    marker.touch()
    monkeypatch.setenv(KILL_MARKER, str(marker))
    specs = grid(["random", "tests.runs.test_experiment:Killer"], budget=20_000.0, n_ticks=3)
    with pytest.raises(WorkerDied, match="nothing was kept"):
        run_experiment(specs, [0, 1], jobs=2)


def test_an_absurd_seed_range_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert len(parse_seeds(f"0-{MAX_SEEDS - 1}")) == MAX_SEEDS
    with pytest.raises(ValueError, match="more than 100,000 seeds"):
        parse_seeds("0-99999999999999")
    code = main(["run", "--searchers", "random", "--seeds", "0-99999999999", "--db", "x.db"])
    assert code == 2 and "more than 100,000 seeds" in capsys.readouterr().err


def test_a_table_without_test_accuracy_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = random_table(4)
    test_acc = table.test_acc.copy()
    test_acc[::2] = np.nan
    path = dataclasses.replace(table, test_acc=test_acc).save(tmp_path / "t.npz")
    with pytest.raises(ValueError, match=r"lacks column 'test_acc'.* 16384 of 32768"):
        inputs(RunSpec("random", table=str(path)))
    db = tmp_path / "r.db"
    code = main(["run", "--searchers", "random", "--seeds", "0", "--table", str(path),
                 "--db", str(db), "--no-progress"])  # fmt: skip
    assert code == 2 and "lacks column 'test_acc'" in capsys.readouterr().err
    assert not db.exists()


class Told(Reinforce):
    """REINFORCE (MnasNet reward) that records every accuracy it is told."""

    def reset(self) -> None:
        super().reset()
        self.told: list[tuple[int, float | None]] = []

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        self.told.append((trial.arch.index, accuracy))
        super().observe(trial, accuracy)


def test_searchers_are_told_validation_accuracy_only() -> None:
    table, proxy = random_table(5), random_proxy(5)  # test and valid ranges differ
    searcher = Told(reward="mnas")
    result = run_search(searcher, make_problem(table, 30_000.0, 0, proxy=proxy))
    assert result.n_evaluations == len(searcher.told) > 10
    for index, accuracy in searcher.told:
        assert accuracy in table.valid_acc[index].tolist()
        assert accuracy != table.test_acc[index]
    # The handle searchers and filters hold answers proxy queries (hardware and zero-cost) and
    # the clock, and names the dataset (free, as the space is); nothing else.
    handle = searcher.proxy
    assert isinstance(handle, ProxyHandle) and not hasattr(handle, "__dict__")
    public = [n for n in dir(handle) if not n.startswith("_")]
    assert set(public) == {
        "available", "budget_seconds", "clock", "cost", "dataset", "exhausted",
        "fidelity_hps", "label", "max_epochs", "query", "query_many", "remaining", "require",
        "space", "worker_seconds",
        "query_zerocost", "zerocost_cost", "zerocost_coverage",  # zero-cost scores, charged
    }  # fmt: skip
    assert handle.space is table.space  # the search space: a value, no door to accuracy
    for name in ("available", "budget_seconds", "clock", "cost", "exhausted", "label"):
        assert isinstance(getattr(handle, name), (bool, float, str)), name
    fresh = ProxyHandle(make_problem(table, 100.0, 0, proxy=proxy))
    reading = fresh.query(284)
    assert reading == ProxyReading(proxy.utilization[284], proxy.throughput[284])
    assert fresh.clock == fresh.cost == 2.0  # charged


def test_the_normalization_is_the_documented_one() -> None:
    table, proxy, ref = inputs(RunSpec("random"))
    points = np.stack([table.test_acc, np.log10(proxy.throughput)], axis=1)
    best, worst = points.max(axis=0), points.min(axis=0)
    np.testing.assert_allclose(ref.norm.ideal, best)
    np.testing.assert_allclose(ref.norm.lower, worst - 0.01 * (best - worst))
    np.testing.assert_array_equal(ref.norm.reference, [0.0, 0.0])
