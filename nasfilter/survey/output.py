"""Writing a survey: ``survey.csv``, ``layers.csv``, ``summary.json``, figures, ``report.html``."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.layer_table import ARRAY_FIELDS, LayerTable
from nasfilter.files import atomic_write
from nasfilter.render.drawing import FigureFiles
from nasfilter.render.html_page import ReportFigure, ReportTable, write_report
from nasfilter.survey import figure_cache as cached
from nasfilter.survey import figures as drawn
from nasfilter.survey.draw_process import DrawingProcess
from nasfilter.survey.survey import COLUMNS, SurveyResult

# Files a survey writes; with force=True only these are replaced in a non-empty folder.
OUTPUTS = ("survey.csv", "layers.csv", "summary.json", "report.html")
FIGURES = drawn.FIGURES
LAYER_COLUMNS = ("model", "img_size", "index", "name", "kind", *ARRAY_FIELDS, "intensity")


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.10g}"
    return str(value)


def _formatted(values: np.ndarray) -> list[str]:
    """Each float of ``values`` as :func:`_cell` formats it (NaN -> "", else ``.10g``), each
    distinct value formatted once: a survey of every timm CNN writes two million cells of a
    few ten thousand distinct values (channel counts, shapes)."""
    if ((values == 0) & np.signbit(values)).any():  # -0.0 and 0.0 are one value to np.unique
        return ["" if v != v else f"{v:.10g}" for v in values.tolist()]
    distinct, where = np.unique(values, return_inverse=True)
    text = np.array(["" if v != v else f"{v:.10g}" for v in distinct.tolist()], dtype=object)
    return list(text[where.ravel()])


def _layer_rows(rows: list[dict[str, Any]], tables: list[LayerTable]) -> Iterator[tuple[Any, ...]]:
    """The ``layers.csv`` rows (:data:`LAYER_COLUMNS`) of the survey ``rows`` and their
    ``tables``: every column of every table formatted in one pass (:func:`_formatted`)."""
    columns = [[getattr(t, a)[0] for t in tables] for a in ARRAY_FIELDS]
    columns.append([t.intensity(int(r["batch"]))[0] for r, t in zip(rows, tables, strict=True)])
    cells = [_formatted(np.concatenate(c).astype(float)) if tables else [] for c in columns]
    models: list[Any] = []
    sizes: list[Any] = []
    index: list[int] = []
    names: list[str] = []
    kinds: list[str] = []
    for row, table in zip(rows, tables, strict=True):
        n = len(table.names)
        models += [row["model"]] * n
        sizes += [row["img_size"]] * n
        index += range(n)
        names += table.names
        kinds += table.kinds
    return zip(models, sizes, index, names, kinds, *cells, strict=True)


def write_survey(
    result: SurveyResult,
    out: Path,
    figures: bool = True,
    figure_cache: Path | None = None,
    drawing: DrawingProcess | None = None,
    inputs: str = "",
) -> list[Path]:
    """Write every output of ``result`` into the folder ``out`` (already checked);
    ``figure_cache``, ``drawing``, ``inputs``: as :func:`survey_figures`. The figures a
    ``drawing`` process draws are drawn while this process writes the tables."""
    pending = _Figures(result, out, figure_cache, drawing, inputs) if figures else None
    written = _write_tables(result, out)
    if pending is not None:
        written += _report(result, out, pending.collect())
    return written


def _write_tables(result: SurveyResult, out: Path) -> list[Path]:
    """``survey.csv``, ``layers.csv`` and ``summary.json`` of ``result`` in ``out``."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in result.rows:
        writer.writerow([_cell(row[c]) for c in COLUMNS])
    with atomic_write(out / "survey.csv", "w") as fh:
        fh.write(text.getvalue())
    with atomic_write(out / "layers.csv", "w") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(LAYER_COLUMNS)
        tables = [result.tables[(row["model"], row["img_size"])] for row in result.rows]
        w.writerows(_layer_rows(result.rows, tables))
    with atomic_write(out / "summary.json", "w") as fh:
        json.dump(result.summary, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return [out / "survey.csv", out / "layers.csv", out / "summary.json"]


class _Figures:
    """The survey's figures under way: copied from the figure cache, handed to a drawing
    process, or (:meth:`collect`) drawn here."""

    def __init__(
        self,
        result: SurveyResult,
        out: Path,
        figure_cache: Path | None,
        drawing: DrawingProcess | None,
        inputs: str,
    ) -> None:
        self.result, self.out, self.cache = result, out, figure_cache
        self.key = cached.figure_key(result.rows, result.summary) if figure_cache else ""
        if figure_cache and inputs:
            cached.remember(figure_cache, inputs, self.key)
        self.files: dict[str, FigureFiles | None] = {
            stem: cached.restore(figure_cache, self.key, stem, out) if figure_cache else None
            for stem in FIGURES
        }
        todo = [stem for stem, hit in self.files.items() if hit is None]
        self.drawing = drawing
        if drawing is None or not drawing.draw(result.rows, result.summary, out, todo):
            self.drawing = None

    def collect(self) -> list[FigureFiles]:
        """Every figure, in :data:`FIGURES` order; those not copied are kept in the cache."""
        made = self.drawing.results() if self.drawing is not None else {}
        files = []
        for stem, hit in self.files.items():
            if hit is None:
                hit = made.get(stem) or _draw(self.result, self.out, stem)
                if self.cache:
                    cached.keep(self.cache, self.key, hit)
            files.append(hit)
        return files


def survey_figures(
    result: SurveyResult,
    out: Path,
    figure_cache: Path | None = None,
    drawing: DrawingProcess | None = None,
    inputs: str = "",
) -> list[FigureFiles]:
    """Fig. 1, 2a and 2b as PNG + SVG in ``out``; returns their FigureFiles.

    With a ``figure_cache`` folder, a figure drawn before from the same rows and summary, by
    the same drawing code and matplotlib, is copied from there instead of drawn again
    (matplotlib is then not even imported); one drawn anew is kept there
    (:func:`nasfilter.survey.figure_cache.figure_key`), and the key is remembered under
    ``inputs`` when given (:func:`nasfilter.survey.figure_cache.inputs_key`). The figures to
    draw are drawn by ``drawing`` when given (and able to), else here."""
    return _Figures(result, out, figure_cache, drawing, inputs).collect()


def _draw(result: SurveyResult, out: Path, stem: str) -> FigureFiles:
    """Draw and save the figure ``stem`` (one of :data:`FIGURES`) in this process."""
    return drawn.draw(result.rows, result.summary, out, stem)


def report_section(result: SurveyResult, figures: list[Any]) -> tuple[list[Any], list[Any]]:
    """The survey's report figures and tables (for report.html and `nasfilter reproduce`)."""
    s = result.summary
    rho = s["spearman_utilization_top1"]
    med = s["median_measured_utilization_cnn"]
    captions = {
        "fig1": (
            f"{s['n_cnn_rows']} CNN rows ({s['n_cnn_models']} models) on {s['device']} "
            f"({s['layout']}). On all three fronts: {', '.join(s['on_all_three_fronts']) or 'none'}"
            f" (the study: TResNet-M on a V100)."
        ),
        "fig2a": (
            f"{s['n_cnn_below_cmr']} of {s['n_cnn_rows']} CNN rows have an FP16 arithmetic "
            f"intensity below the CMR ({s['cmr']:.0f} FLOP/byte) at their batch."
        ),
        "fig2b": (
            f"Folding by f = {s['fold']}: {s['n_folded']} of {s['n_fold_candidates']} "
            f"candidates folded (failures in summary.json); median predicted throughput gain "
            f"{_fmt(s['median_folded_over_original_predicted_throughput'])}x, intensity "
            f"{_fmt(s['median_folded_over_original_intensity'])}x. Throughputs predicted by "
            f"{s['predictor']}."
        ),
    }
    rows = (
        ("CNN rows surveyed (models)", f"{s['n_cnn_rows']} ({s['n_cnn_models']})"),
        ("rows with a measurement", str(s["n_cnn_rows_measured"])),
        ("median measured utilization of CNNs", _pct(med)),
        (
            "median predicted utilization of CNNs"
            + (" (in-sample: fitted on this file)" if s["predictor_in_sample"] else ""),
            _pct(s["median_predicted_utilization_cnn"]),
        ),
        ("below the CMR (fold candidates)", str(s["n_cnn_below_cmr"])),
        ("on all three fronts", ", ".join(s["on_all_three_fronts"]) or "none"),
        ("Spearman ρ(utilization, top-1)", "n/a" if rho is None else f"{rho:.3f}"),
        ("models not analysed", str(len(s["not_analysed"]))),
    )
    table = ReportTable(
        f"CNN survey (§3) on {s['device']}, {s['layout']}",
        ("question", "answer"),
        rows,
        caption=f"Measurements: {s['measured'] or 'none (predicted)'}; predictions: "
        f"{s['predictor']}; {s['predictor_note']}. Every number is in summary.json.",
    )
    return [ReportFigure(f, captions.get(f.stem, "")) for f in figures], [table]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def write_figures_and_report(
    result: SurveyResult, out: Path, figure_cache: Path | None = None
) -> list[Path]:
    """The figures and ``report.html`` of the survey (``figure_cache``: as
    :func:`survey_figures`)."""
    return _report(result, out, survey_figures(result, out, figure_cache))


def _report(result: SurveyResult, out: Path, files: list[FigureFiles]) -> list[Path]:
    """``report.html`` of the survey with its figures ``files``; the PNGs and the report."""
    figs, tables = report_section(result, files)
    s = result.summary
    write_report(
        out / "report.html",
        "nasfilter: the study's CNN survey (§3)",
        figs,
        tables=tables,
        provenance={
            "device": f"{s['device']}: {s['peak_tflops']:g} TFLOP/s FP16 tensor, "
            f"{s['bandwidth_tbs']:g} TB/s, CMR {s['cmr']:.0f}",
            "layout": s["layout"],
            "batch": str(s["batch"]),
            "measured": s["measured"] or "none",
            "predicted throughput": s["predictor"],
            "prediction vs measurement": s["predictor_note"],
            "accuracy": "timm's published ImageNet top-1 (results-imagenet.csv, Apache-2.0)",
        },
        footer="Generated by `nasfilter survey`; every number is in summary.json.",
    )
    return [*(f.png for f in files), out / "report.html"]
