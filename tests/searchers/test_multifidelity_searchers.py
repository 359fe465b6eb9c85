"""Successive halving, Hyperband and ASHA: schedules and promotions checked by hand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from nasfilter.bench.fidelity import NoCurvesError
from nasfilter.bench.surrogate import embedded_table
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import ASHA, Hyperband, SuccessiveHalving, make_searcher
from nasfilter.searchers.bohb import BOHB
from nasfilter.searchers.mo_asha import MOASHA
from nasfilter.searchers.successive_halving import RandomIndices, bracket, s_max
from nasfilter.sim.problem import Budget
from tests.tables import random_table

TABLE = embedded_table("cifar10")


def _run(searcher, workers: int = 1, budget: float = 20_000.0, seed: int = 1):
    problem = make_problem(TABLE, Budget(budget), seed)
    return run_search(searcher, problem, workers=workers)


def _epochs(events: dict[str, np.ndarray]) -> list[int]:
    """Epochs of hp 12 trained by each evaluation (12 for the full ones)."""
    return [
        12 if kind == "evaluate" else int(epochs)
        for kind, epochs in zip(events["kind"], events["epochs"], strict=True)
        if kind in ("evaluate", "partial")
    ]


def test_hyperband_brackets_by_hand() -> None:
    # eta 3 over 1..12: s_max = 2 (3**2 <= 12 < 3**3); n = ceil(3 / (s + 1) * 3**s)
    assert s_max(1, 12, 3) == 2 and s_max(1, 12, 2) == 3 and s_max(4, 12, 3) == 1
    assert bracket(1, 12, 3, 2) == [(9, 1), (3, 4), (1, 12)]
    assert bracket(1, 12, 3, 1) == [(5, 4), (1, 12)]
    assert bracket(1, 12, 3, 0) == [(3, 12)]
    assert bracket(1, 12, 2, 3) == [(8, 1), (4, 3), (2, 6), (1, 12)]
    assert bracket(4, 12, 3, 1) == [(3, 4), (1, 12)]


def test_successive_halving_promotes_the_best_third() -> None:
    ev = _run(SuccessiveHalving()).events
    assert _epochs(ev)[:26] == ([1] * 9 + [4] * 3 + [12]) * 2
    rung0, rung1 = ev["accuracy"][:9], ev["accuracy"][9:12]
    top3 = set(ev["index"][:9][np.argsort(-rung0)[:3]].tolist())
    assert set(ev["index"][9:12].tolist()) == top3
    assert ev["index"][12] == ev["index"][9:12][np.argmax(rung1)]
    t, v = TABLE.train_time, TABLE.valid_time
    i = ev["index"][:13]
    assert ev["cost"][:9] == pytest.approx(t[i[:9]] + v[i[:9]])
    assert ev["cost"][9:12] == pytest.approx(4 * t[i[9:12]] + v[i[9:12]])
    assert ev["cost"][12] == pytest.approx(12 * t[i[12]] + v[i[12]])


def test_hyperband_cycles_its_brackets() -> None:
    ev = _run(Hyperband()).events
    assert _epochs(ev)[:22] == [1] * 9 + [4] * 3 + [12] + [4] * 5 + [12] + [12] * 3


def test_synchronous_rungs_wait_and_asha_does_not() -> None:
    sh = _run(SuccessiveHalving(), workers=16).events
    assert np.all(sh["start"][:9] == 0.0)  # rung 0 on 9 of the 16 workers
    assert sh["start"][9] == pytest.approx(sh["end"][:9].max())  # rung 1 waited for all
    asha = _run(ASHA(), workers=16).events
    assert np.all(asha["start"][:16] == 0.0)  # every worker busy at once


def test_asha_promotes_as_soon_as_a_rung_allows() -> None:
    ev = _run(ASHA()).events
    epochs = _epochs(ev)
    # three outcomes at rung 0 allow floor(3 / 3) = 1 promotion: the best of them
    assert epochs[:4] == [1, 1, 1, 4]
    assert ev["index"][3] == ev["index"][:3][np.argmax(ev["accuracy"][:3])]
    # rung 1 has one entry (floor(1 / 3) = 0 promotions): a new architecture at rung 0
    assert epochs[4] == 1
    assert sorted(set(epochs)) == [1, 4, 12]


@pytest.mark.parametrize("name", ["successive-halving", "hyperband", "asha"])
def test_every_multifidelity_searcher_returns_a_full_evaluation(name: str) -> None:
    result = _run(make_searcher(name), workers=4)
    ev = result.events
    full = ev["index"][ev["kind"] == "evaluate"]
    assert result.n_evaluations > 0 and result.best_index in full.tolist()
    assert result.best_valid_acc == ev["accuracy"][ev["kind"] == "evaluate"].max()


@pytest.mark.parametrize("cls", [SuccessiveHalving, Hyperband, ASHA])
def test_bad_schedules_name_the_valid_range(cls) -> None:
    with pytest.raises(ValueError, match=r"min_epochs=5 is above max_epochs=4.*1 <= min_epochs"):
        cls(min_epochs=5, max_epochs=4)
    with pytest.raises(ValueError, match=r"eta must be a finite number > 1.*got 1"):
        cls(eta=1)
    with pytest.raises(ValueError, match=r"min_epochs must be an integer >= 1"):
        cls(min_epochs=0)
    with pytest.raises(ValueError, match=r"max_epochs=13 is out of range.*must be in 1\.\.12"):
        _run(cls(max_epochs=13))
    compact = make_problem(random_table(), Budget(1e4), 0)
    with pytest.raises(NoCurvesError, match="nasfilter convert"):
        run_search(cls(), compact)


def test_random_indices_hand_out_each_architecture_once() -> None:
    draws = RandomIndices(np.random.default_rng(0), 32768)
    seen = [draws.next() for _ in range(32768)]
    assert sorted(seen) == list(range(32768)) and draws.next() is None


@pytest.mark.slow
@pytest.mark.parametrize("cls", [Hyperband, ASHA])
def test_a_huge_budget_ends_when_the_space_is_used_up(cls) -> None:
    result = _run(cls(), workers=4, budget=1e30)
    assert result.status == "searcher-done" and result.clock < 1e30
    if cls is ASHA:  # every architecture started once at rung 0 (1 epoch)
        ev = result.events
        rung0 = ev["index"][(ev["kind"] == "partial") & (ev["hp"] == 12) & (ev["epochs"] == 1)]
        assert len(np.unique(rung0)) == len(rung0) == 32768


@pytest.mark.parametrize("cls", [Hyperband, SuccessiveHalving, ASHA, BOHB, MOASHA])
def test_numpy_numbers_are_taken_as_schedule_settings(cls: Any) -> None:
    """Settings read from numpy arrays (a sweep's grid) are accepted and held as Python
    numbers, so the run's config is the same as with plain ints."""
    searcher = cls(min_epochs=np.int64(2), max_epochs=np.int32(12), eta=np.int64(2))
    assert (searcher.min_epochs, searcher.max_epochs, searcher.eta) == (2, 12, 2)
    assert all(type(v) is int for v in (searcher.min_epochs, searcher.max_epochs, searcher.eta))
    assert type(cls(eta=np.float64(2.5)).eta) is float
    with pytest.raises(ValueError, match=r"min_epochs must be an integer >= 1.*got .*1\.5"):
        cls(min_epochs=np.float64(1.5))
