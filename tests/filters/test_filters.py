"""Built-in filters against brute-force references, and how they compose with searchers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from nasfilter.bench.spaces.sss import N_ARCHS, Arch
from nasfilter.filters import (
    FILTERS,
    DropAll,
    Filter,
    PassThrough,
    ProxyThreshold,
    SuccessiveFrontiers,
    log_epsilon,
    make_filter,
)
from nasfilter.registry import UnknownNameError
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import RandomSearch, Searcher, arch_from_index
from nasfilter.sim.problem import Budget, Problem
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from nasfilter.sim.trial import Trial
from tests.tables import random_proxy, random_table

TABLE = random_table(3)
PROXY = random_proxy(3)
POINTS = np.stack([PROXY.throughput, PROXY.utilization], axis=1)  # both maximized


def brute_ranks(points: np.ndarray) -> np.ndarray:
    """Front layer of every point by repeated moocore non-dominated filtering."""
    import moocore

    ranks = np.full(len(points), -1)
    left = np.arange(len(points))
    layer = 0
    while len(left):
        mask = moocore.is_nondominated(points[left], maximise=True, keep_weakly=True)
        ranks[left[mask]] = layer
        left = left[~mask]
        layer += 1
    return ranks


def ready(f: Filter, budget: float = 1e12) -> tuple[Problem, ProxyHandle]:
    problem = Problem(TABLE, np.random.default_rng(0), Budget(budget), proxy=PROXY)
    handle = ProxyHandle(problem)
    f.setup(SearchContext(np.random.default_rng(0), handle))
    return problem, handle


class Scripted(Searcher):
    """Proposes a fixed list of indices, then stops."""

    name = "scripted"

    def __init__(self, indices: Sequence[int]) -> None:
        self.indices = list(indices)

    def reset(self) -> None:
        self.todo = list(reversed(self.indices))
        self.told: list[tuple[int, float | None]] = []

    def propose(self) -> Arch | None:
        return arch_from_index(self.todo.pop()) if self.todo else None

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        self.told.append((trial.arch.index, accuracy))


def test_pass_through_and_drop_all() -> None:
    cands = [Arch.from_index(i) for i in (3, 1, 3)]
    f, d = PassThrough(), DropAll()
    ready(f)
    ready(d)
    assert [f.keep(a) for a in cands] == [True] * 3
    assert [d.keep(a) for a in cands] == [False] * 3


def test_log_epsilon_matches_brute_force() -> None:
    rng = np.random.default_rng(1)
    pts = rng.uniform(1, 100, size=(400, 2))
    front = pts[brute_ranks(pts) == 0]
    eps = log_epsilon(pts, front)
    lp, lq = np.log(pts), np.log(front)
    brute = np.max(np.min(lq[None, :, :] - lp[:, None, :], axis=2), axis=1)
    np.testing.assert_allclose(eps, brute, atol=1e-12)
    assert np.all(eps[brute_ranks(pts) == 0] == 0)
    assert np.all(eps[brute_ranks(pts) > 0] > 0)


@pytest.mark.slow
def test_proxy_threshold_passes_exactly_the_near_front() -> None:
    for tolerance in (0.0, 0.03):
        f = ProxyThreshold(tolerance=tolerance)
        problem, _ = ready(f)
        cands = [arch_from_index(i) for i in range(N_ARCHS)]
        kept = {a.index for a in cands if f.keep(a)}
        front = POINTS[brute_ranks(POINTS) == 0]
        lp, lq = np.log(POINTS), np.log(front)
        brute = np.max(np.min(lq[None, :, :] - lp[:, None, :], axis=2), axis=1)
        assert kept == set(np.flatnonzero(brute <= np.log1p(tolerance) + 1e-12).tolist())
        assert problem.proxy_seconds == pytest.approx(2.0 * N_ARCHS)  # one full scan
        if tolerance == 0.0:
            assert kept == set(np.flatnonzero(brute_ranks(POINTS) == 0).tolist())


def test_proxy_threshold_online_judges_against_what_it_has_seen() -> None:
    f = ProxyThreshold(tolerance=0.0, scan=False)
    problem, _ = ready(f)
    order = np.random.default_rng(2).permutation(N_ARCHS)[:300]
    kept = []
    for k, i in enumerate(order):
        passed = f.keep(arch_from_index(int(i)))
        seen = POINTS[order[: k + 1]]
        on_front = brute_ranks(seen)[-1] == 0
        assert passed == on_front
        kept += [i] if passed else []
    f.keep(arch_from_index(int(order[0])))  # a repeat is not charged again
    assert problem.proxy_seconds == pytest.approx(2.0 * 300)
    assert 0 < len(kept) < 300


def test_successive_frontiers_moves_to_the_next_layer_when_one_is_used_up() -> None:
    ranks = brute_ranks(POINTS)
    layer0 = np.flatnonzero(ranks == 0)
    layer1 = np.flatnonzero(ranks == 1)
    # Propose a layer-1 member first (dropped), then all of layer 0, then that member again.
    script = [int(layer1[0]), *layer0.tolist(), int(layer0[0]), int(layer1[0])]
    searcher = Scripted(script)
    problem = make_problem(TABLE, 1e9, 0, proxy=PROXY)
    result = run_search(searcher, problem, filter=SuccessiveFrontiers(patience=None))
    outcomes = [(i, acc is not None) for i, acc in searcher.told]
    assert outcomes[0] == (int(layer1[0]), False)
    assert all(passed for _, passed in outcomes[1 : 1 + len(layer0)])
    assert outcomes[-2] == (int(layer0[0]), False)  # each architecture passes once
    assert outcomes[-1] == (int(layer1[0]), True)  # layer 0 is used up: layer 1 is open
    assert result.n_evaluations == len(layer0) + 1


def test_successive_frontiers_patience_opens_the_next_layer() -> None:
    ranks = brute_ranks(POINTS)
    deep = np.flatnonzero(ranks == 3)[:1].tolist()
    f = SuccessiveFrontiers(patience=2)
    ready(f)
    arch = arch_from_index(deep[0])
    assert not f.keep(arch) and f.level == 0
    assert not f.keep(arch) and f.level == 1  # two drops in a row
    for level in (2, 3):
        assert not f.keep(arch) and not f.keep(arch)
        assert f.level == level
    assert f.keep(arch)


def test_filters_compose_with_any_searcher() -> None:
    problem = make_problem(TABLE, 80_000, 0, proxy=PROXY)
    result = run_search(RandomSearch(), problem, filter=ProxyThreshold(0.02))
    near = set(
        np.flatnonzero(
            log_epsilon(POINTS, POINTS[brute_ranks(POINTS) == 0]) <= np.log1p(0.02)
        ).tolist()
    )
    assert result.n_evaluations > 0 and set(result.evaluated.tolist()) <= near
    assert result.n_asked == result.n_evaluations + result.n_dropped


def test_registry_and_bad_parameters() -> None:
    assert {"none", "drop-all", "successive-frontiers", "proxy-threshold"} <= set(FILTERS)
    assert isinstance(make_filter(None), PassThrough)
    assert make_filter("proxy-threshold[tolerance=0.1,scan=False]").config() == {
        "tolerance": 0.1,
        "scan": False,
        "scan_share": 0.6,
    }
    with pytest.raises(UnknownNameError, match="known filters: drop-all, none"):
        make_filter("pareto")
    with pytest.raises(ValueError, match="tolerance must be >= 0"):
        ProxyThreshold(tolerance=-0.1)
    with pytest.raises(ValueError, match="tolerance must be finite"):
        ProxyThreshold(tolerance=float("nan"))
    with pytest.raises(ValueError, match="patience must be an integer >= 1"):
        SuccessiveFrontiers(patience=0)


def test_a_filter_of_the_earlier_interface_is_refused_at_setup() -> None:
    class Liar(Filter):
        name = "liar"

        def select(self, candidates: Sequence[Arch], proxy: ProxyHandle) -> list[Arch]:
            return [Arch.from_index(0)]

    problem = make_problem(TABLE, 1e5, 0, proxy=PROXY)
    context = SearchContext(np.random.default_rng(0), ProxyHandle(problem))
    with pytest.raises(ValueError, match=r"Liar defines select.*replace select.*with keep"):
        Liar().setup(context)
    with pytest.raises(ValueError, match="Liar defines select"):
        run_search(Scripted([5]), problem, filter=Liar())
    assert problem.n_evaluations == 0


def test_a_filter_must_answer_true_or_false() -> None:
    class Vague(Filter):
        name = "vague"

        def keep(self, arch: Arch) -> bool:
            return None  # type: ignore[return-value]

    problem = make_problem(TABLE, 1e5, 0, proxy=PROXY)
    with pytest.raises(ValueError, match="returned None; expected True or False"):
        run_search(Scripted([5]), problem, filter=Vague())
