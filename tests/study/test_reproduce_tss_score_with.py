"""``nasfilter reproduce --space tss --score-with``: the study's runs scored on other
accuracies from the cells they kept, without running them again. Checked against moocore's
hypervolume over the kept cells with accuracies and latencies read from shared/data, against
a brute-force true front, and against the study's own scores when the file is the table's
column; bad input is refused before anything runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import nasfilter.study.tss.run as tss_run
from nasfilter.cli import main
from nasfilter.runs.rescore import read_accuracies
from nasfilter.study.reproduce import reproduce
from nasfilter.study.tss import COMPARED
from nasfilter.study.tss.rescore import rescore_block, rescore_blocks
from tests.tss_shared import moocore_hv_ratio, shared_tss

LABELS = ("random search", "regularized evolution")
METHODS = tuple(m for m in COMPARED if m.label in LABELS)
STUDY = ("reproduce", "--space", "tss", "--dataset", "cifar10", "--device", "2080ti",
         "--seeds", "0-1", "--quiet")  # fmt: skip


def _no_rerun(*args: object, **kwargs: object) -> None:
    raise AssertionError("a finished block was run again")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tss study on cifar10, the 2080 Ti, seeds 0 and 1, two methods."""
    folder = tmp_path_factory.mktemp("tss") / "study"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tss_run, "ALL_METHODS", METHODS)
        assert main([*STUDY, "--out", str(folder)]) == 0
    return folder


def seed777() -> np.ndarray:
    """cifar10's hp-200 validation accuracy of training seed 777 from shared/data, NaN where
    NATS-Bench's record is flagged (issue #36) or missing."""
    acc = shared_tss("cifar10-valid_hp200_valid_acc")[:, 0].astype(np.float64)
    flagged = shared_tss("hp200_seed_record_params_mismatch")[:, 0]
    return np.where(flagged, np.nan, acc)


def log_throughput() -> np.ndarray:
    """log10 images/s of every cell on the RTX 2080 Ti at batch 256 (HELP, shared/data)."""
    return np.log10(256 / (shared_tss("help_latency_ms_2080ti_256").astype(np.float64) / 1000))


@pytest.fixture(scope="module")
def rescored(study: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of ``study`` scored on seed 777's accuracy, in place, without running again."""
    folder = tmp_path_factory.mktemp("rescored") / "study"
    shutil.copytree(study, folder)
    path = folder.parent / "seed777.npy"
    np.save(path, seed777())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tss_run, "ALL_METHODS", METHODS)
        patch.setattr(tss_run, "run_block", _no_rerun)
        assert main([*STUDY, "--out", str(folder), "--resume", "--score-with", str(path)]) == 0
    return folder


def test_each_runs_hv_ratio_is_moocores_over_its_cells_on_the_file(
    study: Path, rescored: Path
) -> None:
    summary = json.loads((rescored / "summary.json").read_text(), parse_constant=pytest.fail)
    (block,) = summary["blocks"]
    (before,) = json.loads((study / "summary.json").read_text())["blocks"]
    acc, log_thr = seed777(), log_throughput()
    keep = np.isfinite(acc)
    moved = 0
    with np.load(rescored / block["cells"]) as cells:
        for k, (row, old) in enumerate(zip(block["methods"], before["methods"], strict=True)):
            for seed, hv, old_hv in zip((0, 1), row["per_seed"], old["per_seed"], strict=True):
                for t, value in zip(("20000", "55000"), hv, strict=True):
                    kept = cells[f"m{k}-s{seed}-t{t}"]
                    at = np.searchsorted(np.flatnonzero(keep), kept[keep[kept]])
                    assert value == pytest.approx(
                        moocore_hv_ratio(acc[keep], log_thr[keep], list(at)), rel=1e-9)  # fmt: skip
                moved += hv != old_hv
            mean = np.mean([h[0] for h in row["per_seed"]])
            assert row["hv"]["20000"]["mean"] == pytest.approx(mean)
    assert moved == 4  # another accuracy, other figures
    assert summary["scored_with"] == {"cifar10": str(rescored.parent / "seed777.npy")}


def test_the_ceiling_is_recomputed_on_the_file(rescored: Path) -> None:
    (row,) = json.loads((rescored / "summary.json").read_text())["ceilings"]
    acc, log_thr = seed777(), log_throughput()
    keep = np.flatnonzero(np.isfinite(acc))
    a, t = acc[keep], log_thr[keep]
    front = [i for i in range(len(a))
             if not np.any((a >= a[i]) & (t >= t[i]) & ((a > a[i]) | (t > t[i])))]  # fmt: skip
    assert row["front_size"] == len(front) != 45  # 45: the table's own front (docs/tss-results.md)


def test_the_files_name_what_scored_them_and_results_json_keeps_the_tables(
    study: Path, rescored: Path
) -> None:
    assert (rescored / "results.json").read_bytes() == (study / "results.json").read_bytes()
    words = "acc from seed777.npy (user-supplied)"
    for name in ("results.md", "report.html", "summary.json"):
        text = (rescored / name).read_text()
        assert words in text, name
        assert "x-valid after 200 epochs), mean over" not in text, name  # the table's label
    assert "real: hp-200 validation accuracy" in (study / "summary.json").read_text()
    hv = json.loads((rescored / "summary.json").read_text())["labels"]["hv_ratio"]
    assert "full evaluations at their accuracies in each dataset's file and measured" in hv


def test_the_tables_own_column_as_a_file_gives_the_studys_scores(
    study: Path, tmp_path: Path
) -> None:
    from nasfilter.bench.tss_real import tss_table

    path = tmp_path / "own.npy"
    np.save(path, np.asarray(tss_table("cifar10").test_acc))
    blocks = json.loads((study / "results.json").read_text())
    (again,) = rescore_blocks(blocks, study, {"cifar10": read_accuracies(path, "cifar10")})
    for old, new in zip(blocks[0]["methods"], again["methods"], strict=True):
        assert new["per_seed"] == old["per_seed"] and new["hv"] == old["hv"]


def test_resume_without_the_file_writes_the_tables_scores_back(
    study: Path, rescored: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = rescored.parent / "back"
    shutil.copytree(rescored, folder)
    monkeypatch.setattr(tss_run, "ALL_METHODS", METHODS)
    monkeypatch.setattr(tss_run, "run_block", _no_rerun)
    assert main([*STUDY, "--out", str(folder), "--resume"]) == 0
    assert json.loads((folder / "summary.json").read_text()) == json.loads(
        (study / "summary.json").read_text())  # fmt: skip


def test_a_block_without_its_cells_is_run_again(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "study"
    shutil.copytree(study, folder)
    (folder / "cells-cifar10-2080ti-b256.npz").unlink()
    block = json.loads((folder / "results.json").read_text())[0]
    missing = r"cells file .*cells-cifar10-2080ti-b256\.npz' is missing"
    accuracies = read_accuracies(_save(tmp_path, seed777()), "cifar10")
    with pytest.raises(ValueError, match=missing):
        rescore_block(block, folder, accuracies)
    old = {k: v for k, v in block.items() if k != "cells"}  # a block of an earlier build
    with pytest.raises(ValueError, match="cifar10 2080ti block was written before the study kept"):
        rescore_block(old, folder, accuracies)

    class Ran(Exception):
        pass

    def ran(*args: object, **kwargs: object) -> None:
        raise Ran

    monkeypatch.setattr(tss_run, "ALL_METHODS", METHODS)
    monkeypatch.setattr(tss_run, "run_block", ran)
    with pytest.raises(Ran):
        reproduce(folder, space="tss", dataset="cifar10", device="2080ti", seeds=[0, 1],
                  quiet=True, resume=True)  # fmt: skip


def _save(folder: Path, values: np.ndarray, name: str = "acc.npy") -> Path:
    np.save(folder / name, values)
    return folder / name


def test_bad_input_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(_save(tmp_path, seed777()))
    target = tmp_path / "new"
    cases = [
        (["--space", "tss", "--dataset", "cifar10", "cifar100", "--score-with", f"cifar10={path}"],
         "no accuracies are given for cifar100, which the study runs on (given: cifar10)"),
        (["--space", "tss", "--dataset", "cifar10", "cifar100", "--score-with", path],
         "the runs are on cifar10, cifar100; give one file per dataset as DATASET=FILE"),
        (["--space", "tss", "--dataset", "cifar10", "--score-with", f"cifar100={path}"],
         "no run is on cifar100"),
        (["--space", "tss", "--dataset", "cifar10", "--score-with", str(tmp_path / "no.npy")],
         "no.npy"),
        (["--score-with", path], "--score-with is for --space tss"),
    ]  # fmt: skip
    for argv, words in cases:
        assert main(["reproduce", "--out", str(target), *argv]) == 2
        assert words in capsys.readouterr().err, argv
        assert not target.exists()
    wrong = str(_save(tmp_path, np.linspace(40.0, 90.0, 32768), "sss.npy"))
    assert main(["reproduce", "--out", str(target), "--space", "tss", "--dataset", "cifar10",
                 "--score-with", wrong]) == 2  # fmt: skip
    assert "holds the sss space (32768 architectures)" in capsys.readouterr().err
    accuracies = {"cifar10": read_accuracies(path, "cifar10")}
    with pytest.raises(ValueError, match="score_with is for space='tss'"):
        reproduce(target, score_with=accuracies)


def test_a_cells_file_that_is_not_one_is_refused_by_name(tmp_path: Path) -> None:
    from nasfilter.study.tss.cells import load_cells, save_cells

    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"cells file .*bad\.npz' is not a \.npz of cells"):
        load_cells(bad)
    for name, cells in (("unsorted", [5, 3]), ("repeated", [3, 3]), ("outside", [15625])):
        path = tmp_path / f"{name}.npz"
        save_cells(path, {"m0-s0-t20000": np.asarray(cells)})
        with pytest.raises(ValueError, match=r"m0-s0-t20000 does not hold distinct sorted cell "
                           r"indices in 0\.\.15624"):  # fmt: skip
            load_cells(path)
    save_cells(tmp_path / "good.npz", {"m0-s0-t20000": np.asarray([0, 7, 15624])})
    assert load_cells(tmp_path / "good.npz")["m0-s0-t20000"].tolist() == [0, 7, 15624]


def test_a_study_without_a_combined_method_shows_none_in_the_goals(rescored: Path) -> None:
    goals = (rescored / "results.md").read_text().split("### Goals at 20,000 s")[1]
    row = next(line for line in goals.splitlines() if line.startswith("| cifar10 |"))
    assert row.endswith("| – |")  # random search and evolution: one fidelity, no hardware


def test_scoring_a_finished_study_without_resume_is_pointed_to_it(
    study: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(_save(tmp_path, seed777()))
    before = sorted((p.name, p.stat().st_mtime_ns) for p in study.iterdir())
    assert main([*STUDY, "--out", str(study), "--score-with", path]) == 2
    assert ("exists and is not empty; choose a new folder or pass --force (force=True) to "
            "overwrite the files reproduce writes there; or --resume to keep the blocks it "
            "finished (and score them with --score-with)") in capsys.readouterr().err  # fmt: skip
    assert sorted((p.name, p.stat().st_mtime_ns) for p in study.iterdir()) == before
