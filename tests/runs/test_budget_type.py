"""One budget type (:class:`nasfilter.sim.clock.Budget`): seconds, the clock they count and
an evaluation cap, for the simulator and a run spec alike; the older spellings
(``Budget(None, wall_seconds=)``, ``RunSpec(budget=, budget_clock=)``) and stored keys."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from nasfilter.cli import main
from nasfilter.runs.experiment import RunSpec, run_experiment, run_one
from nasfilter.runs.results import load_results
from nasfilter.runs.storage.sqlite_store import Store
from nasfilter.sim.clock import Budget

# Keys as nasfilter wrote them before the Budget type: budget a number, budget_clock beside
# it (left out when "worker").
OLD_WALL_KEY = (
    '{"budget": 20000.0, "budget_clock": "wall", "dataset": "cifar10", "device": "v100", '
    '"filter": "none", "max_idle": 10000, "n_ticks": 100, "oracle": "roofline", '
    '"oracle_cache": null, "proxy_cost": 2.0, "searcher": "random", "table": "synthetic", '
    '"workers": 4}'
)
OLD_WORKER_KEY = (
    '{"budget": 3000.0, "dataset": "cifar10", "device": "v100", "filter": "proxy-threshold", '
    '"max_idle": 10000, "n_ticks": 100, "oracle": "roofline", "oracle_cache": null, '
    '"proxy_cost": 2.0, "searcher": "reinforce-mnas", "table": "synthetic", "workers": 4}'
)


def test_an_old_key_reads_back_as_one_budget_and_writes_the_same_key() -> None:
    wall = RunSpec.from_key(OLD_WALL_KEY)
    assert wall.budget == Budget(20000.0, clock="wall") and wall.workers == 4
    assert wall.key() == OLD_WALL_KEY  # the same stored runs: resume and compare still match
    worker = RunSpec.from_key(OLD_WORKER_KEY)
    assert worker.budget == Budget(3000.0) and worker.budget.clock == "worker"
    assert worker.key() == OLD_WORKER_KEY


def test_an_evaluation_cap_is_part_of_the_spec_and_its_key() -> None:
    spec = RunSpec("random", budget=Budget(50_000.0, max_evaluations=3), table="synthetic",
                   oracle="roofline")  # fmt: skip
    key = json.loads(spec.key())
    assert key["budget"] == 50_000.0 and key["max_evaluations"] == 3
    assert "budget_clock" not in key  # worker-seconds, the default, as before
    assert RunSpec.from_key(spec.key()) == spec
    assert spec != RunSpec("random", budget=50_000.0, table="synthetic", oracle="roofline")
    run = run_one(spec, 0)
    assert run.summary["n_evaluations"] == 3 and run.status == "budget"


def test_the_older_spellings_keep_working() -> None:
    assert Budget(None, wall_seconds=500.0) == Budget(500.0, clock="wall")
    assert Budget(500.0, clock="wall").wall_seconds == 500.0
    assert Budget(500.0).worker_seconds == 500.0 and Budget(500.0).wall_seconds is None
    spec = RunSpec("random", budget=7000.0, budget_clock="wall")
    assert spec.budget == Budget(7000.0, clock="wall") and spec.budget_clock == "wall"
    assert spec == RunSpec("random", budget=Budget(7000.0, clock="wall"))
    assert f"{spec.budget:g} {spec.budget_clock}-seconds" == "7000 wall-seconds"
    assert float(spec.budget) == 7000.0 and spec.make_budget() is spec.budget
    assert RunSpec("random").budget_clock == "worker"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Budget(500.0, wall_seconds=600.0), r"one clock.*clock='wall'"),
        (lambda: Budget(500.0, None, 600.0), r"clock must be one of.*clock='wall'"),
        (lambda: Budget(None), r"needs seconds"),
        (lambda: Budget(500.0, clock="cpu"), r"'cpu'"),
        (lambda: Budget(-1.0), r"budget seconds must be finite and > 0, got -1.0"),
        (lambda: RunSpec("random", budget=Budget(5.0), budget_clock="wall"), r"counts worker"),
        (lambda: RunSpec("random", budget="5"), r"number of seconds or a Budget, got '5'"),
        (lambda: RunSpec("random", budget=5.0, budget_clock="cpu"), r"budget_clock.*'cpu'"),
    ],
)
def test_a_bad_budget_is_refused_by_name(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]


def test_a_budget_is_not_compared_as_a_number() -> None:
    with pytest.raises(TypeError, match=r"compare budget\.seconds"):
        assert Budget(5.0) < 6.0


def test_a_stored_wall_clock_run_keeps_the_old_fields(tmp_path: Path) -> None:
    spec = RunSpec("random", budget=Budget(4000.0, clock="wall"), table="synthetic",
                   oracle="roofline", workers=2)  # fmt: skip
    db = tmp_path / "r.db"
    with Store(db) as store:
        run_experiment([spec], [0], store=store, jobs=1, progress=False)
    con = sqlite3.connect(db)
    [(key, budget, clock)] = con.execute("SELECT key, budget, budget_clock FROM specs")
    con.close()
    assert (budget, clock) == (4000.0, "wall")
    assert '"budget": 4000.0' in key and '"budget_clock": "wall"' in key
    with Store(db) as store:
        [run] = load_results(store)
    assert run.spec.budget == Budget(4000.0, clock="wall")
    assert (run.row()["budget"], run.row()["budget_clock"]) == (4000.0, "wall")


def test_the_cli_budget_flags_make_one_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    argv = ["run", "--searchers", "random", "--seeds", "0", "--budget", "3000",
            "--budget-clock", "wall", "--workers", "2", "--table", "synthetic",
            "--oracle", "roofline", "--db", str(db), "--jobs", "1", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    assert "3000 simulated wall-seconds each" in capsys.readouterr().err
    with Store(db) as store:
        [run] = load_results(store)
    assert run.spec.budget == Budget(3000.0, clock="wall") and run.spec.workers == 2
