"""Shared drawing helpers for every figure nasfilter draws (the NAS study's and the survey's).

matplotlib (the optional ``plot`` extra) is imported inside the functions, and figures are
drawn on the Agg canvas directly, so importing this module costs nothing and no global
pyplot or backend state is touched. :func:`save_figure` writes a figure as PNG and SVG.

Units: utilization is a fraction of peak FLOP/s, throughput is images per second, accuracy
is percent, simulated time is seconds.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nasfilter.files import atomic_write

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ACCURACY_LABEL = "test accuracy after 90 epochs (%)"
THROUGHPUT_LABEL = "throughput (images/s)"

# Fixed colours per method, so a method keeps its colour across figures.
PALETTE = (
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
LINESTYLES = ("-", "--", "-.", ":")
RC: dict[str, Any] = {
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


def new_figure(width: float, height: float, constrained: bool = True) -> Figure:
    """A figure of ``width`` x ``height`` inches on its own Agg canvas, laid out by
    matplotlib's constrained layout at every save unless ``constrained`` is False (then the
    caller places the axes, e.g. by :func:`fixed_layout`)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise PlotDependencyError(
            "figures need matplotlib; install the extra: pip install 'nasfilter[plot]'"
        ) from exc
    fig = Figure(figsize=(width, height), layout="constrained" if constrained else None)
    FigureCanvasAgg(fig)
    return fig


def rc() -> Any:
    """A context manager applying :data:`RC` (fonts, deterministic SVG) while drawing."""
    import matplotlib

    settings: Any = dict(RC)  # matplotlib types the keys as literals
    return matplotlib.rc_context(settings)


def set_title(fig: Figure, what: str, ctx: FigureContext) -> None:
    """Give ``fig`` the full title of ``ctx`` (``what``, the table, the oracle), wrapped to
    the figure's width, also as its label (:func:`figure_title`)."""
    width_inches = float(fig.get_size_inches()[0])
    title = ctx.title(what, width=max(40, int(width_inches * 13)))
    fig.suptitle(title)
    fig.set_label(title)


def fixed_layout(
    fig: Figure, left: float = 0.7, bottom: float = 0.5, right: float = 0.15, wspace: float = 0.75
) -> None:
    """Place ``fig``'s subplots by fixed margins in inches (``wspace``: between panels), the
    top one below the suptitle's lines (9 pt type): the layout constrained layout finds for
    a figure like this, without its cost (it measures every tick label, twice a save)."""
    width, height = (float(v) for v in fig.get_size_inches())
    title = fig.get_suptitle()
    top = 0.12 + 0.165 * (title.count("\n") + 1) if title else 0.15
    n = max(1, len(fig.axes))
    panel = (width - left - right - wspace * (n - 1)) / n
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        bottom=bottom / height,
        top=1 - top / height,
        wspace=wspace / panel,
    )


def figure_title(fig: Figure) -> str:
    """The full title :func:`set_title` gave ``fig``."""
    return str(fig.get_label())


def method_colour(position: int) -> str:
    """The colour of the method at ``position`` in a comparison (stable across figures)."""
    return PALETTE[position % len(PALETTE)]


def method_linestyle(position: int) -> str:
    """The line style of the method at ``position`` (changes every two colours)."""
    return LINESTYLES[(position // 2) % len(LINESTYLES)]


# ----------------------------------------------------------------- checks
def column(name: str, values: Any, n: int | None = None) -> np.ndarray:
    """``values`` as a float64 vector, shape (n,) when ``n`` is given; ValueError naming it."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if n is not None and arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    return arr


def indices(name: str, values: Any, n: int) -> np.ndarray:
    """``values`` as an int64 vector of indices into [0, n); ValueError naming it."""
    arr = np.asarray(values)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must be a one-dimensional array of indices, got {arr!r}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"{name} holds indices outside [0, {n - 1}]: {arr.min()}..{arr.max()}")
    return arr


# ----------------------------------------------------------------- helpers
def draw_front(ax: Axes, throughput: np.ndarray, accuracy: np.ndarray, **style: Any) -> None:
    """The staircase bounding the region a front dominates (both objectives maximised)."""
    if throughput.size == 0:
        return
    order = np.argsort(throughput, kind="stable")
    ax.step(throughput[order], accuracy[order], where="pre", **style)


def background(ax: Axes, throughput: np.ndarray, accuracy: np.ndarray) -> None:
    """Every architecture with finite numbers as small grey points (rasterized)."""
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


def zoom_to_front(ax: Axes, acc: np.ndarray, true_idx: np.ndarray) -> None:
    """Keep the interesting top of the accuracy axis: from a bit below the front's minimum."""
    finite = acc[np.isfinite(acc)]
    if true_idx.size == 0 or finite.size == 0:
        return
    low = float(np.nanmin(acc[true_idx]))
    high = float(np.nanmax(finite))
    span = max(high - low, 1.0)
    ax.set_ylim(max(float(finite.min()), low - 1.5 * span), high + 0.1 * span)


def fill_band(ax: Axes, t: np.ndarray, mean: Any, se: Any, colour: str) -> None:
    """The mean ± standard error band where there is one (none for a single run)."""
    mean, se = np.asarray(mean, dtype=np.float64), np.asarray(se, dtype=np.float64)
    ok = np.isfinite(se) & np.isfinite(mean)
    if ok.any():
        ax.fill_between(t, mean - se, mean + se, where=ok, color=colour, alpha=0.2, linewidth=0)


# ----------------------------------------------------------------- output
def save_figure(fig: Figure, out_dir: str | Path, stem: str, dpi: int = 110) -> FigureFiles:
    """Write ``fig`` as ``<stem>.png`` and ``<stem>.svg`` under ``out_dir`` (created)."""
    if not stem or any(c in stem for c in "/\\") or stem.startswith("."):
        raise ValueError(f"stem must be a plain file name without suffix, got {stem!r}")
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    png, svg = folder / f"{stem}.png", folder / f"{stem}.svg"
    with rc():  # each file whole or not at all (a full disk leaves no truncated figure)
        with atomic_write(png) as fh:
            fig.savefig(fh, format="png", dpi=dpi, metadata={"Software": None})
        with atomic_write(svg) as fh:
            fig.savefig(fh, format="svg", metadata={"Date": None, "Creator": None})
    return FigureFiles(stem=stem, png=png, svg=svg, title=figure_title(fig))
