"""The metered problem: charging, budget, overshoot, repeats, proxy queries and events."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nasfilter.bench.spaces.sss import N_ARCHS
from nasfilter.bench.table import MissingArchitectureError
from nasfilter.sim.problem import (
    EVALUATE,
    PROXY,
    Budget,
    BudgetExhausted,
    Problem,
)
from tests.tables import random_proxy, random_table

TABLE = random_table()
PROXY_TABLE = random_proxy()


def make(seconds: float = 1e9, seed: int = 0, **kw: object) -> Problem:
    return Problem(TABLE, np.random.default_rng(seed), Budget(seconds), **kw)  # type: ignore[arg-type]


def test_evaluate_returns_one_seed_and_charges_simulate_train_eval_time() -> None:
    p = make()
    acc = p.evaluate("8:8:40:32:40")
    assert acc in TABLE.valid_acc[284].tolist()
    cost = 12 * TABLE.train_time[284] + TABLE.valid_time[284]
    assert p.clock == pytest.approx(cost) and p.evaluation_seconds == pytest.approx(cost)
    (ev,) = p.events
    assert ev.kind == EVALUATE and ev.arch == 284 and ev.accuracy == acc and ev.cost == cost
    assert ev.seed == TABLE.seeds[TABLE.valid_acc[284].tolist().index(acc)]


def test_seeds_are_drawn_uniformly_from_the_generator() -> None:
    p = make()
    for _ in range(3000):
        p.evaluate(7)
    seeds = p.log.arrays()["seed"].tolist()
    counts = np.array([seeds.count(s) for s in TABLE.seeds])
    assert ((counts - 1000) ** 2 / 1000).sum() < 13.8  # chi-square, 2 dof, 99.9 %
    a, b = make(seed=5), make(seed=5)
    assert [a.evaluate(9) for _ in range(50)] == [b.evaluate(9) for _ in range(50)]


def test_budget_allows_the_last_query_to_overshoot_and_records_it() -> None:
    cost = float(TABLE.eval_cost[0])
    p = make(seconds=2.5 * cost)
    p.evaluate(0)
    p.evaluate(0)
    assert not p.exhausted
    p.evaluate(0)  # starts at 2 x cost < budget, ends past it
    assert p.exhausted
    assert p.overshoot == pytest.approx(0.5 * cost)
    with pytest.raises(BudgetExhausted, match="budget of"):
        p.evaluate(0)
    assert p.n_evaluations == 3 and len(p.events) == 3


def test_evaluation_cap() -> None:
    p = Problem(TABLE, np.random.default_rng(0), Budget(1e9, max_evaluations=2))
    p.evaluate(1)
    p.evaluate(2)
    assert p.exhausted
    with pytest.raises(BudgetExhausted, match="cap of 2"):
        p.evaluate(3)


def test_repeats_are_charged_again_by_default_or_memoised() -> None:
    p = make()
    p.evaluate(3)
    p.evaluate(3)
    assert p.clock == pytest.approx(2 * TABLE.eval_cost[3])
    q = make(charge_repeats=False)
    first = q.evaluate(3)
    assert q.evaluate(3) == first
    assert q.clock == pytest.approx(TABLE.eval_cost[3])
    assert [e.cost for e in q.events][1] == 0.0


def test_proxy_queries_are_charged_and_logged() -> None:
    p = make(proxy=PROXY_TABLE, proxy_cost=2.0)
    r = p.query_proxy(284)
    assert r.utilization == PROXY_TABLE.utilization[284]
    assert r.throughput == PROXY_TABLE.throughput[284]
    assert p.clock == 2.0 and p.proxy_seconds == 2.0 and p.evaluation_seconds == 0.0
    ev = p.events[-1]
    assert ev.kind == PROXY and ev.seed == -1 and ev.throughput == r.throughput


@pytest.mark.parametrize("charge_repeat_proxy", [True, False])
def test_bulk_proxy_equals_a_loop_of_single_queries(charge_repeat_proxy: bool) -> None:
    idx = np.random.default_rng(1).integers(0, 2000, 500)  # with repeats
    budget = 2.0 * 300.5  # the 301st charged query starts at 600 < 601 and is the last
    kw = {"seconds": budget, "proxy": PROXY_TABLE, "charge_repeat_proxy": charge_repeat_proxy}
    bulk = make(**kw)
    answered, readings = bulk.query_proxy_many(idx)
    loop = make(**kw)
    singles = []
    for i in idx.tolist():
        if loop.exhausted:
            break
        singles.append(loop.query_proxy(i))
    assert len(answered) == len(singles)
    np.testing.assert_array_equal(readings, np.array(singles))
    assert bulk.clock == loop.clock and len(bulk.events) == len(loop.events)
    for name, column in bulk.log.arrays().items():  # NaN-aware: NaN fields compare equal
        np.testing.assert_array_equal(column, loop.log.arrays()[name], err_msg=name)
    assert bulk.exhausted
    charged = len(answered) if charge_repeat_proxy else len(set(answered.tolist()))
    assert charged == 301 and bulk.clock == 2.0 * 301
    if not charge_repeat_proxy:
        assert len(answered) > 301  # the repeats came free


def test_repeated_proxy_queries_are_free_by_default() -> None:
    p = make(proxy=PROXY_TABLE)
    p.query_proxy(5)
    answered, _ = p.query_proxy_many(np.array([5, 6, 6, 7]))
    assert answered.tolist() == [5, 6, 6, 7]
    assert [e.cost for e in p.events] == [2.0, 0.0, 2.0, 0.0, 2.0]
    p.query_proxy(7)
    assert p.events[-1].cost == 0.0 and p.proxy_seconds == 6.0
    q = make(proxy=PROXY_TABLE, charge_repeat_proxy=True)
    q.query_proxy(5)
    q.query_proxy(5)
    assert q.proxy_seconds == 4.0


def test_missing_rows_and_missing_proxy_fail_clearly() -> None:
    present = np.zeros(N_ARCHS, dtype=bool)
    present[11] = True
    p = Problem(random_table(present=present), np.random.default_rng(0), Budget(1e6))
    with pytest.raises(MissingArchitectureError, match="index 284"):
        p.evaluate(284)
    assert p.clock == 0.0 and p.events == []
    with pytest.raises(ValueError, match="no proxy"):
        p.query_proxy(11)
    util = PROXY_TABLE.utilization.copy()
    thr = PROXY_TABLE.throughput.copy()
    util[3] = thr[3] = np.nan
    from nasfilter.bench.proxy import ProxyTable

    q = make(proxy=ProxyTable(util, thr, "partial"))
    with pytest.raises(LookupError, match="index 3 has no partial measurement"):
        q.query_proxy(3)


@pytest.mark.parametrize("seconds", [0, -1, math.nan, math.inf, "100", True])
def test_bad_budgets(seconds: object) -> None:
    with pytest.raises(ValueError, match="budget seconds"):
        Budget(seconds)  # type: ignore[arg-type]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_evaluations"):
        Budget(10, max_evaluations=0)
    with pytest.raises(ValueError, match="Generator"):
        Problem(TABLE, 0, Budget(10))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="proxy_cost"):
        make(proxy_cost=math.nan)
    nan_cost = random_table()
    object.__setattr__(nan_cost, "train_time", np.full(N_ARCHS, np.nan))
    with pytest.raises(ValueError, match="NaN or infinite evaluation costs"):
        Problem(nan_cost, np.random.default_rng(0), Budget(10))
    with pytest.raises(ValueError, match="32767"):
        make().evaluate(40000)


def test_event_log_arrays() -> None:
    p = make(proxy=PROXY_TABLE)
    p.evaluate(1)
    p.query_proxy(2)
    arr = p.log.arrays()
    assert arr["kind"].tolist() == [EVALUATE, PROXY]
    assert arr["index"].tolist() == [1, 2]
    assert arr["step"].tolist() == [0, 1]
    assert np.isnan(arr["throughput"][0]) and arr["seed"][1] == -1
    np.testing.assert_allclose(arr["worker_seconds"], np.cumsum(arr["cost"]))


def test_a_missing_seed_is_never_drawn_like_nats() -> None:
    """NATS-Bench draws among the seeds an architecture has; so do we."""
    t = random_table()
    acc = t.valid_acc.copy()
    acc[5, 1] = np.nan  # seed 888 missing for index 5
    acc[6, :] = np.nan  # no seed at all for index 6
    object.__setattr__(t, "valid_acc", acc)
    p = Problem(t, np.random.default_rng(0), Budget(1e9))
    for _ in range(600):
        p.evaluate(5)
    seeds = p.log.arrays()["seed"].tolist()
    assert set(seeds) == {777, 999}
    assert 250 < seeds.count(777) < 350  # uniform over the two present seeds
    with pytest.raises(LookupError, match="no validation accuracy for any seed"):
        p.evaluate(6)
