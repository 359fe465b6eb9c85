"""The one plugin base: ``config()`` read from ``__init__``, as scikit-learn's ``get_params``."""

from __future__ import annotations

import numpy as np
import pytest

from examples.custom_filter import FastEnough
from examples.custom_searcher import LocalSearch
from nasfilter.bench.spaces.sss import Arch
from nasfilter.filters import FILTERS, Filter, ProxyThreshold, SuccessiveFrontiers
from nasfilter.registry import init_parameters
from nasfilter.runs.runner import make_problem
from nasfilter.searchers import (
    SEARCHERS,
    ModelBased,
    RandomSearch,
    RegularizedEvolution,
    Reinforce,
    Searcher,
    UtilizationPareto,
)
from nasfilter.sim.plugin import Plugin
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from tests.tables import random_table


def test_config_reports_each_init_argument_by_name() -> None:
    """Values given (not the defaults) come back under the parameters' names, in order."""
    assert RegularizedEvolution(7, 2).config() == {"population_size": 7, "tournament_size": 2}
    assert UtilizationPareto(layers=None, order="spread", scan_share=0.5).config() == {
        "layers": None,
        "order": "spread",
        "scan_share": 0.5,
    }
    assert SuccessiveFrontiers(patience=3, scan_share=None).config() == {
        "patience": 3,
        "scan_share": None,
    }
    assert ProxyThreshold(0.2, scan=False).config() == {
        "tolerance": 0.2,
        "scan": False,
        "scan_share": 0.6,
    }
    assert LocalSearch(patience=4).config() == {"patience": 4}
    assert FastEnough(1e3).config() == {"min_throughput": 1000.0}
    assert RandomSearch().config() == {}
    keys = list(ModelBased(beta=0.5, batch=4).config())
    assert keys == [
        "hardware", "beta", "batch", "init", "init_proxy", "strata",
        "cost_power", "pool", "calibrate", "acquisition", "explore", "zerocost", "zerocost_share",
        "encoding",
    ]  # fmt: skip
    assert ModelBased(beta=0.5, batch=4).config()["beta"] == 0.5


def test_reinforce_leaves_out_what_does_not_apply() -> None:
    assert Reinforce(lr=0.1).config() == {"reward": "accuracy", "lr": 0.1, "momentum": 0.9}
    mnas = Reinforce(reward="mnas", w=-0.1, dropped_reward=0.0).config()
    assert mnas == {
        "reward": "mnas",
        "lr": 0.01,
        "momentum": 0.9,
        "target_throughput": 175000.0,
        "w": -0.1,
        "dropped_reward": 0.0,
    }


def test_a_new_searcher_needs_no_config_method() -> None:
    """The way new searchers are written: each argument stored under its own name."""

    class Halving(Searcher):
        name = "halving"

        def __init__(self, eta: int = 3, min_resource: int = 1, rounds: int | None = None):
            self.eta, self.min_resource, self.rounds = eta, min_resource, rounds

    assert Halving(eta=4).config() == {"eta": 4, "min_resource": 1, "rounds": None}
    assert repr(Halving(eta=4)) == "Halving(eta=4, min_resource=1, rounds=None)"


def test_a_parameter_without_its_attribute_is_named_at_setup() -> None:
    class Forgetful(Filter):
        name = "forgetful"

        def __init__(self, margin: float = 0.1) -> None:
            self._margin = margin

        def keep(self, arch: Arch) -> bool:
            return True

    problem = make_problem(random_table(0), 1e4, 0)
    context = SearchContext(np.random.default_rng(0), ProxyHandle(problem))
    with pytest.raises(AttributeError, match=r"Forgetful has no attribute 'margin'.*self.margin"):
        Forgetful().setup(context)
    with pytest.raises(AttributeError, match="'margin'"):
        Forgetful().config()
    assert repr(Forgetful()) == "Forgetful(...)"  # repr appears in messages: it never raises


def test_an_init_without_names_is_refused_at_definition() -> None:
    with pytest.raises(TypeError, match=r"__init__ takes \*args.*name each one"):

        class Starred(Searcher):
            def __init__(self, *args: int) -> None:
                self.args = args

    with pytest.raises(TypeError, match=r"__init__ takes \*options"):

        class Keywords(Filter):
            def __init__(self, **options: int) -> None:
                self.options = options


def test_the_registry_and_config_read_one_signature() -> None:
    """Every built-in's registered settings are exactly the keys its config() may report."""
    for registry in (SEARCHERS, FILTERS):
        for name in registry.names():
            plugin = registry.create(name)
            assert isinstance(plugin, Plugin)
            settings = registry.setting_names(name)
            assert settings is not None and set(plugin.config()) <= settings, name
            listed = [p.name for p in init_parameters(type(plugin)) or []]
            assert set(listed) == settings, name
