"""The studies' ceiling tables (nasfilter.study.ceilings): the rendering by hand, and the
generated sections of the docs against a fresh computation."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasfilter.study.ceilings import DOC_SECTIONS, CeilingRow, ceiling_table
from nasfilter.study.report import report_tables
from nasfilter.study.summary import StudySummary
from nasfilter.study.tss.report import section

REPO = Path(__file__).resolve().parents[2]
OPEN_ENDED = CeilingRow("ImageNet16-120", "V100, calibrated model", 65, 9682.4,
                        (0.98001, 0.98996), (0.98004, 0.99012), (54000.0, math.inf),
                        (0.5, 0.75), (3, 7))  # fmt: skip


def test_rows_render_brackets_seconds_and_open_ends() -> None:
    rows = [
        CeilingRow("cifar100", "RTX 2080 Ti, measured, batch 256", 45, 8150.68,
                   (0.99994, 1.0), (0.99996, 1.0), (1105.0, 1113.0), (0.99637, 0.99794),
                   (38, 38)),
        OPEN_ENDED,
    ]  # fmt: skip
    lines = ceiling_table(rows, "hp-12").splitlines()
    assert lines[0].count("|") == lines[1].count("|") == lines[2].count("|") == 9
    assert lines[0].startswith(
        "| dataset | hardware | true front (architectures, s to evaluate all) |"
    )
    assert "best set by hp-12, 55,000 s (size)" in lines[0]
    assert lines[2] == (
        "| cifar100 | RTX 2080 Ti, measured, batch 256 | 45, 8,151 | 0.9999–1.0000 | 1.0000 | "
        "1,105–1,113 | 0.9964 (38) | 0.9979 (38) |"
    )
    assert lines[3] == (
        "| ImageNet16-120 | V100, calibrated model | 65, 9,682 | 0.9800 | 0.9900–0.9901 | "
        ">= 54,000 | 0.5000 (3) | 0.7500 (7) |"
    )


@pytest.mark.slow
@pytest.mark.parametrize(("name", "markers", "rows", "observed"), DOC_SECTIONS)
def test_the_docs_hold_the_current_tables(
    name: str, markers: tuple[str, str], rows: Callable[[], list[CeilingRow]], observed: str
) -> None:
    """Stale? Run ``python scripts/update_ceiling_docs.py``."""
    assert section(REPO / name, markers) == ceiling_table(rows(), observed)


def test_a_row_round_trips_through_strict_json_with_its_open_end() -> None:
    text = json.dumps(OPEN_ENDED.to_json(), allow_nan=False)
    assert '"to_target": [54000.0, null]' in text
    assert CeilingRow.from_json(json.loads(text)) == OPEN_ENDED


def test_the_sss_report_shows_the_ceiling_only_when_the_summary_has_it() -> None:
    data = REPO / "tests" / "data" / "reproduce" / "summary-v1.json"
    old: dict[str, Any] = json.loads(data.read_text("utf-8"))
    summary = StudySummary.from_json(old)
    assert summary.ceiling is None and "ceiling" not in summary.to_json()
    title = "How high could any run go? The clairvoyant ceiling"
    assert all(t.title != title for t in report_tables(summary))
    with_it = dataclasses.replace(summary, ceiling=OPEN_ENDED.to_json())
    again = StudySummary.from_json(json.loads(json.dumps(with_it.to_json(), allow_nan=False)))
    shown = [t for t in report_tables(again) if t.title == title]
    assert len(shown) == 1
    assert shown[0].rows == (("ImageNet16-120", "V100, calibrated model", "65, 9,682",
                              "0.9800", "0.9900–0.9901", ">= 54,000", "0.5000 (3)",
                              "0.7500 (7)"),)  # fmt: skip
    assert summary.accuracy_label in shown[0].caption
