"""The structured test table's SYNTHETIC learning curves."""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.bench.fidelity import check_iepoch
from nasfilter.sim.problem import Budget, Problem
from nasfilter.stats import spearman
from nasfilter.testing.structured_curves import StructuredCurves


@pytest.fixture(scope="module")
def curves() -> StructuredCurves:
    return StructuredCurves()


def test_last_epoch_is_the_full_evaluation(curves: StructuredCurves) -> None:
    table, c = curves.table, curves.curves()
    assert c.shape == (32768, 3, 12) and not c.flags.writeable
    assert np.array_equal(c[:, :, -1], table.valid_acc)
    # charged as a retrain from scratch: train seconds x epochs + one validation
    acc, cost = curves.evaluation(284, "12", 888, 3)
    assert acc == c[284, 1, 3]
    assert cost == pytest.approx(4 * table.train_time[284] + table.valid_time[284])
    _, full = curves.evaluation(284, "12", 888, 11)
    assert full == pytest.approx(table.eval_cost[284])
    assert check_iepoch(curves, "12", 11) == 11
    with pytest.raises(ValueError, match=r"0\.\.11"):
        check_iepoch(curves, "12", 12)


def test_curves_rise_from_chance_and_cross(curves: StructuredCurves) -> None:
    c = curves.curves()
    mean = c.mean(axis=(0, 1))
    assert 15 < mean[0] < 45 and np.all(np.diff(mean) > 0)  # a rising mean curve
    final = c[:, 1, -1]
    early = spearman(c[:, 0, 0], final)
    assert 0.0 < early < 0.5  # informative but crossing at epoch 1
    assert spearman(c[:, 0, 8], final) > 0.8


def test_deterministic_and_usable_by_problem(curves: StructuredCurves) -> None:
    again = StructuredCurves(curves.table)
    assert np.array_equal(again.curves(), curves.curves())
    problem = Problem(curves.table, np.random.default_rng(0), Budget(1e5), curves=curves)
    acc = problem.evaluate_at(7, 2)
    last = problem.fidelity_evaluations[-1]
    assert acc == curves.curves()[7, (777, 888, 999).index(last.seed), 2]
