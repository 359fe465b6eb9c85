"""Built-in searchers: REINFORCE against a torch reference, evolution, random, approximate
filtering against moocore's non-dominated filter, the registry and bad parameters."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from nasfilter.bench.spaces.sss import CHANNEL_CHOICES, N_ARCHS, Arch
from nasfilter.registry import UnknownNameError, parse_spec
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import (
    SEARCHERS,
    RandomSearch,
    RegularizedEvolution,
    Reinforce,
    Searcher,
    UtilizationPareto,
    arch_from_index,
    make_searcher,
)
from nasfilter.searchers.utilization_pareto import spread_order
from nasfilter.sim.problem import Budget, Problem
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from nasfilter.sim.trial import Trial
from tests.tables import random_proxy, random_table

TABLE = random_table(1)
PROXY = random_proxy(1)


def setup(searcher: Searcher, seed: int = 0, budget: float = 1e12) -> Problem:
    problem = Problem(TABLE, np.random.default_rng(seed), Budget(budget), proxy=PROXY)
    searcher.setup(SearchContext(np.random.default_rng(seed), ProxyHandle(problem)))
    return problem


def ask(searcher: Searcher) -> Trial:
    trial = searcher.ask()
    assert trial is not None
    return trial


def digits(arch: Arch) -> list[int]:
    return [c // 8 - 1 for c in arch.channels]


# --------------------------------------------------------------------------- REINFORCE
def torch_reference_thetas(
    theta0: np.ndarray, actions: list[list[int]], rewards: list[float], lr: float = 0.01
) -> list[np.ndarray]:
    """NATS-Bench's reinforce.py step by step in torch (float64): softmax policy,
    Categorical log-prob, bias-corrected EMA baseline updated first, Adam."""
    import torch

    param = torch.nn.Parameter(torch.tensor(theta0, dtype=torch.float64))
    opt = torch.optim.Adam([param], lr=lr)
    num = den = 0.0
    out = []
    for action, reward in zip(actions, rewards, strict=True):
        probs = torch.nn.functional.softmax(param, dim=-1)
        log_prob = torch.distributions.Categorical(probs=probs).log_prob(torch.tensor(action))
        num = 0.9 * num + 0.1 * reward
        den = 0.9 * den + 0.1
        loss = (-log_prob * (reward - num / den)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(param.detach().numpy().copy())
    return out


@pytest.mark.slow
def test_reinforce_update_matches_torch_reference() -> None:
    s = Reinforce()
    setup(s, seed=4)
    theta0 = s.theta.copy()
    assert theta0.shape == (5, 8) and 0 < np.abs(theta0).max() < 1e-2  # 1e-3 * randn
    rng = np.random.default_rng(9)
    actions, rewards, ours = [], [], []
    for _ in range(300):
        trial = s.ask()
        assert trial is not None
        reward = float(rng.uniform(50, 90))
        actions.append(digits(trial.arch))
        rewards.append(reward)
        s.tell(trial, reward)
        ours.append(s.theta.copy())
    ref = torch_reference_thetas(theta0, actions, rewards)
    np.testing.assert_allclose(ours[0], theta0)  # first advantage is 0: no step
    for mine, theirs in zip(ours, ref, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-12)
    assert np.abs(ours[-1] - theta0).max() > 0.1  # it did learn


def test_reinforce_samples_follow_the_softmax_policy() -> None:
    s = Reinforce()
    setup(s, seed=1)
    s.theta[:] = np.linspace(-1.0, 1.5, 40).reshape(5, 8)
    n = 20000
    counts = np.zeros((5, 8))
    for _ in range(n):
        counts[np.arange(5), digits(s.propose())] += 1
    e = np.exp(s.theta)
    expected = n * e / e.sum(axis=1, keepdims=True)
    chi2 = ((counts - expected) ** 2 / expected).sum(axis=1)
    assert np.all(chi2 < 29.9)  # 7 dof, p = 1e-4 per layer


def test_reinforce_mnas_reward_and_proxy_charging() -> None:
    s = Reinforce(reward="mnas", target_throughput=2e5, w=0.07)
    problem = setup(s, seed=2)
    trial = s.ask()
    assert trial is not None
    thr = PROXY.throughput[trial.arch.index]
    assert problem.proxy_seconds == pytest.approx(2.0)
    s.tell(trial, 80.0)
    assert s.baseline == pytest.approx(80.0 * (thr / 2e5) ** 0.07)  # first EMA = reward
    seen = {trial.arch.index}
    for _ in range(200):
        t = s.ask()
        assert t is not None
        seen.add(t.arch.index)
        s.tell(t, 70.0)
    assert problem.proxy_seconds == pytest.approx(2.0 * len(seen))  # once per distinct arch


def test_reinforce_dropped_reward() -> None:
    skip = Reinforce()
    setup(skip)
    before = skip.theta.copy()
    skip.tell(ask(skip), None)
    np.testing.assert_array_equal(skip.theta, before)
    assert math.isnan(skip.baseline)
    zero = Reinforce(dropped_reward=0.0)
    setup(zero)
    zero.tell(ask(zero), 80.0)
    zero.tell(ask(zero), None)
    assert zero.baseline == pytest.approx((0.9 * 0.1 * 80) / (0.1 + 0.09))
    with pytest.raises(ValueError, match="was never asked"):
        zero.tell(Trial(5, Arch.from_index(5)), 1.0)


def test_reinforce_learns_from_pending_trials_told_out_of_order() -> None:
    """Four trials pending at once, of one architecture; each update uses the actions of
    the trial told, so the result equals telling the same (actions, reward) in order."""
    a, b = Reinforce(), Reinforce()
    setup(a, seed=7)
    setup(b, seed=7)
    a.theta[0] = [30.0] + [0.0] * 7  # layer 1 almost surely 8 channels: repeats likely
    a.theta[1:] = 0.0
    a.theta[1:, 0] = 30.0
    b.theta[:] = a.theta
    pending = [ask(a) for _ in range(4)]
    assert len({t.arch for t in pending}) < 4 and len({t.id for t in pending}) == 4
    for trial, reward in zip(reversed(pending), (60.0, 70.0, 80.0, 90.0), strict=True):
        a.tell(trial, reward)
    told = [(t.arch, r) for t, r in zip(reversed(pending), (60.0, 70.0, 80.0, 90.0), strict=True)]
    for arch, reward in told:
        b._update(np.array(digits(arch)), reward)
    np.testing.assert_allclose(a.theta, b.theta)
    assert a.recommend() == told[-1][0]  # the best reward seen


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"lr": 0.0}, "lr must be > 0"),
        ({"lr": -1.0}, "lr must be > 0"),
        ({"w": float("nan")}, "w must be finite"),
        ({"momentum": 1.0}, "momentum must be < 1"),
        ({"reward": "latency"}, "reward must be one of"),
        ({"target_throughput": 0}, "target_throughput must be > 0"),
    ],
)
def test_reinforce_rejects_bad_parameters(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Reinforce(**kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- evolution
def test_evolution_ages_the_population_and_mutates_one_layer() -> None:
    s = RegularizedEvolution(population_size=4, tournament_size=2)
    setup(s, seed=3)
    told = []
    for i in range(40):
        trial = ask(s)
        arch = trial.arch
        if i >= 4:  # every later proposal is a one-layer mutation of a member
            members = [m for m, _ in s.population]
            assert any(
                sum(a != b for a, b in zip(arch.channels, m.channels, strict=True)) == 1
                for m in members
            )
        acc = None if i % 7 == 6 else float(i)
        s.tell(trial, acc)
        if acc is not None:
            told.append((arch, acc))
        assert len(s.population) <= 4
    assert list(s.population) == told[-4:]  # the oldest leave first; drops never enter


def test_evolution_picks_the_tournament_winner() -> None:
    s = RegularizedEvolution(population_size=3, tournament_size=50)
    setup(s, seed=5)
    best = Arch.from_index(100)
    for arch, acc in ((Arch.from_index(0), 10.0), (best, 99.0), (Arch.from_index(9), 50.0)):
        s.population.append((arch, acc))
    for _ in range(30):  # with 50 draws from 3 members the best is almost surely drawn
        child = ask(s).arch
        assert sum(a != b for a, b in zip(child.channels, best.channels, strict=True)) == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"population_size": -1},
        {"population_size": 0},
        {"tournament_size": 0},
        {"population_size": 32769},
        {"tournament_size": 10**9},  # was a MemoryError at the first tournament
    ],
)
def test_evolution_rejects_bad_parameters(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=r"must be an integer in \[1, 32768\]"):
        RegularizedEvolution(**kwargs)


# ------------------------------------------------------------------------------ random
def test_random_search_is_uniform_per_layer() -> None:
    s = RandomSearch()
    setup(s, seed=6)
    draws = np.array([ask(s).arch.channels for _ in range(16000)])
    for layer in range(5):
        counts = np.array([(draws[:, layer] == c).sum() for c in CHANNEL_CHOICES])
        assert ((counts - 2000) ** 2 / 2000).sum() < 29.9


# ------------------------------------------------------------------ approximate filtering
def brute_front(points: np.ndarray) -> np.ndarray:
    """Indices of the maximized non-dominated points, by moocore (an independent library)."""
    import moocore

    return np.flatnonzero(moocore.is_nondominated(points, maximise=True))


def test_utilization_pareto_scans_everything_then_evaluates_the_front_once() -> None:
    table = random_table(2)
    problem = make_problem(table, 1e9, 0, proxy=PROXY)
    result = run_search(UtilizationPareto(), problem)
    points = np.stack([PROXY.throughput, PROXY.utilization], axis=1)
    front = brute_front(points)
    assert result.status == "searcher-done"
    assert result.proxy_seconds == pytest.approx(2.0 * N_ARCHS)
    assert result.n_proxy == N_ARCHS
    assert sorted(result.evaluated.tolist()) == sorted(front.tolist())
    # spread order: the two extremes of throughput first
    thr = PROXY.throughput[front]
    assert set(result.evaluated[:2].tolist()) == {front[thr.argmax()], front[thr.argmin()]}


def test_utilization_pareto_layers_follow_successive_fronts() -> None:
    s = UtilizationPareto(layers=2, order="utilization")
    setup(s, seed=0)
    proposed = []
    while (trial := s.ask()) is not None:
        proposed.append(trial.arch.index)
    assert [t.arch.index for t in s.pending] == proposed  # nothing told: all pending
    points = np.stack([PROXY.throughput, PROXY.utilization], axis=1)
    first = brute_front(points)
    rest = np.setdiff1d(np.arange(N_ARCHS), first)
    second = rest[brute_front(points[rest])]
    assert proposed[: len(first)] == first[np.argsort(-PROXY.utilization[first])].tolist()
    assert sorted(proposed[len(first) :]) == sorted(second.tolist())
    assert len(proposed) == len(set(proposed))


def test_spread_order_is_a_coarse_to_fine_permutation() -> None:
    for n in (0, 1, 2, 3, 10, 139):
        order = spread_order(n)
        assert sorted(order.tolist()) == list(range(n))
    assert spread_order(9).tolist()[:3] == [0, 8, 4]


def test_utilization_pareto_needs_a_proxy() -> None:
    problem = Problem(TABLE, np.random.default_rng(0), Budget(1e6))
    with pytest.raises(ValueError, match="needs a proxy"):
        run_search(UtilizationPareto(), problem, seed=0)


# ---------------------------------------------------------------------------- registry
def test_registry_builds_every_builtin_and_lists_names_on_error() -> None:
    assert {"random", "reinforce", "evolution", "utilization-pareto"} <= set(SEARCHERS)
    for name in SEARCHERS:
        assert isinstance(make_searcher(name), Searcher)
    s = make_searcher("reinforce[reward='mnas', lr=0.05]")
    assert isinstance(s, Reinforce) and s.reward == "mnas" and s.lr == 0.05
    with pytest.raises(
        UnknownNameError,
        match=r"known searchers: asha, bohb, evolution, hyperband, mo-asha, model-based, "
        r"model-based-hw, model-based-mf, optuna-nsga2, optuna-random, optuna-tpe, "
        r"optuna-tpe-hyperband, random",
    ):
        make_searcher("reinforcement")
    with pytest.raises(ValueError, match=re.escape("cannot build searcher 'random[lr=1]'")):
        make_searcher("random[lr=1]")
    with pytest.raises(ValueError, match="already registered"):
        SEARCHERS.register("random", RandomSearch)
    assert parse_spec("a[x=1,y='b',z=None]") == ("a", {"x": 1, "y": "b", "z": None})
    # true/false as JSON and shells write them are booleans, not the (truthy) text "false"
    assert parse_spec("a[p=false,q=TRUE,r=False,s='false']") == (
        "a", {"p": False, "q": True, "r": False, "s": "false"}
    )
    with pytest.raises(ValueError, match="key=value"):
        parse_spec("a[x]")


def test_plugin_paths_load_classes() -> None:
    s = make_searcher("examples.custom_searcher:LocalSearch[patience=5]")
    assert type(s).__name__ == "LocalSearch" and s.config() == {"patience": 5}
    f = make_searcher("examples/custom_searcher.py:LocalSearch")
    assert type(f).__name__ == "LocalSearch"
    with pytest.raises(UnknownNameError, match="has no attribute"):
        make_searcher("examples.custom_searcher:Nope")
    with pytest.raises(ValueError, match="not a Searcher"):
        make_searcher("examples.custom_filter:FastEnough")


def test_arch_cache_matches_the_index_rule() -> None:
    for i in (0, 11, 12, 284, 4095, N_ARCHS - 1):
        a = arch_from_index(i)
        assert a == Arch.from_index(i) and a.index == i and hash(a) == hash(Arch.from_index(i))
    with pytest.raises(ValueError, match="must be in"):
        arch_from_index(N_ARCHS)
