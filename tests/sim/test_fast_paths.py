"""The hot paths' shortcuts give the numbers of the plain computations, bit for bit.

REINFORCE's draws (one at a time, or ahead while theta is unchanged) against Gumbel-max
computed here from the same generator; the unchecked front and indicator cores against the
checked public functions; the packed event log against the values appended; REINFORCE's
spread row sums against the per-layer gemv, its fused update against the plain formulas,
and its flat action logits against the index rule.
"""

from __future__ import annotations

import math

import numpy as np

from nasfilter.bench.spaces.sss import CHANNEL_CHOICES, N_ARCHS, arch_from_index
from nasfilter.pareto import (
    additive_epsilon,
    finite_front_mask,
    finite_indicators,
    hypervolume_2d,
    igd_plus,
    nondominated_mask,
)
from nasfilter.searchers import Reinforce
from nasfilter.searchers.reinforce import _ROW_SUMS, _flat_row
from nasfilter.sim.events import EventKind, EventLog
from nasfilter.sim.problem import Budget, Problem
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from tests.tables import random_proxy, random_table

TABLE = random_table(3)
PROXY = random_proxy(3)


def test_reinforce_draws_are_gumbel_max_of_the_current_theta() -> None:
    seed = 11
    searcher = Reinforce()
    problem = Problem(TABLE, np.random.default_rng(0), Budget(1e12), proxy=PROXY)
    searcher.setup(SearchContext(np.random.default_rng(seed), ProxyHandle(problem)))
    ref_rng = np.random.default_rng(seed)
    ref_rng.standard_normal((5, 8))  # theta's initial draw
    noise = np.zeros((0, 5, 8))
    for i in range(700):  # crosses the blocks of 256 draws
        if i % 256 == 0:
            noise = ref_rng.gumbel(size=(256, 5, 8))
        expected = (searcher.theta + noise[i % 256]).argmax(axis=1)
        trial = searcher.ask()
        assert trial is not None
        got = [CHANNEL_CHOICES.index(c) for c in trial.arch.channels]
        assert got == expected.tolist(), i
        # mostly dropped (theta unchanged: draws ahead), every 9th learns (theta changes)
        searcher.tell(trial, 60.0 + i % 30 if i % 9 == 0 else None)
    searcher.theta[2] += 3.0  # an edit from outside is seen at the next draw
    trial = searcher.ask()
    assert trial is not None
    expected = (searcher.theta + noise[700 % 256]).argmax(axis=1)
    assert [CHANNEL_CHOICES.index(c) for c in trial.arch.channels] == expected.tolist()


def test_unchecked_front_and_indicators_equal_the_checked_ones() -> None:
    rng = np.random.default_rng(5)
    true = rng.random((40, 2))
    true = true[nondominated_mask(true)]
    reference = np.zeros(2)
    for n in (1, 2, 7, 60):
        run = rng.random((n, 2))
        run[: n // 2, 0] = 0.5  # ties in x
        np.testing.assert_array_equal(finite_front_mask(run), nondominated_mask(run))
        got = finite_indicators(run, true, reference)
        want = (hypervolume_2d(run, reference), igd_plus(run, true), additive_epsilon(run, true))
        assert [float(x).hex() for x in got] == [float(x).hex() for x in want]
    assert finite_front_mask(np.zeros((0, 2))).shape == (0,)


def test_packed_event_log_keeps_every_value() -> None:
    log = EventLog()
    big = 2**62 + 1  # not a float64 integer: an int column must keep it exactly
    log.append(EventKind.EVALUATE, big, 32767, 93.25, math.nan, math.nan, -7, 1e-300,
               -0.0, 5.5, 6.5, 3, 12, 4)  # fmt: skip
    log.append_instant(EventKind.DROP, 1, 0, math.nan, 2.0, 3.0)
    log.extend(EventKind.PROXY, {"index": np.array([5, 6]), "cost": np.array([0.5, 0.25])})
    arrays = log.arrays()
    assert arrays["kind"].tolist() == ["evaluate", "drop", "proxy", "proxy"]
    assert arrays["trial"].tolist() == [big, 1, -1, -1]
    assert arrays["trial"].dtype == np.int64 and arrays["cost"].dtype == np.float64
    assert arrays["cost"].tolist() == [1e-300, 0.0, 0.5, 0.25]
    assert math.copysign(1.0, arrays["worker_seconds"][0]) == -1.0  # -0.0 kept
    assert arrays["epochs"].tolist() == [4, -1, -1, -1]
    assert np.isnan(arrays["throughput"]).all()
    first = log.events()[0]
    assert (first.kind, first.trial, first.seed, first.hp) == ("evaluate", big, -7, 12)
    assert type(first.trial) is int and type(first.accuracy) is float
    log.append_instant(EventKind.ASK, 2, 9, math.nan, 4.0, 4.0)  # appends after a read
    assert len(log) == 5 and log.arrays()["index"].tolist() == [32767, 0, 5, 6, 9]


def test_reinforce_spread_row_sums_equal_the_per_layer_gemv_bit_for_bit() -> None:
    # REINFORCE's update sums each layer's exp(theta) by one (40, 40) gemv, spread to the
    # layer's logits; the traces were made with a (5, 8) row-sum gemv: the same bits
    rng = np.random.default_rng(3)
    for _ in range(2000):
        e = np.exp(rng.standard_normal((5, 8)) * rng.uniform(0.1, 30.0))
        by_layer = e.dot(np.ones(8))
        spread = _ROW_SUMS.dot(e.reshape(-1))
        assert spread.tobytes() == np.repeat(by_layer, 8).tobytes()


def test_reinforce_flat_actions_follow_the_index_rule() -> None:
    # the flat logit of each layer's choice, from the index digits, against the channels
    for index in range(N_ARCHS):
        expected = [8 * k + c // 8 - 1 for k, c in enumerate(arch_from_index(index).channels)]
        assert list(_flat_row(index)) == expected, index


def test_reinforce_update_equals_the_plain_chain_bit_for_bit() -> None:
    """The fused update (stacked buffers, the one-hot part on Python floats) against the
    plain formulas written here, over 5000 steps (past the cached Adam constants and two
    recentrings of theta)."""
    lr, b1, b2, eps = 0.02, 0.9, 0.999, 1e-8
    s = Reinforce(lr=lr)
    problem = Problem(TABLE, np.random.default_rng(0), Budget(1e9))
    s.setup(SearchContext(np.random.default_rng(4), ProxyHandle(problem)))
    theta = s.theta.copy()
    m, v = np.zeros(40), np.zeros(40)
    num = den = 0.0
    rng = np.random.default_rng(8)
    for t in range(1, 5001):
        index, reward = int(rng.integers(N_ARCHS)), float(rng.uniform(40.0, 95.0))
        s._learn(_flat_row(index), reward)
        num, den = 0.9 * num + (1.0 - 0.9) * reward, 0.9 * den + (1.0 - 0.9)
        adv = reward - num / den
        e = np.exp(theta).reshape(-1)
        grad = e * (adv / np.repeat(np.exp(theta).dot(np.ones(8)), 8))
        for k, c in enumerate(arch_from_index(index).channels):
            grad[8 * k + c // 8 - 1] -= adv
        m, v = m * b1 + grad, v * b2 + grad * grad  # Adam's moments over (1 - beta)
        root = math.sqrt(1.0 - b2**t)
        offset = eps * root / math.sqrt(1.0 - b2)
        scale = (1.0 - b1**t) * math.sqrt(1.0 - b2) / (lr * (1.0 - b1) * root)
        theta = theta - (m / ((np.sqrt(v) + offset) * scale)).reshape(5, 8)
        if t % 1024 == 0:
            theta = theta - theta.max(axis=1, keepdims=True)
        assert s.theta.tobytes() == theta.tobytes(), t
