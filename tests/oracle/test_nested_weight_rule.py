"""The rule that chooses the joint fit's source weight in scripts/nested_cell_weight.py,
on hand-written goal checks (no fit runs here)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.paths import load_script

nested = load_script("nested_cell_weight")


def _check(name: str, value: float, goal: float, sense: str) -> dict[str, Any]:
    return nested._check(name, value, goal, sense)


def test_a_miss_is_relative_to_its_goal_and_zero_when_met() -> None:
    assert _check("b256 MdAPE", 13.2, 12.0, "max")["miss"] == pytest.approx(0.1)
    assert _check("b256 Spearman", 0.9405, 0.95, "min")["miss"] == pytest.approx(0.01)
    assert _check("b256 MdAPE", 11.9, 12.0, "max")["miss"] == 0.0
    assert _check("b256 Spearman", 0.951, 0.95, "min")["miss"] == 0.0


def test_fewer_misses_win_before_a_smaller_summed_miss_then_the_lower_mean_mdape() -> None:
    one_big = [[_check("b256 MdAPE", 18.0, 12.0, "max"), _check("s", 0.96, 0.95, "min")]]
    two_small = [[_check("b256 MdAPE", 12.1, 12.0, "max"), _check("s", 0.949, 0.95, "min")]]
    assert nested.choice_key(one_big) < nested.choice_key(two_small)
    assert nested.choice_key(one_big)[:2] == (1, pytest.approx(0.5))
    met_a = [[_check("b256 MdAPE", 6.0, 12.0, "max")], [_check("b1 MdAPE", 10.0, 20.0, "max")]]
    met_b = [[_check("b256 MdAPE", 5.0, 12.0, "max")], [_check("b1 MdAPE", 10.0, 20.0, "max")]]
    assert nested.choice_key(met_a) == (0, 0.0, 8.0)
    assert nested.choice_key(met_b) < nested.choice_key(met_a)


def test_rows_without_a_goal_do_not_count() -> None:
    b32 = {"name": "b32 MdAPE", "value": 90.0, "goal": None}
    rows = [[_check("b256 MdAPE", 6.0, 12.0, "max"), b32]]
    assert nested.choice_key(rows) == (0, 0.0, 6.0)


def test_a_fit_without_both_timm_gpus_is_one_fit_for_every_weight() -> None:
    both = frozenset({"rtx3090", "rtx4090"})
    assert nested._fit_key(both, 0.25) == nested._fit_key(both, 1.0)
    one = frozenset({"rtx3090", "titanx"})
    assert nested._fit_key(one, 0.25) != nested._fit_key(one, 1.0)
    assert nested._fit_key(one, 0.5) == "excl-rtx3090-titanx-w0.5"
