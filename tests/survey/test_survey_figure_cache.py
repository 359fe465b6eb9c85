"""Survey figures kept for re-use: drawn once per content, copied after, never stale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nasfilter.render.drawing import FigureFiles
from nasfilter.survey import output
from nasfilter.survey.figure_cache import figure_key
from nasfilter.survey.survey import SurveyResult


def _result(throughput: float) -> SurveyResult:
    rows = [{"model": "net", "img_size": 224, "measured_throughput": throughput, "top1": 80.0}]
    return SurveyResult(rows, {}, {"device": "rtx4090", "fold": 4})


@pytest.fixture
def draws(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every figure drawn, by stem; a drawing writes the row's throughput into its files."""
    drawn: list[str] = []

    def draw(result: SurveyResult, out: Path, stem: str) -> Any:
        drawn.append(stem)
        text = f"{stem} {result.rows[0]['measured_throughput']}"
        (out / f"{stem}.png").write_bytes(text.encode())
        (out / f"{stem}.svg").write_text(text)
        return FigureFiles(stem, out / f"{stem}.png", out / f"{stem}.svg", f"title {text}")

    monkeypatch.setattr(output, "_draw", draw)
    return drawn


def test_a_figure_is_drawn_once_then_copied(tmp_path: Path, draws: list[str]) -> None:
    cache = tmp_path / "figures"
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    made = output.survey_figures(_result(100.0), first, cache)
    assert draws == list(output.FIGURES)
    copied = output.survey_figures(_result(100.0), second, cache)
    assert draws == list(output.FIGURES)  # nothing drawn again
    for a, b in zip(made, copied, strict=True):
        assert b.png == second / f"{a.stem}.png" and b.title == a.title == f"title {a.stem} 100.0"
        assert b.png.read_bytes() == a.png.read_bytes() and b.svg.read_text() == a.svg.read_text()


def test_other_rows_are_drawn_anew(tmp_path: Path, draws: list[str]) -> None:
    cache, out = tmp_path / "figures", tmp_path / "out"
    out.mkdir()
    output.survey_figures(_result(100.0), out, cache)
    output.survey_figures(_result(101.0), out, cache)
    assert draws == list(output.FIGURES) * 2
    assert (out / "fig1.svg").read_text() == "fig1 101.0"
    assert figure_key(_result(1.0).rows, {}) != figure_key(_result(1.0).rows, {"fold": 1})


def test_a_partly_kept_figure_is_drawn_again(tmp_path: Path, draws: list[str]) -> None:
    cache, out = tmp_path / "figures", tmp_path / "out"
    out.mkdir()
    output.survey_figures(_result(100.0), out, cache)
    for title in cache.glob("*-fig2a.txt"):
        title.unlink()  # the title is written last: without it the figure is not whole
    output.survey_figures(_result(100.0), out, cache)
    assert draws == [*output.FIGURES, "fig2a"]


def test_without_a_cache_every_figure_is_drawn(tmp_path: Path, draws: list[str]) -> None:
    output.survey_figures(_result(100.0), tmp_path)
    output.survey_figures(_result(100.0), tmp_path)
    assert draws == list(output.FIGURES) * 2


def test_the_inputs_remember_which_figures_they_gave(tmp_path: Path, draws: list[str]) -> None:
    from nasfilter.survey import figure_cache

    cache, out = tmp_path / "figures", tmp_path / "out"
    out.mkdir()
    inputs = figure_cache.inputs_key("settings a", tmp_path / "tables")
    assert inputs != figure_cache.inputs_key("settings b", tmp_path / "tables")
    assert not figure_cache.expects_kept(cache, inputs, output.FIGURES)  # never surveyed
    output.survey_figures(_result(100.0), out, cache, None, inputs)
    assert figure_cache.expects_kept(cache, inputs, output.FIGURES)
    for title in cache.glob("*-fig2b.txt"):
        title.unlink()  # one figure no longer kept: it will be drawn
    assert not figure_cache.expects_kept(cache, inputs, output.FIGURES)
    output.survey_figures(_result(101.0), out, cache, None, inputs)  # the inputs now give this
    assert figure_cache.expects_kept(cache, inputs, output.FIGURES)
    assert (cache / f"inputs-{inputs[:32]}.txt").read_text() == figure_key(
        _result(101.0).rows, {"device": "rtx4090", "fold": 4}
    )
