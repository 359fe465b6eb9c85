"""How run_grids starts its workers: forked on Linux from a single-threaded process,
spawned otherwise; either way the same runs."""

from __future__ import annotations

import multiprocessing
import sys
import threading

import pytest

from nasfilter.runs import experiment, worker_process
from nasfilter.runs.experiment import RunSpec, pool_context, run_experiment


@pytest.mark.skipif(sys.platform != "linux", reason="fork is used on Linux only")
def test_a_single_threaded_linux_process_forks_and_a_threaded_one_spawns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in worker_process.FORK_UNSAFE:  # earlier tests of this process may have imported them
        monkeypatch.delitem(sys.modules, name, raising=False)
    before = pool_context().get_start_method()
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait, daemon=True)
    helper.start()
    try:
        assert pool_context().get_start_method() == "spawn"  # a real second thread
    finally:
        stop.set()
        helper.join()
    assert before == ("fork" if threading.active_count() == 1 else "spawn")
    monkeypatch.setattr(worker_process.threading, "active_count", lambda: 1)
    assert pool_context().get_start_method() == "fork"
    monkeypatch.setitem(sys.modules, "torch", sys.modules["threading"])  # as if imported
    assert pool_context().get_start_method() == "spawn"  # its thread pool rules out a fork
    monkeypatch.delitem(sys.modules, "torch")
    assert pool_context().get_start_method() == "fork"
    monkeypatch.setattr(worker_process.sys, "platform", "darwin")
    assert pool_context().get_start_method() == "spawn"  # macOS: fork is unsafe there


@pytest.mark.slow
@pytest.mark.subprocess
def test_forked_and_spawned_workers_give_identical_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    specs = [
        RunSpec("random", "successive-frontiers", budget=60_000.0, n_ticks=8),
        RunSpec("evolution", budget=30_000.0, n_ticks=8),
    ]
    forked = run_experiment(specs, [0, 1], jobs=2)
    monkeypatch.setattr(experiment, "pool_context", lambda: multiprocessing.get_context("spawn"))
    spawned = run_experiment(specs, [0, 1], jobs=2)
    assert len(forked) == len(spawned) == 4
    assert all(x.same_results(y) for x, y in zip(forked, spawned, strict=True))
