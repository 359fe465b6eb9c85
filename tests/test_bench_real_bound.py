"""bench_real's model-class bound: exact where the model class holds the truth."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from benchmarks.bench_real import model_class_bound
from nasfilter.bench.table import BenchmarkTable
from nasfilter.runs.metrics import FrontReference
from nasfilter.searchers.features import base_features
from tests.tables import random_proxy, random_table


def _linear_table(seed: int) -> BenchmarkTable:
    """random_table's costs with an accuracy linear in the free features (no noise)."""
    table = random_table(seed)
    weights = np.random.default_rng(seed).normal(size=base_features().shape[1])
    accuracy = 70.0 + base_features() @ weights
    return replace(table, valid_acc=np.repeat(accuracy[:, None], 3, axis=1), test_acc=accuracy)


def test_a_linear_truth_is_found_whole_when_its_front_is_paid_for() -> None:
    table, proxy = _linear_table(0), random_proxy(1)
    ref = FrontReference.build(table, proxy)
    # The fit of every architecture reproduces a noise-free linear truth, so its first
    # predicted layer is the true front: found whole at the second its cost is paid.
    paid = float(table.eval_cost[ref.true_front].sum())
    bound = model_class_bound(table, proxy, ref, (0.0, paid * (1 - 1e-9), paid))
    assert bound[0.0] == 0.0  # nothing evaluated before any second is spent
    assert 0.0 < bound[paid * (1 - 1e-9)] < 1.0  # the layer's last evaluation not done yet
    assert bound[paid] == 1.0
