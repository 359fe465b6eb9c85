"""The calibrated GPU model held against real GPUs it was not fitted on, and its NATS speed.

Held-out validation (the goals on the held-out GPU: MdAPE <= 10 %, Spearman >= 0.975 per
layout; the NHWC / NCHW ratio's direction right for >= 90 % of models, Pearson of its log
>= 0.6): fit on timm's published RTX 3090 measurements and predict the RTX 4090's, and the
other way round, for the plain roofline and the calibrated model. The layer tables of the
timm models come from the survey's analysis (timm on the meta device), remembered in the
survey's profile cache (the first run analyses every model once, a few minutes). Without
timm these rows fail with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from benchmarks import median_seconds, result


def _held_out() -> Iterator[dict[str, Any]]:
    from nasfilter.oracle.validation import (
        GOAL_LAYOUT_DIRECTION,
        GOAL_LAYOUT_PEARSON,
        GOAL_MDAPE_PERCENT,
        GOAL_SPEARMAN,
        cross_validate,
        meets_goal,
        meets_layout_goal,
    )
    from nasfilter.survey.tables import SurveyTables

    records = cross_validate(SurveyTables(jobs=2))
    for rec in records:
        a, b = rec["fit"]["device"], rec["held_out"]["device"]
        for layout in ("nchw", "nhwc"):
            for model in ("roofline", "calibrated"):
                f = rec["held_out"][layout][model]
                yield result(
                    f"{model} fitted on {a}, held out {b} {layout}: MdAPE",
                    round(f["mdape_percent"], 2),
                    "%",
                    f"<= {GOAL_MDAPE_PERCENT:g} % with Spearman >= {GOAL_SPEARMAN}"
                    if model == "calibrated"
                    else "report (the plain baseline)",
                    meets_goal(rec, layout) if model == "calibrated" else True,
                    spearman=round(f["spearman"], 4),
                    within_10_percent=round(f["within_10_percent"], 3),
                    n=f["n"],
                )
        lay = rec["held_out"]["layout"]
        yield result(
            f"NHWC/NCHW ratio, fitted on {a}, held out {b}: direction agrees",
            round(lay["direction"], 3),
            "share",
            f">= {GOAL_LAYOUT_DIRECTION:g} with Pearson (log) >= {GOAL_LAYOUT_PEARSON:g}",
            meets_layout_goal(rec),
            pearson_log_ratio=round(lay["pearson_log_ratio"], 3),
            spearman=round(lay["spearman"], 3),
            median_measured=round(lay["median_measured_ratio"], 3),
            median_predicted=round(lay["median_predicted_ratio"], 3),
            n=lay["n"],
        )


def _nats_speed() -> Iterator[dict[str, Any]]:
    from nasfilter.network import layer_table
    from nasfilter.oracle.calibrated import calibrated, load_calibration
    from nasfilter.oracle.devices import DEVICES

    layer_table("cifar10")  # cached, as in any process that has used it once
    cal = load_calibration()
    for name in DEVICES:
        seconds = median_seconds(lambda name=name: calibrated(name, "cifar10", cal), repeat=5)
        yield result(
            f"calibrated oracle, all 32768 on {name}",
            seconds,
            "s",
            "< 0.2 s",
            seconds < 0.2,
        )


def run() -> Iterator[dict[str, Any]]:
    yield from _nats_speed()
    yield from _held_out()
