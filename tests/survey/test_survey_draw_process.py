"""The survey's figures drawn in a second process: the same files as drawn in the survey's
own process, its failures drawn here instead (a drawing error raised here), and no process
or half-written file left behind, whether it ends normally, is stopped, or is killed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.cli import main
from nasfilter.survey import draw_process, figures, output
from nasfilter.survey.draw_process import DrawingProcess
from nasfilter.survey.survey import SurveyResult
from tests.interrupts import sigint_default

pytest.importorskip("matplotlib")
ROOT = Path(__file__).parent.resolve().parent.parent

SUMMARY = {
    "measured": "test.csv",
    "device": "rtx4090",
    "layout": "nchw",
    "peak_tflops": 165.2,
    "cmr": 164.0,
    "predictor": "test predictor",
    "predictor_in_sample": False,
    "fold": 4,
}


def _rows(n: int = 40, cnn: bool = True) -> list[dict[str, Any]]:
    """``n`` survey rows of random figures (the drawing reads them, nothing checks them)."""
    rng = np.random.default_rng(7)
    rows = []
    for k in range(n):
        thr = float(10 ** rng.uniform(1, 4.5))
        below = bool(k % 3 == 0)
        rows.append(
            {
                "model": f"net{k}",
                "is_cnn": cnn,
                "utilization_source": "measured" if k % 2 else "predicted",
                "measured_throughput": thr if k % 2 else float("nan"),
                "predicted_throughput": thr * 1.1,
                "top1": float(rng.uniform(60, 85)),
                "utilization": float(rng.uniform(0.01, 0.6)),
                "flops": float(10 ** rng.uniform(8, 10)),
                "below_cmr": below,
                "folded_utilization": float(rng.uniform(0.1, 0.8)) if below else float("nan"),
                "folded_predicted_throughput": thr * 2 if below else float("nan"),
                "pareto_throughput_accuracy": k % 5 == 1,
                "pareto_utilization_accuracy": k % 7 == 1,
                "pareto_throughput_utilization": k % 4 == 1,
                "on_all_fronts": k == 1,
            }
        )
    return rows


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _no_temporary_files(folder: Path) -> None:
    assert not list(folder.glob(".*.tmp")), sorted(p.name for p in folder.iterdir())


def test_the_process_imports_matplotlib_and_not_torch() -> None:
    code = (
        "import sys\nimport nasfilter.survey.draw_process\nfrom nasfilter.survey import figures\n"
        "figures.preload()\nprint('matplotlib' in sys.modules, 'torch' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]


@pytest.mark.slow
def test_figures_drawn_beside_equal_those_drawn_here(tmp_path: Path) -> None:
    rows, here, beside = _rows(), tmp_path / "here", tmp_path / "beside"
    here.mkdir()
    beside.mkdir()
    expected = [figures.draw(rows, SUMMARY, here, stem) for stem in figures.FIGURES]
    with DrawingProcess() as drawing:
        assert drawing.draw(rows, SUMMARY, beside, figures.FIGURES)
        pid = drawing.pid
        made = drawing.results()
        assert drawing.failures == {}
    assert pid is not None and _gone(pid)  # it exits with the context
    assert [made[f.stem].title for f in expected] == [f.title for f in expected]
    assert [made[f.stem].png for f in expected] == [beside / f"{f.stem}.png" for f in expected]
    assert _files(beside) == _files(here)  # byte for byte: PNG and SVG


@pytest.mark.slow
def test_survey_figures_with_a_drawing_process_equal_serial_ones(tmp_path: Path) -> None:
    result = SurveyResult(_rows(12), {}, SUMMARY)
    here, beside = tmp_path / "here", tmp_path / "beside"
    here.mkdir()
    beside.mkdir()
    serial = output.survey_figures(result, here, tmp_path / "cache-a")
    with DrawingProcess() as drawing:
        parallel = output.survey_figures(result, beside, tmp_path / "cache-b", drawing, "in")
    assert [f.title for f in parallel] == [f.title for f in serial]
    assert _files(beside) == _files(here)
    kept_b = {p.name: p.read_bytes() for p in (tmp_path / "cache-b").glob("*-fig*")}
    assert kept_b == {p.name: p.read_bytes() for p in (tmp_path / "cache-a").glob("*-fig*")}


def test_a_figure_it_cannot_draw_is_drawn_here_with_the_same_error(tmp_path: Path) -> None:
    result = SurveyResult(_rows(5, cnn=False), {}, SUMMARY)  # no CNN: nothing to plot
    with DrawingProcess() as drawing:
        with pytest.raises(ValueError, match="no CNN in the survey rows"):
            output.survey_figures(result, tmp_path, None, drawing)
        assert set(drawing.failures) == set(figures.FIGURES)
        assert all("ValueError: no CNN" in why for why in drawing.failures.values())
    _no_temporary_files(tmp_path)


def test_a_process_killed_while_drawing_is_replaced_by_drawing_here(tmp_path: Path) -> None:
    rows, here, beside = _rows(), tmp_path / "here", tmp_path / "beside"
    here.mkdir()
    beside.mkdir()
    for stem in figures.FIGURES:
        figures.draw(rows, SUMMARY, here, stem)
    result = SurveyResult(rows, {}, SUMMARY)
    with DrawingProcess() as drawing:
        assert drawing.start() and drawing.pid is not None
        os.kill(drawing.pid, signal.SIGKILL)
        files = output.survey_figures(result, beside, None, drawing)
        assert set(drawing.failures) == set(figures.FIGURES)  # all drawn here
    assert [f.stem for f in files] == list(figures.FIGURES)
    assert _files(beside) == _files(here)
    _no_temporary_files(beside)


@pytest.mark.slow
def test_stopping_it_while_it_draws_leaves_no_process_and_no_partial_file(tmp_path: Path) -> None:
    rows, here = _rows(400), tmp_path / "here"
    here.mkdir()
    for stem in figures.FIGURES:
        figures.draw(rows, SUMMARY, here, stem)
    drawing = DrawingProcess()
    assert drawing.start()
    time.sleep(1.5)  # imported: drawing
    assert drawing.draw(rows, SUMMARY, tmp_path, figures.FIGURES)
    pid = drawing.pid
    assert pid is not None
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".fig1.png.*.tmp")) and not (tmp_path / "fig1.png").exists():
        assert time.monotonic() < deadline, "the drawing process never started a file"
        time.sleep(0.001)
    drawing.close()  # what Ctrl-C or an error in the survey's process does
    assert _gone(pid)
    _no_temporary_files(tmp_path)
    written = [p.name for p in tmp_path.iterdir() if p.is_file()]
    assert "fig2b.svg" not in written  # stopped before its last file
    for name in written:  # what it finished is whole
        assert (tmp_path / name).read_bytes() == (here / name).read_bytes(), name


def test_where_no_process_can_start_every_figure_is_drawn_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(draw_process.subprocess, "Popen", refuse)
    result = SurveyResult(_rows(8), {}, SUMMARY)
    with DrawingProcess() as drawing:
        files = output.survey_figures(result, tmp_path, None, drawing)
        assert drawing.pid is None
        assert "Resource temporarily unavailable" in drawing.failures["start"]
    assert all(f.png.stat().st_size > 0 and f.svg.stat().st_size > 0 for f in files)


def test_without_figures_to_draw_nothing_starts(tmp_path: Path) -> None:
    result = SurveyResult(_rows(8), {}, SUMMARY)
    output.survey_figures(result, tmp_path / "a", tmp_path / "cache")  # kept now
    (tmp_path / "b").mkdir()
    with DrawingProcess() as drawing:
        output.survey_figures(result, tmp_path / "b", tmp_path / "cache", drawing)
        assert drawing.pid is None and drawing.failures == {}
    assert _files(tmp_path / "b") == _files(tmp_path / "a")


MODELS = "resnet18@160,regnetx_002"


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A survey cache holding the tables of :data:`MODELS` (their figures not kept)."""
    root = tmp_path_factory.mktemp("drawn")
    assert main([*_argv(root / "cache"), "--out", str(root / "first")]) == 0
    return root / "cache"


def _argv(cache: Path) -> list[str]:
    argv = ["survey", "--models", MODELS, "--device", "rtx4090", "--measured", "shipped"]
    return [*argv, "--cache", str(cache), "--quiet"]


def _forget_figures(cache: Path) -> None:
    for folder in cache.glob("timm-*/figures"):
        shutil.rmtree(folder)


@pytest.mark.slow
def test_the_survey_draws_beside_only_with_jobs_and_figures_to_draw(
    tables: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []
    start = DrawingProcess.start

    def counted(self: DrawingProcess) -> bool:
        fresh = self.pid is None
        ok = start(self)
        if fresh and self.pid is not None:
            started.append(self.pid)
        return ok

    monkeypatch.setattr(DrawingProcess, "start", counted)
    _forget_figures(tables)
    assert main([*_argv(tables), "--out", str(tmp_path / "serial"), "--jobs", "1"]) == 0
    assert started == []  # --jobs 1: drawn in the survey's process
    _forget_figures(tables)
    assert main([*_argv(tables), "--out", str(tmp_path / "beside"), "--jobs", "2"]) == 0
    assert len(started) == 1 and _gone(started[0])
    assert main([*_argv(tables), "--out", str(tmp_path / "copied"), "--jobs", "2"]) == 0
    assert len(started) == 1  # every figure kept: nothing started
    serial = _files(tmp_path / "serial")
    assert {"fig1.png", "fig2b.svg", "layers.csv", "report.html"} <= set(serial)
    assert _files(tmp_path / "beside") == serial == _files(tmp_path / "copied")


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds processes in /proc")
def test_ctrl_c_while_the_figures_are_drawn(tables: Path, tmp_path: Path) -> None:
    """SIGINT to the survey's process group (what Ctrl-C sends) once the drawing process has
    written a figure: exit 130 with a one-line message, no traceback, no partial file, and
    the drawing process (in a session of its own, so Ctrl-C does not reach it) gone."""
    _forget_figures(tables)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "nasfilter", *_argv(tables), "--out", str(out), "--jobs", "2"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=sigint_default,  # Ctrl-C works even where pytest runs in the background
    )  # fmt: skip
    children: set[int] = set()
    deadline = time.monotonic() + 120
    while not (out / "fig1.png").exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "no figure drawn"
        children.update(_children(proc.pid))
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "nasfilter survey: interrupted" in err and "Traceback" not in err
    assert children and all(_gone(pid) for pid in children)
    _no_temporary_files(out)
    assert not (out / "report.html").exists()
