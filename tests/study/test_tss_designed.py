"""The attempt at HV >= 0.99 at 20,000 s: "model-based, layers (designed on cifar10)", chosen by
scripts/tss_design.py on cifar10 only (seeds 100-114), is one of the study's compared methods,
and on cifar10 at the ImageNet16-120-sized budget it beats the default model-based searcher."""

from __future__ import annotations

import numpy as np

from nasfilter.study.tss import COMPARED, HP200_ONLY, TssMethod, hv_ratios

LABEL = "model-based, layers (designed on cifar10)"
SPEC = "model-based[init=8,batch=8,acquisition=layers]"


def test_it_is_compared_on_the_hp12_rung_without_an_hp200_twin() -> None:
    designed = [m for m in COMPARED if m.label == LABEL]
    assert designed == [TssMethod(LABEL, SPEC)]
    assert designed[0].condition == "hp-12 rung"
    assert not [m for m in HP200_ONLY if m.searcher == SPEC]


def test_on_cifar10_at_the_imagenet_sized_budget_it_beats_the_default_design() -> None:
    seeds = [105, 106, 107]  # design seeds, disjoint from the scored 0-8
    designed = hv_ratios(TssMethod(LABEL, SPEC), "cifar10", "2080ti", seeds, (3_300.0,))
    default = hv_ratios(TssMethod("model-based", "model-based"), "cifar10", "2080ti", seeds,
                        (3_300.0,))  # fmt: skip
    assert float(np.mean(designed)) > float(np.mean(default)) + 0.02


PATHS_LABEL = "model-based + utilization features, paths (designed on cifar10)"
PATHS_SPEC = "model-based-hw[init=8,batch=8,acquisition=layers,encoding=paths]"


def test_the_third_round_choice_and_its_twin_are_compared_by_condition() -> None:
    by_label = {m.label: m for m in COMPARED}
    assert by_label[PATHS_LABEL] == TssMethod(PATHS_LABEL, PATHS_SPEC, hardware=True)
    assert by_label[PATHS_LABEL].condition == "hp-12 rung + measured hardware"
    twin = by_label["model-based, paths (the twin without utilization features)"]
    assert twin.searcher == PATHS_SPEC.replace("model-based-hw", "model-based")
    assert twin.condition == "hp-12 rung"


def test_on_the_finalists_seeds_the_path_encoding_beats_the_first_rounds_choice() -> None:
    # scripts/tss_design.py --paths, finalists (seeds 105-114) at 3,300 s: 0.9821 against
    # 0.9727; the same runs, checked here with a margin of half the difference
    seeds = list(range(105, 115))
    paths = hv_ratios(TssMethod(PATHS_LABEL, PATHS_SPEC, hardware=True), "cifar10", "2080ti",
                      seeds, (3_300.0,))  # fmt: skip
    first = hv_ratios(TssMethod(LABEL, SPEC), "cifar10", "2080ti", seeds, (3_300.0,))
    assert float(np.mean(paths)) > float(np.mean(first)) + 0.0045
