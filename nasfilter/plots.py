"""The study's figures, drawn with matplotlib (the optional ``plot`` extra).

Every function here is pure: it takes numpy arrays and a :class:`FigureContext` and returns
a ``matplotlib.figure.Figure`` whose title names the table's provenance and the oracle.
:func:`save_figure` writes a figure as PNG and SVG. matplotlib is imported inside the
functions, and figures are drawn on the Agg canvas directly, so importing this module costs
nothing and no global pyplot or backend state is touched.

Units: utilization is a fraction of peak FLOP/s (plotted in percent), throughput is images
per second, accuracy is percent, simulated time is seconds.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nasfilter.files import atomic_write
from nasfilter.results import mean_se

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ACCURACY_LABEL = "test accuracy after 90 epochs (%)"
THROUGHPUT_LABEL = "throughput (images/s)"

# Fixed colours per method, so a method keeps its colour across figures.
_PALETTE = (
    "#1b9e77",
    "#d95f02",
    "#7570b3",
    "#e7298a",
    "#66a61e",
    "#e6ab02",
    "#a6761d",
    "#666666",
    "#1f78b4",
    "#b2df8a",
)
_LINESTYLES = ("-", "--", "-.", ":")
_RC: dict[str, Any] = {
    "font.size": 9,
    "axes.titlesize": 9,
    "figure.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "svg.hashsalt": "nasfilter",  # deterministic SVG ids
    "svg.fonttype": "none",  # text stays text: searchable, small
}


class PlotDependencyError(ImportError):
    """matplotlib is not installed."""


@dataclass(frozen=True)
class FigureContext:
    """What every figure's title names: where the table and the proxy numbers come from.

    Attributes:
        table_label: the table's provenance label, e.g. ``BenchmarkTable.label``.
        oracle_label: the oracle's label, e.g. ``ProxyTable.label``.
        accuracy_label: the accuracy axis, e.g. ``BenchmarkTable.score_label`` + " (%)".
    """

    table_label: str
    oracle_label: str
    accuracy_label: str = ACCURACY_LABEL

    def __post_init__(self) -> None:
        for name in ("table_label", "oracle_label"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"FigureContext.{name} must be a non-empty string, got {value!r}")

    @property
    def subtitle(self) -> str:
        return f"table: {self.table_label}\noracle: {self.oracle_label}"

    def title(self, what: str, width: int = 90) -> str:
        """The full title: ``what``, then the table line and the oracle line, each wrapped
        at ``width`` characters."""
        lines = (what, f"table: {self.table_label}", f"oracle: {self.oracle_label}")
        return "\n".join(textwrap.fill(line, width) for line in lines)


@dataclass(frozen=True)
class FigureFiles:
    """A saved figure: its PNG and SVG files and its full title."""

    stem: str
    png: Path
    svg: Path
    title: str


def _new_figure(width: float, height: float) -> Figure:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise PlotDependencyError(
            "figures need matplotlib; install the extra: pip install 'nasfilter[plot]'"
        ) from exc
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _rc() -> Any:
    import matplotlib

    settings: Any = dict(_RC)  # matplotlib types the keys as literals
    return matplotlib.rc_context(settings)


def _set_title(fig: Figure, what: str, ctx: FigureContext) -> None:
    width_inches = float(fig.get_size_inches()[0])
    title = ctx.title(what, width=max(40, int(width_inches * 13)))
    fig.suptitle(title)
    fig.set_label(title)


def figure_title(fig: Figure) -> str:
    """The full title a function of this module gave ``fig``."""
    return str(fig.get_label())


def method_colour(position: int) -> str:
    """The colour of the method at ``position`` in a comparison (stable across figures)."""
    return _PALETTE[position % len(_PALETTE)]


# ----------------------------------------------------------------- checks
def _column(name: str, values: Any, n: int | None = None) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if n is not None and arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    return arr


def _indices(name: str, values: Any, n: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must be a one-dimensional array of indices, got {arr!r}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"{name} holds indices outside [0, {n - 1}]: {arr.min()}..{arr.max()}")
    return arr


# ----------------------------------------------------------------- helpers
def _draw_front(ax: Axes, throughput: np.ndarray, accuracy: np.ndarray, **style: Any) -> None:
    """The staircase bounding the region a front dominates (both objectives maximised)."""
    if throughput.size == 0:
        return
    order = np.argsort(throughput, kind="stable")
    ax.step(throughput[order], accuracy[order], where="pre", **style)


def _background(ax: Axes, throughput: np.ndarray, accuracy: np.ndarray) -> None:
    ok = np.isfinite(throughput) & np.isfinite(accuracy)
    ax.scatter(
        throughput[ok],
        accuracy[ok],
        s=2,
        c="#c8c8c8",
        linewidths=0,
        rasterized=True,
        label=f"all architectures ({int(ok.sum())})",
        zorder=1,
    )


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
    util = _column("utilization", utilization)
    n = util.size
    thr = _column("throughput", throughput, n)
    acc = _column("accuracy", accuracy, n)
    front = np.asarray(on_front)
    if front.shape != (n,) or front.dtype != np.bool_:
        raise ValueError(f"on_front must be a boolean mask of shape ({n},), got {front!r}")
    ok = np.isfinite(util) & np.isfinite(thr) & np.isfinite(acc)
    n_front = int((front & ok).sum())
    with _rc():
        fig = _new_figure(6.4, 4.8)
        ax = fig.add_subplot()
        order = np.argsort(acc[ok], kind="stable")  # best accuracy drawn on top
        points = ax.scatter(
            100 * util[ok][order],
            thr[ok][order],
            c=acc[ok][order],
            s=3,
            cmap="viridis",
            linewidths=0,
            rasterized=True,
            zorder=1,
        )
        sel = front & ok
        ax.scatter(
            100 * util[sel],
            thr[sel],
            s=22,
            facecolors="none",
            edgecolors="#d62728",
            linewidths=1.0,
            label=f"throughput–utilization Pareto set ({n_front} of {int(ok.sum())})",
            zorder=3,
        )
        ax.set_yscale("log")
        ax.set_xlabel("utilization (% of peak FLOP/s)")
        ax.set_ylabel(THROUGHPUT_LABEL)
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(loc="lower right")
        ax.text(
            0.02,
            0.98,
            f"Pareto set: {n_front} of {int(ok.sum())}\n"
            f"Spearman ρ(utilization, accuracy) = {spearman:.3f}",
            transform=ax.transAxes,
            va="top",
            ha="left",
            bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.85},
        )
        fig.colorbar(points, ax=ax, label=ctx.accuracy_label)
        _set_title(fig, "Fig. 3: throughput vs utilization over the whole space", ctx)
    return fig


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
    acc = _column("accuracy", accuracy)
    n = acc.size
    thr = _column("throughput", throughput, n)
    true_idx = _indices("true_front", true_front, n)
    found_idx = _indices("found_front", found_front, n)
    with _rc():
        fig = _new_figure(6.4, 4.6)
        ax = fig.add_subplot()
        _background(ax, thr, acc)
        if evaluated is not None:
            ev = _indices("evaluated", evaluated, n)
            ax.scatter(
                thr[ev],
                acc[ev],
                s=8,
                facecolors="none",
                edgecolors="#7570b3",
                linewidths=0.6,
                label=f"evaluated by {method_label} ({ev.size})",
                zorder=2,
            )
        _draw_front(ax, thr[true_idx], acc[true_idx], color="black", lw=1.0, zorder=3)
        ax.scatter(
            thr[true_idx],
            acc[true_idx],
            s=14,
            c="black",
            marker="s",
            label=f"true front ({true_idx.size})",
            zorder=3,
        )
        extra = "" if hv_ratio is None else f", HV ratio {hv_ratio:.3f}"
        _draw_front(ax, thr[found_idx], acc[found_idx], color="#d95f02", lw=1.0, zorder=4)
        ax.scatter(
            thr[found_idx],
            acc[found_idx],
            s=18,
            c="#d95f02",
            marker="o",
            label=f"{method_label} front ({found_idx.size}{extra})",
            zorder=4,
        )
        ax.set_xscale("log")
        ax.set_xlabel(THROUGHPUT_LABEL)
        ax.set_ylabel(ctx.accuracy_label)
        _zoom_to_front(ax, acc, true_idx)
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(loc="lower left")
        _set_title(fig, f"Fig. 5: {method_label} front vs the true front", ctx)
    return fig


def _zoom_to_front(ax: Axes, acc: np.ndarray, true_idx: np.ndarray) -> None:
    """Keep the interesting top of the accuracy axis: from a bit below the front's minimum."""
    finite = acc[np.isfinite(acc)]
    if true_idx.size == 0 or finite.size == 0:
        return
    low = float(np.nanmin(acc[true_idx]))
    high = float(np.nanmax(finite))
    span = max(high - low, 1.0)
    ax.set_ylim(max(float(finite.min()), low - 1.5 * span), high + 0.1 * span)


def fig6_seed_fronts(
    accuracy: Any,
    throughput: Any,
    true_front: Any,
    fronts: Mapping[int, Any],
    ctx: FigureContext,
    hv_ratios: Mapping[int, float] | None = None,
    method_label: str = "REINFORCE (MnasNet reward)",
    columns: int = 3,
) -> Figure:
    """Fig. 6: one panel per seed, the method's front against the true front.

    Args:
        accuracy: percent per architecture, shape (N,).
        throughput: images/s, shape (N,).
        true_front: indices of the true front, shape (F,).
        fronts: seed -> indices of that run's front, shape (K_seed,).
        hv_ratios: seed -> hypervolume ratio, shown in each panel's title when given.
        columns: panels per row.
    """
    acc = _column("accuracy", accuracy)
    n = acc.size
    thr = _column("throughput", throughput, n)
    true_idx = _indices("true_front", true_front, n)
    if not fronts:
        raise ValueError("fronts must hold at least one seed's front")
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be a positive integer, got {columns!r}")
    from matplotlib.ticker import NullFormatter

    seeds = sorted(fronts)
    ncols = min(columns, len(seeds))
    nrows = -(-len(seeds) // ncols)
    with _rc():
        fig = _new_figure(3.0 * ncols + 0.6, 2.5 * nrows + 0.9)
        axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
        for k, seed in enumerate(seeds):
            ax = axes[k // ncols][k % ncols]
            idx = _indices(f"fronts[{seed}]", fronts[seed], n)
            _background(ax, thr, acc)
            _draw_front(ax, thr[true_idx], acc[true_idx], color="black", lw=0.9, zorder=3)
            ax.scatter(thr[true_idx], acc[true_idx], s=6, c="black", marker="s", zorder=3)
            _draw_front(ax, thr[idx], acc[idx], color="#1b9e77", lw=0.9, zorder=4)
            ax.scatter(thr[idx], acc[idx], s=12, c="#1b9e77", zorder=4)
            label = f"seed {seed}: {idx.size} on front"
            if hv_ratios is not None and seed in hv_ratios:
                label += f", HV ratio {hv_ratios[seed]:.3f}"
            ax.set_title(label)
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.grid(True, which="both", alpha=0.25)
            _zoom_to_front(ax, acc, true_idx)
        for k in range(len(seeds), nrows * ncols):
            axes[k // ncols][k % ncols].set_visible(False)
        fig.supxlabel(THROUGHPUT_LABEL)
        fig.supylabel(ctx.accuracy_label)
        _set_title(
            fig,
            f"Fig. 6: {method_label} fronts per seed (green) vs the true front (black)",
            ctx,
        )
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
    t = _column("times", times)
    if not curves:
        raise ValueError("curves must hold at least one method")
    with _rc():
        fig = _new_figure(6.8, 4.4 + 0.18 * ((len(curves) + 1) // 2))
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
                ls=_LINESTYLES[(k // 2) % len(_LINESTYLES)],
                label=f"{label} (n={arr.shape[0]})",
            )
            _fill_band(ax, t, band.mean, band.se, colour)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.25)
        fig.legend(loc="outside lower center", ncols=2)
        _set_title(fig, f"Our comparison: {what} (mean ± standard error over seeds)", ctx)
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
            :func:`nasfilter.results.curve_band` computes them.
    """
    from nasfilter.results import first_reaching, reach_text

    t = _column("times", times)
    if not bands:
        raise ValueError("bands must hold at least one method")
    with _rc():
        fig = _new_figure(6.8, 4.6 + 0.18 * ((len(bands) + 1) // 2))
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
                ls=_LINESTYLES[(k // 2) % len(_LINESTYLES)],
                label=f"{label}: {reach_text(reached, level)}",
            )
            _fill_band(ax, t, m, se, colour)
            if reached is not None:
                ax.plot([reached], [level], "o", color=colour, ms=6, mec="black", mew=0.6)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("hypervolume ratio")
        ax.grid(True, alpha=0.25)
        fig.legend(loc="outside lower center", ncols=2, fontsize="small")
        _set_title(
            fig,
            f"Hypervolume ratio over simulated time; dots: first reaching {level:g} "
            "(mean ± standard error over seeds)",
            ctx,
        )
    return fig


def _fill_band(ax: Axes, t: np.ndarray, mean: Any, se: Any, colour: str) -> None:
    """The mean ± standard error band where there is one (none for a single run)."""
    mean, se = np.asarray(mean, dtype=np.float64), np.asarray(se, dtype=np.float64)
    ok = np.isfinite(se) & np.isfinite(mean)
    if ok.any():
        ax.fill_between(t, mean - se, mean + se, where=ok, color=colour, alpha=0.2, linewidth=0)


def workers_curves(
    times: Any,
    bands: Mapping[str, Mapping[int, tuple[Any, Any]]],
    ctx: FigureContext,
    ylabel: str = "hypervolume ratio",
    columns: int = 4,
) -> Figure:
    """One panel per method: a metric over simulated wall-clock time for each number K of
    simulated workers, as mean ± standard error bands (from :func:`nasfilter.results.
    curve_band`; no band where the standard error is undefined, e.g. one run).

    Args:
        times: simulated wall-clock seconds of the ticks, shape (T,).
        bands: method label -> K -> (mean (T,), standard error (T,)).
    """
    t = _column("times", times)
    if not bands:
        raise ValueError("bands must hold at least one method")
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be a positive integer, got {columns!r}")
    ks = sorted({k for per_k in bands.values() for k in per_k})
    ncols = min(columns, len(bands))
    nrows = -(-len(bands) // ncols)
    with _rc():
        fig = _new_figure(3.1 * ncols + 0.6, 2.4 * nrows + 1.2)
        axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
        for n, (label, per_k) in enumerate(bands.items()):
            ax = axes[n // ncols][n % ncols]
            for k, (mean, se) in sorted(per_k.items()):
                m = _column(f"bands[{label!r}][{k}] mean", mean, t.size)
                colour = method_colour(ks.index(k))
                ax.plot(t, m, color=colour, lw=1.2, label=f"K = {k}")
                _fill_band(ax, t, m, se, colour)
            ax.set_title("\n".join(textwrap.wrap(label, 34)))
            ax.grid(True, alpha=0.25)
        for n in range(len(bands), nrows * ncols):
            axes[n // ncols][n % ncols].set_visible(False)
        axes[0][0].legend(loc="lower right")
        fig.supxlabel("simulated wall-clock time (s)")
        fig.supylabel(ylabel)
        _set_title(
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
    with _rc():
        fig = _new_figure(max(6.0, 1.15 * len(columns) + 1.2), 0.3 * len(rows) + 1.4)
        ax = fig.add_subplot()
        ax.axis("off")
        cells = [list(r) for r in rows] or [["-"] * len(columns)]
        table = ax.table(cellText=cells, colLabels=list(columns), loc="center", cellLoc="center")
        table.auto_set_font_size(False)
        table.set_fontsize(8)
        table.auto_set_column_width(list(range(len(columns))))
        table.scale(1.0, 1.25)
        _set_title(fig, "Our comparison: final metrics (mean ± standard error over seeds)", ctx)
    return fig


# ----------------------------------------------------------------- output
def save_figure(fig: Figure, out_dir: str | Path, stem: str, dpi: int = 110) -> FigureFiles:
    """Write ``fig`` as ``<stem>.png`` and ``<stem>.svg`` under ``out_dir`` (created)."""
    if not stem or any(c in stem for c in "/\\") or stem.startswith("."):
        raise ValueError(f"stem must be a plain file name without suffix, got {stem!r}")
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    png, svg = folder / f"{stem}.png", folder / f"{stem}.svg"
    with _rc():  # each file whole or not at all (a full disk leaves no truncated figure)
        with atomic_write(png) as fh:
            fig.savefig(fh, format="png", dpi=dpi, metadata={"Software": None})
        with atomic_write(svg) as fh:
            fig.savefig(fh, format="svg", metadata={"Date": None, "Creator": None})
    return FigureFiles(stem=stem, png=png, svg=svg, title=figure_title(fig))
