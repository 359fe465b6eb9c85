"""The study's NAS figures (Figs. 3, 5 and 6 and our comparison), drawn with matplotlib.

Every function here is pure: it takes numpy arrays and a :class:`FigureContext` and returns
a ``matplotlib.figure.Figure`` whose title names the table's provenance and the oracle.
The shared helpers (figure, title, colours, checks, :func:`save_figure`) live in
:mod:`nasfilter.render.drawing`, which the survey's figures use too; importing this module costs
nothing (matplotlib is imported inside the functions).

Units: utilization is a fraction of peak FLOP/s (plotted in percent), throughput is images
per second, accuracy is percent, simulated time is seconds.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nasfilter.render.drawing import (
    ACCURACY_LABEL,
    THROUGHPUT_LABEL,
    FigureContext,
    FigureFiles,
    PlotDependencyError,
    background,
    column,
    draw_front,
    figure_title,
    fill_band,
    indices,
    method_colour,
    method_linestyle,
    new_figure,
    rc,
    save_figure,
    set_title,
    zoom_to_front,
)
from nasfilter.runs.results import first_reaching, mean_se, reach_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "ACCURACY_LABEL",
    "THROUGHPUT_LABEL",
    "FigureContext",
    "FigureFiles",
    "PlotDependencyError",
    "comparison_curves",
    "fig3_utilization_space",
    "fig5_filtering_front",
    "fig6_seed_fronts",
    "figure_title",
    "method_colour",
    "metrics_table_figure",
    "reach_curves",
    "save_figure",
    "workers_curves",
]

# The survey's figures (nasfilter.survey.plots and .profile_plot) still import these private
# names; the public ones live in nasfilter.render.drawing. Drop these once the survey imports those.
_new_figure, _rc, _set_title = new_figure, rc, set_title


# ----------------------------------------------------------------- figures
def fig3_utilization_space(
    utilization: Any,
    throughput: Any,
    accuracy: Any,
    on_front: Any,
    spearman: float,
    ctx: FigureContext,
) -> Figure:
    """Fig. 3: throughput against utilization over the whole space, coloured by accuracy.

    Args:
        utilization: fraction of peak FLOP/s per architecture, shape (N,); NaN rows skipped.
        throughput: images/s, shape (N,).
        accuracy: percent, shape (N,), the colour.
        on_front: boolean mask (N,) of the throughput–utilization Pareto set, highlighted.
        spearman: Spearman correlation of utilization with accuracy, printed in the figure.
    """
    util = column("utilization", utilization)
    n = util.size
    thr = column("throughput", throughput, n)
    acc = column("accuracy", accuracy, n)
    front = np.asarray(on_front)
    if front.shape != (n,) or front.dtype != np.bool_:
        raise ValueError(f"on_front must be a boolean mask of shape ({n},), got {front!r}")
    ok = np.isfinite(util) & np.isfinite(thr) & np.isfinite(acc)
    sel = front & ok
    shown = f"{int(sel.sum())} of {int(ok.sum())}"
    with rc():
        fig = new_figure(6.4, 4.8)
        ax = fig.add_subplot()
        order = np.argsort(acc[ok], kind="stable")  # best accuracy drawn on top
        points = ax.scatter(
            100 * util[ok][order], thr[ok][order], c=acc[ok][order], s=3, cmap="viridis",
            linewidths=0, rasterized=True, zorder=1,
        )  # fmt: skip
        ax.scatter(
            100 * util[sel], thr[sel], s=22, facecolors="none", edgecolors="#d62728",
            linewidths=1.0, label=f"throughput–utilization Pareto set ({shown})", zorder=3,
        )  # fmt: skip
        ax.set_yscale("log")
        ax.set_xlabel("utilization (% of peak FLOP/s)")
        ax.set_ylabel(THROUGHPUT_LABEL)
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(loc="lower right")
        _text_box(ax, f"Pareto set: {shown}\nSpearman ρ(utilization, accuracy) = {spearman:.3f}")
        fig.colorbar(points, ax=ax, label=ctx.accuracy_label)
        set_title(fig, "Fig. 3: throughput vs utilization over the whole space", ctx)
    return fig


def _text_box(ax: Axes, text: str) -> None:
    """``text`` in a white rounded box at the top left of ``ax``."""
    box = {"boxstyle": "round", "facecolor": "white", "alpha": 0.85}
    ax.text(0.02, 0.98, text, transform=ax.transAxes, va="top", ha="left", bbox=box)


def _marked_front(
    ax: Axes, thr: np.ndarray, acc: np.ndarray, idx: np.ndarray, colour: str, **marks: Any
) -> None:
    """A front's staircase and its points (``marks``: the scatter's size, marker, label,
    zorder); the staircase is as thick as ``lw`` (default 1.0)."""
    lw, zorder = marks.pop("lw", 1.0), marks.get("zorder", 3)
    draw_front(ax, thr[idx], acc[idx], color=colour, lw=lw, zorder=zorder)
    ax.scatter(thr[idx], acc[idx], c=colour, **marks)


def fig5_filtering_front(
    accuracy: Any,
    throughput: Any,
    true_front: Any,
    found_front: Any,
    ctx: FigureContext,
    evaluated: Any = None,
    method_label: str = "approximate filtering",
    hv_ratio: float | None = None,
) -> Figure:
    """Fig. 5: the front a method returned against the true accuracy–throughput front.

    Args:
        accuracy: percent per architecture, shape (N,).
        throughput: images/s, shape (N,).
        true_front: indices of the true front, shape (F,).
        found_front: indices of the method's front, shape (K,).
        evaluated: indices of every architecture the method evaluated, or None.
        hv_ratio: the method's hypervolume ratio, shown in the legend when given.
    """
    acc = column("accuracy", accuracy)
    n = acc.size
    thr = column("throughput", throughput, n)
    true_idx = indices("true_front", true_front, n)
    found_idx = indices("found_front", found_front, n)
    ev = None if evaluated is None else indices("evaluated", evaluated, n)
    extra = "" if hv_ratio is None else f", HV ratio {hv_ratio:.3f}"
    with rc():
        fig = new_figure(6.4, 4.6)
        ax = fig.add_subplot()
        background(ax, thr, acc)
        if ev is not None:
            ax.scatter(
                thr[ev], acc[ev], s=8, facecolors="none", edgecolors="#7570b3",
                linewidths=0.6, label=f"evaluated by {method_label} ({ev.size})", zorder=2,
            )  # fmt: skip
        label = f"true front ({true_idx.size})"
        _marked_front(ax, thr, acc, true_idx, "black", s=14, marker="s", label=label, zorder=3)
        label = f"{method_label} front ({found_idx.size}{extra})"
        _marked_front(ax, thr, acc, found_idx, "#d95f02", s=18, marker="o", label=label, zorder=4)
        ax.set_xscale("log")
        ax.set_xlabel(THROUGHPUT_LABEL)
        ax.set_ylabel(ctx.accuracy_label)
        zoom_to_front(ax, acc, true_idx)
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(loc="lower left")
        set_title(fig, f"Fig. 5: {method_label} front vs the true front", ctx)
    return fig


def _seed_panel(
    ax: Axes, thr: np.ndarray, acc: np.ndarray, true_idx: np.ndarray, idx: np.ndarray, title: str
) -> None:
    """One panel of Fig. 6: every architecture, the true front (black), the run's (green)."""
    from matplotlib.ticker import NullFormatter

    background(ax, thr, acc)
    _marked_front(ax, thr, acc, true_idx, "black", lw=0.9, s=6, marker="s", zorder=3)
    _marked_front(ax, thr, acc, idx, "#1b9e77", lw=0.9, s=12, zorder=4)
    ax.set_title(title)
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="both", alpha=0.25)
    zoom_to_front(ax, acc, true_idx)


def fit_label(label: str, inches: float, points: float = 9.0) -> str:
    """``label`` wrapped into lines no longer than 0.8 of ``inches`` at ``points`` type (a
    character is at most about 0.6 em wide), so that a figure-wide axis label is never cut
    off by a short figure."""
    width = max(12, int(0.8 * inches * 72 / (0.6 * points)))
    return "\n".join(textwrap.wrap(label, width)) or label


def fig6_seed_fronts(
    accuracy: Any,
    throughput: Any,
    true_front: Any,
    fronts: Mapping[int, Any],
    ctx: FigureContext,
    hv_ratios: Mapping[int, float] | None = None,
    method_label: str = "REINFORCE (MnasNet reward)",
    columns: int = 3,
    figure_name: str = "Fig. 6",
) -> Figure:
    """Fig. 6: one panel per seed, the method's front against the true front
    (``figure_name`` starts the title: another report names its own figures).

    Args:
        accuracy: percent per architecture, shape (N,).
        throughput: images/s, shape (N,).
        true_front: indices of the true front, shape (F,).
        fronts: seed -> indices of that run's front, shape (K_seed,).
        hv_ratios: seed -> hypervolume ratio, shown in each panel's title when given.
        columns: panels per row.
    """
    acc = column("accuracy", accuracy)
    n = acc.size
    thr = column("throughput", throughput, n)
    true_idx = indices("true_front", true_front, n)
    if not fronts:
        raise ValueError("fronts must hold at least one seed's front")
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be a positive integer, got {columns!r}")
    seeds = sorted(fronts)
    ncols = min(columns, len(seeds))
    nrows = -(-len(seeds) // ncols)
    with rc():
        height = 2.5 * nrows + 0.9
        fig = new_figure(3.0 * ncols + 0.6, height)
        axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
        for k, seed in enumerate(seeds):
            idx = indices(f"fronts[{seed}]", fronts[seed], n)
            title = f"seed {seed}: {idx.size} on front"
            if hv_ratios is not None and seed in hv_ratios:
                title += f", HV ratio {hv_ratios[seed]:.3f}"
            _seed_panel(axes[k // ncols][k % ncols], thr, acc, true_idx, idx, title)
        for k in range(len(seeds), nrows * ncols):
            axes[k // ncols][k % ncols].set_visible(False)
        fig.supxlabel(THROUGHPUT_LABEL)
        fig.supylabel(fit_label(ctx.accuracy_label, height))
        what = f"{figure_name}: {method_label} fronts per seed (green) vs the true front (black)"
        set_title(fig, what, ctx)
    return fig


def comparison_curves(
    times: Any,
    curves: Mapping[str, Any],
    ctx: FigureContext,
    ylabel: str = "hypervolume ratio",
    what: str = "hypervolume ratio over simulated time",
) -> Figure:
    """Our comparison: a metric over simulated time, mean ± standard error band per method.

    Args:
        times: simulated seconds of the ticks, shape (T,).
        curves: method label -> metric values of shape (S, T), one row per seed.
    """
    t = column("times", times)
    if not curves:
        raise ValueError("curves must hold at least one method")
    with rc():
        fig = new_figure(6.8, 4.4 + 0.18 * ((len(curves) + 1) // 2))
        ax = fig.add_subplot()
        for k, (label, values) in enumerate(curves.items()):
            arr = np.asarray(values, dtype=np.float64)
            if arr.ndim != 2 or arr.shape[1] != t.size:
                raise ValueError(
                    f"curves[{label!r}] must have shape (seeds, {t.size}), got {arr.shape}"
                )
            if arr.shape[0] == 0:
                raise ValueError(f"curves[{label!r}] holds no run")
            band = mean_se(arr)
            colour = method_colour(k)
            ax.plot(
                t,
                band.mean,
                color=colour,
                lw=1.4,
                ls=method_linestyle(k),
                label=f"{label} (n={arr.shape[0]})",
            )
            fill_band(ax, t, band.mean, band.se, colour)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.25)
        fig.legend(loc="outside lower center", ncols=2)
        set_title(fig, f"Our comparison: {what} (mean ± standard error over seeds)", ctx)
    return fig


def reach_curves(
    times: Any,
    bands: Mapping[str, tuple[Any, Any]],
    ctx: FigureContext,
    level: float = 0.99,
) -> Figure:
    """Hypervolume ratio over simulated time, one line and band per method, marking where
    each method's mean first reaches ``level`` (its legend says when, or that it never does).

    Args:
        times: simulated seconds of the ticks, shape (T,).
        bands: method label -> (mean (T,), standard error (T,)) over seeds, as
            :func:`nasfilter.runs.results.curve_band` computes them.
    """

    t = column("times", times)
    if not bands:
        raise ValueError("bands must hold at least one method")
    with rc():
        fig = new_figure(6.8, 4.6 + 0.18 * ((len(bands) + 1) // 2))
        ax = fig.add_subplot()
        ax.axhline(level, color="0.4", lw=0.8, ls=":", zorder=1)
        for k, (label, (mean, se)) in enumerate(bands.items()):
            m = np.asarray(mean, dtype=np.float64)
            if m.shape != t.shape:
                raise ValueError(f"bands[{label!r}] mean must have shape {t.shape}, got {m.shape}")
            colour = method_colour(k)
            reached = first_reaching(t, m, level)
            ax.plot(
                t,
                m,
                color=colour,
                lw=1.4,
                ls=method_linestyle(k),
                label=f"{label}: {reach_text(reached, level)}",
            )
            fill_band(ax, t, m, se, colour)
            if reached is not None:
                ax.plot([reached], [level], "o", color=colour, ms=6, mec="black", mew=0.6)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("hypervolume ratio")
        ax.grid(True, alpha=0.25)
        fig.legend(loc="outside lower center", ncols=2, fontsize="small")
        set_title(
            fig,
            f"Hypervolume ratio over simulated time; dots: first reaching {level:g} "
            "(mean ± standard error over seeds)",
            ctx,
        )
    return fig


def workers_curves(
    times: Any,
    bands: Mapping[str, Mapping[int, tuple[Any, Any]]],
    ctx: FigureContext,
    ylabel: str = "hypervolume ratio",
    columns: int = 4,
) -> Figure:
    """One panel per method: a metric over simulated wall-clock time for each number K of
    simulated workers, as mean ± standard error bands (from :func:`nasfilter.runs.results.
    curve_band`; no band where the standard error is undefined, e.g. one run).

    Args:
        times: simulated wall-clock seconds of the ticks, shape (T,).
        bands: method label -> K -> (mean (T,), standard error (T,)).
    """
    t = column("times", times)
    if not bands:
        raise ValueError("bands must hold at least one method")
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be a positive integer, got {columns!r}")
    ks = sorted({k for per_k in bands.values() for k in per_k})
    ncols = min(columns, len(bands))
    nrows = -(-len(bands) // ncols)
    with rc():
        height = 2.4 * nrows + 1.2
        fig = new_figure(3.1 * ncols + 0.6, height)
        axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
        for n, (label, per_k) in enumerate(bands.items()):
            ax = axes[n // ncols][n % ncols]
            for k, (mean, se) in sorted(per_k.items()):
                m = column(f"bands[{label!r}][{k}] mean", mean, t.size)
                colour = method_colour(ks.index(k))
                ax.plot(t, m, color=colour, lw=1.2, label=f"K = {k}")
                fill_band(ax, t, m, se, colour)
            ax.set_title("\n".join(textwrap.wrap(label, 34)))
            ax.grid(True, alpha=0.25)
        for n in range(len(bands), nrows * ncols):
            axes[n // ncols][n % ncols].set_visible(False)
        axes[0][0].legend(loc="lower right")
        fig.supxlabel("simulated wall-clock time (s)")
        fig.supylabel(fit_label(ylabel, height))
        set_title(
            fig,
            f"Our comparison with K simulated parallel workers: {ylabel} over wall-clock time "
            "(the same worker-seconds budget for every K; mean ± standard error over seeds)",
            ctx,
        )
    return fig


def metrics_table_figure(
    columns: Sequence[str], rows: Sequence[Sequence[str]], ctx: FigureContext
) -> Figure:
    """The final metrics table drawn as a figure; ``rows`` hold already formatted cells."""
    if not columns:
        raise ValueError("a metrics table needs at least one column")
    for k, row in enumerate(rows):
        if len(row) != len(columns):
            raise ValueError(f"row {k} has {len(row)} cells, expected {len(columns)}: {row!r}")
    with rc():
        fig = new_figure(max(6.0, 1.15 * len(columns) + 1.2), 0.3 * len(rows) + 1.4)
        ax = fig.add_subplot()
        ax.axis("off")
        cells = [list(r) for r in rows] or [["-"] * len(columns)]
        table = ax.table(cellText=cells, colLabels=list(columns), loc="center", cellLoc="center")
        table.auto_set_font_size(False)
        table.set_fontsize(8)
        table.auto_set_column_width(list(range(len(columns))))
        table.scale(1.0, 1.25)
        set_title(fig, "Our comparison: final metrics (mean ± standard error over seeds)", ctx)
    return fig
