"""The adapter's NSGA-II, which keeps its generation, parent and search-space bookkeeping up
to date as trials complete, proposes exactly what Optuna's own NSGAIISampler proposes (the
independent reference), over many generations, with pruned trials among them; and so it
does when asked with the adapter's distributions and told the adapter's way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nasfilter.bench.spaces.sss import CHANNEL_CHOICES
from nasfilter.searchers.optuna_adapter import PARAMS, _channel_choices, _nsga2_sampler, _teller

optuna = pytest.importorskip("optuna", reason="the optuna extra")


def _optuna_tell(study: Any, trial: Any, values: Any = None, state: Any = None) -> None:
    study.tell(trial, values, state)


def _proposals(
    sampler: object,
    n: int,
    distribution: Callable[[tuple[int, ...]], Any] | None = None,
    tell: Callable[..., None] = _optuna_tell,
) -> list[tuple[int, ...]]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    make = distribution or optuna.distributions.CategoricalDistribution
    study = optuna.create_study(directions=["maximize", "maximize"], sampler=sampler)
    space = {p: make(CHANNEL_CHOICES) for p in PARAMS}
    out = []
    for i in range(n):
        trial = study.ask(space)
        channels = tuple(int(trial.params[p]) for p in PARAMS)
        out.append(channels)
        if i % 7 == 3:
            tell(study, trial, state=optuna.trial.TrialState.PRUNED)
        else:
            tell(study, trial, [float(sum(channels)), float(-channels[0] * channels[4])])
    return out


def test_counting_nsga2_proposes_what_optuna_s_nsga2_proposes() -> None:
    population, n = 8, 90  # about ten generations
    ours = _nsga2_sampler(optuna, population, seed=5)
    reference = optuna.samplers.NSGAIISampler(population_size=population, seed=5)
    assert type(ours) is not optuna.samplers.NSGAIISampler  # the counting subclass is used
    assert _proposals(ours, n) == _proposals(reference, n)


def test_the_adapter_s_distributions_and_tell_leave_the_proposals_as_optuna_s() -> None:
    population, n = 6, 200  # about thirty generations: the parents' cache is read often
    ours = _proposals(
        _nsga2_sampler(optuna, population, seed=11), n, _channel_choices(optuna), _teller()
    )
    reference = _proposals(optuna.samplers.NSGAIISampler(population_size=population, seed=11), n)
    assert ours == reference
    assert len(set(ours)) > n // 2  # the runs did search (not one proposal over and over)


def test_channel_choices_compare_by_value_as_optuna_s_distribution() -> None:
    make = _channel_choices(optuna)
    a, b = make(CHANNEL_CHOICES), make(CHANNEL_CHOICES)
    assert a == a and a == b and hash(a) == hash(b)
    assert a != make(CHANNEL_CHOICES[:-1])
    assert isinstance(a, optuna.distributions.CategoricalDistribution)
    assert optuna.distributions.CategoricalDistribution(CHANNEL_CHOICES) == a
