"""The survey's figures show the survey rows' data: the points, fronts, labels, axes, titles.

Rows are written out by hand here, so every expected value comes from the rows, not from the
drawing code; the figures are drawn by :mod:`nasfilter.survey.plots` and read back from their
matplotlib artists (collections' offsets, lines' data, texts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.render.drawing import FigureContext, save_figure
from nasfilter.survey import plots

CTX = FigureContext("timm models (test rows)", "rtx4090 nchw (test oracle)")


def _row(name: str, thr: float, top1: float, util: float, **flags: Any) -> dict[str, Any]:
    row = {
        "model": name,
        "is_cnn": True,
        "utilization_source": "measured",
        "measured_throughput": thr,
        "predicted_throughput": thr * 2,  # never drawn while a measurement exists
        "top1": top1,
        "utilization": util,
        "flops": 1e9,
        "below_cmr": False,
        "folded_utilization": float("nan"),
        "folded_predicted_throughput": float("nan"),
        "pareto_throughput_accuracy": False,
        "pareto_utilization_accuracy": False,
        "pareto_throughput_utilization": False,
        "on_all_fronts": False,
    }
    row.update(flags)
    return row


ROWS = [
    _row("a", 100.0, 80.0, 0.50, on_all_fronts=True, pareto_throughput_accuracy=True),
    _row("b", 1000.0, 75.0, 0.20, pareto_throughput_accuracy=True, below_cmr=True),
    _row("c", 20000.0, 60.0, 0.05, pareto_throughput_utilization=True),
    _row("d", 50.0, 70.0, 0.10, below_cmr=True),
    _row("vit", 300.0, 85.0, 0.9, is_cnn=False),  # not a CNN: never drawn
]


def _offsets(ax: Any, k: int) -> np.ndarray:
    return np.asarray(ax.collections[k].get_offsets(), dtype=float)


def _texts(ax: Any) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_fig1_shows_every_cnn_its_fronts_and_the_cnn_on_all_three() -> None:
    pytest.importorskip("matplotlib")
    fig = plots.fig1_fronts(ROWS, CTX)
    thr_acc, util_acc, thr_util = fig.axes
    cnn_points = [[100, 80], [1000, 75], [20000, 60], [50, 70]]
    np.testing.assert_array_equal(_offsets(thr_acc, 0), cnn_points)
    np.testing.assert_array_equal(_offsets(util_acc, 0), [[50, 80], [20, 75], [5, 60], [10, 70]])
    front = thr_acc.lines[0]
    np.testing.assert_array_equal(front.get_xdata(), [100, 1000])  # sorted by throughput
    np.testing.assert_array_equal(front.get_ydata(), [80, 75])
    np.testing.assert_array_equal(thr_util.lines[0].get_xdata(), [20000])
    np.testing.assert_array_equal(_offsets(thr_acc, 1), [[100, 80]])  # circled: on all three
    assert [_texts(ax) for ax in fig.axes] == [["a"], ["a"], ["a"]]
    assert [t.get_text() for t in thr_acc.get_legend().get_texts()] == [
        "CNNs (4)",
        "Pareto front (2)",
        "on all three fronts (1)",
    ]
    assert [ax.get_xscale() for ax in fig.axes] == ["log", "linear", "log"]
    assert thr_acc.get_xlabel() == plots.THR_LABEL and thr_acc.get_ylabel() == plots.TOP1_LABEL
    assert util_acc.get_xlabel() == plots.UTIL_LABEL
    assert thr_util.get_ylabel() == plots.UTIL_LABEL
    title = fig.get_suptitle()
    assert title.startswith("Fig. 1: accuracy, throughput and utilization of CNNs")
    assert "timm models (test rows)" in title and "rtx4090 nchw (test oracle)" in title


def test_the_minor_grid_of_a_log_axis_is_at_2_to_9_times_each_decade() -> None:
    pytest.importorskip("matplotlib")
    ax = plots.fig1_fronts(ROWS, CTX).axes[0]
    low, high = ax.get_xlim()
    grid = ax.collections[-1]
    xs = sorted({float(seg[0, 0]) for seg in grid.get_segments()})
    expected = [m * 10.0**k for k in range(1, 6) for m in range(2, 10)]
    assert xs == pytest.approx([x for x in expected if low <= x <= high])
    # the data span 50-20000; matplotlib pads a log axis by 5 % of its decades: ~37-27000
    assert (xs[0], xs[-1]) == pytest.approx((40.0, 20000.0))
    assert ax.get_xticklabels(minor=True) == []  # no minor tick labels: plain decades


def test_fig2a_splits_the_cnns_by_the_cmr() -> None:
    pytest.importorskip("matplotlib")
    (ax,) = plots.fig2a_intensity(ROWS, 164.0, CTX).axes
    np.testing.assert_array_equal(_offsets(ax, 0), [[100, 80], [20000, 60]])  # >= CMR
    np.testing.assert_array_equal(_offsets(ax, 1), [[1000, 75], [50, 70]])  # below
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), [100, 1000])
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["intensity ≥ CMR 164 (2)", "intensity < CMR 164 (2)", "Pareto front"]
    assert ax.get_xscale() == "log" and ax.get_ylabel() == plots.TOP1_LABEL


def test_fig2b_joins_each_folded_cnn_to_its_original() -> None:
    pytest.importorskip("matplotlib")
    rows = [
        _row("b", 1000.0, 75.0, 0.2, below_cmr=True, utilization_source="predicted"),
        _row("d", 50.0, 70.0, 0.1, below_cmr=True),
        _row("c", 20000.0, 60.0, 0.05),  # above the CMR: not folded
    ]
    rows[0].update(folded_utilization=0.4, folded_predicted_throughput=1500.0)
    rows[1].update(folded_utilization=0.3, folded_predicted_throughput=80.0)
    (ax,) = plots.fig2b_folding(rows, 4, 1e12, CTX).axes
    # original utilization (%) = 100 * predicted throughput * FLOPs / peak
    original = [[100 * 2000 * 1e9 / 1e12, 2000], [100 * 100 * 1e9 / 1e12, 100]]
    segments, before, after = ax.collections[0], _offsets(ax, 1), _offsets(ax, 2)
    np.testing.assert_allclose(before, original)
    np.testing.assert_allclose(after, [[40, 1500], [30, 80]])
    np.testing.assert_allclose([s[0] for s in segments.get_segments()], original)
    np.testing.assert_allclose([s[1] for s in segments.get_segments()], [[40, 1500], [30, 80]])
    assert ax.get_yscale() == "log"
    assert ax.get_xlim() == pytest.approx((0, 200 * 1.08))


def test_each_figure_is_saved_as_png_and_svg_with_its_title(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    files = save_figure(plots.fig2a_intensity(ROWS, 164.0, CTX), tmp_path, "fig2a")
    assert files.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = files.svg.read_text()
    assert "Fig. 2a: the throughput–accuracy front" in svg and "intensity ≥ CMR 164 (2)" in svg
    assert files.title.startswith("Fig. 2a")


def test_every_label_lies_inside_its_figure() -> None:
    pytest.importorskip("matplotlib")
    rows = [dict(r) for r in ROWS]
    rows[1].update(folded_utilization=0.4, folded_predicted_throughput=150_000.0)
    figures = (
        plots.fig1_fronts(rows, CTX),
        plots.fig2a_intensity(rows, 164.0, CTX),
        plots.fig2b_folding(rows, 4, 1e12, CTX),  # a y axis to 100,000: the widest labels
    )
    for fig in figures:
        fig.draw_without_rendering()  # places the axis labels
        renderer = fig.canvas.get_renderer()
        width, height = fig.canvas.get_width_height()
        for ax in fig.axes:
            for text in (ax.xaxis.label, ax.yaxis.label):
                box = text.get_window_extent(renderer)
                assert box.x0 >= 0 and box.y0 >= 0, (fig.get_suptitle()[:8], text.get_text())
                assert box.x1 <= width and box.y1 <= height
            for label in ax.get_yticklabels():  # those off the axis are not drawn: x only
                assert label.get_window_extent(renderer).x0 >= 0, label.get_text()
        title = fig.texts[0].get_window_extent(renderer)  # the suptitle
        assert title.y1 <= height and title.y0 > max(ax.get_position().y1 for ax in fig.axes)
