"""Searchers: hand out trials (``ask``) and learn from their outcomes (``tell``).

Code passes instances (``run_search(RandomSearch(), problem)``); :data:`SEARCHERS` maps the
names typed on the command line to factories. :func:`make_searcher` builds one from a spec
string ``NAME[key=value,...]`` or a plugin path ``package.module:Class[...]``.
"""

from __future__ import annotations

import functools
from typing import Any

from nasfilter.bench.spaces.sss import arch_from_index
from nasfilter.registry import Registry
from nasfilter.searchers.asha import ASHA
from nasfilter.searchers.base import SearchContext, Searcher
from nasfilter.searchers.bohb import BOHB
from nasfilter.searchers.evolution import RegularizedEvolution
from nasfilter.searchers.mo_asha import MOASHA
from nasfilter.searchers.model_based import ModelBased
from nasfilter.searchers.model_based_mf import ModelBasedMF
from nasfilter.searchers.optuna_adapter import OptunaHyperband, OptunaSearcher
from nasfilter.searchers.random_search import RandomSearch
from nasfilter.searchers.reinforce import Reinforce
from nasfilter.searchers.successive_halving import Hyperband, SuccessiveHalving
from nasfilter.searchers.utilization_pareto import UtilizationPareto
from nasfilter.sim.trial import Trial

SEARCHERS: Registry[Searcher] = Registry("searcher", Searcher)
SEARCHERS.register("random", RandomSearch, "uniform random search")
SEARCHERS.register("reinforce", Reinforce, "REINFORCE, NATS-Bench reference (reward=accuracy|mnas)")
SEARCHERS.register(
    "reinforce-mnas",
    functools.partial(Reinforce, reward="mnas"),
    "REINFORCE with the MnasNet reward acc*(throughput/175000)**0.07",
)
SEARCHERS.register(
    "evolution", RegularizedEvolution, "regularized evolution, population 10, tournament 3"
)
SEARCHERS.register(
    "utilization-pareto",
    UtilizationPareto,
    "the study's approximate filtering: scan the proxy, evaluate its Pareto front",
)
SEARCHERS.register(
    "utilization-layers",
    functools.partial(UtilizationPareto, layers=None),
    "approximate filtering over successive front layers until the budget is spent",
)
SEARCHERS.register(
    "model-based",
    ModelBased,
    "learned accuracy model on measured throughput, hypervolume-driven (hardware=False)",
)
SEARCHERS.register(
    "model-based-hw",
    functools.partial(ModelBased, hardware=True),
    "model-based with log throughput and utilization as accuracy features",
)
SEARCHERS.register(
    "model-based-mf",
    ModelBasedMF,
    "model-based with cost-aware screens at 1 and 4 epochs of hp 12 (needs learning curves)",
)
SEARCHERS.register(
    "successive-halving",
    SuccessiveHalving,
    "successive halving over epochs 1..12 of hp 12, eta 3 (needs learning curves)",
)
SEARCHERS.register(
    "hyperband",
    Hyperband,
    "Hyperband (Li et al. 2018) over epochs 1..12 of hp 12, eta 3 (needs learning curves)",
)
SEARCHERS.register(
    "asha",
    ASHA,
    "asynchronous successive halving (Li et al. 2020), epochs 1..12, eta 3 (needs curves)",
)
SEARCHERS.register(
    "bohb",
    BOHB,
    "BOHB (Falkner et al. 2018): Hyperband with a categorical KDE model (needs curves)",
)
SEARCHERS.register(
    "mo-asha",
    MOASHA,
    "MO-ASHA (Schmucker et al. 2021): ASHA ranking accuracy and throughput (needs curves)",
)
SEARCHERS.register(
    "optuna-tpe-hyperband",
    OptunaHyperband,
    "Optuna's TPESampler with HyperbandPruner, epochs 1..12 (needs curves, nasfilter[optuna])",
)

for _sampler, _what in (
    ("nsga2", "Optuna's NSGAIISampler (population 50)"),
    ("tpe", "Optuna's multivariate TPESampler"),
    ("random", "Optuna's RandomSampler"),
):
    SEARCHERS.register(
        f"optuna-{_sampler}",
        functools.partial(OptunaSearcher, sampler=_sampler),
        f"{_what}, two objectives: accuracy, throughput (needs nasfilter[optuna])",
    )


def make_searcher(spec: str | Searcher, **overrides: Any) -> Searcher:
    """A searcher instance from a spec string, or ``spec`` itself if it is one."""
    if isinstance(spec, Searcher):
        if overrides:
            raise ValueError("overrides apply to spec strings, not to searcher instances")
        return spec
    return SEARCHERS.create(spec, **overrides)


__all__ = [
    "ASHA",
    "BOHB",
    "MOASHA",
    "SEARCHERS",
    "Hyperband",
    "ModelBased",
    "ModelBasedMF",
    "OptunaHyperband",
    "OptunaSearcher",
    "RandomSearch",
    "RegularizedEvolution",
    "Reinforce",
    "SearchContext",
    "Searcher",
    "SuccessiveHalving",
    "Trial",
    "UtilizationPareto",
    "arch_from_index",
    "make_searcher",
]
