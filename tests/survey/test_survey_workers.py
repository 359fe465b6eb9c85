"""The survey's cold analysis in several processes: the order models are handed out in, a
pooled analysis equal to an in-process one and to a cached re-run, and the faults (a worker
that dies, Ctrl-C) ending the run as they should instead of hanging."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nasfilter.survey import cache
from nasfilter.survey.analysis import ModelProfile
from nasfilter.survey.schedule import published_params, work_order
from tests.interrupts import sigint_default

ROOT = Path(__file__).parent.resolve().parent.parent
# Small models, one of which cannot be analysed (LeViT's attention biases do not fit 100 px).
PAIRS = [
    ("resnet18", 160),
    ("mobilenetv3_small_100", 224),
    ("regnetx_002", 224),
    ("efficientnet_b0", 224),
    ("levit_128s", 100),
]


def test_work_order_deals_the_costliest_first_to_both_ends() -> None:
    # Published parameter counts (results-imagenet.csv): resnet152 60.19 M, resnet50 25.56,
    # resnet18 11.69, mobilenetv3_small_100 2.54; an unpublished name counts as costliest.
    archs = ["resnet18", "mobilenetv3_small_100", "resnet152", "no_such_net", "resnet50.a1_in1k"]
    order = work_order(list(range(5)), archs)
    assert [archs[k] for k in order] == [
        "no_such_net",  # front: 1st, 3rd and 5th costliest
        "resnet50.a1_in1k",
        "mobilenetv3_small_100",
        "resnet18",  # back, read from the end: 2nd and 4th costliest
        "resnet152",
    ]
    assert work_order(list(range(5)), archs) == order  # a rank, not a timing: always the same


def test_work_order_refuses_unpaired_items() -> None:
    with pytest.raises(ValueError, match="3 items, 2 names"):
        work_order([1, 2, 3], ["resnet18", "resnet50"])


def test_published_params_read_thousands_separators() -> None:
    params = published_params()
    assert params["resnet50"] == 25.56
    assert params["eva_giant_patch14_560"] == 1014.45  # written "1,014.45" in the file


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.prof"))}


@pytest.mark.slow
def test_pooled_cold_analysis_equals_in_process_and_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every table (and the error) is the same byte for byte whichever process analysed it
    and in whichever order; a cached re-run reads the same profiles and starts no worker."""
    pooled = cache.profile_all(PAIRS, tmp_path / "pooled", jobs=2)
    cache.profile_all(PAIRS[::-1], tmp_path / "alone", jobs=1)
    files = _files(tmp_path / "pooled")
    assert len(files) == len(PAIRS)
    assert files == _files(tmp_path / "alone")
    assert isinstance(pooled[("levit_128s", 100)], str)
    assert "levit_128s" in str(pooled[("levit_128s", 100)])

    def no_pool(jobs: int) -> None:
        raise AssertionError("a cached re-run started workers")

    monkeypatch.setattr(cache, "worker_pool", no_pool)
    cached = cache.profile_all(PAIRS, tmp_path / "pooled", jobs=2)
    for key, prof in pooled.items():
        again = cached[key]
        if isinstance(prof, str):
            assert again == prof
            continue
        assert isinstance(again, ModelProfile)
        assert (again.params, again.fvcore_macs, again.input_shape) == (
            prof.params,
            prof.fvcore_macs,
            prof.input_shape,
        )
        assert again.table.names == prof.table.names
        assert (again.table.macs == prof.table.macs).all()


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.slow
def test_a_worker_that_dies_ends_the_analysis_with_broken_pool(tmp_path: Path) -> None:
    """A worker killed mid-run: the analysis raises BrokenProcessPool (within the bound, no
    hang), and every profile written before is whole."""
    script = """
        import multiprocessing, os, signal, sys, threading, time
        from concurrent.futures.process import BrokenProcessPool
        from pathlib import Path
        from nasfilter.survey.cache import profile_all

        folder = Path(sys.argv[1])
        pairs = [("resnet18", s) for s in range(96, 288, 8)]

        def kill():
            while True:
                kids = multiprocessing.active_children()
                if kids and len(list(folder.glob("*.prof"))) >= 2:
                    os.kill(kids[0].pid, signal.SIGKILL)
                    return
                time.sleep(0.02)

        threading.Thread(target=kill, daemon=True).start()
        try:
            profile_all(pairs, folder, jobs=2)
        except BrokenProcessPool as exc:
            print("broken:", exc)
        """
    done = _run(script, str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "broken: A process in the process pool was terminated abruptly" in done.stdout
    written = sorted(tmp_path.glob("*.prof"))
    assert 2 <= len(written) < 24  # the run stopped early
    for path in written:
        size = int(path.stem.split("@")[1])
        assert isinstance(cache.load(tmp_path, "resnet18", size), ModelProfile), path.name


@pytest.mark.slow
def test_ctrl_c_during_a_cold_survey(tmp_path: Path) -> None:
    """SIGINT to the survey's process group (what Ctrl-C sends) while it analyses: exit 130
    with a one-line message, no traceback, every cached profile whole, no process left."""
    models = ",".join(f"resnet18@{s}" for s in range(96, 288, 8))
    argv = [sys.executable, "-m", "nasfilter", "survey", "--models", models, "--jobs", "2"]
    argv += ["--cache", str(tmp_path / "c"), "--out", str(tmp_path / "o"), "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=sigint_default,  # Ctrl-C works even where pytest runs in the background
    )  # fmt: skip
    deadline = time.monotonic() + 200
    while len(list(tmp_path.glob("c/timm-*/*.prof"))) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "nasfilter survey: interrupted" in err and "Traceback" not in err
    folder = next(tmp_path.glob("c/timm-*"))
    written = sorted(folder.glob("*.prof"))
    assert 2 <= len(written) < 24
    for path in written:
        size = int(path.stem.split("@")[1])
        assert isinstance(cache.load(folder, "resnet18", size), ModelProfile), path.name
    for _ in range(100):  # the workers exit with the survey
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("a process of the interrupted survey is still running")


@pytest.mark.slow
def test_cold_survey_with_workers_equals_one_process_and_a_cached_rerun(tmp_path: Path) -> None:
    """``nasfilter survey --jobs 2`` on an empty cache (workers started before the timm index,
    then shared by the models and their folded models) writes the same rows, layers and
    summary as ``--jobs 1`` on another empty cache, and as a cached re-run."""
    from nasfilter.cli import main

    models = "resnet18@160,regnetx_002,mobilenetv3_small_100,levit_128s@100"

    def survey(cache_dir: str, out: str, jobs: int) -> dict[str, bytes]:
        argv = ["survey", "--models", models, "--device", "rtx4090", "--measured", "shipped"]
        argv += ["--cache", str(tmp_path / cache_dir), "--out", str(tmp_path / out)]
        assert main([*argv, "--jobs", str(jobs), "--quiet"]) == 0
        names = ("survey.csv", "layers.csv", "summary.json")
        return {n: (tmp_path / out / n).read_bytes() for n in names}

    pooled = survey("c2", "cold2", 2)
    assert survey("c1", "cold1", 1) == pooled
    assert survey("c2", "cached", 2) == pooled
    assert b"levit_128s@100" in pooled["summary.json"]  # reported as not analysed
    assert len(list((tmp_path / "c2").glob("timm-*/*@f4*.prof"))) >= 1  # folded ones too
