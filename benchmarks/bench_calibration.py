"""The calibrated GPU model held against real GPUs it was not fitted on, and its NATS speed.

Held-out validation, one row and verdict per goal on the held-out GPU (MdAPE <= 10 % and
Spearman >= 0.975 per layout; the Pearson correlation of the log NHWC / NCHW ratio >= 0.6,
its direction per model reported beside it, no goal: the two GPUs' own
measurements agree on 89.4 %): fit on timm's published RTX 3090
measurements and predict the RTX 4090's, and the other way round, for the plain roofline
and the calibrated model. The layer tables of the timm models come from the survey's
analysis (timm on the meta device), remembered in the survey's profile cache (the first run
analyses every model once, a few minutes). Without
timm these rows fail with the reason.

The tss cells: each of the four cell GPUs left out of the cells' fit and predicted
at batch 1 (goal MdAPE <= 20 %) and 256 (MdAPE <= 12 %, Spearman >= 0.95), the plain roofline
beside it; each generation left out (Pascal predicted from a fit on the RTX 2080 Ti's cells,
Turing from the three Pascal GPUs'), a GPU of a generation the fit never saw, at every batch
(goal MdAPE <= 15 %, the bound on the cells of a GPU nobody measured), and again at batch 1
and 32 with that machine's host time per kernel from five of its networks measured at batch 1
(the median MdAPE over 20 draws, the largest beside it); and the time
to predict all 15625 cells and all 32768 sss networks on one device
(goal < 0.5 s).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from benchmarks import median_seconds, result


def _held_out() -> Iterator[dict[str, Any]]:
    from nasfilter.oracle.validation import cross_validate
    from nasfilter.survey.tables import SurveyTables

    for rec in cross_validate(SurveyTables(jobs=2)):
        yield from _record_rows(rec)


def _record_rows(rec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """One row per goal (and one per plain-roofline figure) of a held-out record."""
    from nasfilter.oracle.validation import (
        CONFUSION,
        GOAL_LAYOUT_PEARSON,
        GOAL_MDAPE_PERCENT,
        GOAL_SPEARMAN,
    )

    a, b = rec["fit"]["device"], rec["held_out"]["device"]
    where = f"fitted on {a}, held out {b}"
    for layout in ("nchw", "nhwc"):
        roof = rec["held_out"][layout]["roofline"]
        yield result(
            f"roofline {where} {layout}: MdAPE",
            round(roof["mdape_percent"], 2),
            "%",
            "report (the plain baseline)",
            True,
            spearman=round(roof["spearman"], 4),
            n=roof["n"],
        )
        f = rec["held_out"][layout]["calibrated"]
        yield result(
            f"calibrated {where} {layout}: MdAPE",
            round(f["mdape_percent"], 2),
            "%",
            f"<= {GOAL_MDAPE_PERCENT:g} %",
            f["mdape_percent"] <= GOAL_MDAPE_PERCENT,
            within_10_percent=round(f["within_10_percent"], 3),
            n=f["n"],
        )
        yield result(
            f"calibrated {where} {layout}: Spearman",
            round(f["spearman"], 4),
            "rho",
            f">= {GOAL_SPEARMAN:g}",
            f["spearman"] >= GOAL_SPEARMAN,
            n=f["n"],
        )
    lay = rec["held_out"]["layout"]
    yield result(
        f"NHWC/NCHW ratio {where}: direction agrees",
        round(lay["direction"], 3),
        "share",
        "report (no goal: the two GPUs' own measurements agree on 89.4 %)",
        True,
        measured_nhwc_faster=round(lay["measured_nhwc_faster"], 3),
        predicted_nhwc_faster=round(lay["predicted_nhwc_faster"], 3),
        n=lay["n"],
        **{name: lay[name] for name in CONFUSION if name in lay},
        **_reference(rec),
    )
    yield result(
        f"NHWC/NCHW ratio {where}: Pearson of log ratios",
        round(lay["pearson_log_ratio"], 3),
        "r",
        f">= {GOAL_LAYOUT_PEARSON:g}",
        lay["pearson_log_ratio"] >= GOAL_LAYOUT_PEARSON,
        spearman=round(lay["spearman"], 3),
        median_measured=round(lay["median_measured_ratio"], 3),
        median_predicted=round(lay["median_predicted_ratio"], 3),
        n=lay["n"],
    )


def _reference(rec: dict[str, Any]) -> dict[str, Any]:
    """The fitted GPU's measured ratios as the held-out prediction (a reference, no goal)."""
    ref = rec.get("measured_reference")
    if not ref or ref["n"] < 3:
        return {}
    return {
        "reference_direction": round(ref["direction"], 3),
        "reference_pearson": round(ref["pearson_log_ratio"], 3),
    }


def _nats_speed() -> Iterator[dict[str, Any]]:
    from nasfilter.bench.network import layer_table
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


def _cells_held_out() -> Iterator[dict[str, Any]]:
    from nasfilter.oracle.cells_validation import (
        GOAL_B1_MDAPE,
        GOAL_B256_MDAPE,
        GOAL_B256_SPEARMAN,
        GOAL_NEW_GPU_MDAPE,
        HOST_SEED,
        leave_one_generation_out,
        leave_one_gpu_out,
        with_measured_host,
    )

    for rec in leave_one_gpu_out():
        yield from _cell_rows(rec, GOAL_B1_MDAPE, GOAL_B256_MDAPE, GOAL_B256_SPEARMAN)
    for rec in leave_one_generation_out():
        c, r = rec["calibrated"], rec["roofline"]
        yield result(
            f"tss cells, {rec['split']}, {rec['device']}, batch {rec['batch']}: MdAPE",
            round(c["mdape_percent"], 2),
            "%",
            f"<= {GOAL_NEW_GPU_MDAPE:g} %",
            c["mdape_percent"] <= GOAL_NEW_GPU_MDAPE,
            spearman=round(c["spearman"], 4),
            roofline_mdape=round(r["mdape_percent"], 1),
            roofline_spearman=round(r["spearman"], 4),
            n=c["n"],
        )
    # the draws of calibrate --validate (k = 1, then 5), so the figures are the docs'
    for rec in with_measured_host(np.random.default_rng(HOST_SEED)):
        generation = rec["split"].startswith("leave-one-generation-out")
        if not generation or rec["networks"] != 5 or rec["batch"] == 256:
            continue
        yield result(
            f"tss cells, {rec['split']}, {rec['device']}, batch {rec['batch']}, host time "
            "from 5 networks measured at batch 1: MdAPE",
            round(rec["mdape_percent_median"], 2),
            "%",
            f"<= {GOAL_NEW_GPU_MDAPE:g} %",
            rec["mdape_percent_median"] <= GOAL_NEW_GPU_MDAPE,
            largest_over_draws=round(rec["mdape_percent_max"], 2),
            without=round(rec["without"]["mdape_percent"], 2),
            draws=rec["draws"],
        )


def _cell_rows(
    rec: dict[str, Any], b1_mdape: float, b256_mdape: float, b256_rho: float
) -> Iterator[dict[str, Any]]:
    """The goal rows of one held-out cell record (batch 1: MdAPE; 256: MdAPE and Spearman;
    batch 32 has no goal and no row), the roofline's figures beside each."""
    batch, c, r = rec["batch"], rec["calibrated"], rec["roofline"]
    if batch not in (1, 256):
        return
    where = f"tss cells, {rec['device']} held out, batch {batch}"
    limit = b1_mdape if batch == 1 else b256_mdape
    yield result(
        f"{where}: MdAPE",
        round(c["mdape_percent"], 2),
        "%",
        f"<= {limit:g} %",
        c["mdape_percent"] <= limit,
        roofline_mdape=round(r["mdape_percent"], 1),
        n=c["n"],
    )
    if batch == 256:
        yield result(
            f"{where}: Spearman",
            round(c["spearman"], 4),
            "rho",
            f">= {b256_rho:g}",
            c["spearman"] >= b256_rho,
            roofline_spearman=round(r["spearman"], 4),
            n=c["n"],
        )


def _one_device_speed() -> Iterator[dict[str, Any]]:
    """All 15625 tss cells and all 32768 sss networks on one device: docs/gpu-model.md's speed goal
    (< 0.5 s each)."""
    from nasfilter.bench.network import layer_table
    from nasfilter.oracle.calibrated import calibrated, load_calibration, predict_tss

    cal = load_calibration()
    layer_table("cifar10")
    predict_tss("rtx2080ti", 256, cal)  # warm the unit tables, as any later call finds them
    for what, fn in (
        ("all 15625 tss cells on rtx2080ti, batch 256", lambda: predict_tss("rtx2080ti", 256, cal)),
        ("all 32768 sss networks on rtx4090", lambda: calibrated("rtx4090", "cifar10", cal)),
    ):
        seconds = median_seconds(fn, repeat=5)
        yield result(f"calibrated, {what}", seconds, "s", "< 0.5 s", seconds < 0.5)


def run() -> Iterator[dict[str, Any]]:
    yield from _nats_speed()
    yield from _one_device_speed()
    yield from _cells_held_out()
    yield from _held_out()
