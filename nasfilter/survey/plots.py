"""The survey's figures: the counterparts of the study's Fig. 1, 2a and 2b.

Each takes the rows of ``survey.csv`` (dicts, :data:`nasfilter.survey.survey.COLUMNS`) and a
:class:`~nasfilter.render.drawing.FigureContext` naming the device and where throughputs come from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from nasfilter.render.drawing import FigureContext, fixed_layout, new_figure, rc, set_title

TOP1_LABEL = "ImageNet top-1 (%)"
THR_LABEL = "throughput (images/s)"
UTIL_LABEL = "utilization (% of peak FLOP/s)"


def _col(rows: Sequence[dict[str, Any]], key: str) -> np.ndarray:
    return np.array([float(r[key]) for r in rows], dtype=float)


def _throughput(rows: Sequence[dict[str, Any]]) -> np.ndarray:
    return np.array(
        [
            r["measured_throughput"]
            if r["utilization_source"] == "measured"
            else r["predicted_throughput"]
            for r in rows
        ],
        dtype=float,
    )


def _cnn(rows: Sequence[dict[str, Any]], fronts: bool = True) -> list[dict[str, Any]]:
    """The CNN rows; for the fronts, only the measured ones when there are any (the survey
    never mixes measured and predicted throughputs on one front)."""
    cnn = [r for r in rows if r["is_cnn"]]
    if not cnn:
        raise ValueError("no CNN in the survey rows: nothing to plot")
    measured = [r for r in cnn if r["utilization_source"] == "measured"]
    return measured if fronts and measured else cnn


def _decade(value: float, _pos: object = None) -> str:
    """A log axis' tick label as plain digits (``1,000``): matplotlib's default
    ``$10^{3}$`` goes through its mathtext parser, the costliest part of drawing a figure."""
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def _log(ax: Any, which: str) -> None:
    """``ax``'s ``which`` ("x" or "y") axis log-scaled, decades labelled by :func:`_decade`;
    no minor ticks (a log axis' 8 a decade cost more to lay out and draw than the data), the
    minor grid lines drawn instead as one collection by :func:`_minor_grid` at every save."""
    from matplotlib.ticker import FuncFormatter, NullLocator

    if which == "x":
        ax.set_xscale("log")
    else:
        ax.set_yscale("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_formatter(FuncFormatter(_decade))
    axis.set_minor_locator(NullLocator())
    _minor_grid(ax, which)


def _minor_grid(ax: Any, which: str) -> None:
    """Faint lines at 2-9 x 10^k across ``ax`` within its log ``which`` axis' limits: the
    minor grid, as one collection (call it once the data are plotted: it fixes the limits)."""
    from matplotlib.collections import LineCollection

    low, high = sorted(ax.get_xlim() if which == "x" else ax.get_ylim())
    k = np.arange(np.floor(np.log10(low)), np.ceil(np.log10(high)) + 1)
    at = (np.arange(2, 10)[None, :] * 10.0 ** k[:, None]).ravel()
    at = at[(at >= low) & (at <= high)]
    ends = [0.0, 1.0]
    segments = [np.column_stack([[v, v], ends] if which == "x" else [ends, [v, v]]) for v in at]
    span = ax.get_xaxis_transform() if which == "x" else ax.get_yaxis_transform()
    grid = LineCollection(segments, transform=span, colors="#b0b0b0", linewidths=0.8, alpha=0.25)
    grid.set_zorder(0.5)  # under the data, as the axes' own grid
    ax.add_collection(grid, autolim=False)


def _log_x(ax: Any) -> None:
    _log(ax, "x")


def _label_all_three(ax: Any, x: np.ndarray, y: np.ndarray, rows: Sequence[dict[str, Any]]) -> None:
    for k, r in enumerate(rows):
        if r["on_all_fronts"] and math.isfinite(x[k]) and math.isfinite(y[k]):
            ax.annotate(
                r["model"],
                (x[k], y[k]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=7,
                color="#d62728",
            )


def fig1_fronts(rows: Sequence[dict[str, Any]], ctx: FigureContext) -> Any:
    """Fig. 1: the three 2-D Pareto fronts of the CNNs (throughput, utilization, top-1)."""
    cnn = _cnn(rows)
    thr, util, acc = _throughput(cnn), 100 * _col(cnn, "utilization"), _col(cnn, "top1")
    panels = (
        (thr, acc, "pareto_throughput_accuracy", THR_LABEL, TOP1_LABEL, True),
        (util, acc, "pareto_utilization_accuracy", UTIL_LABEL, TOP1_LABEL, False),
        (thr, util, "pareto_throughput_utilization", THR_LABEL, UTIL_LABEL, True),
    )
    all_three = np.array([r["on_all_fronts"] for r in cnn], dtype=bool)
    with rc():
        fig = new_figure(13.5, 4.6, constrained=False)
        axes = fig.subplots(1, 3)
        for ax, (x, y, key, xl, yl, logx) in zip(axes, panels, strict=True):
            ok = np.isfinite(x) & np.isfinite(y)
            front = np.array([r[key] for r in cnn], dtype=bool) & ok
            ax.scatter(x[ok], y[ok], s=8, color="#9aa7b1", linewidths=0, label=f"CNNs ({ok.sum()})")
            order = np.argsort(x[front])
            ax.plot(
                x[front][order],
                y[front][order],
                "-o",
                color="#1f77b4",
                ms=4,
                lw=1,
                label=f"Pareto front ({front.sum()})",
            )
            sel = all_three & ok
            ax.scatter(
                x[sel],
                y[sel],
                s=60,
                facecolors="none",
                edgecolors="#d62728",
                linewidths=1.4,
                label=f"on all three fronts ({sel.sum()})",
            )
            _label_all_three(ax, x, y, cnn)
            if logx:
                _log_x(ax)
            ax.set_xlabel(xl)
            ax.set_ylabel(yl)
            ax.grid(True, which="both", alpha=0.25)
            ax.legend(loc="lower left", fontsize=7)
        set_title(fig, "Fig. 1: accuracy, throughput and utilization of CNNs", ctx)
        fixed_layout(fig)
    return fig


def fig2a_intensity(rows: Sequence[dict[str, Any]], cmr: float, ctx: FigureContext) -> Any:
    """Fig. 2a: throughput vs top-1; marker: intensity above or below the device's CMR."""
    cnn = _cnn(rows)
    thr, acc = _throughput(cnn), _col(cnn, "top1")
    below = np.array([r["below_cmr"] for r in cnn], dtype=bool)
    front = np.array([r["pareto_throughput_accuracy"] for r in cnn], dtype=bool)
    ok = np.isfinite(thr) & np.isfinite(acc)
    with rc():
        fig = new_figure(7.0, 5.0, constrained=False)
        ax = fig.add_subplot()
        ax.scatter(
            thr[ok & ~below],
            acc[ok & ~below],
            s=14,
            marker="o",
            color="#2ca02c",
            label=f"intensity ≥ CMR {cmr:.0f} ({(ok & ~below).sum()})",
        )
        ax.scatter(
            thr[ok & below],
            acc[ok & below],
            s=14,
            marker="x",
            color="#ff7f0e",
            label=f"intensity < CMR {cmr:.0f} ({(ok & below).sum()})",
        )
        sel = front & ok
        order = np.argsort(thr[sel])
        ax.plot(thr[sel][order], acc[sel][order], "-", color="#1f77b4", lw=1, label="Pareto front")
        _log_x(ax)
        ax.set_xlabel(THR_LABEL)
        ax.set_ylabel(TOP1_LABEL)
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(loc="lower left", fontsize=8)
        set_title(fig, "Fig. 2a: the throughput–accuracy front and arithmetic intensity", ctx)
        fixed_layout(fig)
    return fig


def fig2b_folding(
    rows: Sequence[dict[str, Any]], fold: int, peak_flops: float, ctx: FigureContext
) -> Any:
    """Fig. 2b: predicted utilization and throughput of each fold candidate, before -> after."""
    from matplotlib.collections import LineCollection

    cnn = _cnn(rows, fronts=False)
    done = [r for r in cnn if r["below_cmr"] and math.isfinite(r["folded_utilization"])]
    with rc():
        fig = new_figure(7.0, 5.0, constrained=False)
        ax = fig.add_subplot()
        if done:
            t0 = _col(done, "predicted_throughput")
            u0 = 100 * t0 * _col(done, "flops") / peak_flops
            u1 = 100 * _col(done, "folded_utilization")
            t1 = _col(done, "folded_predicted_throughput")
            # One collection of segments, original -> folded (the endpoints' colours say which
            # end is which): an arrow per candidate cost more to draw than the rest together.
            segments = np.stack([np.column_stack([u0, t0]), np.column_stack([u1, t1])], axis=1)
            ax.add_collection(
                LineCollection(list(segments), colors="#1f77b4", linewidths=0.6, alpha=0.6)
            )
            ax.scatter(u0, t0, s=8, color="#ff7f0e", label=f"original ({len(done)})", zorder=3)
            ax.scatter(
                u1,
                t1,
                s=8,
                color="#1f77b4",
                label=f"folded, f = {fold} (line: from the original)",
                zorder=3,
            )
            _log(ax, "y")
            ax.set_xlim(0, max(float(np.nanmax(u1)), float(np.nanmax(u0))) * 1.08)
            ax.legend(loc="lower right", fontsize=8)
        else:
            ax.text(0.5, 0.5, "no CNN below the CMR was folded", ha="center", va="center")
        ax.set_xlabel("predicted " + UTIL_LABEL)
        ax.set_ylabel("predicted " + THR_LABEL)
        ax.grid(True, which="both", alpha=0.25)
        set_title(fig, f"Fig. 2b: FoldedCNNs (f = {fold}) for the CNNs below the CMR", ctx)
        fixed_layout(fig, left=0.95)  # room for 100,000 on the log y axis
    return fig
