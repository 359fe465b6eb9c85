"""The report's K comparison: which methods run at which numbers K of simulated workers.

The asynchronous multi-fidelity searchers (ASHA, MO-ASHA) run at every K on a table with
learning curves, the synchronous Hyperband and BOHB at the first K; the peers run at K > 1
with ``peers_every_k``. Checked on the summary data the workers figure is drawn from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nasfilter.bench.lookup import load_table
from nasfilter.study.methods import (
    CHEAP_SIGNAL_METHODS,
    FILTERING,
    METHODS,
    MULTI_FIDELITY_METHODS,
    PEER_METHODS,
    REINFORCE_MNAS,
    peers_at_every_k,
    study_methods,
)
from nasfilter.study.report import captions
from nasfilter.study.reproduce import has_curves, reproduce
from nasfilter.study.summary import StudySummary

ASHA, MO_ASHA, HYPERBAND, BOHB = MULTI_FIDELITY_METHODS
BUDGET = 4000.0  # worker-seconds: a few dozen evaluations each, K = 4 ends at a quarter


def test_multi_fidelity_methods_only_on_a_table_with_curves() -> None:
    assert {m.searcher for m in MULTI_FIDELITY_METHODS} == {"asha", "mo-asha", "hyperband",
                                                           "bohb"}
    assert has_curves(load_table("synthetic")) is True  # the surrogate's SYNTHETIC curves
    assert has_curves(load_table(None)) is False  # the real table keeps the last epoch only
    assert study_methods(False) == METHODS
    assert study_methods(True) == (*METHODS, *MULTI_FIDELITY_METHODS, *CHEAP_SIGNAL_METHODS)
    # asynchronous: every K; synchronous (a worker waits for its rung): the first K
    assert [m.every_k for m in MULTI_FIDELITY_METHODS] == [True, True, False, False]


def test_peers_at_every_k_changes_only_the_peers() -> None:
    assert PEER_METHODS and not any(m.every_k for m in PEER_METHODS)
    out = peers_at_every_k(METHODS)
    assert [m.label for m in out] == [m.label for m in METHODS]
    for before, after in zip(METHODS, out, strict=True):
        assert after.every_k is (True if before in PEER_METHODS else before.every_k)


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    methods = (FILTERING, REINFORCE_MNAS, *MULTI_FIDELITY_METHODS, PEER_METHODS[0])
    return reproduce(
        tmp_path_factory.mktemp("k") / "out", table="synthetic", seeds=[0, 1],
        budget=BUDGET, methods=methods, workers=(1, 4), peers_every_k=True, quiet=True,
        survey=False,
    )


@pytest.mark.slow
def test_the_k_figure_holds_the_asynchronous_methods_and_the_peers_at_every_k(
    summary: dict[str, Any],
) -> None:
    per_method = summary["workers_comparison"]["methods"]
    for method in (ASHA, MO_ASHA, PEER_METHODS[0], REINFORCE_MNAS):
        assert set(per_method[method.label]) == {"1", "4"}, method.label
    for method in (HYPERBAND, BOHB):
        assert set(per_method[method.label]) == {"1"}, method.label
    for label in (ASHA.label, MO_ASHA.label, PEER_METHODS[0].label):
        for k in ("1", "4"):
            entry = per_method[label][k]
            assert entry["runs"] == 2
            assert max(entry["band"]["mean"]) > 0.0  # they found part of the front
    # Four asynchronous workers share the worker-seconds: each run ends near a quarter of
    # the wall clock of one worker (they never wait for a rung).
    for label in (ASHA.label, MO_ASHA.label):
        one, four = (per_method[label][k]["wall_clock_seconds"]["mean"] for k in ("1", "4"))
        assert one > 0.9 * BUDGET and four < 0.3 * BUDGET, label


@pytest.mark.slow
def test_the_caption_names_the_methods_at_the_first_k_only(summary: dict[str, Any]) -> None:
    caption = captions(StudySummary.from_json(summary))["workers"]
    assert f"At K = 1 only: {HYPERBAND.label}, {BOHB.label}" in caption
    assert "left out" not in caption


@pytest.mark.slow
def test_reproduce_on_the_real_table_says_the_multi_fidelity_searchers_are_left_out(
    tmp_path: Path,
) -> None:
    summary = reproduce(
        tmp_path / "out", seeds=[0], budget=1000.0, methods=(FILTERING, REINFORCE_MNAS),
        workers=(1,), quiet=True, survey=False,
    )
    caption = captions(StudySummary.from_json(summary))["workers"]
    assert "ASHA, MO-ASHA, Hyperband, BOHB) are left out" in caption
    assert "At K = 1 only" not in caption  # one K: nothing is shown at fewer
