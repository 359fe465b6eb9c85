"""`nasfilter demo`: the peers on fewer seeds (--peer-seeds), run first across two processes
with one BLAS thread each, give the numbers of the same runs made one by one in-process."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from nasfilter.cli import main
from nasfilter.cli.demo import BLAS_THREADS, FRACTIONS, _at_fractions, _hv_at, _one_blas_thread
from nasfilter.runs.experiment import RunSpec, run_one
from nasfilter.runs.results import format_mean_se, tick_times
from nasfilter.runs.storage.sqlite_store import Store

BUDGET = 20_000.0


def _row(out: str, name: str) -> list[str]:
    line = next(x for x in out.splitlines() if x.startswith(f"{name} "))
    return re.split(r"\s{2,}", line.strip())


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_peers_run_on_fewer_seeds_and_match_single_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "demo.db"
    argv = ["demo", "--seeds", "0-1", "--peer-seeds", "1", "--budget", str(BUDGET)]
    assert main([*argv, "--jobs", "2", "--db", str(db), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "(the peers: the first 1)" in out and "The peers ran on the first 1 of the 2" in out
    # the seeds column: 2 for the study's searchers, 1 for each peer, all of them shown
    for name, seeds in (("random", "2"), ("evolution", "2"), ("model-based", "1")):
        assert _row(out, name)[1] == seeds, name
    with Store(db) as store:
        stored = {(r.spec.searcher, r.seed) for r in store.stored_runs()}
    assert ("model-based-hw", 0) in stored and ("model-based-hw", 1) not in stored
    assert ("reinforce-mnas", 1) in stored
    # A peer's HV ratio, as the same run made here, in this process, with its own BLAS threads.
    alone = run_one(RunSpec(searcher="model-based-hw", budget=BUDGET), 0)
    assert _row(out, "model-based-hw")[2] == format_mean_se(alone.metrics["hv_ratio"], 0.0, 3)


def test_one_blas_thread_only_with_several_processes_and_left_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in BLAS_THREADS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")  # the user's choice is kept
    with _one_blas_thread(2):
        assert os.environ["OMP_NUM_THREADS"] == os.environ["OPENBLAS_NUM_THREADS"] == "1"
        assert os.environ["MKL_NUM_THREADS"] == "3"
    assert "OMP_NUM_THREADS" not in os.environ and os.environ["MKL_NUM_THREADS"] == "3"
    with _one_blas_thread(1):  # one process: this one, whose BLAS is already set up
        assert "OMP_NUM_THREADS" not in os.environ


def test_peer_seeds_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--peer-seeds", "0"]) == 2
    assert "--peer-seeds: expected an integer >= 1, got 0" in capsys.readouterr().err


def test_curves_at_the_fractions_give_the_table_the_default_ticks_values() -> None:
    budget = 20_000.0
    assert np.array_equal(tick_times(budget, len(FRACTIONS)), np.asarray(FRACTIONS) * budget)
    for searcher in ("random", "reinforce-mnas"):
        spec = RunSpec(searcher=searcher, budget=budget)
        full = run_one(spec, 3)
        short = run_one(_at_fractions([spec])[0], 3)
        assert len(short.curves["clock"]) == len(FRACTIONS) < len(full.curves["clock"])
        at = [_hv_at(r.curves["clock"], r.curves["hv_ratio"], budget) for r in (full, short)]
        assert at[0] == at[1] and all(v is not None for v in at[0])
        assert short.metrics == full.metrics  # the metrics table: final values, no curve


@pytest.mark.subprocess
def test_the_demo_names_the_peers_it_left_out_for_a_missing_extra(tmp_path: Path) -> None:
    """With Optuna not importable (as in the core install), the demo runs without its peers
    and says which it left out and the extra that brings them in."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['optuna'] = None\n"  # find_spec('optuna') is None now
        "from nasfilter.cli import main\n"
        "sys.exit(main(['demo', '--seeds', '0', '--budget', '4000', '--jobs', '1',"
        " '--no-progress', '--table', 'synthetic']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.resolve().parent.parent)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert (
        "Left out: Optuna NSGA-II, Optuna random, because the 'optuna' extra is not installed"
        in done.stdout
    )
    assert "optuna-nsga2" not in done.stdout and "model-based-hw" in done.stdout


def test_cells_before_the_proxy_scan_ends_are_marked() -> None:
    from nasfilter.cli.demo import SCAN_NOTE, SCANNING, _hv_table

    budget = 110_000.0  # the scan of 32768 proxy queries at 2 s each ends at 65,536 s
    runs = [run_one(_at_fractions([RunSpec(searcher=s, budget=budget)])[0], 0)
            for s in ("utilization-pareto", "random")]
    lines = _hv_table(runs, budget)
    scan = re.split(r"\s{2,}", next(x for x in lines if x.startswith("utilization-pareto")))
    plain = re.split(r"\s{2,}", next(x for x in lines if x.startswith("random")))
    assert scan[1:3] == [f"0.000{SCANNING}"] * 2  # 27,500 and 55,000 s: still scanning
    assert not scan[3].endswith(SCANNING) and float(scan[3]) > 0.9  # 82,500 s: evaluating
    assert not any(cell.endswith(SCANNING) for cell in plain)  # no proxy: never marked
    assert lines[-1] == SCAN_NOTE and "proxy scan had not finished" in SCAN_NOTE
    assert _hv_table(runs[1:], budget)[-1] != SCAN_NOTE  # the note only with a mark
