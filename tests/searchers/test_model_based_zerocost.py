"""model-based[zerocost=...]: a zero-cost score as an accuracy feature, read and charged
through the metered problem (tss; the shipped synflow scores)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.tss_real import tss_table
from nasfilter.oracle.measured import measured_proxy
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import make_searcher
from nasfilter.searchers.features import zerocost_columns
from nasfilter.zerocost.scorefile import packaged_scores


def _run(spec: str, budget: float) -> tuple[object, object, dict[str, np.ndarray]]:
    problem = make_problem(tss_table("cifar10"), budget, 0, proxy=measured_proxy("2080ti"))
    searcher = make_searcher(spec)
    result = run_search(searcher, problem)
    return searcher, problem, result.events


def test_the_score_of_every_architecture_is_read_charged_and_a_feature() -> None:
    searcher, problem, ev = _run("model-based[zerocost=synflow]", 3_000.0)
    scores = packaged_scores("tss", "cifar10")
    cost = float(np.median(scores.seconds["synflow"][scores.computed["synflow"]]))
    zc = ev["kind"] == "zerocost"
    assert zc.sum() == 15625 == searcher.zerocost_read
    assert sorted(ev["index"][zc].tolist()) == list(range(15625))
    assert ev["cost"][zc].sum() == pytest.approx(15625 * cost)  # each charged once
    assert problem.zerocost.seconds == pytest.approx(15625 * cost)
    assert np.flatnonzero(zc).max() < np.flatnonzero(ev["kind"] == "evaluate").min()
    x = searcher._x
    assert x.shape == (15625, 32 + 3)
    synflow = scores.values["synflow"].astype(np.float64)
    ok = np.isfinite(synflow)
    z = (synflow[ok] - synflow[ok].mean()) / synflow[ok].std()
    np.testing.assert_allclose(x[ok, 32], z, rtol=1e-9, atol=1e-12)
    assert (x[~ok, 34] == 1).all() and (x[ok, 34] == 0).all() and (~ok).sum() == 341


def test_a_budget_that_ends_first_leaves_a_uniform_partial_read() -> None:
    scores = packaged_scores("tss", "cifar10")
    cost = float(np.median(scores.seconds["synflow"][scores.computed["synflow"]]))
    searcher, _, ev = _run("model-based[zerocost=synflow]", 100 * cost - 1e-6)
    zc = ev["kind"] == "zerocost"
    assert searcher.zerocost_read == zc.sum() == 100  # started at 0, cost, ..., 99 cost
    assert len(set(ev["index"][zc].tolist())) == 100 and (ev["kind"] == "evaluate").sum() == 0


def test_without_zerocost_nothing_is_read() -> None:
    searcher, problem, ev = _run("model-based", 3_000.0)
    assert problem.zerocost.n_queries == 0 and searcher._x.shape == (15625, 32)
    assert "zerocost" not in ev["kind"].tolist()


def test_zerocost_columns_by_hand_and_bad_input() -> None:
    cols = zerocost_columns(np.array([1.0, 3.0, np.nan, np.nan]), np.array([1, 1, 1, 0], bool))
    # finite 1, 3: mean 2, sd 1 -> -1, 1; undefined -> the lowest, -1; unanswered -> 0
    assert cols.tolist() == [[-1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [-1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    with pytest.raises(ValueError, match="no finite zero-cost score"):
        zerocost_columns(np.array([np.nan]), np.array([True]))
    with pytest.raises(ValueError, match=r"unknown zero-cost proxy 'nope'.*synflow"):
        make_searcher("model-based[zerocost=nope]")


def test_a_space_without_shipped_scores_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nasfilter.bench.surrogate import embedded_table
    from nasfilter.oracle import proxy_table
    from nasfilter.zerocost import scorefile

    # independent of what ships: the pin table without any sss file
    pins = {k: v for k, v in scorefile.SHA256.items() if not k.startswith("sss-")}
    monkeypatch.setattr(scorefile, "SHA256", pins)
    scorefile.packaged_scores.cache_clear()  # a file of sss/cifar10 loaded earlier is not reused
    problem = make_problem(
        embedded_table("cifar10"), 3_000.0, 0, proxy=proxy_table("roofline", "v100", "cifar10")
    )
    with pytest.raises(
        ValueError, match="no zero-cost scores ship for sss/cifar10; shipped: tss-cifar10"
    ):
        run_search(make_searcher("model-based[zerocost=synflow]"), problem)


def test_on_sss_a_covering_file_is_read_once_per_architecture_and_charged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nasfilter.zerocost import scorefile
    from tests.tables import random_proxy, random_table, ship_scores

    values = np.random.default_rng(3).uniform(1.0, 9.0, 32768)
    ship_scores(tmp_path, monkeypatch, "sss", "cifar100", {"synflow": (values, values > 0, 0.1)})
    try:
        problem = make_problem(random_table(dataset="cifar100"), 8_000.0, 0, proxy=random_proxy())
        searcher = make_searcher("model-based[zerocost=synflow]")
        ev = run_search(searcher, problem).events
    finally:
        scorefile.packaged_scores.cache_clear()
    zc = ev["kind"] == "zerocost"
    assert sorted(ev["index"][zc].tolist()) == list(range(32768))
    # each read charged the file's 0.1 CPU s (float32), and evaluations follow the reads
    assert problem.zerocost.seconds == pytest.approx(32768 * 0.1, rel=1e-6)
    evaluated = np.flatnonzero(ev["kind"] == "evaluate")
    assert evaluated.size > 3 and np.flatnonzero(zc).max() < evaluated.min()


def test_a_share_reads_a_sample_first_then_each_proposal_before_it_is_evaluated() -> None:
    searcher, problem, ev = _run("model-based[zerocost=synflow,zerocost_share=0.1]", 3_000.0)
    zc, evaluate = ev["kind"] == "zerocost", ev["kind"] == "evaluate"
    first = np.flatnonzero(evaluate).min()
    before = ev["index"][zc & (np.arange(len(zc)) < first)]
    start = before[:1563]  # ceil(0.1 x 15625), distinct; then the first proposal's read
    assert len(set(start.tolist())) == 1563 and len(before) <= 1564
    assert len(before) == 1563 or before[-1] == ev["index"][first]
    read_at = {}
    for i in np.flatnonzero(zc):
        read_at.setdefault(int(ev["index"][i]), int(i))
    assert len(read_at) == zc.sum() == searcher.zerocost_read  # each read once
    for i in np.flatnonzero(evaluate):  # every evaluated architecture was read before
        assert read_at[int(ev["index"][i])] < i
    later = set(read_at) - set(start.tolist())
    assert later and later <= set(ev["index"][evaluate].tolist())  # only proposals later
    assert zc.sum() < 15625 and problem.zerocost.n_queries == zc.sum()
    # the features of the read ones are their scores, standardized over the finite read
    synflow = packaged_scores("tss", "cifar10").values["synflow"].astype(np.float64)
    read = np.array(sorted(read_at))
    ok = read[np.isfinite(synflow[read])]
    z = (synflow[ok] - synflow[ok].mean()) / synflow[ok].std()
    searcher._build_zerocost()
    np.testing.assert_allclose(searcher._x[ok, 32], z, rtol=1e-9, atol=1e-12)


def test_imputed_columns_recover_a_score_linear_in_the_free_features() -> None:
    from nasfilter.searchers.features import imputed_zerocost_columns

    rng = np.random.default_rng(5)
    free = rng.normal(size=(400, 3))
    scores = 10.0 + 2.0 * free[:, 0] - free[:, 2]
    answered = np.arange(400) < 300
    scores_seen = np.where(answered, scores, np.nan)
    scores_seen[7] = np.nan  # an undefined answered score
    cols = imputed_zerocost_columns(scores_seen, answered, free)
    ok = answered & np.isfinite(scores_seen)
    mean, sd = scores[ok].mean(), scores[ok].std()
    np.testing.assert_allclose(cols[~answered, 0], (scores[~answered] - mean) / sd, atol=2e-3)
    np.testing.assert_allclose(cols[~answered, 1], cols[~answered, 0] ** 2)
    assert (cols[~answered, 2] == 0).all() and cols[7, 2] == 1.0
    np.testing.assert_allclose(cols[ok, 0], (scores[ok] - mean) / sd, rtol=1e-12)
    # fewer than 3 finite answered: the unanswered stay at the mean
    few = imputed_zerocost_columns(
        np.array([1.0, 3.0, np.nan]), np.array([1, 1, 0], bool), free[:3]
    )
    assert few.tolist() == [[-1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]


def test_zerocost_share_out_of_range_is_refused_naming_the_range() -> None:
    for bad in ("0", "1.5"):
        with pytest.raises(ValueError, match=r"zerocost_share \(valid range: \[0.001, 1\]\)"):
            make_searcher(f"model-based[zerocost=synflow,zerocost_share={bad}]")
