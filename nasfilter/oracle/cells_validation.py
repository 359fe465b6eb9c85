"""Hold the GPU model on the tss cells against GPUs and sources it was not fitted on.

- :func:`leave_one_gpu_out`: for each of the four cell GPUs, fit the cell figures
  (:data:`~nasfilter.oracle.gpumodel.CELL_FIGURES`) on the other three and predict it at
  batch 1, 32 and 256; the plain roofline (FP32 data-sheet peak and bandwidth, 3 us per
  layer) beside it. The twelve FP16 figures are timm's throughout.
- :func:`leave_one_generation_out`: for each generation of the cell GPUs (Pascal: GTX 1080 Ti,
  Titan X, Titan Xp; Turing: RTX 2080 Ti), fit the cell figures on the other generation only
  and predict each of its GPUs: a GPU of a generation the fit never saw. Turing's records
  are the leave-one-GPU-out ones (it is the only Turing GPU); Pascal's are new, fitted on
  the RTX 2080 Ti alone.
- :func:`timm_only`: leave the cells out entirely: the cell figures at what timm's fit says
  without them (a dense GEMM tile reaches ``tensor_efficiency`` of its peak on the CUDA cores
  too; no host time; pooling at its memory traffic).

The reverse, fitting on the cells and predicting timm, has no content here: the cells
constrain none of the twelve FP16 figures, so timm's predictions are the same with or without
them (docs/gpu-model.md).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from nasfilter.oracle.calibrated import load_calibration
from nasfilter.oracle.calibration import scores
from nasfilter.oracle.cells import (
    CELL_BATCHES,
    HELP_DEVICES,
    HELP_GENERATIONS,
    all_ops,
    cell_measurements,
    fit_cells,
    roofline_batch_seconds,
    tss_batch_seconds,
)
from nasfilter.oracle.gpumodel import GpuModelParams

# The goals on a held-out GPU's cells (docs/gpu-model.md): MdAPE and Spearman at batch 256,
# MdAPE at batch 1.
GOAL_B256_MDAPE = 12.0
GOAL_B256_SPEARMAN = 0.95
GOAL_B1_MDAPE = 20.0
# The goal on the cells of a GPU nobody measured (a held-out bound), held to on a
# generation left out: MdAPE at every batch.
GOAL_NEW_GPU_MDAPE = 15.0
# The splits whose records are held to a goal (the joint fit's records share the prefixes).
HELD_OUT_SPLITS = ("leave-one-GPU-out", "leave-one-generation-out")


def _rows(params: GpuModelParams, help_device: str, split: str) -> list[dict[str, Any]]:
    ops = all_ops()
    rows = []
    for device, batch, seconds in cell_measurements((help_device,)):
        truth = batch / seconds
        model = scores(batch / tss_batch_seconds(device, batch, params, ops), truth)
        roof = scores(batch / roofline_batch_seconds(device, batch, ops), truth)
        rows.append(
            {
                "split": split,
                "device": device,
                "batch": batch,
                "calibrated": model,
                "roofline": roof,
            }
        )
    return rows


def leave_one_gpu_out() -> list[dict[str, Any]]:
    """One record per held-out GPU and batch (12): the calibrated and roofline scores."""
    base = load_calibration().params
    records = []
    for held in HELP_DEVICES:
        params = fit_cells(base, tuple(g for g in HELP_DEVICES if g != held))
        records += _rows(params, held, "leave-one-GPU-out")
    return records


def leave_one_generation_out() -> list[dict[str, Any]]:
    """One record per GPU and batch (12), each predicted by a fit on the cells of the other
    generation's GPUs only (:data:`~nasfilter.oracle.cells.HELP_GENERATIONS`)."""
    base = load_calibration().params
    records = []
    for generation, held in HELP_GENERATIONS.items():
        fitted_on = tuple(g for g in HELP_DEVICES if g not in held)
        params = fit_cells(base, fitted_on)
        for gpu in held:
            records += _rows(params, gpu, f"leave-one-generation-out ({generation})")
    return records


def timm_only() -> list[dict[str, Any]]:
    """The cells predicted with no cell measurement in the fit (timm's figures alone)."""
    base = load_calibration().params
    params = replace(
        base,
        fp32_efficiency=base.tensor_efficiency,
        host_seconds=0.0,
        conv_host_seconds=0.0,
        pool_tap_rate=math.inf,
    )
    return [row for g in HELP_DEVICES for row in _rows(params, g, "timm only -> cells")]


def meets_goal(record: dict[str, Any]) -> bool | None:
    """Whether a held-out record meets its split's goal at its batch: a generation left out,
    MdAPE <= 15 % at every batch; otherwise the leave-one-GPU-out goals (None at batch 32)."""
    got = record["calibrated"]
    if record["split"].startswith("leave-one-generation-out"):
        return bool(got["mdape_percent"] <= GOAL_NEW_GPU_MDAPE)
    if record["batch"] == 256:
        return bool(
            got["mdape_percent"] <= GOAL_B256_MDAPE and got["spearman"] >= GOAL_B256_SPEARMAN
        )
    if record["batch"] == 1:
        return bool(got["mdape_percent"] <= GOAL_B1_MDAPE)
    return None


def format_cells_report(records: list[dict[str, Any]]) -> str:
    """A Markdown table of the records: calibrated and roofline MdAPE and Spearman."""
    lines = [
        "| split | held-out GPU | batch | calibrated MdAPE % | calibrated Spearman | "
        "roofline MdAPE % | roofline Spearman | goal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        c, f = r["calibrated"], r["roofline"]
        goal = meets_goal(r)
        verdict = (
            "—"
            if goal is None or not r["split"].startswith(HELD_OUT_SPLITS)
            else ("met" if goal else "missed")
        )
        lines.append(
            f"| {r['split']} | {r['device']} | {r['batch']} | {c['mdape_percent']:.1f} | "
            f"{c['spearman']:.3f} | {f['mdape_percent']:.0f} | {f['spearman']:.3f} | {verdict} |"
        )
    return "\n".join(lines)


__all__ = [
    "CELL_BATCHES",
    "GOAL_NEW_GPU_MDAPE",
    "format_cells_report",
    "leave_one_generation_out",
    "leave_one_gpu_out",
    "meets_goal",
    "timm_only",
]
