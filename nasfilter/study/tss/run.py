"""Run the tss study and write its outputs: ``nasfilter reproduce --space tss``
(:func:`nasfilter.study.reproduce.reproduce` with ``space="tss"`` calls :func:`reproduce_tss`).

Under ``out`` it writes:

- ``results.json``: one block per (dataset, GPU), appended as each finishes, so that a run
  cut short keeps what it finished (``resume=True`` reuses those blocks);
- ``cells-<dataset>-<gpu>-b<batch>.npz``: the cells each run of a block evaluated
  (:mod:`nasfilter.study.tss.cells`), so that the runs can be scored on other accuracies
  without running them again (``score_with``, :mod:`nasfilter.study.tss.rescore`);
- ``fig3-<dataset>-<gpu>.png/.svg``: Fig. 3 (measured utilization against measured throughput,
  coloured by the real hp-200 validation accuracy, seed mean) per dataset and GPU;
- ``results.md``: every table (Fig. 3's numbers, every method at 20,000 and 55,000 s, the
  ablation of cheap signals, the goals, and the clairvoyant ceiling of each dataset and GPU,
  :mod:`nasfilter.study.ceilings`);
- ``summary.json``: the blocks with what each number is (:func:`labels`) and the ceilings;
- ``report.html``: all of it in one self-contained page.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.tss_data import GPU_BATCHES, RECORDS
from nasfilter.bench.tss_real import VALID_PASS_RATIO, tss_table
from nasfilter.files import atomic_write
from nasfilter.oracle.measured import (
    DEFAULT_BATCH,
    PRECISION,
    help_device,
    is_measured_spec,
    measured_proxy,
    parse_settings,
)
from nasfilter.render.drawing import FigureContext, FigureFiles, save_figure
from nasfilter.render.html_page import ReportFigure, ReportTable, write_report
from nasfilter.runs.rescore import Accuracies
from nasfilter.sim.problem import DEFAULT_PROXY_COST
from nasfilter.study.ceilings import ceiling_table, json_rows, tss_rows
from nasfilter.study.plots import fig3_utilization_space
from nasfilter.study.tss import (
    COMPARED,
    DATASETS,
    DEVICES,
    HP12,
    HP200,
    HP200_ONLY,
    TIMES,
    TWO_FIDELITY,
    TssMethod,
    fig3_numbers,
    mean_and_se,
    scored_runs,
    searcher_spec,
)
from nasfilter.study.tss.cells import cells_key, cells_name, save_cells
from nasfilter.study.tss.report import Block, render
from nasfilter.study.tss.rescore import check_covered, rescore_blocks, scored_reference

ALL_METHODS: tuple[TssMethod, ...] = (*COMPARED, *HP200_ONLY, *TWO_FIDELITY)
FIG3_ACCURACY = "real hp-200 validation accuracy, seed mean (%)"


def check_selection(
    datasets: Sequence[str], devices: Sequence[str], batch: int
) -> tuple[list[str], list[str]]:
    """The datasets' and GPUs' canonical names (duplicates dropped); ValueError naming a
    dataset, GPU or batch that was not measured, with the measured ones (a CPU or an edge
    device has no FP32 peak, hence no utilization: refused too)."""
    names = list(dict.fromkeys(get_dataset(d).name for d in datasets))
    gpus = list(dict.fromkeys(help_device(d) for d in devices))
    if not names or not gpus:
        raise ValueError("the tss study needs at least one dataset and one GPU")
    if isinstance(batch, bool) or batch not in GPU_BATCHES:
        raise ValueError(
            f"batch {batch!r} was not measured; the measured batches are "
            f"{', '.join(map(str, GPU_BATCHES))}"
        )
    return names, gpus


def rescored_words(datasets: Sequence[str], score_with: Mapping[str, Accuracies]) -> str:
    """What scores the runs when ``score_with`` does, in words, naming each file."""
    files = "; ".join(f"{d}: {score_with[d].words}" for d in datasets)
    return f"HV ratios scored on the accuracies you gave, not on the table's ({files})"


def labels(
    datasets: Sequence[str], batch: int, score_with: Mapping[str, Accuracies] | None = None
) -> dict[str, Any]:
    """What each number of the study is: real, measured, derived or modelled."""
    if score_with is None:
        scored = "hp-200 validation accuracy, seed mean"
        what = ("real: hp-200 validation accuracy (x-valid after 200 epochs), mean over "
                "NATS-Bench's training seeds (seed records flagged by NATS-Bench issue #36 "
                "excluded); validation, not test")  # fmt: skip
    else:
        scored, what = "accuracies in each dataset's file", rescored_words(datasets, score_with)
    return {
        "scored_accuracy": what,
        "records": {d: RECORDS[d] for d in datasets},
        "observed_accuracy": {
            HP12: "real: hp-12 validation accuracy, seed mean (no per-epoch curve)",
            HP200: "real: hp-200 validation accuracy of one training seed, drawn from the "
            "run's generator",
        },
        "training_time": "measured: NATS-Bench's per-epoch training times (12 epochs on "
        f"{HP12}, 200 on {HP200})",
        "validation_pass": "modelled: one validation pass per evaluation = a per-dataset ratio "
        "x the epoch's training time, fitted on the official fixture: "
        + ", ".join(f"{d} {VALID_PASS_RATIO[d]:.4g}" for d in datasets),
        "proxy_cost": f"modelled: {DEFAULT_PROXY_COST:g} simulated seconds per proxy query",
        "latency": f"measured by HELP on each named GPU at batch {batch} (framework and "
        "precision not documented by the source)",
        "throughput": f"derived: batch {batch} / measured latency (images/s)",
        "utilization": f"derived: throughput x 2 x MACs / the GPU's data-sheet peak, {PRECISION}",
        "hv_ratio": f"hypervolume of a run's front (its full evaluations at their {scored} "
        "and measured throughput) / that of the true accuracy-throughput front of the GPU",
        "budgets_seconds": list(TIMES),
    }


def _fig3(dataset: str, device: str, batch: int, out: Path) -> dict[str, Any]:
    """Fig. 3 of ``dataset`` on ``device`` saved under ``out``; its numbers."""
    nums = fig3_numbers(dataset, device, batch)
    table, proxy = tss_table(dataset, HP12), measured_proxy(device, batch)
    mask = np.zeros(table.space.size, dtype=bool)
    mask[nums.pareto_set] = True
    ctx = FigureContext(table.label, proxy.label, FIG3_ACCURACY)  # the label names the dataset
    fig = fig3_utilization_space(
        proxy.utilization, proxy.throughput, table.test_acc, mask, nums.spearman_util_acc, ctx
    )
    save_figure(fig, out, f"fig3-{dataset}-{device}")
    return {
        "pareto_set": nums.pareto_set.tolist(),
        "pareto_set_size": len(nums.pareto_set),
        "spearman_utilization_accuracy": nums.spearman_util_acc,
        "true_front_size": nums.true_front_size,
    }


def run_block(
    dataset: str,
    device: str,
    batch: int,
    seeds: list[int],
    methods: Sequence[TssMethod],
    out: Path,
    say: Callable[[str], None],
) -> Block:
    """Every method of ``methods`` on ``dataset`` under ``device``'s latency at ``batch``,
    one run per seed and budget of :data:`TIMES`, and Fig. 3 saved under ``out``, with
    every run's evaluated cells (:mod:`nasfilter.study.tss.cells`)."""
    rows: list[dict[str, Any]] = []
    cells: dict[str, np.ndarray] = {}
    proxy = measured_proxy(device, batch)  # for the rows' searcher specs
    for k, method in enumerate(methods):
        start = time.perf_counter()
        hv, evaluated = scored_runs(method, dataset, device, seeds, TIMES, batch)
        for seed, by_budget in zip(seeds, evaluated, strict=True):
            cells |= {cells_key(k, seed, t): c for t, c in zip(TIMES, by_budget, strict=True)}
        stats = [mean_and_se(hv[:, j]) for j in range(len(TIMES))]
        rows.append({
            "method": method.label, "searcher": method.searcher, "filter": method.filter,
            "searcher_spec": searcher_spec(method, proxy),
            "table": method.table, "condition": method.condition,
            "hardware": method.hardware, "two_fidelities": method.two_fidelities,
            "hv": {
                str(int(t)): {"mean": m, "se": s if math.isfinite(s) else None}  # one seed: None
                for t, (m, s) in zip(TIMES, stats, strict=True)
            },
            "per_seed": hv.tolist(), "seconds": round(time.perf_counter() - start, 2),
        })  # fmt: skip
        shown = [f"{m:.4f}" + (f"±{s:.4f}" if math.isfinite(s) else "") for m, s in stats]
        say(f"{dataset} {device} {method.label}: " + ", ".join(shown))
    name = cells_name(dataset, device, batch)
    save_cells(out / name, cells)
    return {"dataset": dataset, "device": device, "batch": batch, "seeds": seeds,
            "fig3": _fig3(dataset, device, batch, out), "methods": rows, "cells": name}  # fmt: skip


def _same(block: Block, dataset: str, device: str, batch: int, seeds: list[int],
          methods: Sequence[TssMethod], out: Path) -> bool:  # fmt: skip
    """Whether ``block`` ran these (and kept its runs' cells in ``out``)."""
    if not (out / block.get("cells", "-")).is_file():  # a block written before cells were kept
        return False
    return (block["dataset"], block["device"], block.get("batch", DEFAULT_BATCH),
            block["seeds"], [m["method"] for m in block["methods"]]) == (
        dataset, device, batch, seeds, [m.label for m in methods])  # fmt: skip


def _write_json(path: Path, value: Any) -> None:
    text = json.dumps(value, indent=1, allow_nan=False)
    with atomic_write(path, "w") as fh:  # whole or not at all
        fh.write(text + "\n")


def reproduce_tss(
    out: Path,
    datasets: Sequence[str] = DATASETS,
    devices: Sequence[str] = DEVICES,
    seeds: Sequence[int] = tuple(range(9)),
    batch: int = DEFAULT_BATCH,
    quiet: bool = False,
    resume: bool = False,
    methods: Sequence[TssMethod] | None = None,
    score_with: Mapping[str, Accuracies] | None = None,
) -> dict[str, Any]:
    """Run the tss study into the folder ``out`` (checked by the caller) and write its files
    (module docstring); the contents of ``summary.json``. ``resume``: keep the blocks of an
    earlier ``results.json`` in ``out`` run with the same seeds, batch and methods.
    ``score_with``: {dataset: accuracies} that score the runs in ``results.md``,
    ``summary.json`` and ``report.html`` instead of the tables' (one for each dataset;
    ``results.json`` keeps the tables' scores, :mod:`nasfilter.study.tss.rescore`)."""
    names, gpus = check_selection(datasets, devices, batch)
    if score_with is not None:
        score_with = {get_dataset(d).name: a for d, a in score_with.items()}
        check_covered(names, score_with)  # before anything runs, as is each file:
        for d in names:
            scored_reference(d, gpus[0], batch, score_with[d])
    methods = ALL_METHODS if methods is None else tuple(methods)  # None: every method
    seed_list = [int(s) for s in seeds]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    done: list[Block] = json.loads(path.read_text()) if resume and path.is_file() else []
    blocks: list[Block] = []
    say: Callable[[str], None] = (lambda _: None) if quiet else (lambda s: print(s, flush=True))
    for dataset in names:
        for device in gpus:
            old = [b for b in done if _same(b, dataset, device, batch, seed_list, methods, out)]
            block = old[0] if old else run_block(
                dataset, device, batch, seed_list, methods, out, say)  # fmt: skip
            blocks.append(block)
            if not old:
                # an older block of these cells keeps its scores, not the overwritten cells
                done = [
                    {k: v for k, v in b.items() if k != "cells"}
                    if b.get("cells") == block["cells"]
                    else b
                    for b in done
                ] + [block]
                _write_json(path, done)
    return write_outputs(out, blocks, batch, score_with)


def refuse_sss_only(space: str, given: dict[str, Any]) -> None:
    """ValueError for a space other than tss, or naming each argument of the sss study that
    was given (``given``: name -> value, None where not given)."""
    if space != "tss":
        raise ValueError(f"unknown space {space!r}; choose sss or tss")
    names = [name for name, value in given.items() if value is not None]
    if names:
        raise ValueError(
            f"reproduce on space tss does not take {', '.join(names)}: those are the sss "
            "study's; the tss study runs the real tss tables (tss-real, tss-real-hp200) under "
            "the measured oracle, in one process, one simulated worker, budgets of 20,000 "
            "and 55,000 s"
        )


def refuse_tss_only(resume: bool, score_with: Mapping[str, Accuracies] | None) -> None:
    """ValueError naming ``resume`` or ``score_with`` given to the sss study."""
    if resume:
        raise ValueError("resume is for space='tss'; the sss study reruns from scratch")
    if score_with is not None:
        raise ValueError("score_with is for space='tss'; score stored sss runs on other "
                         "accuracies with nasfilter compare --score-with")  # fmt: skip


def _names(value: str | Sequence[str] | None, default: Sequence[str]) -> list[str]:
    return list(default) if value is None else [value] if isinstance(value, str) else list(value)


def reproduce_tss_spec(
    out: Path,
    backend: str | None,
    device: str | Sequence[str] | None,
    dataset: str | Sequence[str] | None,
    seeds: Sequence[int],
    quiet: bool = False,
    resume: bool = False,
    score_with: Mapping[str, Accuracies] | None = None,
) -> dict[str, Any]:
    """:func:`reproduce_tss` as ``nasfilter reproduce --space tss`` spells it: ``backend``
    ``measured`` or ``measured[batch=B]`` (None: batch 256), ``device`` one GPU or several
    (None: :data:`~nasfilter.study.tss.DEVICES`), ``dataset`` one or several (None: all
    three); ``score_with`` as :func:`reproduce_tss`'s. ValueError naming an sss oracle, with
    the oracle the tss study takes."""
    backend = "measured" if backend is None else backend
    if not is_measured_spec(backend):
        raise ValueError(
            f"oracle {backend!r} is an sss oracle, but the space is tss; the tss study takes "
            "the measured oracle: measured (batch 256) or measured[batch=1|32|256]"
        )
    datasets, devices = _names(dataset, DATASETS), _names(device, DEVICES)
    return reproduce_tss(out, datasets, devices, seeds, parse_settings(backend), quiet, resume,
                         score_with=score_with)  # fmt: skip


def write_outputs(
    out: Path, blocks: list[Block], batch: int, score_with: Mapping[str, Accuracies] | None = None
) -> dict[str, Any]:
    """``results.md``, ``summary.json`` and ``report.html`` of ``blocks`` under ``out``,
    scored on ``score_with`` ({dataset: accuracies}; None: the tables' accuracy)."""
    datasets = list(dict.fromkeys(b["dataset"] for b in blocks))
    devices = list(dict.fromkeys(b["device"] for b in blocks))
    ceilings = tss_rows(datasets, devices, batch, score_with)
    head = ""
    if score_with is not None:
        blocks = rescore_blocks(blocks, out, score_with)
        head = (
            f"{rescored_words(datasets, score_with)}. Fig. 3 shows the table's real hp-200 "
            "validation accuracy, seed mean. results.json keeps the runs' scores on it.\n\n"
        )
    text = head + render(blocks) + CEILING_HEAD + ceiling_table(ceilings, "hp-12")
    with atomic_write(out / "results.md", "w") as fh:
        fh.write(text)
    summary = {
        "space": "tss",
        "labels": labels(datasets, batch, score_with),
        "tables": {d: {t: tss_table(d, t).label for t in (HP12, HP200)} for d in datasets},
        "oracles": {b["device"]: measured_proxy(b["device"], batch).label for b in blocks},
        "blocks": blocks,
        "ceilings": json_rows(ceilings),
    }
    if score_with is not None:
        summary["scored_with"] = {d: score_with[d].source for d in datasets}
    _write_json(out / "summary.json", summary)
    write_tss_report(out, summary, text)
    return summary


# The yardsticks' section of results.md and the report (nasfilter.study.ceilings).
CEILING_HEAD = (
    "\n### The clairvoyant ceiling: the best set of cells within each budget, knowing every "
    "hp-200 accuracy; the seconds any set needs for 0.99; the best set by hp 12\n\n"
)


def markdown_tables(text: str) -> list[ReportTable]:
    """The ``### title`` + Markdown table sections of :func:`render`'s text as report tables."""
    tables = []
    for section in text.split("\n### ")[1:]:
        title, _, body = section.partition("\n")
        rows = [
            tuple(cell.strip() for cell in line.strip().strip("|").split("|"))
            for line in body.splitlines()
            if line.startswith("|") and not line.startswith("|---")
        ]
        if rows:
            tables.append(ReportTable(title.strip(), rows[0], tuple(rows[1:])))
    return tables


def write_tss_report(out: Path, summary: dict[str, Any], text: str) -> Path:
    """``report.html``: what each number is, every table of ``text`` and Fig. 3 per block."""
    lab = summary["labels"]
    figures = []
    for b in summary["blocks"]:
        f = b["fig3"]
        stem = f"fig3-{b['dataset']}-{b['device']}"
        files = FigureFiles(stem, out / f"{stem}.png", out / f"{stem}.svg", stem)
        figures.append(ReportFigure(files, (
            f"{b['dataset']} (NATS record {lab['records'][b['dataset']]}), latency measured on "
            f"the {b['device']} at batch {b['batch']}: the throughput–utilization Pareto set "
            f"holds {f['pareto_set_size']} of 15625 cells; Spearman of measured utilization "
            f"with the real hp-200 validation accuracy (seed mean): "
            f"{f['spearman_utilization_accuracy']:.3f}.")))  # fmt: skip
    provenance = {
        "space": "tss (NATS topology space = NAS-Bench-201, 15625 cells)",
        **{f"table {d} ({t})": label for d, by in summary["tables"].items()
           for t, label in by.items()},
        **{f"oracle {gpu}": label for gpu, label in summary["oracles"].items()},
        "scored accuracy": lab["scored_accuracy"],
        "training time": lab["training_time"],
        "validation pass": lab["validation_pass"],
        "proxy query": lab["proxy_cost"],
        "latency": lab["latency"],
        "utilization": lab["utilization"],
    }  # fmt: skip
    return write_report(
        out / "report.html",
        "nasfilter: the study on the NATS topology space (tss) with real data",
        figures,
        tables=markdown_tables(text),
        provenance=provenance,
        notes=[f"HV ratio: {lab['hv_ratio']}. Each run has its own budget (20,000 or 55,000 "
               "worker-seconds, one simulated worker) and is scored at its end."],
        footer="Generated by `nasfilter reproduce --space tss`.",
    )  # fmt: skip
