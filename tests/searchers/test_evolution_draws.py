"""Regularized evolution's block of tournament draws gives the proposals of one generator
call per proposal (the code the golden traces were made with), bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.bench.spaces.sss import N_ARCHS, N_CHOICES, N_LAYERS, arch_from_index, index_of
from nasfilter.searchers import RegularizedEvolution
from nasfilter.sim.problem import Budget, Problem
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from nasfilter.sim.trial import Trial
from tests.tables import random_table

TABLE = random_table(3)


def _reference(rng: np.random.Generator, population: list[tuple[int, float]], size: int,
               tournament: int) -> int:  # fmt: skip
    """The index proposed by the per-proposal code (one ``integers`` call each)."""
    if len(population) < size:
        return int(rng.integers(N_ARCHS))
    highs = np.array([size] * tournament + [N_LAYERS, 7])
    *picks, layer, pick = rng.integers(0, highs).tolist()
    parent = max((population[i] for i in picks), key=lambda m: m[1])[0]
    digit = arch_from_index(parent).channels[layer] // 8 - 1
    new_digit = pick + (pick >= digit)
    return parent + (new_digit - digit) * N_CHOICES ** (N_LAYERS - 1 - layer)


@pytest.mark.parametrize(("size", "tournament"), [(10, 3), (1, 1), (7, 40), (300, 2)])
def test_blocked_draws_equal_one_call_per_proposal(size: int, tournament: int) -> None:
    searcher = RegularizedEvolution(size, tournament)
    problem = Problem(TABLE, np.random.default_rng(0), Budget(1e12))
    searcher.setup(SearchContext(np.random.default_rng(5), ProxyHandle(problem)))
    ref_rng = np.random.default_rng(5)
    accuracy = np.random.default_rng(9).uniform(0, 100, size=3000)  # ties are rare, not absent
    accuracy[::7] = 50.0
    population: list[tuple[int, float]] = []
    for step in range(3000):
        trial = searcher.ask()
        assert isinstance(trial, Trial)
        assert index_of(trial.arch) == _reference(ref_rng, population, size, tournament)
        if step % 3 == 0:  # a dropped proposal joins nothing
            searcher.tell(trial, None)
            continue
        searcher.tell(trial, float(accuracy[step]))
        population = [*population, (index_of(trial.arch), float(accuracy[step]))][-size:]
