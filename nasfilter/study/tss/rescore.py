"""The tss study's runs scored on other accuracies, from the cells they evaluated.

``reproduce --space tss`` scores every run on the real hp-200 validation accuracy, seed mean.
Its blocks keep each run's evaluated cells (:mod:`nasfilter.study.tss.cells`), so the same
runs can be scored on accuracies the tables do not hold (the real test accuracies of a full
NATS-Bench archive, one training seed's, a later benchmark's): each run's HV ratio is
recomputed over its cells against the true front of (those accuracies, the GPU's measured
throughput), exactly as ``compare --score-with`` scores stored runs
(:func:`nasfilter.runs.rescore.rescored_inputs`). The runs are not run again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from nasfilter.bench.tss_real import tss_table
from nasfilter.oracle.measured import measured_proxy
from nasfilter.runs.inputs import RunInputs
from nasfilter.runs.metrics import FrontReference, front_of
from nasfilter.runs.rescore import Accuracies, rescored_inputs
from nasfilter.study.tss import HP12, mean_and_se
from nasfilter.study.tss.cells import cells_key, load_cells
from nasfilter.study.tss.report import Block


def scored_reference(
    dataset: str, device: str, batch: int, accuracies: Accuracies
) -> FrontReference:
    """The front reference of ``accuracies`` against ``device``'s throughput measured at
    ``batch``; ValueError when they are of another space or dataset."""
    table, proxy = tss_table(dataset, HP12), measured_proxy(device, batch)
    resolved = RunInputs(table, proxy, FrontReference.build(table, proxy))
    return rescored_inputs(resolved, accuracies).reference


def check_covered(datasets: Sequence[str], accuracies: Mapping[str, Accuracies]) -> None:
    """ValueError naming each dataset of the study that ``accuracies`` holds none for."""
    missing = [d for d in datasets if d not in accuracies]
    if missing:
        raise ValueError(
            f"no accuracies are given for {', '.join(missing)}, which the study runs on "
            f"(given: {', '.join(sorted(accuracies)) or 'none'}); give one file per dataset "
            "or choose the datasets (--dataset)"
        )


def rescore_block(block: Block, folder: Path, accuracies: Accuracies) -> Block:
    """``block`` (read from ``folder``'s results.json) with every method's ``per_seed`` and
    ``hv`` scored on ``accuracies`` from its runs' cells, and ``scored_with`` naming the
    file; Fig. 3's numbers stay the table's. ValueError naming the cells file when it is
    missing or lacks a run."""
    if "cells" not in block:
        raise ValueError(f"the {block['dataset']} {block['device']} block was written before "
                         "the study kept its runs' cells; run it again (reproduce --space tss "
                         "--resume reruns it)")  # fmt: skip
    reference = scored_reference(block["dataset"], block["device"], block["batch"], accuracies)
    path = folder / block["cells"]
    cells = load_cells(path)
    methods = []
    for row, method in enumerate(block["methods"]):
        budgets = list(method["hv"])
        per_seed = []
        for seed in block["seeds"]:
            keys = [cells_key(row, seed, float(t)) for t in budgets]
            lost = [k for k in keys if k not in cells]
            if lost:
                raise ValueError(f"cells file {str(path)!r} lacks the run {lost[0]} of "
                                 f"{method['method']!r}")  # fmt: skip
            per_seed.append([reference.indicators(front_of(reference, cells[k]))[0] for k in keys])
        hv = np.asarray(per_seed, dtype=np.float64).reshape(len(per_seed), len(budgets))
        stats = {}
        for j, t in enumerate(budgets):
            mean, se = mean_and_se(hv[:, j])
            stats[t] = {"mean": mean, "se": se if math.isfinite(se) else None}
        methods.append(method | {"hv": stats, "per_seed": hv.tolist()})
    return block | {"methods": methods, "scored_with": accuracies.source}


def rescore_blocks(
    blocks: Sequence[Block], folder: Path, accuracies: Mapping[str, Accuracies]
) -> list[Block]:
    """Every block of ``blocks`` scored on the accuracies of its dataset
    (:func:`rescore_block`); ValueError naming a dataset with none given."""
    check_covered(list(dict.fromkeys(b["dataset"] for b in blocks)), accuracies)
    return [rescore_block(b, folder, accuracies[b["dataset"]]) for b in blocks]


__all__ = ["check_covered", "rescore_block", "rescore_blocks", "scored_reference"]
