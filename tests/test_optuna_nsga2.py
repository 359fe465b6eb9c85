"""The adapter's NSGA-II, which counts generations as trials complete, proposes exactly what
Optuna's own NSGAIISampler proposes (the independent reference), over several generations,
with pruned trials among them."""

from __future__ import annotations

import pytest

from nasfilter.searchers.optuna_adapter import PARAMS, _nsga2_sampler
from nasfilter.space import CHANNEL_CHOICES

optuna = pytest.importorskip("optuna", reason="the optuna extra")


def _proposals(sampler: object, n: int) -> list[tuple[int, ...]]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["maximize", "maximize"], sampler=sampler)
    space = {p: optuna.distributions.CategoricalDistribution(CHANNEL_CHOICES) for p in PARAMS}
    out = []
    for i in range(n):
        trial = study.ask(space)
        channels = tuple(int(trial.params[p]) for p in PARAMS)
        out.append(channels)
        if i % 7 == 3:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, [float(sum(channels)), float(-channels[0] * channels[4])])
    return out


def test_counting_nsga2_proposes_what_optuna_s_nsga2_proposes() -> None:
    population, n = 8, 90  # about ten generations
    ours = _nsga2_sampler(optuna, population, seed=5)
    reference = optuna.samplers.NSGAIISampler(population_size=population, seed=5)
    assert type(ours) is not optuna.samplers.NSGAIISampler  # the counting subclass is used
    assert _proposals(ours, n) == _proposals(reference, n)
