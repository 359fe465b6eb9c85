"""The public ways to run: the seed given once, a table and a proxy of one dataset, and
in-process plugins (instances and factories) in an experiment without a file path."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import nasfilter
from nasfilter.oracle import proxy_table
from nasfilter.runs import experiment, results
from nasfilter.runs import inputs as inputs_module
from nasfilter.runs.experiment import grid, run_experiment, run_one, search
from nasfilter.runs.inputs import inputs
from nasfilter.runs.records import RunSpec
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.runs.storage.base import InMemoryStorage
from nasfilter.searchers import RandomSearch, make_searcher
from nasfilter.sim.problem import Budget, Problem

BUDGET = 3000.0


@functools.lru_cache(maxsize=4)
def _table(dataset: str) -> nasfilter.BenchmarkTable:
    return nasfilter.load_table("synthetic", dataset)


@functools.lru_cache(maxsize=4)
def _proxy(dataset: str) -> nasfilter.ProxyTable:
    return proxy_table("roofline", "v100", dataset)


# ------------------------------------------------------------------ the seed, once
def test_run_search_refuses_a_seed_other_than_the_problem_s_naming_both() -> None:
    problem = make_problem(_table("cifar10"), BUDGET, 1, proxy=_proxy("cifar10"))
    with pytest.raises(ValueError, match=r"made with seed 1 but run_search was given seed 2"):
        run_search(make_searcher("random"), problem, seed=2)
    assert len(problem.log) == 0  # refused before anything ran


def test_search_takes_the_seed_once_and_equals_the_two_step_run() -> None:
    one = search("random", _table("cifar10"), BUDGET, seed=5, proxy=_proxy("cifar10"))
    problem = make_problem(_table("cifar10"), BUDGET, 5, proxy=_proxy("cifar10"))
    two = run_search(make_searcher("random"), problem)
    assert one.n_evaluations == two.n_evaluations > 0
    for name, column in two.events.items():
        np.testing.assert_array_equal(one.events[name], column)
    other = search("random", _table("cifar10"), BUDGET, seed=6, proxy=_proxy("cifar10"))
    assert not np.array_equal(other.evaluated, one.evaluated)
    assert nasfilter.search is search


def test_a_problem_with_its_own_generator_carries_no_seed_to_compare() -> None:
    problem = Problem(_table("cifar10"), np.random.default_rng(3), Budget(BUDGET))
    record = run_search(make_searcher("random"), problem, seed=4)
    assert record.status == "budget" and record.seed == 4


def test_run_search_reads_the_seed_from_the_problem_when_given_none() -> None:
    problem = make_problem(_table("cifar10"), BUDGET, 5, proxy=_proxy("cifar10"))
    once = run_search(make_searcher("random"), problem)
    problem = make_problem(_table("cifar10"), BUDGET, 5, proxy=_proxy("cifar10"))
    twice = run_search(make_searcher("random"), problem, seed=5)
    assert once.seed == twice.seed == 5 and once.n_evaluations > 0
    for name, column in twice.events.items():
        np.testing.assert_array_equal(once.events[name], column)
    other = run_search(make_searcher("random"), make_problem(_table("cifar10"), BUDGET, 6))
    assert other.seed == 6 and not np.array_equal(other.evaluated, once.evaluated)


def test_a_problem_with_its_own_generator_and_no_seed_is_refused() -> None:
    problem = Problem(_table("cifar10"), np.random.default_rng(3), Budget(BUDGET))
    with pytest.raises(ValueError, match=r"run_search needs the run's seed: .*make_problem"):
        run_search(make_searcher("random"), problem)
    assert len(problem.log) == 0


def test_a_seed_sequence_seed_is_compared_too() -> None:
    seq = np.random.SeedSequence(9)
    problem = make_problem(_table("cifar10"), BUDGET, seq)
    run_search(make_searcher("random"), problem, seed=np.random.SeedSequence(9))
    problem = make_problem(_table("cifar10"), BUDGET, seq)
    with pytest.raises(ValueError, match="made with seed 9 but run_search was given seed 8"):
        run_search(make_searcher("random"), problem, seed=8)


# ------------------------------------------------------------------ one dataset
MISMATCH = r"table is for dataset 'cifar100' but the proxy .* was computed for 'cifar10'"


def test_a_cifar100_table_with_a_cifar10_proxy_is_refused_everywhere() -> None:
    table, proxy = _table("cifar100"), _proxy("cifar10")
    with pytest.raises(ValueError, match=MISMATCH):
        make_problem(table, BUDGET, 0, proxy=proxy)
    with pytest.raises(ValueError, match=MISMATCH):
        search("random", table, BUDGET, seed=0, proxy=proxy)
    # held by construction: a Problem is never built with the pair, so no run can start on it
    with pytest.raises(ValueError, match=MISMATCH):
        Problem(table, np.random.default_rng(0), Budget(BUDGET), proxy=proxy)


def test_a_spec_s_inputs_refuse_a_proxy_of_another_dataset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = RunSpec("random", dataset="cifar100", table="synthetic", oracle="roofline")
    monkeypatch.setattr(inputs_module, "proxy_table", lambda *args: _proxy("cifar10"))
    inputs_module._proxy_at.cache_clear()
    inputs_module._reference_at.cache_clear()
    try:
        with pytest.raises(ValueError, match=MISMATCH):
            inputs(spec)
    finally:
        inputs_module._proxy_at.cache_clear()
        inputs_module._reference_at.cache_clear()


# ------------------------------------------------------------------ in-process plugins
class Shy(RandomSearch):
    """An in-process plugin: random search under another name."""

    name = "shy"


def _factory() -> Shy:
    return Shy()


COMMON = {"budget": BUDGET, "table": "synthetic", "oracle": "roofline", "n_ticks": 4}


def test_an_experiment_runs_plugin_instances_and_factories() -> None:
    specs = grid([Shy(), _factory, "random"], **COMMON)
    # the instance and the factory name one searcher, kept once
    assert [s.searcher for s in specs] == [f"{__name__}:Shy", "random"]
    with InMemoryStorage() as storage:
        runs = run_experiment(specs, [0, 1], store=storage)
        assert [(r.spec.searcher, r.seed) for r in runs] == [
            (f"{__name__}:Shy", 0),
            (f"{__name__}:Shy", 1),
            ("random", 0),
            ("random", 1),
        ]
        assert len(storage.stored_runs()) == 4
    # The plugin is random search: its runs match the built-in's, seed for seed.
    for plugin, builtin in zip(runs[:2], runs[2:], strict=True):
        np.testing.assert_array_equal(plugin.events["index"], builtin.events["index"])
        assert plugin.metrics == builtin.metrics


def test_a_plugin_instance_is_copied_for_each_run() -> None:
    instance = Shy()
    spec = RunSpec.of(instance, **COMMON)
    first, again = run_one(spec, 3), run_one(spec, 3)
    assert first.same_results(again)
    assert not hasattr(instance, "rng")  # the spec's runs never set up the instance given
    from_factory = run_one(RunSpec.of(_factory, **COMMON), 3)
    assert from_factory.same_results(first)


def test_a_factory_that_makes_no_searcher_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"factory .* returned 'random', not a Searcher"):
        RunSpec.of(lambda: "random", **COMMON)
    with pytest.raises(ValueError, match="searcher must be a spec string, a Searcher"):
        RunSpec.of(3, **COMMON)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the spec, resolved once
def test_run_one_resolves_its_spec_once_for_running_and_scoring(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[RunSpec] = []

    def counting(spec: RunSpec) -> inputs_module.RunInputs:
        calls.append(spec)
        return inputs(spec)

    monkeypatch.setattr(experiment, "inputs", counting)
    monkeypatch.setattr(results, "inputs", counting)
    spec = RunSpec("random", table="synthetic", oracle="roofline", budget=BUDGET)
    scored = run_one(spec, 3)
    assert calls == [spec]  # one resolution, for the run and its scores
    monkeypatch.undo()
    again = results.score_record(scored.record)  # resolved afresh: the same scores
    assert again.metrics == scored.metrics and again.summary == scored.summary
    assert scored.metrics["hv_ratio"] > 0


def test_inputs_names_its_parts() -> None:
    spec = RunSpec("random", table="synthetic", oracle="roofline")
    resolved = inputs(spec)
    table, proxy, reference = resolved
    assert (resolved.table, resolved.proxy, resolved.reference) == (table, proxy, reference)
    assert table.label == nasfilter.load_table("synthetic", "cifar10").label
    assert proxy.space is table.space
