"""nasfilter.runs.results: the one statistics function, the selected architecture, and scores of
K-worker runs, each checked against an independent computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from nasfilter.runs.experiment import RunSpec, inputs
from nasfilter.runs.metrics import score
from nasfilter.runs.results import (
    format_mean_se,
    mean_se,
    run_summary,
    score_events,
    tick_times,
)
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import RandomSearch, Reinforce
from nasfilter.sim.problem import EVALUATE, PROXY, RECOMMEND


def test_mean_se_matches_scipy_and_leaves_out_missing_values() -> None:
    values = np.random.default_rng(1).normal(size=(7, 11))
    band = mean_se(values)
    np.testing.assert_allclose(band.mean, values.mean(axis=0))
    np.testing.assert_allclose(band.se, stats.sem(values, axis=0, ddof=1))
    assert band.n == 7
    flat = mean_se([1.0, None, 3.0, float("nan"), 8.0])
    assert flat.n == 3 and flat.mean == pytest.approx(4.0)
    assert flat.se == pytest.approx(stats.sem([1.0, 3.0, 8.0]))


def test_a_single_run_has_no_band() -> None:
    one = mean_se([0.9])
    assert one.mean == 0.9 and math.isnan(one.se) and one.n == 1
    curve = mean_se(np.array([[0.1, 0.2, 0.3]]))
    assert np.isnan(curve.se).all()
    assert format_mean_se(one.mean, one.se, 3) == "0.900"
    assert math.isnan(mean_se([]).mean)


def test_infinite_values_have_a_mean_but_no_band() -> None:
    inf = mean_se([1.0, math.inf])
    assert inf.mean == math.inf and math.isnan(inf.se)
    assert format_mean_se(inf.mean, inf.se, 3) == "inf"


def test_formatting() -> None:
    assert format_mean_se(0.91234, 0.0123, 3) == "0.912 ± 0.012"
    assert format_mean_se(1234.4, 0.0, 0) == "1,234"  # every run agrees: no band
    assert format_mean_se(1234.4, 5.2, 0) == "1,234 ± 5"
    assert format_mean_se(math.nan, math.nan, 3) == "n/a"


def test_selected_is_the_searchers_recommendation() -> None:
    """REINFORCE with the MnasNet reward returns its best-reward architecture: the selected
    test accuracy is that architecture's, not the best validation accuracy's."""
    table, proxy, ref = inputs(RunSpec("random"))
    result = run_search(Reinforce(reward="mnas"), make_problem(table, 60_000, 2, proxy=proxy))
    ev = result.events
    is_eval, is_proxy = ev["kind"] == EVALUATE, ev["kind"] == PROXY
    thr = dict(zip(ev["index"][is_proxy].tolist(), ev["throughput"][is_proxy], strict=True))
    idx, acc = ev["index"][is_eval], ev["accuracy"][is_eval]
    reward = acc * (np.array([thr[i] for i in idx]) / 175_000.0) ** 0.07
    best_reward = int(idx[int(np.argmax(reward))])
    best_valid = int(idx[int(np.argmax(acc))])
    assert best_reward != best_valid  # the two rules disagree on this run
    metrics, curves = score_events(ref, table, ev, tick_times(60_000.0, 12))
    assert metrics["selected_acc"] == table.test_acc[best_reward]
    assert curves["selected_acc"][-1] == table.test_acc[best_reward]
    summary = run_summary(ev)
    assert summary["best_index"] == best_reward == result.best_index and summary["recommended"]
    # Over time: each tick shows the latest recommendation made by then.
    rec = ev["kind"] == RECOMMEND
    for t, value in zip(tick_times(60_000.0, 12), curves["selected_acc"], strict=True):
        made = ev["index"][rec & (ev["end"] <= t)]
        assert value == table.test_acc[made[-1]]


def test_without_a_recommendation_selected_is_the_best_validation_accuracy() -> None:
    table, _, ref = inputs(RunSpec("random"))
    result = run_search(RandomSearch(), make_problem(table, 30_000, 0))
    ev = result.events
    assert not np.any(ev["kind"] == RECOMMEND)
    is_eval = ev["kind"] == EVALUATE
    metrics, _ = score_events(ref, table, ev, tick_times(30_000.0, 3))
    first_best = int(ev["index"][is_eval][int(np.argmax(ev["accuracy"][is_eval]))])
    assert metrics["selected_acc"] == table.test_acc[first_best]
    assert run_summary(ev)["best_index"] == first_best == result.best_index


def test_curves_of_k_workers_count_evaluations_when_they_complete() -> None:
    table, _, ref = inputs(RunSpec("random"))
    result = run_search(RandomSearch(), make_problem(table, 60_000, 0), workers=4)
    ev = result.events
    is_eval = ev["kind"] == EVALUATE
    end = ev["end"][is_eval]
    assert np.any(np.diff(end) < 0)  # completions are not in start order
    times = tick_times(20_000.0, 9)
    _, curves = score_events(ref, table, ev, times)
    for i, t in enumerate(times):
        done = is_eval & (ev["end"] <= t)
        assert curves["n_evaluations"][i] == done.sum()
        m = score(ref, ev["index"][done], ev["accuracy"][done], table)
        assert curves["hv_ratio"][i] == pytest.approx(m.hv_ratio)
    summary = run_summary(ev)
    assert summary["clock"] == end.max() == result.clock
    assert summary["worker_seconds"] == pytest.approx(ev["cost"].sum())
    assert summary["n_asked"] == result.n_asked


def test_runs_that_agree_show_no_band_despite_rounding_in_the_mean() -> None:
    # 0.1 + 0.2 + 0.3 style rounding: nine equal values whose float mean is not exactly the
    # value would give a standard error of ~1e-17 and a misleading "± 0.000".
    value = 0.9127555772777217  # sum / 9 != value in float64
    agree = mean_se([value] * 9)
    assert agree.se == 0.0
    assert format_mean_se(agree.mean, agree.se, 3) == "0.913"
    curve = mean_se(np.array([[value, 0.1], [value, 0.2]]))
    assert curve.se[0] == 0.0 and curve.se[1] > 0
