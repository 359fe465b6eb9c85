"""Every built-in searcher on the topology space (tss): valid tss indices, one run per seed,
evolution's one-edge mutation, the two real fidelities, and refusals that name the searcher
and the space."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from nasfilter.bench.fidelity import Fidelity
from nasfilter.bench.spaces import TSS, Cell
from nasfilter.bench.tss_data import load_tss_arrays, seed_record_params_mismatch
from nasfilter.bench.tss_real import VALID_PASS_RATIO, tss_table
from nasfilter.oracle.measured import measured_proxy
from nasfilter.runs.records import RunRecord
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import RandomSearch, Searcher, arch_from_index, make_searcher
from nasfilter.sim.problem import Problem
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from nasfilter.testing.contracts import Inputs, SearcherContract

MF = "[min_epochs=12,max_epochs=200,eta=16]"
SEARCHERS = (
    "random", "evolution", "reinforce", "reinforce-mnas", "model-based", "model-based-hw",
    "utilization-pareto", "utilization-layers", "optuna-nsga2", "optuna-random",
    f"successive-halving{MF}", f"hyperband{MF}", f"asha{MF}", f"bohb{MF}", f"mo-asha{MF}",
)  # fmt: skip
BUDGET = 8_000.0  # simulated seconds: ~70 hp-12 evaluations on CIFAR-10


def _run(
    spec: str, seed: int, table: str = "tss-real", dataset: str = "cifar10"
) -> tuple[RunRecord, Problem]:
    problem = make_problem(
        tss_table(dataset, table), BUDGET, seed, proxy=measured_proxy("2080ti")
    )
    return run_search(make_searcher(spec), problem), problem


@pytest.mark.parametrize("spec", SEARCHERS)
def test_each_searcher_runs_on_tss_and_evaluates_valid_tss_indices(spec: str) -> None:
    record, _ = _run(spec, 0)
    evaluated = np.asarray(record.evaluated)
    assert len(evaluated) >= 5, spec
    assert evaluated.min() >= 0 and evaluated.max() <= 15624
    # the same seed gives the same run; another seed another one
    again, _ = _run(spec, 0)
    assert np.array_equal(np.asarray(again.evaluated), evaluated)
    if spec not in ("utilization-pareto", "utilization-layers"):  # a fixed scan order
        other, _ = _run(spec, 1)
        assert not np.array_equal(np.asarray(other.evaluated)[:20], evaluated[:20])


def test_utilization_pareto_on_tss_evaluates_the_measured_throughput_utilization_front() -> None:
    proxy = measured_proxy("2080ti")
    thr, util = proxy.throughput, proxy.utilization
    # the front by brute force: no other cell at least as good on both, better on one
    front = {
        i for i in range(TSS.size)
        if not np.any((thr >= thr[i]) & (util >= util[i]) & ((thr > thr[i]) | (util > util[i])))
    }  # fmt: skip
    problem = make_problem(tss_table("cifar10"), 60_000.0, 0, proxy=proxy)
    record = run_search(make_searcher("utilization-pareto[scan_share=None]"), problem)
    assert set(np.asarray(record.evaluated).tolist()) == front


def _edge_differences(a: int, b: int) -> int:
    ops_a = str(TSS.arch(a)).replace("+", "").strip("|").split("|")
    ops_b = str(TSS.arch(b)).replace("+", "").strip("|").split("|")
    return sum(x != y for x, y in zip(ops_a, ops_b, strict=True))


def test_tss_evolution_mutates_exactly_one_edge_operation() -> None:
    # population 1, tournament 1: once full, every child is a mutation of the one member,
    # and the told child replaces it (aging)
    searcher = make_searcher("evolution[population_size=1,tournament_size=1]")
    problem = make_problem(tss_table("cifar10"), 1_000.0, 0)
    searcher.setup(SearchContext(np.random.default_rng(5), ProxyHandle(problem)))
    parent = None
    for step in range(200):
        trial = searcher.ask()
        assert trial is not None and isinstance(trial.arch, Cell)
        child = TSS.index_of(trial.arch)
        if parent is not None:
            assert _edge_differences(child, parent) == 1, (step, parent, child)
        searcher.tell(trial, 50.0)
        parent = child


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("evolution[population_size=20000]", "population_size"),
        ("model-based[init=20000]", "init"),
        ("model-based-hw[init_proxy=20000]", "init_proxy"),
        ("model-based[strata=20000]", "strata"),
    ],
)
def test_settings_larger_than_the_tss_space_are_refused_naming_it(spec: str, name: str) -> None:
    # 20000 is within the sss space (32768): accepted before the space is known. model-based
    # used to fail inside numpy ("a cannot be empty") on an init above the space's size.
    searcher = make_searcher(spec)
    problem = make_problem(tss_table("cifar10"), 1_000.0, 0, proxy=measured_proxy("2080ti"))
    with pytest.raises(ValueError, match=rf"^{name} must be at most the tss space's "
                       r"size 15625, got 20000$"):
        searcher.setup(SearchContext(np.random.default_rng(0), ProxyHandle(problem)))


def test_model_based_init_of_the_whole_tss_space_is_accepted() -> None:
    searcher = make_searcher("model-based[init=15625]")
    problem = make_problem(tss_table("cifar10"), 1_000.0, 0, proxy=measured_proxy("2080ti"))
    searcher.setup(SearchContext(np.random.default_rng(0), ProxyHandle(problem)))
    trial = searcher.ask()
    assert trial is not None and 0 <= TSS.index_of(trial.arch) < 15625


class TestRandomSearchContractOnTss(SearcherContract):
    """The shipped contract's proposal check on a tss table: Cells, valid tss indices."""

    budget = 3_000.0

    def make_searcher(self) -> Searcher:
        return make_searcher("random")

    def make_problem_inputs(self) -> Inputs:
        return tss_table("cifar10"), measured_proxy("2080ti")


def test_the_contract_refuses_an_sss_arch_proposed_on_tss() -> None:
    class SssOnTss(RandomSearch):
        spaces = ("sss", "tss")

        def propose(self) -> Any:
            return arch_from_index(int(self.rng.integers(TSS.size)))

    class Contract(TestRandomSearchContractOnTss):
        def make_searcher(self) -> Searcher:
            return SssOnTss()

    with pytest.raises(AssertionError, match="not a Cell of the tss space"):
        Contract().test_proposals_are_valid_architectures()


def test_reinforce_on_tss_has_a_six_by_five_policy() -> None:
    searcher = make_searcher("reinforce")
    problem = make_problem(tss_table("cifar100"), 3_000.0, 0)
    run_search(searcher, problem)
    probs = searcher.probabilities()  # type: ignore[attr-defined]
    assert probs.shape == (6, 5)
    assert np.allclose(probs.sum(axis=1), 1.0)
    assert isinstance(searcher.recommend(), Cell)


def test_two_rungs_on_tss_real_hp200_screen_at_hp12_and_evaluate_at_hp200() -> None:
    record, problem = _run(f"successive-halving{MF}", 0, table="tss-real-hp200")
    partial = problem.fidelity_evaluations
    hp12 = load_tss_arrays("cifar10").hp12_valid_acc.astype(np.float64)
    assert partial and {e.hp for e in partial} == {"12"}
    assert all(e.accuracy == hp12[e.arch] and e.iepoch == 11 for e in partial)
    screened = {e.arch for e in partial}
    assert set(np.asarray(record.evaluated).tolist()) <= screened  # promoted after a screen


def test_an_hp200_promotion_observes_one_real_seed_and_pays_200_epochs() -> None:
    _, problem = _run(f"asha{MF}", 2, table="tss-real")
    arrays = load_tss_arrays("cifar10")
    per_seed = arrays.hp200_valid_acc.astype(np.float64)
    flagged = seed_record_params_mismatch()
    promotions = [e for e in problem.fidelity_evaluations if e.hp == "200"]
    assert promotions
    for e in promotions:
        seeds = [s for s in range(per_seed.shape[1]) if not flagged[e.arch, s]]
        assert any(e.accuracy == per_seed[e.arch, s] for s in seeds)
        train = float(arrays.hp200_train_time_s[e.arch])
        assert e.cost == pytest.approx(train * (1 + VALID_PASS_RATIO["cifar10"] / 200))


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("asha", r"asha on the tss space .*rungs at \[1, 4, 12\] epochs.*min_epochs=12"),
        ("hyperband[min_epochs=12,max_epochs=200,eta=4]", r"hyperband on the tss space .*50"),
        ("model-based-mf", r"'model-based-mf' handles the sss space.*not the tss space"),
        ("optuna-tpe-hyperband", r"'optuna-tpe-hyperband' handles the sss space.*not the tss"),
    ],
)
def test_what_cannot_run_on_tss_is_refused_naming_the_searcher_and_space(
    spec: str, words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        _run(spec, 0)


def test_an_epoch_without_a_curve_is_refused_by_name() -> None:
    problem = make_problem(tss_table("cifar10"), 5_000.0, 0)
    with pytest.raises(ValueError, match=r"tss hp 12 has no per-epoch curve.*got iepoch 4"):
        problem.start_at_fidelity(0, Fidelity(5, "12"))
