"""scripts/tss_design.py's rule for its second round: the best finalist by the mean of its two
budget means, and those within two paired standard errors of it at both budgets, are within
noise; of those, the one naming the fewest settings is chosen."""

from __future__ import annotations

import numpy as np

from nasfilter.study.tss import COMPARED
from tests.paths import load_script


def test_settings_counts_what_a_spec_names() -> None:
    script = load_script("tss_design")
    assert script.settings("model-based") == 0
    assert script.settings("model-based[init=8,batch=8,acquisition=layers]") == 3
    assert script.settings("model-based-hw[init=8,zerocost=synflow]") == 3


def test_a_simpler_finalist_within_noise_is_chosen_over_a_better_mean() -> None:
    script = load_script("tss_design")
    base = np.array([[0.97, 0.99], [0.96, 0.98], [0.98, 0.99], [0.97, 0.985]])
    noisy = base + np.array([[0.01, 0.0], [-0.005, 0.003], [0.006, -0.002], [0.0, 0.002]])
    # noisy: mean ahead by 0.00275 at 3,300 s and 0.00075 at 10,000 s, each under 2 paired SEs
    results = {"model-based[init=8]": base, "model-based[init=8,zerocost=synflow]": noisy}
    assert script.choose(results) == "model-based[init=8]"


def test_a_finalist_ahead_beyond_noise_at_both_budgets_is_chosen() -> None:
    script = load_script("tss_design")
    base = np.array([[0.97, 0.99], [0.96, 0.98], [0.98, 0.99], [0.97, 0.985]])
    ahead = base + np.array([[0.011, 0.004], [0.010, 0.005], [0.012, 0.004], [0.009, 0.006]])
    results = {"model-based[init=8]": base, "model-based[init=8,zerocost=synflow]": ahead}
    assert script.choose(results) == "model-based[init=8,zerocost=synflow]"


def test_the_recorded_finalists_and_runner_up_are_in_the_screen() -> None:
    script = load_script("tss_design")
    assert set(script.SYNFLOW_FINALISTS) <= set(script.SYNFLOW_SCREEN)
    assert script.RUNNER_UP in script.SYNFLOW_FINALISTS
    assert script.CHOSEN not in script.SYNFLOW_SCREEN


def test_the_third_rounds_record_matches_the_study() -> None:
    script = load_script("tss_design")
    assert set(script.PATHS_FINALISTS) <= set(script.PATHS_SCREEN)
    assert script.PATHS_CHOSEN in script.PATHS_FINALISTS
    assert all("encoding=paths" in spec for spec in script.PATHS_SCREEN)
    assert script.PATHS_CHOSEN in {m.searcher for m in COMPARED}
