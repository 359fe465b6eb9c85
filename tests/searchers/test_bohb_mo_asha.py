"""BOHB, MO-ASHA and the Optuna TPE + Hyperband peer: runs checked against their rules."""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.bench.fidelity import Fidelity, NoCurvesError
from nasfilter.bench.surrogate import embedded_table
from nasfilter.oracle import proxy_table
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import BOHB, MOASHA, RandomSearch, make_searcher
from nasfilter.searchers.optuna_adapter import OptunaHyperband, optuna_available
from nasfilter.sim.problem import Budget
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from nasfilter.testing.structured_curves import StructuredCurves
from tests.tables import random_table

TABLE = embedded_table("cifar10")
PROXY = proxy_table("roofline", "v100", "cifar10")
needs_optuna = pytest.mark.skipif(not optuna_available(), reason="optuna not installed")


def _run(searcher, budget: float = 20_000.0, seed: int = 1, workers: int = 1, **kw):
    problem = make_problem(TABLE, Budget(budget), seed, proxy=PROXY, **kw)
    return run_search(searcher, problem, workers=workers), problem


def _epochs(events: dict[str, np.ndarray]) -> list[int]:
    return [
        12 if kind == "evaluate" else int(epochs)
        for kind, epochs in zip(events["kind"], events["epochs"], strict=True)
        if kind in ("evaluate", "partial")
    ]


def test_bohb_runs_hyperbands_schedule() -> None:
    result, _ = _run(BOHB())
    assert _epochs(result.events)[:22] == [1] * 9 + [4] * 3 + [12] + [4] * 5 + [12] + [12] * 3


@pytest.mark.slow
def test_bohbs_model_finds_better_architectures_than_uniform_draws() -> None:
    def mean_full_accuracy(searcher) -> float:
        result, _ = _run(searcher, budget=60_000.0, seed=3)
        ev = result.events
        return float(TABLE.valid_acc[ev["index"][ev["kind"] == "evaluate"]].mean())

    modelled = mean_full_accuracy(BOHB(random_fraction=0.0))
    uniform = mean_full_accuracy(BOHB(random_fraction=1.0))  # Hyperband with BOHB's draws
    assert modelled > uniform + 0.5


def _hand_context(seed: int = 0) -> tuple[MOASHA, object]:
    problem = make_problem(TABLE, Budget(1e6), seed, proxy=PROXY)
    searcher = MOASHA()
    searcher.setup(SearchContext(np.random.default_rng(seed), ProxyHandle(problem)))
    return searcher, problem


def test_mo_asha_promotes_by_non_dominated_rank_not_accuracy() -> None:
    searcher, problem = _hand_context()
    trials = [searcher.ask() for _ in range(6)]
    assert problem.n_proxy == 6  # one charged throughput query per new architecture
    assert all(t.fidelity == Fidelity(1, "12") for t in trials)
    thr = [PROXY.throughput[t.arch.index] for t in trials]
    order = np.argsort(thr)  # slowest first
    acc = np.full(6, 60.0)
    slowest, a, fastest = order[0], order[1], order[-1]
    acc[slowest], acc[a], acc[fastest] = 85.0, 90.0, 70.0  # a dominates the slowest
    for t, v in zip(trials, acc.tolist(), strict=True):
        searcher.tell(t, v)
    # floor(6 / 3) = 2 promotions: layer 0 is {a, fastest}; accuracy alone would take
    # a and the slowest (85 %), which a dominates
    first, second = searcher.ask(), searcher.ask()
    assert [first.arch, second.arch] == [trials[a].arch, trials[fastest].arch]
    assert first.fidelity == second.fidelity == Fidelity(4, "12")
    assert searcher.ask().fidelity == Fidelity(1, "12")  # nothing else: a new one


def test_mo_asha_uses_every_worker_and_returns_full_evaluations() -> None:
    result, _ = _run(MOASHA(), workers=16)
    ev = result.events
    part = ev["kind"] == "partial"
    # each starts right after its 2-s throughput query, on a worker of its own
    assert ev["start"][part][:16] == pytest.approx(2.0 * np.arange(1, 17))
    assert len(set(ev["worker"][part][:16].tolist())) == 16
    full = ev["index"][ev["kind"] == "evaluate"]
    assert len(full) > 0 and result.best_index in full.tolist()
    assert sorted(set(_epochs(ev))) == [1, 4, 12]


@pytest.mark.parametrize("cls", [BOHB, MOASHA])
def test_bad_input_names_the_valid_range(cls) -> None:
    with pytest.raises(ValueError, match=r"min_epochs=5 is above max_epochs=4"):
        cls(min_epochs=5, max_epochs=4)
    with pytest.raises(ValueError, match=r"eta must be a finite number > 1"):
        cls(eta=1)
    compact = make_problem(random_table(), Budget(1e4), 0, proxy=PROXY)
    with pytest.raises(NoCurvesError, match="nasfilter convert"):
        run_search(cls(), compact)


def test_bohb_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="random_fraction"):
        BOHB(random_fraction=1.5)
    with pytest.raises(ValueError, match="top_fraction"):
        BOHB(top_fraction=0.0)
    searcher = BOHB(min_epochs=2, n_samples=16)
    assert (searcher.min_epochs, searcher.n_samples, searcher.min_points) == (2, 16, None)


def test_mo_asha_on_the_structured_tables_curves() -> None:
    curves = StructuredCurves()
    problem = make_problem(curves.table, Budget(5_000.0), 2, proxy=PROXY, curves=curves)
    result = run_search(MOASHA(), problem)
    for e in problem.fidelity_evaluations:
        seed_pos = (777, 888, 999).index(e.seed)
        assert e.accuracy == curves.curves()[e.arch, seed_pos, e.iepoch]
    assert result.n_evaluations > 0


@needs_optuna
@pytest.mark.slow
def test_optuna_hyperband_prunes_and_reports_the_curves() -> None:
    searcher = OptunaHyperband()
    result, problem = _run(searcher, budget=15_000.0, seed=4)
    assert searcher.n_pruned > 0
    states = [t.state.name for t in searcher._study.trials]
    assert states.count("PRUNED") == searcher.n_pruned
    # every reported intermediate value is the accuracy an evaluation at that epoch gave
    answers = {(e.arch, e.iepoch + 1, e.accuracy) for e in problem.fidelity_evaluations}
    ev = result.events
    full = ev["kind"] == "evaluate"
    answers |= {(int(i), 12, float(v)) for i, v in zip(ev["index"][full], ev["accuracy"][full],
                                                       strict=True)}
    reported = 0
    for t in searcher._study.trials:
        index = _index_of_params(t.params)
        for step, value in t.intermediate_values.items():
            assert (index, step, value) in answers
            reported += 1
    assert reported >= len(problem.fidelity_evaluations)
    # rungs of the most aggressive bracket only: 1, 3, 9 epochs, then the full evaluation
    assert set(_epochs(ev)) <= {1, 3, 9, 12}


def _index_of_params(params: dict[str, int]) -> int:
    from nasfilter.bench.spaces.sss import Arch

    return Arch(tuple(int(params[f"c{k + 1}"]) for k in range(5))).index


@needs_optuna
@pytest.mark.slow
def test_optuna_hyperband_reports_every_epoch_when_resuming() -> None:
    searcher = OptunaHyperband(report="epochs")
    result, problem = _run(searcher, budget=6_000.0, seed=5, charging="resume")
    epochs = _epochs(result.events)
    assert 2 in epochs and 5 in epochs  # every epoch, not only the rungs
    # resumed: an epoch-2 report after epoch 1 of the same architecture pays one epoch
    log = problem.fidelity_evaluations
    first = log[0]
    nxt = next(e for e in log[1:] if e.arch == first.arch and e.iepoch == 1)
    assert nxt.cost == pytest.approx(TABLE.train_time[first.arch] + TABLE.valid_time[first.arch])


@needs_optuna
@pytest.mark.slow
def test_optuna_hyperband_is_deterministic_at_four_workers() -> None:
    a, _ = _run(OptunaHyperband(), budget=8_000.0, seed=6, workers=4)
    b, _ = _run(OptunaHyperband(), budget=8_000.0, seed=6, workers=4)
    assert np.array_equal(a.events["index"], b.events["index"])
    assert np.array_equal(a.events["accuracy"], b.events["accuracy"], equal_nan=True)
    with pytest.raises(ValueError, match="report must be one of"):
        OptunaHyperband(report="always")


def test_registered_with_their_arguments_as_attributes() -> None:
    for name, cls in (("bohb", BOHB), ("mo-asha", MOASHA)):
        searcher = make_searcher(name)
        assert isinstance(searcher, cls) and searcher.eta == 3 and searcher.max_epochs == 12
    assert not isinstance(make_searcher("mo-asha"), RandomSearch)
