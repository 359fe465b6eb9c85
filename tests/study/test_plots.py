"""The figures: titles name the table and the oracle, files are valid, inputs are checked."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from nasfilter.study import plots

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CTX = plots.FigureContext("SYNTHETIC surrogate (not NATS-Bench data), cifar10", "roofline v100")
N = 400


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    front = np.zeros(N, dtype=bool)
    front[[3, 50, 77]] = True
    return {
        "util": rng.uniform(0.01, 0.6, N),
        "thr": rng.uniform(1e4, 5e5, N),
        "acc": rng.uniform(80, 94, N),
        "front": front,
    }


def _all_text(fig: Figure) -> str:
    from matplotlib.text import Text

    return _squash(" ".join(t.get_text() for t in fig.findobj(Text)))


def test_context_rejects_empty_labels() -> None:
    with pytest.raises(ValueError, match="oracle_label"):
        plots.FigureContext("table", " ")


@pytest.mark.slow
def test_fig3_names_provenance_count_and_spearman(
    data: dict[str, np.ndarray], tmp_path: Path
) -> None:
    fig = plots.fig3_utilization_space(
        data["util"], data["thr"], data["acc"], data["front"], -0.4321, CTX
    )
    title = _squash(plots.figure_title(fig))
    assert CTX.table_label in title and CTX.oracle_label in title
    text = _all_text(fig)
    assert f"3 of {N}" in text
    assert "-0.432" in text
    files = plots.save_figure(fig, tmp_path, "fig3")
    assert files.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg_text = files.svg.read_text("utf-8")
    ET.fromstring(svg_text)  # well-formed XML
    # svg.fonttype "none" keeps the title as text, so the saved file itself names both.
    assert "SYNTHETIC surrogate" in svg_text and "roofline v100" in svg_text


def test_fig3_skips_unmeasured_rows(data: dict[str, np.ndarray]) -> None:
    util = data["util"].copy()
    util[:10] = np.nan
    fig = plots.fig3_utilization_space(util, data["thr"], data["acc"], data["front"], 0.1, CTX)
    # Index 3 lies in the NaN block, so two of the three Pareto points remain.
    assert f"2 of {N - 10}" in _all_text(fig)


def test_fig5_and_fig6_draw_the_given_fronts(data: dict[str, np.ndarray]) -> None:
    true_front = np.array([1, 2, 3, 4])
    fig5 = plots.fig5_filtering_front(
        data["acc"], data["thr"], true_front, [2, 9], CTX, evaluated=[2, 9, 11], hv_ratio=0.875
    )
    text = _all_text(fig5)
    assert "true front (4)" in text
    assert "approximate filtering front (2, HV ratio 0.875)" in text
    assert "evaluated by approximate filtering (3)" in text
    assert CTX.oracle_label in _squash(plots.figure_title(fig5))

    fronts = {0: np.array([1]), 4: np.array([2, 3]), 8: np.array([], dtype=np.int64)}
    fig6 = plots.fig6_seed_fronts(data["acc"], data["thr"], true_front, fronts, CTX, {4: 0.5})
    visible = [ax for ax in fig6.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == [
        "seed 0: 1 on front",
        "seed 4: 2 on front, HV ratio 0.500",
        "seed 8: 0 on front",
    ]
    assert CTX.table_label in _squash(plots.figure_title(fig6))


@pytest.mark.slow
def test_comparison_curve_is_the_mean(tmp_path: Path) -> None:
    t = np.linspace(0, 100, 5)
    a = np.array([[0.0, 0.2, 0.4, 0.6, 0.8], [0.2, 0.4, 0.6, 0.8, 1.0]])
    fig = plots.comparison_curves(t, {"random": a, "reinforce": a[::-1] * 0.5}, CTX)
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == ["random (n=2)", "reinforce (n=2)"]
    np.testing.assert_allclose(np.asarray(lines[0].get_ydata(), dtype=float), a.mean(axis=0))
    with pytest.raises(ValueError, match=r"curves\['x'\] must have shape \(seeds, 5\)"):
        plots.comparison_curves(t, {"x": np.zeros((2, 4))}, CTX)
    files = plots.save_figure(fig, tmp_path, "cmp")
    again = plots.save_figure(fig, tmp_path / "again", "cmp")
    assert files.svg.read_bytes() == again.svg.read_bytes()  # deterministic SVG


def test_metrics_table_figure_checks_rows() -> None:
    fig = plots.metrics_table_figure(["method", "HV"], [["a", "0.5"]], CTX)
    cells = fig.axes[0].tables[0].get_celld()
    assert {c.get_text().get_text() for c in cells.values()} == {"method", "HV", "a", "0.5"}
    with pytest.raises(ValueError, match="row 0 has 1 cells, expected 2"):
        plots.metrics_table_figure(["method", "HV"], [["a"]], CTX)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"throughput": np.ones(N - 1)}, r"throughput must have shape \(400,\)"),
        ({"on_front": np.zeros(N)}, "on_front must be a boolean mask"),
        ({"utilization": np.ones((N, 2))}, "utilization must be one-dimensional"),
    ],
)
def test_fig3_rejects_bad_arrays(
    data: dict[str, np.ndarray], kwargs: dict[str, np.ndarray], message: str
) -> None:
    args = {
        "utilization": data["util"],
        "throughput": data["thr"],
        "accuracy": data["acc"],
        "on_front": data["front"],
        "spearman": 0.0,
        "ctx": CTX,
    } | kwargs
    with pytest.raises(ValueError, match=message):
        plots.fig3_utilization_space(**args)  # type: ignore[arg-type]


def test_front_indices_are_checked(data: dict[str, np.ndarray]) -> None:
    with pytest.raises(ValueError, match=r"found_front holds indices outside \[0, 399\]"):
        plots.fig5_filtering_front(data["acc"], data["thr"], [1], [400], CTX)
    with pytest.raises(ValueError, match="fronts must hold at least one seed"):
        plots.fig6_seed_fronts(data["acc"], data["thr"], [1], {}, CTX)


def test_save_figure_rejects_paths_as_stem(tmp_path: Path) -> None:
    fig = plots.metrics_table_figure(["a"], [["1"]], CTX)
    with pytest.raises(ValueError, match="plain file name"):
        plots.save_figure(fig, tmp_path, "../escape")


@pytest.mark.parametrize("n_seeds", [1, 3, 9])
def test_fig6_y_label_fits_in_the_figure(data: dict[str, np.ndarray], n_seeds: int) -> None:
    """The real table's accuracy label is long; a row of panels is short: it must not clip."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    ctx = plots.FigureContext(CTX.table_label, CTX.oracle_label,
                              "real validation accuracy after 90 epochs, seed 777 (%)")
    fronts = {s: np.array([1, 2]) for s in range(n_seeds)}
    fig = plots.fig6_seed_fronts(data["acc"], data["thr"], np.array([1, 2]), fronts, ctx)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    label = fig._supylabel  # type: ignore[attr-defined]
    box = label.get_window_extent(canvas.get_renderer())
    assert 0 <= box.y0 and box.y1 <= fig.bbox.height and 0 <= box.x0, (box, fig.bbox)
    assert _squash(label.get_text()) == ctx.accuracy_label  # wrapped, never cut
