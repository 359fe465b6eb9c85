"""``nasfilter.summarize``: the per-method summary of scored runs as a pandas DataFrame,
mean ± standard error over seeds, checked against the runs' own metrics by hand."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import nasfilter
from nasfilter.extras import ExtraMissing
from nasfilter.runs.experiment import RunSpec, run_experiment
from nasfilter.runs.export import summarize
from nasfilter.runs.records import ScoredRun
from nasfilter.runs.results import load_results
from nasfilter.runs.storage.base import InMemoryStorage

BUDGET = 12_000.0
RANDOM = RunSpec("random", table="synthetic", oracle="roofline", budget=BUDGET, n_ticks=10)
EVOLUTION = RunSpec("evolution", table="synthetic", oracle="roofline", budget=BUDGET, n_ticks=10)
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def runs() -> list[ScoredRun]:
    return run_experiment([RANDOM, EVOLUTION], SEEDS)


def _by_hand(values: list[float]) -> tuple[float, float]:
    """Mean and standard error (sample sd over sqrt(n)), by numpy, not by meanse."""
    arr = np.asarray(values, dtype=np.float64)
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(len(arr)))


def test_each_method_s_mean_and_standard_error_are_those_of_its_runs(
    runs: list[ScoredRun],
) -> None:
    df = summarize(runs, metrics=("hv_ratio", "best_acc", "n_evaluations", "clock"))
    assert df["method"].tolist() == ["random", "evolution"]  # one row per method, grid order
    for spec, line in zip((RANDOM, EVOLUTION), df.to_dict("records"), strict=True):
        mine = [r for r in runs if r.spec == spec]
        assert line["n_seeds"] == 3 and line["n_empty"] == 0
        assert line["budget"] == BUDGET and line["dataset"] == "cifar10"
        values = {
            "hv_ratio": [r.metrics["hv_ratio"] for r in mine],
            "best_acc": [r.metrics["best_acc"] for r in mine],
            "n_evaluations": [r.summary["n_evaluations"] for r in mine],
            "clock": [r.summary["clock"] for r in mine],
        }
        for metric, vals in values.items():
            mean, se = _by_hand(vals)
            assert line[f"{metric}_mean"] == pytest.approx(mean, rel=1e-12)
            assert line[f"{metric}_se"] == pytest.approx(se, rel=1e-9)
            assert line[f"{metric}_n"] == 3
        assert 0 < line["hv_ratio_mean"] <= 1 and line["hv_ratio_se"] > 0
    # The scored accuracy named as a run's front names it: split and epochs (and seed).
    assert set(df["accuracy"]) == {"test accuracy after 90 epochs"}
    assert set(df["table_label"]) == {"synthetic"}  # kept in no storage: the spec's name


def test_the_grouping_is_compare_s_a_seed_counts_once_and_budgets_part(
    runs: list[ScoredRun],
) -> None:
    longer = RunSpec("random", table="synthetic", oracle="roofline", budget=2 * BUDGET)
    more = run_experiment([longer], [0])
    df = summarize([*runs, runs[0], *more])  # runs[0] again: the same seed of one method
    assert df[["method", "budget", "n_seeds"]].values.tolist() == [
        ["random", BUDGET, 3],
        ["evolution", BUDGET, 3],
        ["random", 2 * BUDGET, 1],
    ]
    one = df.iloc[2]
    assert one["hv_ratio_mean"] == pytest.approx(more[0].metrics["hv_ratio"])
    assert math.isnan(one["hv_ratio_se"]) and one["hv_ratio_n"] == 1  # one seed: no band


def test_runs_read_back_from_a_storage_summarize_as_the_runs_made(
    runs: list[ScoredRun],
) -> None:
    with InMemoryStorage() as storage:
        run_experiment([RANDOM, EVOLUTION], SEEDS, store=storage)
        loaded = load_results(storage)
    stored, made = summarize(loaded), summarize(runs)
    columns = [c for c in made.columns if c.endswith(("_mean", "_se", "_n"))]
    assert stored[columns].equals(made[columns])
    assert stored["table_label"].iloc[0].startswith("SYNTHETIC")  # the storage's label


def test_at_reads_every_run_s_curves_at_the_last_tick_before_it(
    runs: list[ScoredRun],
) -> None:
    clock = np.asarray(runs[0].curves["clock"])
    at = float(clock[3] + 1.0)  # between ticks 3 and 4: tick 3's values
    df = summarize(runs, metrics=("hv_ratio", "n_evaluations", "clock"), at=at)
    line = df.iloc[1]  # evolution
    mine = [r for r in runs if r.spec == EVOLUTION]
    mean, se = _by_hand([float(r.curves["hv_ratio"][3]) for r in mine])
    assert line["hv_ratio_mean"] == pytest.approx(mean) and line["hv_ratio_se"] == pytest.approx(se)
    counts = [float(r.curves["n_evaluations"][3]) for r in mine]
    assert line["n_evaluations_mean"] == pytest.approx(np.mean(counts))
    assert line["clock_mean"] == clock[3] and line["at"] == at
    final = summarize(runs, metrics=("n_evaluations",))
    assert line["n_evaluations_mean"] < final.iloc[1]["n_evaluations_mean"]


def test_bad_input_is_refused_naming_what_is_allowed(runs: list[ScoredRun]) -> None:
    with pytest.raises(ValueError, match=r"unknown metric.*'hv'.*known: hv_ratio, igd_plus"):
        summarize(runs, metrics=("hv_ratio", "hv"))
    with pytest.raises(ValueError, match=r"no metric given; known: hv_ratio"):
        summarize(runs, metrics=())
    with pytest.raises(ValueError, match=r"at least one scored run, got none"):
        summarize([])
    with pytest.raises(ValueError, match=r"'proxy_seconds'.*with at="):
        summarize(runs, metrics=("proxy_seconds",), at=5_000.0)
    with pytest.raises(ValueError, match=r"at=1.0 s is outside the ticks.*\[1200, 12000\]"):
        summarize(runs, at=1.0)
    for bad in (math.nan, "5000", True):
        with pytest.raises(ValueError, match=r"at must be finite simulated seconds or None"):
            summarize(runs, at=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"scored runs of a RunSpec.*got RunRecord"):
        summarize([runs[0].record])  # type: ignore[list-item]


def test_the_topology_space_runs_through_the_same_door() -> None:
    tss = {"table": "tss-real", "budget": 100_000.0, "n_ticks": 5}
    other_space = r"oracle 'calibrated' is of the sss space.*tss space.*'measured'"
    with pytest.raises(ValueError, match=other_space):
        run_experiment(nasfilter.grid(["random"], **tss), [0])  # an sss oracle, by default
    on_sss = nasfilter.grid(["random"], table="synthetic", oracle="measured", device="2080ti")
    other_space = r"oracle 'measured' is of the tss space.*of the sss space"
    with pytest.raises(ValueError, match=other_space):
        run_experiment(on_sss, [0])
    specs = nasfilter.grid(["random", "evolution"], oracle="measured", device="2080ti", **tss)
    made = run_experiment(specs, [0, 1])
    df = summarize(made, metrics=("hv_ratio", "best_acc"))
    assert df["method"].tolist() == ["random", "evolution"] and set(df["n_seeds"]) == {2}
    # tss scores the real hp-200 validation accuracy, seed mean: never called a test accuracy
    assert set(df["accuracy"]) == {"real validation accuracy after 200 epochs, seed mean"}
    mean, se = _by_hand([r.metrics["best_acc"] for r in made if r.spec == specs[1]])
    assert df.iloc[1]["best_acc_mean"] == pytest.approx(mean)
    assert df.iloc[1]["best_acc_se"] == pytest.approx(se)


def test_a_missing_pandas_is_named_with_its_extra(
    runs: list[ScoredRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # find_spec sees it as not installed
    with pytest.raises(ExtraMissing, match=r"summarize needs pandas.*nasfilter\[pandas\]"):
        summarize(runs)


def test_the_package_serves_it() -> None:
    assert nasfilter.summarize is summarize
    assert "summarize" in nasfilter.__all__
