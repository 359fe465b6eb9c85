"""The profile's roofline figure: every layer at its arithmetic intensity and predicted
achieved FLOP/s, sized by its share of the time and coloured by what bounds it."""

from __future__ import annotations

from typing import Any

import numpy as np

from nasfilter.oracle.gpumodel import BYTES_PER_ELEMENT
from nasfilter.render.drawing import FigureContext, new_figure, rc, set_title
from nasfilter.survey.breakdown import PARTS
from nasfilter.survey.profile import Profile

COLOURS = dict(
    zip(
        PARTS,
        ("#2ca02c", "#ff7f0e", "#d62728", "#1f77b4", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"),
        strict=True,
    )
)


def roofline_figure(prof: Profile) -> Any:
    """Achieved TFLOP/s against FLOP/byte per layer with FLOPs, at the profile's batch, with
    the device's data-sheet roofline (peak and bandwidth) and its CMR; the memory-only
    layers (no FLOPs) are counted in the legend."""
    t, layers, b, dev = prof.table, prof.layers, prof.batch, prof.device
    flops = t.flops(b)[0]
    intensity = t.intensity(b, BYTES_PER_ELEMENT)[0]
    achieved = np.where(layers.seconds > 0, flops / layers.seconds, 0.0) / 1e12
    share = layers.seconds / layers.seconds.sum()
    computing = flops > 0
    if not computing.any():
        raise ValueError(f"{prof.model} has no layer with FLOPs: nothing to draw on a roofline")
    x, y = intensity[computing], achieved[computing]
    x_min, x_max = float(x.min()) / 3, max(10 * prof.cmr, float(x.max()) * 3)
    ctx = FigureContext(
        f"{prof.model} {'x'.join(map(str, prof.input_shape))}, batch {prof.batch}",
        f"calibrated GPU model, {prof.engine} engine, {prof.layout} (predicted; fit: "
        f"{prof.calibration.fitted_on})",
    )
    with rc():
        fig = new_figure(8.0, 5.6)
        ax = fig.subplots()
        grid = np.geomspace(x_min, x_max, 200)
        peak, bw = dev.peak("spec") / 1e12, dev.memory_bandwidth("spec") / 1e12
        ax.plot(grid, np.minimum(peak, grid * bw), color="black", lw=1.2, label="roofline")
        ax.axvline(prof.cmr, color="grey", ls=":", lw=1, label=f"CMR {prof.cmr:.0f} FLOP/B")
        bounds = np.array(layers.bound)[computing]
        for part in PARTS:
            sel = bounds == part
            if sel.any():
                size = 20 + 2000 * share[computing][sel]
                label = f"{part} ({sel.sum()})"
                ax.scatter(x[sel], y[sel], s=size, color=COLOURS[part], alpha=0.6, label=label)
        rest = int((~computing).sum())
        if rest:
            ax.scatter(
                [],
                [],
                s=0,
                label=f"not drawn: {rest} memory-only layers (no FLOPs), "
                f"{100 * share[~computing].sum():.0f} % of the time",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(x_min, x_max)
        ax.set_xlabel("arithmetic intensity (FLOP/byte, FP16, at the batch)")
        ax.set_ylabel("achieved TFLOP/s (predicted)")
        ax.legend(title="bound (layers); area = share of time", fontsize=8, loc="lower right")
        set_title(fig, f"Per-layer roofline on {dev.name}", ctx)
    return fig
