"""One of the survey's figures drawn from its rows and summary, and saved as PNG + SVG.

What :mod:`nasfilter.survey.output` draws in its own process and what a drawing process
(:mod:`nasfilter.survey.draw_process`) draws beside it: the same function on the same rows,
so both give the same files. Light to import (numpy; matplotlib only when drawing).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nasfilter.render.drawing import FigureContext, FigureFiles, save_figure
from nasfilter.survey import plots

FIGURES = ("fig1", "fig2a", "fig2b")


def context(summary: dict[str, Any]) -> FigureContext:
    """The titles' provenance lines of a survey's ``summary`` (``summary.json``)."""
    source = (
        f"measured: {summary['measured']} (predicted where unmeasured)"
        if summary["measured"]
        else "predicted (no measurement)"
    )
    return FigureContext(
        f"timm models, ImageNet top-1 from timm's results; {source}",
        f"{summary['device']} {summary['layout']}, peak {summary['peak_tflops']:g} TFLOP/s, "
        f"CMR {summary['cmr']:.0f}; predicted: {summary['predictor']}"
        + (" (in-sample for this file)" if summary["predictor_in_sample"] else ""),
    )


def draw(
    rows: Sequence[dict[str, Any]], summary: dict[str, Any], out: Path, stem: str
) -> FigureFiles:
    """Draw the figure ``stem`` (one of :data:`FIGURES`) of the survey ``rows`` and
    ``summary`` and save it as ``<out>/<stem>.png`` and ``.svg``."""
    ctx = context(summary)
    if stem == "fig1":
        fig = plots.fig1_fronts(rows, ctx)
    elif stem == "fig2a":
        fig = plots.fig2a_intensity(rows, summary["cmr"], ctx)
    elif stem == "fig2b":
        fig = plots.fig2b_folding(rows, summary["fold"], summary["peak_tflops"] * 1e12, ctx)
    else:
        raise ValueError(f"unknown survey figure {stem!r}; expected one of {FIGURES}")
    return save_figure(fig, out, stem)


def preload() -> None:
    """Import what drawing and saving a figure imports (about 0.7 CPU s), e.g. while the
    survey's own process is still computing the rows."""
    import matplotlib.backends.backend_agg
    import matplotlib.backends.backend_svg
    import matplotlib.collections
    import matplotlib.figure
    import matplotlib.ticker  # noqa: F401
