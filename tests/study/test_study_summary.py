"""The typed summary of `reproduce`: read back a summary.json written before the format had a
version (tests/data/reproduce, written by the reproduce of before the split: seeds 0-1,
80000 s, approximate filtering, REINFORCE (MnasNet) and random search, K = 1 and 4), and
the report's text from it against the metrics.md that run wrote."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.study.metrics_table import COLUMNS
from nasfilter.study.report import metrics_csv, metrics_markdown, table_cells, workers_cells
from nasfilter.study.summary import SUMMARY_VERSION, StudySummary

DATA = Path(__file__).parent.parent / "data" / "reproduce"


@pytest.fixture(scope="module")
def old() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "summary-v1.json").read_text("utf-8"))
    return data


def test_an_old_summary_reads_back_and_writes_the_same_json(old: dict[str, Any]) -> None:
    assert "summary_version" not in old  # written before the format had a version
    summary = StudySummary.from_json(old)
    # the accuracy metrics come back under their names of today (best_acc, selected_acc)
    renamed = json.loads(json.dumps(old).replace('"best_test_acc"', '"best_acc"')
                         .replace('"selected_test_acc"', '"selected_acc"'))
    assert renamed != old and "best_test_acc" not in json.dumps(summary.to_json())
    assert summary.to_json() == {"summary_version": SUMMARY_VERSION, **renamed}
    # the arrays are arrays, of the file's values
    assert summary.true_front.indices.dtype == np.int64
    assert summary.true_front.indices.tolist() == old["true_front"]["indices"]
    assert summary.fig6.fronts[1].tolist() == old["fig6"]["fronts"]["1"]
    band = summary.comparison.curves["random search"]
    assert band.mean.shape == (len(old["comparison"]["times_seconds"]),)
    assert summary.workers_comparison.methods["REINFORCE (MnasNet reward)"][4].runs == 2


def test_nan_is_null_in_the_file_and_nan_in_memory(old: dict[str, Any]) -> None:
    summary = StudySummary.from_json(old)
    row = old["metrics_table"][0]  # approximate filtering, one front for both seeds
    assert row["hv_ratio"]["se"] == 0.0
    single = {**old, "parameters": {**old["parameters"], "seeds": [0]}}
    single["metrics_table"] = [{**row, "hv_ratio": {"mean": 0.5, "se": None}}]
    got = StudySummary.from_json(single).metrics_table[0].stat("hv_ratio")
    assert got.mean == 0.5 and math.isnan(got.se)
    assert StudySummary.from_json(single).to_json()["metrics_table"][0]["hv_ratio"]["se"] is None
    # a column the old file lacks (wall-clock s) is NaN, shown as n/a
    assert math.isnan(summary.metrics_table[0].stat("clock").mean)


def test_the_tables_of_an_old_summary_match_what_it_wrote(old: dict[str, Any]) -> None:
    summary = StudySummary.from_json(old)
    header, _ = table_cells(summary)
    assert header[:2] == ["method", "runs"] and len(header) == 2 + len(COLUMNS)
    new_lines = metrics_markdown(summary).splitlines()
    old_lines = (DATA / "metrics-v1.md").read_text("utf-8").splitlines()
    # Every column the old table had, cell for cell; the new one adds wall-clock s at the end.
    assert COLUMNS[-1].key == "clock"
    for new, was in zip(new_lines[2:5], old_lines[2:5], strict=True):
        cells = new.strip("| ").split(" | ")
        assert cells[-1] == "n/a" and " | ".join(cells[:-1]) == was.strip("| ")
    assert new_lines[-1] == old_lines[-1]  # the provenance line
    csv_head = metrics_csv(summary).splitlines()[0]
    assert csv_head.startswith("method,searcher,filter,runs,hv_ratio_mean,hv_ratio_se")
    k_header, k_rows = workers_cells(summary)
    assert k_header[2] == "HV ratio at 5,000 s"  # 1/16 of 80000 s
    assert [r[:2] for r in k_rows] == [
        ["approximate filtering", "1"],
        ["approximate filtering", "4"],
        ["REINFORCE (MnasNet reward)", "1"],
        ["REINFORCE (MnasNet reward)", "4"],
        ["random search", "1"],
    ]


def test_a_newer_or_foreign_file_is_refused(old: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="summary_version 99"):
        StudySummary.from_json({**old, "summary_version": 99})
    with pytest.raises(ValueError, match=r"not a summary\.json"):
        StudySummary.from_json({"rows": []})
