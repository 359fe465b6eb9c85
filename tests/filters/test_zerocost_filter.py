"""Zero-cost scores in the search: the metered lane (charge, NaN, budget, refusals) and the
zerocost-frontiers filter, against the shipped score file read with plain numpy and fronts
found by brute force."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.spaces import SSS, TSS, Space
from nasfilter.bench.tss_real import tss_table
from nasfilter.filters import ZeroCostFrontiers, make_filter
from nasfilter.filters.zerocost import score_ranks
from nasfilter.oracle.measured import measured_proxy
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import make_searcher
from nasfilter.sim.clock import Budget
from nasfilter.sim.problem import Problem
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from nasfilter.zerocost import scorefile
from nasfilter.zerocost.scorefile import DATA_DIR
from tests.tables import random_proxy, random_table, ship_sss_synflow_and_partial_snip


@pytest.fixture(scope="module")
def npz() -> dict[str, np.ndarray]:
    with np.load(DATA_DIR / "tss-cifar10.npz", allow_pickle=False) as raw:
        return {k: raw[k] for k in ("synflow", "computed__synflow", "seconds__synflow",
                                    "computed__snip")}  # fmt: skip


def _problem(budget: float | Budget) -> Problem:
    return make_problem(tss_table("cifar10"), budget, 0, proxy=measured_proxy("2080ti"))


def test_a_query_is_charged_the_median_cpu_seconds_once_per_architecture(npz) -> None:
    seconds = npz["seconds__synflow"][npz["computed__synflow"]]
    cost = float(np.median(seconds))  # GPU_SCALE = 1 (modelled)
    assert 0.04 < cost < 0.09  # docs/cheap-signals.md: median 0.063 CPU s on one core
    problem = _problem(20_000.0)
    handle = ProxyHandle(problem)
    assert handle.zerocost_cost("synflow") == pytest.approx(cost)
    answered, scores = handle.query_zerocost("synflow", np.array([5, 700, 5, 15624]))
    assert answered.tolist() == [5, 700, 5, 15624]
    np.testing.assert_array_equal(scores, npz["synflow"][[5, 700, 5, 15624]].astype(np.float64))
    # three distinct architectures charged, the repeat of 5 free
    assert problem.worker_seconds == pytest.approx(3 * cost)
    assert problem.clock == pytest.approx(3 * cost)
    assert problem.zerocost.n_queries == 4 and problem.zerocost.seconds == pytest.approx(3 * cost)
    assert problem.proxy_seconds == 0.0  # the hardware lane is untouched


def test_a_disconnected_cell_answers_nan_and_the_budget_stops_queries(npz) -> None:
    undefined = np.flatnonzero(npz["computed__synflow"] & np.isnan(npz["synflow"]))
    assert undefined.size == 341  # the disconnected tss cells
    cost = float(np.median(npz["seconds__synflow"][npz["computed__synflow"]]))
    problem = _problem(Budget(2.5 * cost))
    answered, scores = problem.query_zerocost_many("synflow", undefined[:10])
    # queries start while spent < 2.5 cost: at 0, cost and 2 cost
    assert answered.tolist() == undefined[:3].tolist()
    assert np.isnan(scores).all()


def test_bad_queries_are_refused_by_name(npz) -> None:
    handle = ProxyHandle(_problem(20_000.0))
    with pytest.raises(ValueError, match="no proxy 'nope'; it holds: synflow"):
        handle.query_zerocost("nope", np.array([0]))
    missing = int(np.flatnonzero(~npz["computed__snip"])[0])
    with pytest.raises(LookupError, match=f"'snip' was not computed .*first: \\[{missing}\\]"):
        handle.query_zerocost("snip", np.array([missing]))
    with pytest.raises(ValueError, match="15625"):
        handle.query_zerocost("synflow", np.array([15625]))


def test_score_ranks_by_hand_puts_nan_after_every_finite_layer() -> None:
    answered = np.array([0, 1, 2, 3, 4])
    throughput = np.array([3.0, 1.0, 2.0, 5.0, 0.5])
    scores = np.array([1.0, 3.0, np.nan, 0.0, 0.5])
    # (3,1), (1,3), (5,0) are non-dominated: layer 0; (0.5,0.5) is behind (3,1): layer 1
    assert score_ranks(answered, throughput, scores, 6).tolist() == [0, 0, 2, 0, 1, -1]
    assert score_ranks(answered[2:3], throughput[2:3], scores[2:3], 3).tolist() == [-1, -1, 0]


def _brute_front(thr: np.ndarray, syn: np.ndarray) -> list[int]:
    """The non-dominated indices of (throughput, score), NaN scores left out, by brute force."""
    ok = np.flatnonzero(np.isfinite(syn))
    return [
        int(i) for i in ok
        if not np.any((thr[ok] >= thr[i]) & (syn[ok] >= syn[i])
                      & ((thr[ok] > thr[i]) | (syn[ok] > syn[i])))
    ]  # fmt: skip


def _kept(problem: Problem, space: Space) -> list[int]:
    """The indices the synflow filter keeps, in the order it passes them (a full scan)."""
    flt = ZeroCostFrontiers(score="synflow", patience=None, scan_share=None)
    flt.setup(SearchContext(np.random.default_rng(0), ProxyHandle(problem)))
    return [i for i in range(space.size) if flt.keep_index(space.arch(i), i)]


def test_the_filter_passes_the_brute_force_throughput_synflow_front_first(npz) -> None:
    thr = measured_proxy("2080ti").throughput
    syn = npz["synflow"].astype(np.float64)
    front = _brute_front(thr, syn)
    problem = _problem(1e6)
    assert _kept(problem, TSS)[: len(front)] == front
    cost = float(np.median(npz["seconds__synflow"][npz["computed__synflow"]]))
    # the full scan: every cell's hardware reading (2 s) and its synflow score
    assert problem.zerocost.seconds == pytest.approx(TSS.size * cost)
    assert problem.proxy_seconds == pytest.approx(TSS.size * 2.0)


def test_unknown_and_partial_proxies_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown zero-cost proxy 'nope'; known proxies: synflow"):
        make_filter("zerocost-frontiers[score=nope]")
    flt = make_filter("zerocost-frontiers[score=snip]")
    problem = _problem(20_000.0)
    with pytest.raises(ValueError, match="'snip' covers 108 of the 15625 tss/cifar10"):
        run_search(make_searcher("random"), problem, filter=flt)


def test_a_run_with_the_filter_is_seeded_and_charges_both_lanes() -> None:
    def run() -> tuple[list[int], float]:
        problem = _problem(20_000.0)
        record = run_search(
            make_searcher("random"), problem, filter=make_filter("zerocost-frontiers")
        )
        return list(record.evaluated), problem.zerocost.seconds

    first, seconds = run()
    assert first == run()[0] and len(first) > 10
    # the scan: 60 % of 20000 s at 2 s = 6000 hardware readings, then 6000 scores
    cost = ProxyHandle(_problem(1.0)).zerocost_cost("synflow")
    assert seconds == pytest.approx(6000 * cost)


@pytest.fixture
def sss_shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[np.ndarray]:
    """Ship a hand-made sss/cifar100 score file: synflow on every architecture (random, 50
    of them NaN), snip on the first 100 only; yields the synflow scores (float32 (32768,))."""
    rng = np.random.default_rng(7)
    synflow = rng.uniform(1.0, 50.0, SSS.size).astype(np.float32)
    synflow[rng.choice(SSS.size, 50, replace=False)] = np.nan
    first_100 = np.arange(SSS.size) < 100
    ship_sss_synflow_and_partial_snip(tmp_path, monkeypatch, "cifar100", synflow, first_100)
    yield synflow
    scorefile.packaged_scores.cache_clear()


def _sss_problem(dataset: str) -> tuple[Problem, np.ndarray]:
    """An sss problem on a hand-made table and proxy; and the proxy's throughput (32768,)."""
    proxy = random_proxy()
    table = random_table(dataset=dataset)
    return make_problem(table, 1e6, 0, proxy=proxy), proxy.throughput


def test_on_sss_the_filter_passes_the_brute_force_front_of_a_covering_file(
    sss_shipped: np.ndarray,
) -> None:
    problem, thr = _sss_problem("cifar100")
    syn = sss_shipped.astype(np.float64)
    front = _brute_front(thr, syn)
    assert 3 <= len(front) < 100
    assert _kept(problem, SSS)[: len(front)] == front
    # the full scan: every architecture's hardware reading (2 s) and its score (0.5 s)
    assert problem.zerocost.seconds == pytest.approx(SSS.size * 0.5)
    assert problem.proxy_seconds == pytest.approx(SSS.size * 2.0)


def test_on_sss_a_partial_proxy_is_refused_naming_its_coverage(sss_shipped: np.ndarray) -> None:
    problem, _ = _sss_problem("cifar100")
    with pytest.raises(
        ValueError, match=r"'snip' covers 100 of the 32768 sss/cifar100 .*shipped score files: "
        r"sss-cifar100;"
    ):  # fmt: skip
        run_search(
            make_searcher("random"), problem, filter=make_filter("zerocost-frontiers[score=snip]")
        )


def test_on_sss_without_a_covering_file_the_filter_is_refused_naming_it(
    sss_shipped: np.ndarray,
) -> None:
    # the hand-made file ships for sss/cifar100 only: a cifar10 run has none
    problem, _ = _sss_problem("cifar10")
    with pytest.raises(
        ValueError, match="no zero-cost scores ship for sss/cifar10; shipped: sss-cifar100"
    ):
        run_search(make_searcher("random"), problem, filter=make_filter("zerocost-frontiers"))
    assert problem.zerocost.n_queries == 0
