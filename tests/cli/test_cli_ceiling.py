"""`nasfilter ceiling`: the clairvoyant ceiling of a table and oracle, checked against the
shipped tss table's own costs and moocore's non-dominated filter (an independent library)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.tss_real import tss_table
from nasfilter.cli import main
from nasfilter.oracle.measured import measured_proxy


def _ceiling(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["ceiling", *argv, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_tss_imagenet_sets_fit_their_budgets_and_the_hp12_front_is_its_best_set(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import moocore

    out = _ceiling(capsys, "--space", "tss", "--dataset", "ImageNet16-120",
                   "--budget", "4000", "20000", "30000")  # fmt: skip
    table = tss_table("ImageNet16-120")
    cost = table.eval_cost
    assert out["accuracy"] == "hp-200 validation acc, seed mean"
    rows = out["budgets"]
    assert isinstance(rows, list) and [r["budget"] for r in rows] == [4000, 20000, 30000]
    for r in rows:
        assert r["lower"] <= r["upper"] <= 1.0
        assert r["chosen_seconds"] == pytest.approx(cost[r["chosen"]].sum())
        assert cost[r["chosen"]].sum() <= r["budget"]
    assert rows[0]["lower"] <= rows[1]["lower"] <= rows[2]["lower"]
    # The whole true front costs 27,942 s: within 30,000 s the ceiling is exactly 1.
    assert out["true_front_seconds"] == pytest.approx(cost[out["true_front"]].sum())
    assert out["true_front_seconds"] < 30_000
    assert rows[2]["lower"] == 1.0
    # The best set by hp 12 is hp 12's front of (hp-12 accuracy, measured throughput) once it
    # fits: moocore's non-dominated filter on the table's hp-12 column and HELP's latency.
    thr = measured_proxy("2080ti", 256).throughput
    points = np.stack([table.valid_acc[:, 0], thr], axis=1)
    front = np.flatnonzero(moocore.is_nondominated(points, maximise=True))
    assert cost[front].sum() <= 20_000
    assert sorted(rows[1]["observed_best_set"]) == front.tolist()
    at_least, at_most = out["seconds_to_reach"]
    assert 4000 < at_least <= at_most < 20_000
    assert rows[0]["upper"] < 0.99  # 4,000 s is below what any set needs


def test_the_seconds_to_reach_bracket_the_budget_where_the_target_is_first_met(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ("--space", "tss", "--dataset", "cifar100", "--target", "0.99")
    at_least, at_most = _ceiling(capsys, *base)["seconds_to_reach"]
    short = _ceiling(capsys, *base, "--budget", str(at_least - 1))["budgets"][0]
    enough = _ceiling(capsys, *base, "--budget", str(at_most))["budgets"][0]
    assert short["upper"] < 0.99 <= enough["lower"]


def test_with_a_last_evaluation_overrunning_the_sets_fit_less_their_largest_cost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ("--space", "tss", "--dataset", "ImageNet16-120", "--budget", "3000", "20000")
    plain = _ceiling(capsys, *base)
    over = _ceiling(capsys, *base, "--last-may-overrun")
    assert over["last_may_overrun"] is True and plain["last_may_overrun"] is False
    cost = tss_table("ImageNet16-120").eval_cost
    for r, p in zip(over["budgets"], plain["budgets"], strict=True):
        c = cost[r["chosen"]]
        assert c.sum() - c.max() <= r["budget"] < c.sum() or r["lower"] == 1.0
        assert r["lower"] >= p["lower"]
    # at 3,000 s the overrunning evaluation is worth something: more than the plain bound
    assert over["budgets"][0]["lower"] > plain["budgets"][0]["upper"]
    assert over["seconds_to_reach"][1] < plain["seconds_to_reach"][0]
    assert main(["ceiling", *base, "--last-may-overrun"]) == 0
    text = capsys.readouterr().out
    assert "a set fits when its costs less the largest fit" in text
    assert "needs a budget of" in text


def test_text_output_names_inputs_and_the_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ceiling", "--dataset", "cifar10", "--budget", "500", "--target", "1"]) == 0
    out = capsys.readouterr().out
    assert "table   real NATS-Bench accuracies (hp-90 x-valid, seed 777)" in out
    assert "oracle  calibrated v100" in out
    assert "scored  hp-90 validation acc, seed 777" in out
    assert "no set within 500 s reaches an HV ratio of 1.0" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--target", "0"], "argument --target: an HV ratio in (0, 1], got '0'"),
        (["--target", "x"], "argument --target: not a number: 'x'"),
        (["--budget", "-5"],
         "argument --budget: expected a finite number of simulated seconds > 0, got '-5'"),
        (["--budget", "inf"],
         "argument --budget: expected a finite number of simulated seconds > 0, got 'inf'"),
        (["--resolution", "0.0001", "--budget", "55000"],
         "--resolution: a grid of .* pass a coarser resolution than 0.0001 s"),
        (["--space", "tss", "--device", "9090"], "no latencies for device '9090'"),
    ],
)  # fmt: skip
def test_bad_input_is_named(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ceiling", *argv]) == 2
    assert re.search(re.escape(message).replace(r"\.\*", ".*"), capsys.readouterr().err)


def test_compare_prints_a_ceiling_that_bounds_every_runs_final_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "r.db")
    tss = ("--space", "tss", "--dataset", "ImageNet16-120", "--budget", "3000", "--db", db)
    searchers = ("random", "model-based-hw[init=8,batch=8,acquisition=layers,encoding=paths]")
    assert main(["run", *tss, "--searchers", *searchers, "--seeds", "0-2"]) == 0
    assert main(["run", *tss, "--searchers", "random", "--seeds", "0-1", "--workers", "4",
                 "--budget-clock", "wall"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["compare", "--db", db, "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert main(["compare", "--db", db, "--ceiling"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("ceiling")]
    assert len(lines) == 2
    assert lines[1].endswith("none (a wall-clock budget with several workers)")
    found = re.search(r": ([0-9.]+)(?:-([0-9.]+))? \(any set whose costs less the largest fit\), "
                      r"best method's mean here ([0-9.]+)", lines[0])  # fmt: skip
    assert found is not None
    low, high = float(found[1]), float(found[2] or found[1])
    one_worker = [r for r in runs if r["workers"] == 1]
    assert len(one_worker) == 6
    # every run, its last evaluation overrunning the budget or not, stays under the ceiling
    assert all(r["hv_ratio"] <= high for r in one_worker)
    assert any(r["worker_seconds"] > 3000 for r in one_worker)
    best = max(np.mean([r["hv_ratio"] for r in one_worker if r["searcher"] == s])
               for s in {r["searcher"] for r in one_worker})  # fmt: skip
    assert float(found[3]) == pytest.approx(best, abs=5e-5)
    # the same figure as `nasfilter ceiling --last-may-overrun` (a 1 s grid there)
    alone = _ceiling(capsys, *tss[:6], "--last-may-overrun")["budgets"][0]
    assert low == pytest.approx(alone["lower"], abs=5e-5)
