"""Our metered problem against NATS-Bench's own simulate_train_eval, event for event.

Both run over the same sequence of architectures on the real fixture. Our Problem draws the
training seed from its Generator; NATS draws it with Python's global ``random.choice``. The
test feeds NATS the seed our Problem drew (by patching ``random.choice`` for the call), then
checks that accuracy, charged time and the running total agree at every step.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.convert import convert_archive
from nasfilter.sim.problem import Budget, Problem
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE


@pytest.mark.parametrize("dataset", ["cifar10", "cifar100", "ImageNet16-120"])
def test_simulation_matches_simulate_train_eval(
    dataset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nats_bench

    table = convert_archive(FIXTURE, dataset, allow_partial=True, progress=False)
    api = nats_bench.create(str(FIXTURE), "sss", fast_mode=True, verbose=False)
    api.reset_time()
    rng = np.random.default_rng(2212)
    archs = rng.choice([0, 11, 284], size=40).tolist()
    budget = float(np.sum(table.eval_cost[archs]))  # exactly enough for all 40
    problem = Problem(table, np.random.default_rng(7), Budget(budget))

    pending_seed: list[int] = []
    real_choice = random.choice

    def choose(options: Any) -> Any:
        options = list(options)
        if pending_seed and set(options) == set(table.seeds):
            return pending_seed[0]
        return real_choice(options)

    monkeypatch.setattr(random, "choice", choose)
    seen_seeds = set()
    for step, index in enumerate(archs):
        ours = problem.evaluate(int(index))
        event = problem.events[-1]
        pending_seed[:] = [event.seed]
        acc, latency, cost, total = api.simulate_train_eval(api.arch(int(index)), dataset, hp="12")
        seen_seeds.add(event.seed)
        assert ours == acc, (step, index, event.seed)
        assert event.cost == pytest.approx(cost, rel=1e-12)
        assert event.worker_seconds == pytest.approx(total, rel=1e-12)
        assert table.latency[index] == latency
    assert seen_seeds == set(table.seeds)  # every seed was exercised
    assert problem.exhausted and problem.overshoot == pytest.approx(0.0, abs=1e-6)
