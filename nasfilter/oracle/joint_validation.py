"""The joint fit (:mod:`nasfilter.oracle.joint`) held out: every GPU and every source left out.

- leave one GPU out, six GPUs: the RTX 3090 or 4090 (timm's) predicted from a joint fit on the
  other one's timm files and all four cell GPUs; each cell GPU predicted from a joint fit on
  both timm GPUs and the other three cell GPUs;
- leave one generation out: each cell GPU predicted from a joint fit on both timm GPUs and the
  cells of the other generation only (Pascal from the RTX 2080 Ti; Turing, one GPU, is the
  leave-one-GPU-out fit);
- leave one source out: timm only -> cells (the shipped twelve figures, the cell figures at
  what timm alone says: :func:`~nasfilter.oracle.joint.timm_only_params`), and cells only ->
  timm (all sixteen fitted on the cells; the figures they do not constrain at the fixed start,
  ``tensor_efficiency`` tied to ``fp32_efficiency``).

Every record carries the plain roofline's figures beside the model's.
"""

from __future__ import annotations

from typing import Any

from nasfilter.oracle.calibrated import load_calibration
from nasfilter.oracle.calibration import TableSource
from nasfilter.oracle.cells import HELP_DEVICES, HELP_GENERATIONS, cell_measurements
from nasfilter.oracle.cells_validation import _rows as cell_rows
from nasfilter.oracle.joint import fit_joint, timm_only_params
from nasfilter.oracle.validation import SHIPPED_DEVICES, evaluate, shipped_samples


def _timm_record(split: str, fitted: str, held: Any, params: Any) -> dict[str, Any]:
    """One timm record: :func:`~nasfilter.oracle.validation.evaluate` of ``held``'s samples."""
    return {"split": split, "fit": fitted, "held_out": evaluate(held, params)}


def validate_joint(tables: TableSource) -> dict[str, Any]:
    """All the held-out records of the joint model: ``timm`` (per held-out timm GPU and
    source split) and ``cells`` (per held-out cell GPU, batch and split), and ``fit`` (the
    joint fit on everything: figures and rms log error per source)."""
    sets = {d: shipped_samples(d, tables) for d in SHIPPED_DEVICES}
    cells = cell_measurements()
    timm: list[dict[str, Any]] = []
    for held in SHIPPED_DEVICES:
        others = [sets[d] for d in SHIPPED_DEVICES if d != held]
        fit = fit_joint(others, cells)
        where = "+".join(s.device.name for s in others) + " + all four cell GPUs"
        timm.append(_timm_record("leave-one-GPU-out (joint)", where, sets[held], fit.params))
    fits: dict[tuple[str, ...], Any] = {}  # held-out cell GPUs -> the joint fit without them

    def without(held: tuple[str, ...]) -> Any:
        if held not in fits:
            rest = [m for m in cells if m[0] not in {HELP_DEVICES[g] for g in held}]
            fits[held] = fit_joint(list(sets.values()), rest).params
        return fits[held]

    cell_records: list[dict[str, Any]] = []
    for held in HELP_DEVICES:
        cell_records += cell_rows(without((held,)), held, "leave-one-GPU-out (joint)")
    for generation, gpus in HELP_GENERATIONS.items():
        split = f"leave-one-generation-out ({generation}, joint)"
        cell_records += [row for g in gpus for row in cell_rows(without(gpus), g, split)]
    shipped = timm_only_params(load_calibration().params)
    for held in HELP_DEVICES:
        cell_records += cell_rows(shipped, held, "timm only -> cells")
    cells_fit = fit_joint([], cells)
    for held in SHIPPED_DEVICES:
        timm.append(
            _timm_record("cells only -> timm", "four cell GPUs", sets[held], cells_fit.params)
        )
    everything = fit_joint(list(sets.values()), cells)
    return {
        "timm": timm,
        "cells": cell_records,
        "fit": {
            "params": everything.params.to_dict(),
            "rms_log_error": everything.rms_log_error,
            "cells_only_params": cells_fit.params.to_dict(),
        },
    }


def format_timm_rows(records: list[dict[str, Any]]) -> str:
    """A Markdown table of timm records: per layout, calibrated and roofline MdAPE, Spearman."""
    lines = [
        "| split | fitted on | held out | layout | n | calibrated MdAPE % | calibrated "
        "Spearman | roofline MdAPE % | roofline Spearman |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for rec in records:
        held = rec["held_out"]
        for layout in ("nchw", "nhwc"):
            if layout not in held:
                continue
            c, r = held[layout]["calibrated"], held[layout]["roofline"]
            lines.append(
                f"| {rec['split']} | {rec['fit']} | {held['device']} | {layout} | {c['n']} | "
                f"{c['mdape_percent']:.1f} | {c['spearman']:.3f} | {r['mdape_percent']:.0f} | "
                f"{r['spearman']:.3f} |"
            )
    return "\n".join(lines)


__all__ = ["format_timm_rows", "validate_joint"]
