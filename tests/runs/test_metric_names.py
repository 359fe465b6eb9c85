"""The accuracy metrics' names: ``best_acc``/``selected_acc`` claim no split; the table says
what they hold; results written under the old names (``best_test_acc``,
``selected_test_acc``) still load, mapped in one place (``metrics.current_names``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nasfilter.runs.experiment import RunSpec
from nasfilter.runs.metrics import METRICS, accuracy_words, current_names
from nasfilter.runs.records import StoredScores
from nasfilter.runs.results import METRICS_VERSION, load_results
from nasfilter.runs.storage.codec import decode_scores, encode_scores
from nasfilter.runs.storage.sqlite_store import Store
from nasfilter.study.metrics_table import format_summary, headers, summarize
from tests.runs.test_store import stored

SPEC = RunSpec("random", "none", budget=20_000.0, n_ticks=4)


def test_no_metric_or_header_claims_a_split_the_table_does_not_hold() -> None:
    assert not any("test" in name for name in METRICS)
    assert accuracy_words("valid@90", (777,)) == "hp-90 validation acc, seed 777"
    assert accuracy_words("test@90", (777, 888, 999)) == "hp-90 test acc"
    assert accuracy_words("valid@12", (777, 888, 999)) == "hp-12 validation acc"
    assert accuracy_words("odd@3") == "odd@3 acc"
    assert "best hp-90 validation acc, seed 777 (%)" in headers(accuracy_words("valid@90", (777,)))
    assert not any("test" in h for h in headers())  # the default names no split


def test_old_names_are_mapped_in_one_place() -> None:
    old = {"hv_ratio": 0.5, "best_test_acc": 90.0, "selected_test_acc": 89.0}
    assert current_names(old) == {"hv_ratio": 0.5, "best_acc": 90.0, "selected_acc": 89.0}
    assert list(current_names(old)) == ["hv_ratio", "best_acc", "selected_acc"]
    with pytest.raises(ValueError, match=r"stored metrics hold both 'best_test_acc' and "
                                         r"'best_acc'"):
        current_names({"best_acc": 1.0, "best_test_acc": 1.0}, "stored metrics")


def test_scores_stored_under_the_old_names_load_under_the_new(tmp_path: Path) -> None:
    scores = StoredScores(METRICS_VERSION, {"n_evaluations": 3},
                          {"best_test_acc": 90.5, "selected_test_acc": 88.0},
                          {"clock": np.arange(3.0), "best_test_acc": np.array([1.0, 2.0, 3.0])})
    back = decode_scores(scores.version, *encode_scores(scores))
    assert back.metrics == {"best_acc": 90.5, "selected_acc": 88.0}
    assert list(back.curves) == ["clock", "best_acc"]
    db = tmp_path / "old.db"
    with Store(db) as store:  # a run whose cached scores carry the old names
        run_id = stored(store, SPEC, 0)
        fresh = store.scores(run_id)
        assert fresh is not None and "best_acc" in fresh.metrics
        old = {("best_test_acc" if k == "best_acc" else k): v for k, v in fresh.metrics.items()}
        curves = {("selected_test_acc" if k == "selected_acc" else k): v
                  for k, v in fresh.curves.items()}
        store.put_scores(run_id, METRICS_VERSION, fresh.summary, old, curves)
    with Store(db, create=False, readonly=True) as store:
        (run,) = load_results(store)
    assert not run.computed  # read from the cache, not recomputed
    assert run.metrics["best_acc"] == fresh.metrics["best_acc"]
    assert np.array_equal(run.curves["selected_acc"], fresh.curves["selected_acc"])
    text = format_summary(summarize([run.row()]), "hp-90 validation acc, seed 777")
    assert "best hp-90 validation acc, seed 777 (%)" in text and "test" not in text
