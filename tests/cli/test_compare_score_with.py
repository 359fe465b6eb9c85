"""`nasfilter compare --score-with`: stored runs scored on the user's own accuracies. Checked
three ways: the table's own scored column given as a file reproduces every stored metric;
another column's HV ratio matches moocore's hypervolume (an independent library) over the
run's evaluated architectures; and bad files and flags are refused by name."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.tss_real import tss_table
from nasfilter.cli import main
from nasfilter.oracle.measured import measured_proxy
from tests.tss_shared import moocore_hv_ratio

TSS = ("--space", "tss", "--budget", "4000")
SEARCHERS = ("random", "evolution")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("score-with") / "r.db")
    for dataset in ("cifar10", "cifar100"):
        assert main(["run", *TSS, "--dataset", dataset, "--searchers", *SEARCHERS,
                     "--seeds", "0-1", "--db", path]) == 0  # fmt: skip
    return path


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["compare", *argv, "--json"]) == 0
    return list(json.loads(capsys.readouterr().out))


def _save(path: Path, values: np.ndarray) -> str:
    np.save(path, values)
    return str(path)


def test_the_tables_own_accuracies_reproduce_every_stored_metric(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = {d: _save(tmp_path / f"{d}.npy", np.asarray(tss_table(d).test_acc))
           for d in ("cifar10", "cifar100")}  # fmt: skip
    stored = _json(capsys, "--db", db)
    again = _json(capsys, "--db", db, "--score-with", f"cifar10={own['cifar10']}",
                  "--score-with", f"cifar100={own['cifar100']}")  # fmt: skip
    assert len(stored) == len(again) == 8
    for a, b in zip(stored, again, strict=True):
        assert a["evaluated"] == b["evaluated"]
        for key in ("hv_ratio", "igd_plus", "epsilon", "recall", "best_acc", "selected_acc",
                    "front_size", "n_evaluations", "front"):  # fmt: skip
            assert a[key] == b[key], key
        assert a["accuracy"] == "hp-200 validation acc, seed mean"
        assert b["accuracy"] == f"acc from {b['dataset']}.npy (user-supplied)"


def test_other_accuracies_score_the_same_evaluations_as_moocore_does(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tss_table("cifar10")
    hp12 = np.asarray(table.valid_acc[:, 0])  # the real hp-12 column, a different ranking
    path = _save(tmp_path / "hp12.npy", hp12)
    log_thr = np.log10(measured_proxy("2080ti").throughput)
    stored = [r for r in _json(capsys, "--db", db) if r["dataset"] == "cifar10"]
    # the cifar100 runs scored on their table's own column (unchanged: checked above)
    own100 = _save(tmp_path / "c100.npy", np.asarray(tss_table("cifar100").test_acc))
    got = [r for r in _json(capsys, "--db", db, "--score-with", f"cifar10={path}",
                            "--score-with", f"cifar100={own100}") if r["dataset"] == "cifar10"]
    assert len(got) == len(stored) == 4
    moved = 0
    for old, new in zip(stored, got, strict=True):
        assert new["evaluated"] == old["evaluated"]
        assert new["hv_ratio"] == pytest.approx(moocore_hv_ratio(hp12, log_thr, new["evaluated"]),
                                                rel=1e-9)  # fmt: skip
        assert new["best_acc"] == pytest.approx(float(hp12[new["evaluated"]].max()))
        moved += new["hv_ratio"] != old["hv_ratio"]
    assert moved == 4  # another accuracy, other figures


def test_a_bare_file_scores_runs_of_one_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "one.db")
    assert main(["run", *TSS, "--dataset", "cifar100", "--searchers", "random",
                 "--seeds", "0", "--db", db]) == 0  # fmt: skip
    acc = np.asarray(tss_table("cifar100").test_acc).copy()
    acc[::2] = np.nan  # half unknown: left out of every front, the true one included
    path = _save(tmp_path / "half.npy", acc)
    (run,) = _json(capsys, "--db", db, "--score-with", path)
    known = [i for i in run["evaluated"] if i % 2]
    log_thr = np.log10(measured_proxy("2080ti").throughput)
    keep = ~np.isnan(acc)
    idx = np.flatnonzero(keep)
    assert run["hv_ratio"] == pytest.approx(
        moocore_hv_ratio(acc[keep], log_thr[keep], [int(np.searchsorted(idx, i)) for i in known]),
        rel=1e-9,
    )
    assert all(i % 2 for i in run["front"])
    capsys.readouterr()
    assert main(["compare", "--db", db, "--score-with", path]) == 0
    out = capsys.readouterr().out
    assert "scored on: acc from half.npy (user-supplied) for cifar100 (--score-with), in " \
        "place of the table's scored accuracy; the true front and every metric are " \
        "recomputed on it; 7813 architectures it holds none for are left out" in out
    header = out.splitlines()[2]  # the metrics' columns: the file's accuracy, not hp-200's
    assert "best acc from half.npy (user-supplied) (%)" in header and "hp-200" not in header


GOOD = np.linspace(40.0, 90.0, 15625)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (np.zeros(100), r"has shape \(100,\); give one accuracy per architecture, "
         r"\(15625,\) for tss, \(32768,\) for sss"),
        (np.linspace(40.0, 90.0, 32768), r"holds the sss space \(32768 architectures\), but "
         r"the runs' table is of the tss space \(15625\)"),
        (np.r_[GOOD[:-1], 101.0], r"architecture 15624 holds 101\.0"),
        (np.full(15625, np.nan), "holds no accuracy"),
        (np.full(15625, 50.0), r"holds one accuracy, 50\.0, for every architecture"),
    ],
)
def test_bad_accuracy_files_are_refused_naming_the_file(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], values: np.ndarray,
    message: str,
) -> None:
    bad, good = _save(tmp_path / "bad.npy", values), _save(tmp_path / "good.npy", GOOD)
    capsys.readouterr()
    argv = ["compare", "--db", db, "--score-with", f"cifar10={bad}", "--score-with",
            f"cifar100={good}"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and "bad.npy" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--score-with", "GOOD"], r"--score-with '.*good\.npy': the runs are on cifar10, "
         r"cifar100; give one file per dataset as DATASET=FILE"),
        (["--score-with", "cifar10=GOOD", "--score-with", "cifar10=GOOD"],
         "cifar10 is given twice"),
        (["--score-with", "cifar10=GOOD"], r"no accuracies are given for cifar100, which the runs "
         r"are on \(given: cifar10\)"),
        (["--score-with", "mnist=GOOD"], r"--score-with 'mnist=.*good\.npy': unknown dataset "
         "'mnist'"),
        (["--score-with", "cifar10=GOOD", "--score-with", "cifar100=GOOD", "--score-with",
          "ImageNet16-120=GOOD"], r"--score-with 'ImageNet16-120=.*good\.npy': no run is on "
         r"ImageNet16-120 \(the runs are on cifar10, cifar100\)"),
        (["--score-with", "cifar10=GOOD", "--recompute"], "give one of them"),
    ],
)
def test_bad_flags_are_refused_by_name(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
    message: str,
) -> None:
    good = _save(tmp_path / "good.npy", GOOD)
    capsys.readouterr()
    assert main(["compare", "--db", db, *(a.replace("GOOD", good) for a in extra)]) == 2
    assert re.search(message, capsys.readouterr().err)


def test_an_empty_database_is_reported_as_such_and_report_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nasfilter.runs.storage.sqlite_store import Store

    empty = str(tmp_path / "empty.db")
    Store(empty).close()
    good = _save(tmp_path / "good.npy", GOOD)
    capsys.readouterr()
    assert main(["compare", "--db", empty, "--score-with", good]) == 0
    assert capsys.readouterr().out == f"{empty}: no runs yet\n"
    assert main(["report", "--db", empty, "--out", str(tmp_path / "r"), "--score-with",
                 good]) == 2  # fmt: skip
    assert "--score-with: the database holds no runs to score" in capsys.readouterr().err


def test_a_file_that_is_not_an_array_is_refused_naming_it(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "junk.npy"
    junk.write_text("not numpy")
    assert main(["compare", "--db", db, "--score-with", f"cifar10={junk}"]) == 2
    err = capsys.readouterr().err
    assert f"accuracy file '{junk}' is not a .npy array" in err


def test_the_ceiling_is_computed_on_the_given_accuracies(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hp12 = _save(tmp_path / "hp12.npy", np.asarray(tss_table("cifar10").valid_acc[:, 0]))
    own100 = _save(tmp_path / "c100.npy", np.asarray(tss_table("cifar100").test_acc))
    capsys.readouterr()
    assert main(["compare", "--db", db, "--ceiling"]) == 0
    plain = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("ceiling")]
    assert main(["compare", "--db", db, "--ceiling", "--score-with", f"cifar10={hp12}",
                 "--score-with", f"cifar100={own100}"]) == 0  # fmt: skip
    mine = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("ceiling")]
    assert len(plain) == len(mine) == 2
    c10 = [i for i, ln in enumerate(plain) if "cifar10," in ln]
    c100 = [i for i, ln in enumerate(plain) if "cifar100," in ln]
    assert mine[c100[0]] == plain[c100[0]]  # cifar100's own column: the same line
    assert mine[c10[0]] != plain[c10[0]]  # another accuracy: another ceiling and mean


def test_report_scores_on_the_given_accuracies_as_compare_does(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    hp12 = _save(tmp_path / "hp12.npy", np.asarray(tss_table("cifar10").valid_acc[:, 0]))
    own100 = _save(tmp_path / "c100.npy", np.asarray(tss_table("cifar100").test_acc))
    given = ["--score-with", f"cifar10={hp12}", "--score-with", f"cifar100={own100}"]
    rows = _json(capsys, "--db", db, *given)
    out = tmp_path / "report"
    assert main(["report", "--db", db, "--out", str(out), *given]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Scored on the acc from hp12.npy (user-supplied) for cifar10 (--score-with)" in html
    # the figures' titles and the tables' captions name the swap after the table's label
    swap = "[scored here on hp12.npy (user-supplied), not on the table&#x27;s own column]"
    assert html.count(swap) >= 3  # the figures' data, the cifar10 table's caption
    assert "best acc from hp12.npy (user-supplied) (%)" in html  # the cifar10 table's header
    hv = [r["hv_ratio"] for r in rows if r["searcher"] == "random" and r["dataset"] == "cifar10"]
    mean, se = np.mean(hv), np.std(hv, ddof=1) / np.sqrt(2)
    assert f"<td>random</td><td>2</td><td>{mean:.3f} ± {se:.3f}</td>" in html
    assert main(["report", "--db", db, "--out", str(tmp_path / "plain")]) == 0
    plain = (tmp_path / "plain" / "report.html").read_text(encoding="utf-8")
    # the table's own accuracy in words (the header showed the code "valid@200" before)
    assert "<th>best hp-200 validation acc, seed mean (%)</th>" in plain
    assert "valid@200" not in plain and "user-supplied" not in plain
    assert main(["report", "--db", db, "--out", str(tmp_path / "r2"), "--score-with",
                 f"cifar10={hp12}"]) == 2  # fmt: skip
    assert "no accuracies are given for cifar100" in capsys.readouterr().err


def test_ceiling_on_the_given_accuracies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["ceiling", "--space", "tss", "--dataset", "cifar100", "--budget", "3000", "--json"]
    table = tss_table("cifar100")
    own = _save(tmp_path / "own.npy", np.asarray(table.test_acc))
    capsys.readouterr()
    assert main(base) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*base, "--score-with", own]) == 0
    same = json.loads(capsys.readouterr().out)
    assert same["accuracy"] == "acc from own.npy (user-supplied)"
    swap = " [scored here on own.npy (user-supplied), not on the table's own column]"
    assert same["table"].endswith(f"{swap}, cifar100")
    assert same["table"].replace(swap, "") == plain["table"]
    named = ("accuracy", "table")
    assert {k: v for k, v in same.items() if k not in named} == \
        {k: v for k, v in plain.items() if k not in named}  # the table's own column
    hp12 = np.asarray(table.valid_acc[:, 0])
    assert main([*base, "--score-with", f"cifar100={_save(tmp_path / 'hp12.npy', hp12)}"]) == 0
    other = json.loads(capsys.readouterr().out)
    # scored on the observed accuracy itself, the best set by it is its own front's best set:
    # the yardstick reaches the ceiling's lower figure or above (the ceiling's grid rounds)
    row = other["budgets"][0]
    assert row["observed_best_set_hv_ratio"] >= row["lower"] - 1e-9
    log_thr = np.log10(measured_proxy("2080ti").throughput)
    assert other["true_front"] == sorted(
        i for i in range(len(hp12))
        if not np.any((hp12 >= hp12[i]) & (log_thr >= log_thr[i])
                      & ((hp12 > hp12[i]) | (log_thr > log_thr[i])))
    )  # fmt: skip
    assert main([*base, "--score-with", f"cifar10={own}"]) == 2
    assert "no run is on cifar10 (the runs are on cifar100)" in capsys.readouterr().err


def test_sss_runs_rescore_on_the_real_tables_own_column_to_the_same_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import nasfilter

    db = str(tmp_path / "sss.db")
    assert main(["run", "--dataset", "cifar100", "--searchers", "random", "--seeds", "0-1",
                 "--budget", "20000", "--db", db, "--no-progress"]) == 0  # fmt: skip
    own = _save(tmp_path / "sss.npy", np.asarray(nasfilter.load_table(None, "cifar100").test_acc))
    stored = _json(capsys, "--db", db)
    again = _json(capsys, "--db", db, "--score-with", own)
    assert [r["accuracy"] for r in stored] == ["hp-90 validation acc"] * 2
    for a, b in zip(stored, again, strict=True):
        assert (a["hv_ratio"], a["front"], a["best_acc"]) == (b["hv_ratio"], b["front"],
                                                                b["best_acc"])  # fmt: skip
    tss_file = _save(tmp_path / "tss.npy", GOOD)
    assert main(["compare", "--db", db, "--score-with", tss_file]) == 2
    assert "holds the tss space (15625 architectures), but the runs' table is of the sss " \
        "space (32768); score the runs of one space at a time" in capsys.readouterr().err
    # a database of both spaces: each space's runs scored on a file of their own
    assert main(["run", *TSS, "--dataset", "cifar100", "--searchers", "random", "--seeds", "0",
                 "--db", db, "--no-progress"]) == 0  # fmt: skip
    tss_runs = _json(capsys, "--db", db, "--space", "tss", "--score-with", tss_file)
    sss_runs = _json(capsys, "--db", db, "--space", "sss", "--score-with", own)
    assert (len(tss_runs), len(sss_runs)) == (1, 2)
    assert tss_runs[0]["accuracy"] == "acc from tss.npy (user-supplied)"
