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
- :func:`with_measured_host`: both held-out splits again, with the one figure of the
  held-out machine that no data sheet gives, its host time per eager kernel
  (``measured_host_kernel_us``), derived from a few of its networks measured at batch 1
  (:func:`~nasfilter.oracle.cells.host_kernel_from_latency`) and scored on the others.
- :func:`score_measured_cells`: a user's own measured cells (a ``measure --space tss
  --export`` file) scored against a calibration, no fit.
- :func:`timm_only`: leave the cells out entirely: the cell figures at what timm's fit says
  without them (a dense GEMM tile reaches ``tensor_efficiency`` of its peak on the CUDA cores
  too; no host time; pooling at its memory traffic).

The reverse, fitting on the cells and predicting timm, has no content here: the cells
constrain none of the twelve FP16 figures, so timm's predictions are the same with or without
them (docs/gpu-model.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.oracle.calibrated import Calibration, load_calibration
from nasfilter.oracle.calibration import scores
from nasfilter.oracle.cells import (
    CELL_BATCHES,
    HELP_DEVICES,
    HELP_GENERATIONS,
    all_ops,
    cell_measurements,
    fit_cells,
    host_bound_networks,
    host_kernel_from_latency,
    roofline_batch_seconds,
    tss_batch_seconds,
)
from nasfilter.oracle.devices import DeviceSpec, get_device
from nasfilter.oracle.gpumodel import GpuModelParams
from nasfilter.oracle.tss_measure import (
    TssExport,
    cells_export_batch,
    export_device,
    measured_on,
)

# The goals on a held-out GPU's cells (docs/gpu-model.md): MdAPE and Spearman at batch 256,
# MdAPE at batch 1.
GOAL_B256_MDAPE = 12.0
GOAL_B256_SPEARMAN = 0.95
GOAL_B1_MDAPE = 20.0
# The goal on the cells of a GPU nobody measured (a held-out bound), held to on a
# generation left out: MdAPE at every batch.
GOAL_NEW_GPU_MDAPE = 15.0
# The generator seed of :func:`with_measured_host`'s draws in ``calibrate --validate``.
HOST_SEED = 0
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


def _gpu_out_fits() -> Iterator[tuple[str, str, GpuModelParams]]:
    """(split, held-out HELP GPU, the cell figures fitted on the other three GPUs' cells)."""
    base = load_calibration().params
    for held in HELP_DEVICES:
        others = tuple(g for g in HELP_DEVICES if g != held)
        yield "leave-one-GPU-out", held, fit_cells(base, others)


def _generation_out_fits() -> Iterator[tuple[str, str, GpuModelParams]]:
    """(split, HELP GPU, the cell figures fitted on the other generation's GPUs' cells only):
    one fit per generation."""
    base = load_calibration().params
    for generation, held in HELP_GENERATIONS.items():
        params = fit_cells(base, tuple(g for g in HELP_DEVICES if g not in held))
        for gpu in held:
            yield f"leave-one-generation-out ({generation})", gpu, params


def leave_one_gpu_out() -> list[dict[str, Any]]:
    """One record per held-out GPU and batch (12): the calibrated and roofline scores."""
    return [row for split, gpu, params in _gpu_out_fits() for row in _rows(params, gpu, split)]


def leave_one_generation_out() -> list[dict[str, Any]]:
    """One record per GPU and batch (12), each predicted by a fit on the cells of the other
    generation's GPUs only (:data:`~nasfilter.oracle.cells.HELP_GENERATIONS`)."""
    return [
        row for split, gpu, params in _generation_out_fits() for row in _rows(params, gpu, split)
    ]


def with_measured_host(
    rng: np.random.Generator,
    networks: tuple[int, ...] = (1, 5),
    draws: int = 20,
    measured_at: int = 1,
) -> list[dict[str, Any]]:
    """The held-out GPUs predicted with their machine's host time per kernel, derived from
    ``k`` of its networks measured at batch ``measured_at`` and scored on the other networks
    at every batch. For each ``k`` of ``networks``, ``draws`` draws of ``k`` networks from
    ``rng`` among :func:`~nasfilter.oracle.cells.host_bound_networks` at that batch (chosen
    as a user would, before measuring).

    One record per split, GPU, ``k`` and batch: the MdAPE % and Spearman without the figure
    (all networks), and over the draws the median and largest MdAPE % and the median
    Spearman with it, and the median host time derived (us).
    """
    ops = all_ops()
    records = []
    for split, gpu, params in [*_gpu_out_fits(), *_generation_out_fits()]:
        device = HELP_DEVICES[gpu]
        measured = {b: s for _, b, s in cell_measurements((gpu,))}
        plain = {
            b: scores(b / tss_batch_seconds(device, b, params, ops), b / measured[b])
            for b in CELL_BATCHES
        }
        candidates = host_bound_networks(device, measured_at, params)
        for k in networks:
            got: dict[int, list[dict[str, float]]] = {b: [] for b in CELL_BATCHES}
            hosts = []
            for _ in range(draws):
                chosen = rng.choice(candidates, size=k, replace=False)
                at = measured[measured_at][chosen]
                host = host_kernel_from_latency(device, chosen, at, measured_at, params)
                hosts.append(host)
                dev = replace(get_device(device), measured_host_kernel_seconds=host)
                rest = np.setdiff1d(np.arange(len(ops)), chosen)
                for b in CELL_BATCHES:
                    pred = b / tss_batch_seconds(dev, b, params, ops[rest])
                    got[b].append(scores(pred, b / measured[b][rest]))
            for b in CELL_BATCHES:
                mdape = [g["mdape_percent"] for g in got[b]]
                records.append(
                    {
                        "split": split,
                        "device": device,
                        "batch": b,
                        "networks": k,
                        "measured_at": measured_at,
                        "draws": draws,
                        "host_kernel_us": float(np.median(hosts)) * 1e6,
                        "fitted_host_kernel_us": params.host_seconds * 1e6,
                        "without": plain[b],
                        "mdape_percent_median": float(np.median(mdape)),
                        "mdape_percent_max": float(np.max(mdape)),
                        "spearman_median": float(np.median([g["spearman"] for g in got[b]])),
                    }
                )
    return records


def format_host_report(records: list[dict[str, Any]]) -> str:
    """A Markdown table of :func:`with_measured_host`'s records."""
    lines = [
        "| split | held-out GPU | networks measured (at batch) | batch | host us/kernel "
        "(fitted) | MdAPE % without | MdAPE % with: median (largest) | Spearman without / "
        "with |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['split']} | {r['device']} | {r['networks']} ({r['measured_at']}) | "
            f"{r['batch']} | "
            f"{r['host_kernel_us']:.1f} ({r['fitted_host_kernel_us']:.1f}) | "
            f"{r['without']['mdape_percent']:.1f} | {r['mdape_percent_median']:.1f} "
            f"({r['mdape_percent_max']:.1f}) | {r['without']['spearman']:.3f} / "
            f"{r['spearman_median']:.3f} |"
        )
    return "\n".join(lines)


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


def score_measured_cells(
    export: TssExport, calibration: Calibration, device: str | DeviceSpec | None = None
) -> dict[str, Any]:
    """A user's measured tss cells (a ``measure --space tss --export`` file of FP32 eager NCHW
    latencies at one batch: :func:`~nasfilter.oracle.tss_measure.cells_export_batch`) against
    ``calibration``'s model on ``device``'s data sheet (default: the export's own), the plain
    roofline beside: MdAPE, Spearman and share within ±10 % of the throughput, over the rows
    with a latency. ``in_sample`` says the calibration's cells were fitted on these latencies
    (HELP's own, of a GPU its provenance lists)."""
    batch = cells_export_batch(export)
    dev = export_device(export, device)
    has = export.has_latency
    truth = batch / export.latency_s[has]
    ops = all_ops()[export.index[has]]
    fitted_on = calibration.provenance.get("cells", {}).get("devices", [])
    help_gpu = export.meta.get("config", {}).get("help_device")
    return {
        "file": str(export.path),
        "device": dev.name,
        "measured_on": measured_on(export.meta),
        "batch": batch,
        "host_kernel_us": None if dev.measured_host_kernel_seconds is None
        else dev.measured_host_kernel_seconds * 1e6,
        "calibrated": scores(batch / tss_batch_seconds(dev, batch, calibration.params, ops),
                             truth),
        "roofline": scores(batch / roofline_batch_seconds(dev, batch, ops), truth),
        "in_sample": export.meta.get("backend") == "measured"
        and HELP_DEVICES.get(str(help_gpu)) in fitted_on,
    }


def format_measured_cells_report(records: list[dict[str, Any]], calibration: str) -> str:
    """A plain-text table of :func:`score_measured_cells`' records against the calibration
    labelled ``calibration``; an in-sample file is named so."""
    lines = [
        f"measured tss cells held against the calibration ({calibration}), FP32 eager NCHW:",
        "file                       device       batch  model          n    MdAPE %  Spearman  "
        "within ±10 %",
    ]
    for rec in records:
        name = Path(rec["file"]).name
        for model in ("roofline", "calibrated"):
            f = rec[model]
            lines.append(
                f"{name:<26} {rec['device']:<12} {rec['batch']:>5}  {model:<11} {f['n']:>5} "
                f"{f['mdape_percent']:>9.1f} {f['spearman']:>9.3f} {f['within_10_percent']:>13.2f}"
            )
        if rec["in_sample"]:
            lines.append(f"{name:<26} IN-SAMPLE, not held out: the calibration's cells were "
                         f"fitted on these latencies ({rec['measured_on']})")
    return "\n".join(lines)


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
    "HOST_SEED",
    "format_cells_report",
    "format_host_report",
    "format_measured_cells_report",
    "leave_one_generation_out",
    "leave_one_gpu_out",
    "meets_goal",
    "score_measured_cells",
    "timm_only",
    "with_measured_host",
]
