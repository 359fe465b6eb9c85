"""Zero-cost queries in a run's event log: one ``zerocost`` event per answered query with its
charged seconds, in the summary, on disk and in compare; logs without them still load."""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.spaces import get_space
from nasfilter.bench.tss_real import tss_table
from nasfilter.cli.compare import zerocost_lines
from nasfilter.runs.run_summary import run_summary
from nasfilter.sim.clock import Budget
from nasfilter.sim.events import EVENT_KINDS, from_disk, to_disk
from nasfilter.sim.problem import Problem
from nasfilter.zerocost.compute import Scores
from nasfilter.zerocost.scorefile import load_scores, save_scores


@pytest.fixture(scope="module")
def scorefile(tmp_path_factory: pytest.TempPathFactory) -> object:
    """tss/cifar10 synflow scores 0.5 * index, each charged 0.25 CPU s (median 0.25)."""
    scores = Scores(get_space("tss"), get_dataset("cifar10"), 0)
    scores.values["synflow"] = (0.5 * np.arange(15625)).astype(np.float32)
    scores.computed["synflow"] = np.ones(15625, dtype=bool)
    scores.seconds["synflow"] = np.full(15625, 0.25, dtype=np.float32)
    path = save_scores(scores, tmp_path_factory.mktemp("zc") / "z.npz")
    return load_scores(path, "tss", "cifar10")


def _problem(scorefile: object, budget: float = 100.0) -> Problem:
    rng = np.random.default_rng(0)
    return Problem(tss_table("cifar10"), rng, Budget(budget), zerocost=scorefile)


def test_each_query_is_a_zerocost_event_with_its_charge(scorefile: object) -> None:
    problem = _problem(scorefile)
    problem.query_zerocost_many("synflow", np.array([5, 700, 5]))
    ev = problem.log.arrays()
    assert ev["kind"].tolist() == ["zerocost"] * 3
    assert ev["index"].tolist() == [5, 700, 5]
    assert ev["cost"].tolist() == [0.25, 0.25, 0.0]  # the repeat of 5 is free
    assert ev["worker_seconds"].tolist() == [0.25, 0.5, 0.5]
    assert ev["start"].tolist() == [0.0, 0.25, 0.5] and ev["end"].tolist() == [0.25, 0.5, 0.5]
    assert ev["hp"].tolist() == [-1, -1, -1] and np.isnan(ev["accuracy"]).all()
    s = run_summary(ev)
    assert s["zerocost_seconds"] == 0.5 and s["n_zerocost"] == 3
    assert s["proxy_seconds"] == 0.0 and s["n_proxy"] == 0  # hardware only
    assert s["worker_seconds"] == 0.5 and s["clock"] == 0.5
    back = from_disk(3, dict(zip(ev_names(), to_disk(ev), strict=True)))
    for name, column in ev.items():
        np.testing.assert_array_equal(back[name], column)


def ev_names() -> list[str]:
    from nasfilter.sim.events import COLUMNS

    return [c.name for c in COLUMNS]


def test_queries_past_the_budget_are_neither_answered_nor_logged(scorefile: object) -> None:
    problem = _problem(scorefile, budget=0.6)
    answered, _ = problem.query_zerocost_many("synflow", np.array([1, 2, 3, 4]))
    assert answered.tolist() == [1, 2, 3]  # started at 0, 0.25 and 0.5 < 0.6
    assert problem.log.arrays()["index"].tolist() == [1, 2, 3]


def test_the_zerocost_kind_is_code_6() -> None:
    assert EVENT_KINDS[6] == "zerocost"


def test_an_old_log_and_an_old_cached_summary_still_load() -> None:
    # a log of the kinds before zerocost existed decodes unchanged; a cached summary without
    # the zero-cost fields reads as no zero-cost queries
    old = {
        "kind": np.array(["proxy", "evaluate"]),
        "trial": np.array([-1, 0]),
        "index": np.array([3, 3]),
        "accuracy": np.array([np.nan, 91.5]),
        "utilization": np.array([0.4, np.nan]),
        "throughput": np.array([1e4, np.nan]),
        "seed": np.array([-1, 777]),
        "cost": np.array([2.0, 100.0]),
        "worker_seconds": np.array([2.0, 102.0]),
        "start": np.array([0.0, 2.0]),
        "end": np.array([2.0, 102.0]),
        "worker": np.array([-1, 0]),
        "hp": np.array([-1, -1]),
        "epochs": np.array([-1, -1]),
    }
    back = from_disk(2, dict(zip(ev_names(), to_disk(old), strict=True)))
    assert back["kind"].tolist() == ["proxy", "evaluate"]
    s = run_summary(back)
    assert s["zerocost_seconds"] == 0.0 and s["n_zerocost"] == 0 and s["proxy_seconds"] == 2.0
    rows = [
        {"searcher": "random", "filter": "none", "proxy_seconds": 2.0},
        {"searcher": "random", "filter": "z", "zerocost_seconds": 3.0, "n_zerocost": 10},
        {"searcher": "random", "filter": "z", "zerocost_seconds": 1.0, "n_zerocost": 4},
    ]
    assert zerocost_lines(rows) == [
        "zero-cost queries  random + z: 7 a run, 2.0 s charged a run (modelled; not in proxy s)"
    ]
