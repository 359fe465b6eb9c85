"""The clairvoyant ceiling and the trusted-signal yardstick (nasfilter.runs.ceiling), against
brute force over every subset with moocore's hypervolume (an independent library), against
hand-built cases, and against a real run's scoring on the shipped tss table."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from nasfilter.runs import ceiling as ceiling_module
from nasfilter.runs.ceiling import (
    clairvoyant_ceiling,
    cost_efficient,
    signal_ceiling,
)
from nasfilter.runs.metrics import FrontReference


def _reference(points: np.ndarray) -> FrontReference:
    return FrontReference.from_points(points, np.ones(len(points), dtype=bool))


def _hv(normalized: np.ndarray) -> float:
    import moocore

    if len(normalized) == 0:
        return 0.0
    return float(moocore.hypervolume(normalized, ref=[0.0, 0.0], maximise=True))


def _brute(ref: FrontReference, cost: np.ndarray, budget: float) -> float:
    """The best HV ratio of any subset whose costs sum to at most ``budget``."""
    pts = ref.norm.transform(ref.points)
    total = _hv(pts)
    best = 0.0
    n = len(pts)
    for r in range(1, n + 1):
        for subset in itertools.combinations(range(n), r):
            if cost[list(subset)].sum() <= budget + 1e-9:
                best = max(best, _hv(pts[list(subset)]))
    return best / total


def _instance(seed: int, n: int = 9, integer: bool = True) -> tuple[FrontReference, np.ndarray]:
    rng = np.random.default_rng(seed)
    acc = rng.uniform(10, 90, n)
    # Throughput falling with accuracy, with noise, so the fronts hold several points.
    log_thr = 4 - 0.02 * acc + rng.normal(0, 0.3, n)
    cost = rng.integers(1, 10, n).astype(float) if integer else rng.uniform(0.3, 6.0, n)
    return _reference(np.stack([acc, log_thr], axis=1)), cost


@pytest.mark.parametrize("seed", range(6))
def test_integer_costs_give_the_exact_optimum(seed: int) -> None:
    ref, cost = _instance(seed)
    budgets = [0.0, 3.0, 7.0, 12.0, 20.0, 60.0]
    c = clairvoyant_ceiling(ref, cost, budgets)
    for i, b in enumerate(budgets):
        want = _brute(ref, cost, b)
        assert c.lower[i] == pytest.approx(want, abs=1e-12)
        assert c.upper[i] == pytest.approx(want, abs=1e-12)
        assert cost[c.chosen[i]].sum() <= b
        assert _hv(ref.norm.transform(ref.points[c.chosen[i]])) / _hv(
            ref.norm.transform(ref.points)
        ) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_fractional_costs_are_bracketed(seed: int) -> None:
    ref, cost = _instance(seed, integer=False)
    budgets = [2.0, 5.5, 9.0, 14.0]
    c = clairvoyant_ceiling(ref, cost, budgets, resolution=1.0)
    for i, b in enumerate(budgets):
        want = _brute(ref, cost, b)
        assert c.lower[i] <= want + 1e-12
        assert want <= c.upper[i] + 1e-12
        assert cost[c.chosen[i]].sum() <= b
    fine = clairvoyant_ceiling(ref, cost, budgets, resolution=0.01)
    assert np.all(fine.upper - fine.lower <= c.upper - c.lower + 1e-12)


def test_the_whole_front_reaches_one_and_nothing_affordable_gives_zero() -> None:
    ref, cost = _instance(3)
    front_cost = float(cost[ref.true_front].sum())
    c = clairvoyant_ceiling(ref, cost, [front_cost, cost.min() - 0.5])
    assert c.lower[0] == pytest.approx(1.0, abs=1e-12)
    assert c.lower[1] == 0.0 and c.upper[1] == 0.0 and len(c.chosen[1]) == 0


def test_a_cheaper_dominating_point_replaces_a_costly_one() -> None:
    # Point 1 is dominated by point 0, which costs less: never needed. Point 2 is dominated
    # by point 0 but costs less: it may be needed when 0 is unaffordable.
    pts = np.array([[80.0, 3.0], [70.0, 2.5], [75.0, 2.9], [20.0, 4.0]])
    cost = np.array([5.0, 6.0, 1.0, 1.0])
    assert sorted(cost_efficient(pts, cost).tolist()) == [0, 2, 3]
    ref = _reference(pts)
    c = clairvoyant_ceiling(ref, cost, [2.0, 6.0])
    assert sorted(c.chosen[0].tolist()) == [2, 3]
    assert sorted(c.chosen[1].tolist()) == [0, 3]
    assert c.candidates == 3


@pytest.mark.parametrize("seed", range(3))
def test_seconds_to_reach_match_the_cheapest_subset(seed: int) -> None:
    ref, cost = _instance(seed)
    pts = ref.norm.transform(ref.points)
    total = _hv(pts)
    for target in (0.5, 0.9, 0.99, 1.0):
        cheapest = min(
            cost[list(s)].sum()
            for r in range(1, len(pts) + 1)
            for s in itertools.combinations(range(len(pts)), r)
            if _hv(pts[list(s)]) / total >= target * (1 - 1e-12)
        )
        assert clairvoyant_ceiling(ref, cost, [100.0]).seconds_to_reach(target) == (
            cheapest,
            cheapest,
        )
    short = clairvoyant_ceiling(ref, cost, [cost.min() - 0.5])
    assert short.seconds_to_reach(1.0) == (math.inf, math.inf)


def test_a_trusted_signal_picks_its_own_best_set() -> None:
    # log throughput rises with the index; accuracy is what scores.
    pts = np.array([[90.0, 1.0], [80.0, 2.0], [60.0, 3.0], [30.0, 4.0], [95.0, 0.5]])
    ref = _reference(pts)
    cost = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
    scaled = ref.norm.transform(pts)
    total = _hv(scaled)
    # A signal that ranks the fast networks best but for 4: its front in (signal,
    # throughput) is {3, 4}, so with budget to spare that is the set, whatever else fits.
    wrong = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    ratios, sets = signal_ceiling(ref, wrong, cost, [10.0])
    assert sorted(sets[0].tolist()) == [3, 4]
    assert ratios[0] == pytest.approx(_hv(scaled[[3, 4]]) / total)
    # With one evaluation: the single network of the largest area by the signal, against
    # brute force with moocore on the signal's own normalized scale.
    sig_ref = _reference(np.stack([wrong, pts[:, 1]], axis=1))
    sig_scaled = sig_ref.norm.transform(sig_ref.points)
    best = max(range(5), key=lambda i: _hv(sig_scaled[[i]]))
    ratios, sets = signal_ceiling(ref, wrong, cost, [1.0])
    assert sets[0].tolist() == [best]
    assert ratios[0] == pytest.approx(_hv(scaled[[best]]) / total)
    # The scored accuracy itself as the signal gives the clairvoyant ceiling.
    ratios, _ = signal_ceiling(ref, pts[:, 0], cost, [1.0, 2.0, 3.0])
    assert ratios == pytest.approx(clairvoyant_ceiling(ref, cost, [1.0, 2.0, 3.0]).lower)
    # An architecture without a signal is never chosen.
    missing = wrong.copy()
    missing[3] = np.nan
    _, sets = signal_ceiling(ref, missing, cost, [10.0])
    assert 3 not in sets[0].tolist()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda r, c: clairvoyant_ceiling(r, c[:-1], [5.0]), r"cost must have shape \(9,\)"),
        (lambda r, c: clairvoyant_ceiling(r, np.where(np.arange(9) == 4, -1.0, c), [5.0]),
         "cost of architecture 4 is -1.0"),
        (lambda r, c: clairvoyant_ceiling(r, np.where(np.arange(9) == 2, np.nan, c), [5.0]),
         "cost of architecture 2 is nan"),
        (lambda r, c: clairvoyant_ceiling(r, c, [-1.0]), "budget .* got -1.0"),
        (lambda r, c: clairvoyant_ceiling(r, c, [True]), "budget .* got True"),
        (lambda r, c: clairvoyant_ceiling(r, c, []), "budgets is empty"),
        (lambda r, c: clairvoyant_ceiling(r, c, [5.0], resolution=0), "resolution .* got 0"),
        (lambda r, c: clairvoyant_ceiling(r, c, [9.0]).seconds_to_reach(0.0), "target .* 0.0"),
        (lambda r, c: clairvoyant_ceiling(r, c, [9.0]).seconds_to_reach(1.5), "target .* 1.5"),
        (lambda r, c: clairvoyant_ceiling(r, c, [math.inf]), "budget .* got inf"),
        (lambda r, c: signal_ceiling(r, np.ones(3), c, [5.0]), r"signal must have shape \(9,\)"),
        (lambda r, c: signal_ceiling(r, np.full(9, np.nan), c, [5.0]), "not finite for any"),
        (lambda r, c: clairvoyant_ceiling(r, c, [5.0], last_may_overrun=1),
         "last_may_overrun must be True or False, got 1"),
    ],
)  # fmt: skip
def test_bad_input_is_named(call: object, message: str) -> None:
    ref, cost = _instance(0)
    with pytest.raises(ValueError, match=message):
        call(ref, cost)  # type: ignore[operator]


def test_a_grid_too_large_asks_for_a_coarser_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    ref, cost = _instance(0)
    monkeypatch.setattr(ceiling_module, "MAX_GRID", 1000)
    with pytest.raises(ValueError, match=r"coarser resolution than 0\.01 s"):
        clairvoyant_ceiling(ref, cost, [50.0], resolution=0.01)


def test_a_run_that_evaluates_the_chosen_set_is_scored_at_the_ceiling() -> None:
    """On the shipped real tss table (ImageNet16-120, RTX 2080 Ti at batch 256), a metered
    problem evaluating the chosen set within the budget is scored at ``lower``."""
    from nasfilter.runs.inputs import inputs
    from nasfilter.runs.records import RunSpec
    from nasfilter.runs.results import score_events
    from nasfilter.runs.runner import make_problem

    budget = 6000.0
    table, proxy, ref = inputs(
        RunSpec(searcher="random", dataset="ImageNet16-120", table="tss-real",
                oracle="measured", device="2080ti")
    )  # fmt: skip
    c = clairvoyant_ceiling(ref, table.eval_cost, [budget])
    assert 0.99 < c.lower[0] <= c.upper[0] < 1.0
    assert c.upper[0] - c.lower[0] < 1e-3
    problem = make_problem(table, budget, seed=0, proxy=proxy)
    for index in c.chosen[0].tolist():
        problem.evaluate(index)
    assert problem.worker_seconds <= budget
    _, curves = score_events(ref, table, problem.log.arrays(), np.array([budget]))
    assert curves["hv_ratio"][0] == pytest.approx(c.lower[0], rel=1e-12)
    assert curves["n_evaluations"][0] == len(c.chosen[0])


def _brute_overrun(ref: FrontReference, cost: np.ndarray, budget: float) -> float:
    """The best HV ratio of any subset whose costs less the largest sum to at most
    ``budget``: a run may start its last evaluation with any budget left."""
    pts = ref.norm.transform(ref.points)
    best = 0.0
    for r in range(1, len(pts) + 1):
        for subset in itertools.combinations(range(len(pts)), r):
            c = cost[list(subset)]
            if c.sum() - c.max() <= budget + 1e-9:
                best = max(best, _hv(pts[list(subset)]))
    return best / _hv(pts)


@pytest.mark.parametrize("seed", range(6))
def test_with_an_overrunning_last_evaluation_integer_costs_give_the_exact_optimum(
    seed: int,
) -> None:
    ref, cost = _instance(seed)
    cost[seed % len(cost)] = 40.0  # one costs more than most budgets: only ever the last
    budgets = [0.0, 3.0, 7.0, 12.0, 20.0]
    c = clairvoyant_ceiling(ref, cost, budgets, last_may_overrun=True)
    plain = clairvoyant_ceiling(ref, cost, budgets)
    assert c.last_may_overrun and not plain.last_may_overrun
    for i, b in enumerate(budgets):
        want = _brute_overrun(ref, cost, b)
        assert c.lower[i] == pytest.approx(want, abs=1e-12)
        assert c.upper[i] == pytest.approx(want, abs=1e-12)
        chosen = cost[c.chosen[i]]
        assert len(chosen) and chosen.sum() - chosen.max() <= b
        assert reference_ratio(ref, c.chosen[i]) == pytest.approx(want, abs=1e-12)
        assert c.lower[i] >= plain.lower[i] - 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_with_an_overrunning_last_evaluation_fractional_costs_are_bracketed(seed: int) -> None:
    ref, cost = _instance(seed, integer=False)
    budgets = [0.5, 2.0, 5.5, 9.0]
    c = clairvoyant_ceiling(ref, cost, budgets, last_may_overrun=True)
    for i, b in enumerate(budgets):
        want = _brute_overrun(ref, cost, b)
        assert c.lower[i] <= want + 1e-12 <= c.upper[i] + 2e-12
        chosen = cost[c.chosen[i]]
        assert chosen.sum() - chosen.max() <= b


def test_at_a_zero_budget_the_best_single_architecture_is_the_overrun_ceiling() -> None:
    # (accuracy, log throughput): the first alone covers more than the second or third
    ref = _reference(np.array([[80.0, 2.0], [90.0, 1.0], [60.0, 3.0]]))
    c = clairvoyant_ceiling(ref, np.array([500.0, 5.0, 5.0]), [0.0], last_may_overrun=True)
    pts = ref.norm.transform(ref.points)
    singles = [_hv(pts[[i]]) / _hv(pts) for i in range(3)]
    assert c.chosen[0].tolist() == [int(np.argmax(singles))]
    assert c.lower[0] == pytest.approx(max(singles))


def reference_ratio(ref: FrontReference, chosen: np.ndarray) -> float:
    pts = ref.norm.transform(ref.points)
    return _hv(pts[chosen]) / _hv(pts)


def test_a_run_whose_last_evaluation_overruns_is_scored_at_the_overrun_ceiling() -> None:
    """On the shipped real tss table (ImageNet16-120, RTX 2080 Ti at batch 256), a metered
    problem evaluating the chosen set, the costliest last, starts every evaluation before the
    budget is spent, and its final metrics are the overrun ceiling's ``lower``."""
    from nasfilter.runs.inputs import inputs
    from nasfilter.runs.records import RunSpec
    from nasfilter.runs.results import score_events
    from nasfilter.runs.runner import make_problem

    budget = 3000.0
    table, proxy, ref = inputs(
        RunSpec(searcher="random", dataset="ImageNet16-120", table="tss-real",
                oracle="measured", device="2080ti")
    )  # fmt: skip
    c = clairvoyant_ceiling(ref, table.eval_cost, [budget], last_may_overrun=True)
    plain = clairvoyant_ceiling(ref, table.eval_cost, [budget])
    assert c.lower[0] > plain.upper[0]  # the overrunning evaluation is worth something here
    chosen = c.chosen[0][np.argsort(table.eval_cost[c.chosen[0]], kind="stable")]
    problem = make_problem(table, budget, seed=0, proxy=proxy)
    for index in chosen.tolist():
        problem.evaluate(index)
    assert problem.worker_seconds > budget  # the last one ends past the budget
    metrics, _ = score_events(ref, table, problem.log.arrays(), np.array([budget]))
    assert metrics["hv_ratio"] == pytest.approx(c.lower[0], rel=1e-12)
