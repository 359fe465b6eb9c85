"""The report of any results database (``nasfilter report``): figures and ``report.html``.

Whatever wrote the runs (``nasfilter run``, ``run_experiment``, ``demo --db``, plugin
searchers and filters included), the report reads them back through
:func:`nasfilter.runs.fronts.load_fronts`, groups them by what makes runs comparable (the
table, dataset, oracle, budget and ticks: one *comparison*), and draws per comparison:

- the hypervolume ratio over simulated time per method, mean ± standard error over seeds
  (:func:`nasfilter.study.plots.comparison_curves`);
- per method, each seed's front against the true front
  (:func:`nasfilter.study.plots.fig6_seed_fronts`);
- the metrics table, mean ± standard error over seeds (:mod:`nasfilter.study.metrics_table`).

Every figure's title names the table, the oracle and the accuracy (split, epochs, seed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.extras import require
from nasfilter.render.drawing import FigureContext, save_figure
from nasfilter.render.html_page import ReportFigure, ReportTable, write_report
from nasfilter.runs.fronts import RunFront, front_from_events, load_fronts
from nasfilter.runs.inputs import RunInputs, inputs
from nasfilter.runs.metrics import accuracy_words
from nasfilter.runs.records import RunSpec, ScoredRun
from nasfilter.runs.rescore import Rescoring
from nasfilter.runs.results import load_results
from nasfilter.runs.storage.base import Storage
from nasfilter.study import plots
from nasfilter.study.methods import method_label
from nasfilter.study.metrics_table import cells, headers, summarize

#: A run spec's scoring inputs: :func:`~nasfilter.runs.inputs.inputs`, or a rescoring's.
Resolve = Callable[[RunSpec], RunInputs]


@dataclass
class Comparison:
    """Runs on the same inputs and budget, so that their curves share one time axis."""

    spec: RunSpec  # the first run's spec: its table, oracle, dataset and budget
    runs: list[tuple[ScoredRun, RunFront]]

    @property
    def methods(self) -> list[str]:
        return list(dict.fromkeys(run.spec.label for run, _ in self.runs))


def _key(spec: RunSpec) -> tuple[Any, ...]:
    return (
        spec.table, spec.dataset, spec.oracle, spec.device, spec.oracle_cache,
        spec.budget, spec.n_ticks,
    )  # fmt: skip


def comparisons(pairs: Sequence[tuple[ScoredRun, RunFront]]) -> list[Comparison]:
    """``pairs`` (from :func:`~nasfilter.runs.fronts.load_fronts`) grouped into comparisons,
    in the order their first runs were stored."""
    groups: dict[tuple[Any, ...], Comparison] = {}
    for run, front in pairs:
        key = _key(run.spec)
        groups.setdefault(key, Comparison(run.spec, [])).runs.append((run, front))
    return list(groups.values())


def _stem(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_.")[:60] or "method"


def _figures(out: Path, k: int, comp: Comparison, resolve: Resolve) -> list[ReportFigure]:
    """The comparison's figures, saved under ``out`` as ``c<k>_*.png`` and ``.svg``."""
    table, proxy, reference = resolve(comp.spec)
    ctx = FigureContext(table.label, proxy.label, f"{table.score_label} (%)")
    first = comp.runs[0][0]
    times = np.asarray(first.curves["clock"], dtype=np.float64)
    curves = {
        label: np.stack([r.curves["hv_ratio"] for r, _ in comp.runs if r.spec.label == label])
        for label in comp.methods
    }
    fig = plots.comparison_curves(times, curves, ctx)
    out_figures = [ReportFigure(save_figure(fig, out, f"c{k}_hv"), _caption(comp))]
    for m, label in enumerate(comp.methods):
        mine = [(r, f) for r, f in comp.runs if r.spec.label == label]
        fig = plots.fig6_seed_fronts(
            table.test_acc, proxy.throughput, reference.true_front,
            {r.seed: f.indices for r, f in mine}, ctx,
            hv_ratios={r.seed: r.metrics["hv_ratio"] for r, _ in mine},
            method_label=label, figure_name=f"Fronts of {label}",
        )  # fmt: skip
        stem = f"c{k}_front_{m}_{_stem(label)}"
        caption = f"{label}: each seed's front (green) against the true front (black)."
        out_figures.append(ReportFigure(save_figure(fig, out, stem), caption))
    return out_figures


def _caption(comp: Comparison) -> str:
    spec = comp.spec
    return (
        f"{spec.dataset}, {spec.budget.seconds:g} simulated {spec.budget.clock}-seconds per run; "
        f"{len(comp.runs)} runs of {len(comp.methods)} method(s)."
    )


def _table(k: int, comp: Comparison, resolve: Resolve) -> ReportTable:
    """The comparison's metrics table, mean ± standard error over seeds."""
    table, proxy, _ = resolve(comp.spec)
    summary = summarize([run.row() for run, _ in comp.runs])
    rows = tuple(
        (
            method_label(e["searcher"], e["filter"], e["workers"]),
            str(e["n_seeds"]),
            *cells(e, empty=e.get("n_empty") == e["n_seeds"]),
        )
        for e in summary
    )
    return ReportTable(
        f"Comparison {k}: metrics (mean ± standard error over seeds)",
        ("method", "seeds", *headers(accuracy_words(table.provenance.scored))),
        rows,
        caption=f"table: {table.label}; oracle: {proxy.label}; {_caption(comp)}",
    )


def write_runs_report(
    storage: Storage,
    out: str | Path,
    trust_plugins: bool = False,
    title: str = "",
    rescoring: Rescoring | None = None,
) -> Path:
    """Write the figures (PNG and SVG) and ``report.html`` of every run in ``storage``
    under the folder ``out`` (created); the report's path. With ``rescoring``, every run,
    front and true front is scored on its accuracies (:mod:`nasfilter.runs.rescore`).

    ValueError for a storage without runs; ExtraMissing without matplotlib (the plot
    extra); ``trust_plugins`` as in :func:`~nasfilter.runs.results.load_results`."""
    require("matplotlib", "the report's figures")
    if rescoring is None:
        resolve: Resolve = inputs
        pairs = load_fronts(storage, trust_plugins=trust_plugins)
    else:
        resolve = rescoring.inputs
        runs = load_results(storage, with_events=True, trust_plugins=trust_plugins)
        scored = [rescoring.score(run) for run in runs]
        pairs = [(r, front_from_events(r.events, *resolve(r.spec))) for r in scored]
    if not pairs:
        raise ValueError(f"{storage.describe()} holds no runs: nothing to report")
    folder = Path(out)
    figures: list[ReportFigure] = []
    tables: list[ReportTable] = []
    for k, comp in enumerate(comparisons(pairs), start=1):
        figures += _figures(folder, k, comp, resolve)
        tables.append(_table(k, comp, resolve))
    return write_report(
        folder / "report.html",
        title or f"nasfilter: the runs of {storage.describe()}",
        figures,
        tables=tables,
        provenance={"results": storage.describe(), "runs": str(len(pairs))},
        notes=[
            "Each comparison holds the runs on one table, oracle, dataset and budget. "
            "Every metric is computed from the runs' stored events.",
            *(f"Scored on the {a.words} for {d} (--score-with), in place of the table's "
              "scored accuracy: the true front, every front and metric are computed on it."
              for d, a in (rescoring.accuracies if rescoring else {}).items()),
        ],
        footer="Generated by `nasfilter report`.",
    )


__all__ = ["Comparison", "comparisons", "write_runs_report"]
