"""Each run's front as a value (like Optuna's ``study.best_trials``), and ``nasfilter.search``
returning its run scored with that front."""

from __future__ import annotations

import numpy as np
import pytest

import nasfilter
from nasfilter.runs.experiment import RunSpec, run_experiment, run_one, search
from nasfilter.runs.fronts import load_fronts, run_front
from nasfilter.runs.inputs import inputs
from nasfilter.runs.results import load_results
from nasfilter.runs.storage.base import InMemoryStorage

BUDGET = 12_000.0
SPEC = RunSpec("random", table="synthetic", oracle="roofline", budget=BUDGET, n_ticks=10)


def _brute_front(evaluated: np.ndarray, acc: np.ndarray, thr: np.ndarray) -> list[int]:
    """The non-dominated evaluated indices by the definition, pair by pair."""
    distinct = sorted(set(evaluated.tolist()))
    keep = []
    for i in distinct:
        dominated = any(
            acc[j] >= acc[i] and thr[j] >= thr[i] and (acc[j] > acc[i] or thr[j] > thr[i])
            for j in distinct
        )
        if not dominated:
            keep.append(i)
    return keep


def test_a_run_s_front_is_the_non_dominated_set_of_what_it_evaluated() -> None:
    run = run_one(SPEC, 3)
    front = run_front(run)
    table, proxy, _ = inputs(SPEC)
    evaluated = run.record.evaluated
    np.testing.assert_array_equal(front.evaluated, evaluated)  # completion order
    assert front.indices.tolist() == _brute_front(evaluated, table.test_acc, proxy.throughput)
    np.testing.assert_array_equal(front.accuracy, table.test_acc[front.indices])
    np.testing.assert_array_equal(front.throughput, proxy.throughput[front.indices])
    assert len(front.indices) == run.metrics["front_size"] > 1
    assert front.accuracy_label == table.score_label == "test accuracy after 90 epochs"
    assert front.table_label.startswith("SYNTHETIC")
    assert front.throughput_label == proxy.label
    rows = front.rows()
    assert rows[0]["index"] == int(front.indices[0])
    assert rows[0]["arch"] == str(nasfilter.as_arch(int(front.indices[0])))


def test_search_returns_the_run_scored_with_its_front_as_run_one_does() -> None:
    table, proxy, _ = inputs(SPEC)
    found = search("random", table, BUDGET, seed=3, proxy=proxy)
    alone = run_one(SPEC, 3)  # the same run made from its spec
    assert found.metrics == alone.metrics and found.summary == alone.summary
    assert found.front is not None
    np.testing.assert_array_equal(found.front.indices, run_front(alone).indices)
    assert found.n_evaluations == alone.record.n_evaluations  # a record's answers, too
    assert 0 < found.metrics["hv_ratio"] <= 1


def test_search_on_a_tss_table_without_a_proxy_scores_on_the_space_s_measured_default() -> None:
    # before, the sss default oracle's 32768 throughputs met the 15625 tss cells inside numpy
    table = nasfilter.load_table("tss-real", "cifar10")
    found = search("random", table, 20_000.0, seed=0)
    measured = nasfilter.proxy_table("measured", "2080ti", "cifar10")
    assert found.front is not None and len(found.front.indices) > 0
    np.testing.assert_array_equal(
        found.front.throughput, measured.throughput[found.front.indices]
    )
    assert "2080" in found.front.throughput_label and "measured" in found.front.throughput_label
    assert found.metrics == search("random", table, 20_000.0, seed=0, proxy=measured).metrics


def test_fronts_of_stored_runs_need_their_events_and_load_fronts_reads_them() -> None:
    with InMemoryStorage() as storage:
        made = run_experiment([SPEC], [0, 1], store=storage)
        without = load_results(storage)
        with pytest.raises(ValueError, match=r"with_events=True"):
            run_front(without[0])
        pairs = load_fronts(storage)
    assert [(r.seed, f.indices.tolist()) for r, f in pairs] == [
        (r.seed, run_front(r).indices.tolist()) for r in made
    ]
