"""``nasfilter reproduce --db FILE`` (sss): every run of the study kept in a results database,
read back by ``compare`` with the study's own figures, and not run again when the database
holds it already."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import nasfilter.runs.experiment as experiment
from nasfilter.cli import main
from nasfilter.study.reproduce import FILTERING, REINFORCE_MNAS, reproduce

ARGS: dict[str, Any] = {"seeds": [0], "budget": 80_000.0, "workers": (1,), "quiet": True,
                        "survey": False, "methods": [FILTERING, REINFORCE_MNAS]}  # fmt: skip


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("study")
    db = folder / "runs.db"
    return db, reproduce(folder / "out", db=db, **ARGS)


@pytest.mark.slow
def test_compare_reads_the_studys_runs_with_its_figures(
    study: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, summary = study
    capsys.readouterr()
    assert main(["compare", "--db", str(db), "--json"]) == 0
    rows = {(r["searcher"], r["seed"]): r for r in json.loads(capsys.readouterr().out)}
    assert len(rows) == len(summary["runs"]) == 2
    for run in summary["runs"]:
        row = rows[(run["searcher"], run["seed"])]
        for key in ("hv_ratio", "recall", "best_acc", "front_size"):
            assert row[key] == run["metrics"][key], key
        assert len(set(row["evaluated"])) == run["metrics"]["n_evaluated"]


@pytest.mark.slow
def test_a_second_study_on_the_database_runs_nothing_again(
    study: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, summary = study

    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("a run the database holds was run again")

    monkeypatch.setattr(experiment, "run_one", no_run)
    again = reproduce(tmp_path / "out", db=db, **ARGS)
    assert [r["metrics"] for r in again["runs"]] == [r["metrics"] for r in summary["runs"]]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--space", "tss", "--db", "{tmp}/r.db"], "--db: sss only"),
        (["--db", "{tmp}/new/r.db"], "lies inside the output folder --out"),
        (["--db", "{tmp}"], "is a folder; give a database file name inside it"),
        (["--db", "{tmp}/nowhere/r.db"], "nowhere"),
    ],
)
def test_bad_db_is_refused_before_anything_runs(
    argv: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "new"
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(["reproduce", "--out", str(target), *argv]) == 2
    assert words in capsys.readouterr().err
    assert not target.exists() and not (tmp_path / "r.db").exists()
