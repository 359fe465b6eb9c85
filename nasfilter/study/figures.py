"""The figures of a reproduction, drawn from its typed summary (:class:`StudySummary`) and
the table and proxy it summarises (the whole space's accuracy, throughput, utilization).

Each figure is one small function of the summary; :func:`draw_figures` saves them all as
PNG and SVG under the output folder (:data:`FIGURE_STEMS`, in the report's order).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.table import BenchmarkTable
from nasfilter.render.drawing import FigureContext, FigureFiles, save_figure
from nasfilter.study import plots
from nasfilter.study.report import table_cells
from nasfilter.study.summary import StudySummary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FIGURE_STEMS = ("fig3", "fig5", "fig6", "comparison", "hv_reach", "workers", "metrics")


def figure_context(summary: StudySummary) -> FigureContext:
    """What every figure's title names: the table, the oracle and the accuracy."""
    return FigureContext(summary.table_label, summary.oracle_label, f"{summary.accuracy_label} (%)")


def draw_fig3(s: StudySummary, table: BenchmarkTable, proxy: ProxyTable) -> Figure:
    on_front = np.zeros(table.space.size, dtype=bool)
    on_front[s.fig3.pareto_set] = True
    return plots.fig3_utilization_space(
        proxy.utilization, proxy.throughput, table.test_acc, on_front,
        s.fig3.spearman_utilization_accuracy, figure_context(s),
    )  # fmt: skip


def draw_fig5(s: StudySummary, table: BenchmarkTable, proxy: ProxyTable) -> Figure:
    f = s.fig5
    return plots.fig5_filtering_front(
        table.test_acc, proxy.throughput, s.true_front.indices, f.front, figure_context(s),
        evaluated=f.evaluated, method_label=f"{f.method} (seed {f.seed})",
        hv_ratio=None if np.isnan(f.hv_ratio) else f.hv_ratio,
    )  # fmt: skip


def draw_fig6(s: StudySummary, table: BenchmarkTable, proxy: ProxyTable) -> Figure:
    return plots.fig6_seed_fronts(
        table.test_acc, proxy.throughput, s.true_front.indices, s.fig6.fronts,
        figure_context(s), s.fig6.hv_ratio, method_label=s.fig6.method,
    )  # fmt: skip


def draw_comparison(s: StudySummary, table: BenchmarkTable, proxy: ProxyTable) -> Figure:
    curves = {
        label: np.stack([r.hv_ratio_curve for r in s.runs_of(label)])
        for label in s.comparison.curves
    }
    return plots.comparison_curves(s.comparison.times, curves, figure_context(s))


def draw_reach(s: StudySummary, table: BenchmarkTable, proxy: ProxyTable) -> Figure:
    c = s.comparison
    bands = {label: (b.mean, b.se) for label, b in c.curves.items() if b.has_runs}
    return plots.reach_curves(c.times, bands, figure_context(s), level=c.reach_level)


def draw_workers(s: StudySummary, table: BenchmarkTable, proxy: ProxyTable) -> Figure:
    wc = s.workers_comparison
    bands = {
        label: {k: (e.band.mean, e.band.se) for k, e in per_k.items() if e.band.has_runs}
        for label, per_k in wc.methods.items()
    }
    return plots.workers_curves(wc.times, bands, figure_context(s))


def draw_metrics(s: StudySummary, table: BenchmarkTable, proxy: ProxyTable) -> Figure:
    header, rows = table_cells(s)
    return plots.metrics_table_figure(header, rows, figure_context(s))


DRAW: dict[str, Callable[[StudySummary, BenchmarkTable, ProxyTable], Figure]] = {
    "fig3": draw_fig3,
    "fig5": draw_fig5,
    "fig6": draw_fig6,
    "comparison": draw_comparison,
    "hv_reach": draw_reach,
    "workers": draw_workers,
    "metrics": draw_metrics,
}


def draw_figures(
    out: Path, summary: StudySummary, table: BenchmarkTable, proxy: ProxyTable, quiet: bool
) -> list[FigureFiles]:
    """Draw and save every figure of :data:`FIGURE_STEMS` under ``out``."""
    saved = []
    for stem in tqdm(FIGURE_STEMS, desc="figures", unit="fig", disable=quiet, leave=False):
        saved.append(save_figure(DRAW[stem](summary, table, proxy), out, stem))
    return saved
