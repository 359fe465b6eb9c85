"""The pieces of model-based search: objective space, acquisition, batch selection."""

from __future__ import annotations

import numpy as np

from nasfilter.bench.costs import network_costs
from nasfilter.runs.runner import make_problem
from nasfilter.searchers import ModelBased
from nasfilter.searchers.acquisition import ObjectiveSpace, hypervolume_pool, prefilter
from nasfilter.searchers.batch_selection import batch_size, greedy_batch, layer_batch
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from tests.tables import random_proxy, random_table


def test_objective_space_maps_each_axis_to_the_unit_interval_with_a_margin() -> None:
    space = ObjectiveSpace.over(np.array([60.0, 70.0, 80.0]), np.log([1e3, 1e4, 1e5]))
    pts = space.points(np.array([80.0, 60.0]), np.log([1e5, 1e3]))
    # Top of each axis at 1; bottom at 1 - 1/1.01 (a 1 % margin of the span below).
    np.testing.assert_allclose(pts, [[1.0, 1.0], [1 - 1 / 1.01, 1 - 1 / 1.01]])


def test_greedy_batch_spreads_over_a_gap_instead_of_piling_onto_it() -> None:
    front = np.array([[0.1, 0.9], [0.9, 0.1]])
    # Two nearly equal points in the middle of the gap and one near its left end.
    mean = np.array([[0.5, 0.5], [0.5, 0.49], [0.2, 0.85]])
    chosen = greedy_batch(front, mean, mean.copy(), np.ones(3), 2)
    # Hand-computed gains: 0.4*0.4 = 0.16, 0.4*0.39 = 0.156, 0.1*0.75 = 0.075. Once (0.5, 0.5)
    # joins the front, (0.5, 0.49) adds nothing and (0.2, 0.85) adds 0.1*0.35 = 0.035.
    assert chosen == [0, 2]
    assert greedy_batch(front, mean, mean.copy(), np.ones(3), 5) == [0, 2, 1]


def test_batch_size_is_an_eighth_of_the_evaluations_within_bounds() -> None:
    assert [batch_size(16, n) for n in (0, 15, 16, 80, 1000)] == [2, 2, 2, 10, 16]


def test_prefilter_keeps_the_least_far_behind() -> None:
    front = np.array([[0.5, 0.5]])
    pts = np.array([[0.1, 0.1], [0.45, 0.45], [0.2, 0.2], [0.6, 0.6]])
    keep, gap = prefilter(front, pts, limit=2)
    assert sorted(keep.tolist()) == [1, 3]
    np.testing.assert_allclose(sorted(gap), [-0.05, 0.1])  # additive epsilon, negated
    pool = hypervolume_pool(front, pts, -np.array([0.4, 0.05, 0.3, -0.1]), np.zeros(4), 2)
    assert pool.tolist() == [3, 1]  # gain first (only the point beyond adds), then the gap


def test_layer_batch_replaces_a_share_with_random_free_architectures() -> None:
    pool = np.array([10, 11, 12])
    pts = np.array([[0.1, 0.9], [0.9, 0.1], [0.2, 0.2]])
    assert layer_batch(pool, pts, 2, 0.0, np.arange(100), np.random.default_rng(0)) == [10, 11]
    mixed = layer_batch(pool, pts, 2, 1.0, np.arange(100), np.random.default_rng(0))
    assert len(mixed) == 2 and not set(mixed) & {10, 11}


def test_strata_and_costs_use_the_problems_dataset() -> None:
    table = random_table(0, dataset="cifar100")
    problem = make_problem(table, 1e5, 0, proxy=random_proxy(0))
    searcher = ModelBased()
    searcher.setup(SearchContext(np.random.default_rng(0), ProxyHandle(problem)))
    macs = network_costs("cifar100").macs
    assert not np.array_equal(macs, network_costs("cifar10").macs)  # the check can fail
    order = np.argsort(macs, kind="stable")
    strata = searcher._stratum[order]
    assert strata[0] == 0 and strata[-1] == searcher.strata - 1
    assert np.all(np.diff(strata) >= 0)  # strata ascend with cifar100's MACs
