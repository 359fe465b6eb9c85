"""``nasfilter reproduce --space tss``: the tss study's files, checked against independent
references (HELP's latencies and NATS's FLOPs read with plain numpy from shared/data, issue
31's published Spearman, ``nasfilter run``'s scoring of the same run), and its bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import nasfilter.study.tss.run as tss_run
from nasfilter.cli import main
from nasfilter.study.reproduce import reproduce
from nasfilter.study.tss import COMPARED
from tests.tss_shared import moocore_hv_ratio, shared_tss

LABELS = ("approximate filtering (scan share 0.6)", "random search", "REINFORCE (MnasNet reward)")
METHODS = tuple(m for m in COMPARED if m.label in LABELS)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``reproduce --space tss`` on cifar10, the 2080 Ti, seeds 0 and 1, three methods."""
    folder = tmp_path_factory.mktemp("tss") / "study"
    patch = pytest.MonkeyPatch()
    patch.setattr(tss_run, "ALL_METHODS", METHODS)
    argv = ["reproduce", "--space", "tss", "--dataset", "cifar10", "--device", "2080ti",
            "--seeds", "0-1", "--out", str(folder), "--quiet"]  # fmt: skip
    try:
        assert main(argv) == 0
    finally:
        patch.undo()
    return folder


def pareto_max(x: np.ndarray, y: np.ndarray) -> list[int]:
    """Indices not dominated when maximizing both ``x`` and ``y`` (brute force)."""
    return [
        i
        for i in range(len(x))
        if not np.any((x >= x[i]) & (y >= y[i]) & ((x > x[i]) | (y > y[i])))
    ]


def test_every_file_is_written(out: Path) -> None:
    names = {p.name for p in out.iterdir()}
    assert names == {"results.json", "results.md", "summary.json", "report.html",
                     "fig3-cifar10-2080ti.png", "fig3-cifar10-2080ti.svg",
                     "cells-cifar10-2080ti-b256.npz"}  # fmt: skip
    summary = json.loads((out / "summary.json").read_text(), parse_constant=pytest.fail)
    assert summary["space"] == "tss" and len(summary["blocks"]) == 1
    block = summary["blocks"][0]
    assert (block["dataset"], block["device"], block["batch"], block["seeds"]) == (
        "cifar10", "2080ti", 256, [0, 1])  # fmt: skip
    assert [m["method"] for m in block["methods"]] == [m.label for m in METHODS]
    assert block["cells"] == "cells-cifar10-2080ti-b256.npz"
    with np.load(out / block["cells"]) as cells:  # one run per method, seed and budget
        assert sorted(cells.files) == sorted(f"m{k}-s{s}-t{t}" for k in range(3)
                                             for s in (0, 1) for t in (20000, 55000))  # fmt: skip
    (ceiling,) = summary["ceilings"]
    assert (ceiling["dataset"], ceiling["hardware"]) == (
        "cifar10",
        "RTX 2080 Ti, measured, batch 256",
    )
    # cifar10's whole true front costs under 20,000 s of hp-12 evaluations: the ceiling is 1
    assert ceiling["front_cost"] < 20_000 and ceiling["lower"][0] == 1.0
    assert ceiling["to_target"][0] <= ceiling["to_target"][1] < ceiling["front_cost"]
    assert 0 < ceiling["trusted"][0] <= 1.0


def test_fig3_numbers_equal_help_latency_and_issue_31(out: Path) -> None:
    fig3 = json.loads((out / "summary.json").read_text())["blocks"][0]["fig3"]
    throughput = 256 / (shared_tss("help_latency_ms_2080ti_256").astype(np.float64) / 1000)
    work = throughput * shared_tss("cifar10_flops_M").astype(np.float64)  # ∝ utilization
    expected = pareto_max(throughput, work)
    assert fig3["pareto_set"] == expected and fig3["pareto_set_size"] == 10
    # the published first look at the data: Spearman 0.694 on CIFAR-10, 2080 Ti, batch 256
    assert round(fig3["spearman_utilization_accuracy"], 3) == 0.694


def test_hv_ratio_equals_nasfilter_runs_scoring_of_the_same_run(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = json.loads((out / "summary.json").read_text())["blocks"][0]
    row = next(m for m in block["methods"] if m["method"] == "random search")
    db = tmp_path / "r.db"
    assert main(["run", "--space", "tss", "--searchers", "random", "--seeds", "0-1", "--budget",
                 "20000", "--jobs", "1", "--db", str(db), "--no-progress"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["compare", "--db", str(db), "--space", "tss", "--json"]) == 0
    rows = sorted(json.loads(capsys.readouterr().out), key=lambda r: r["seed"])
    np.testing.assert_allclose([s[0] for s in row["per_seed"]], [r["hv_ratio"] for r in rows])
    mean = np.mean([r["hv_ratio"] for r in rows])
    assert row["hv"]["20000"]["mean"] == pytest.approx(mean)
    # the cells kept for the run are what it evaluated by 20,000 s (compare's list also holds
    # the evaluation under way at the budget), and moocore's HV ratio over them (accuracy and
    # throughput read from shared/data) is the study's
    k = [m["method"] for m in block["methods"]].index("random search")
    acc, log_thr = shared_score_acc(), np.log10(shared_throughput())
    keep = np.isfinite(acc)
    with np.load(out / block["cells"]) as cells:
        for r, hv in zip(rows, row["per_seed"], strict=True):
            kept = cells[f"m{k}-s{r['seed']}-t20000"]
            assert set(kept) <= set(r["evaluated"])
            assert len(set(r["evaluated"]) - set(kept)) <= 1
            at = np.searchsorted(np.flatnonzero(keep), kept[keep[kept]])
            assert moocore_hv_ratio(acc[keep], log_thr[keep], list(at)) == pytest.approx(
                hv[0], rel=1e-9)  # fmt: skip


def test_report_labels_every_number(out: Path) -> None:
    page = (out / "report.html").read_text()
    for words in (
        "hp-200 validation accuracy (x-valid after 200 epochs), mean over NATS-Bench",
        "validation, not test",
        "measured 2080ti batch 256 (HELP latency; utilization vs FP32 peak)",
        "measured by HELP on each named GPU at batch 256",
        "measured: NATS-Bench&#x27;s per-epoch training times",
        "modelled: one validation pass per evaluation",
        "cifar10 0.3701",  # the fitted ratio, docs/tss.md
        "NATS record cifar10-valid",
        "Every method at 20,000 s",
        "Ablation of cheap signals",
        "The clairvoyant ceiling",
    ):
        assert words in page, words
    assert "test acc" not in page and "http://" not in page and "https://" not in page
    assert page.count("data:image/png;base64,") == 1


def test_resume_keeps_the_finished_blocks(out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = json.loads((out / "summary.json").read_text())

    def no_rerun(*args: object, **kwargs: object) -> None:
        raise AssertionError("a finished block was run again")

    monkeypatch.setattr(tss_run, "run_block", no_rerun)
    monkeypatch.setattr(tss_run, "ALL_METHODS", METHODS)  # the same methods: nothing reruns
    again = reproduce(out, space="tss", dataset="cifar10", device="2080ti", seeds=[0, 1],
                      quiet=True, resume=True)  # fmt: skip
    assert again["blocks"] == before["blocks"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--space", "tss", "--budget", "100"], "--budget: sss only"),
        (["--space", "tss", "--table", "real", "--jobs", "2"], "--table, --jobs: sss only"),
        (["--space", "tss", "--oracle", "calibrated"], "'calibrated' is an sss oracle, but the "
         "space is tss"),
        (["--space", "tss", "--device", "v100"], "measured GPUs: 1080ti, 2080ti, titanx, titanxp"),
        (["--space", "tss", "--device", "gold_6226"], "measured GPUs: 1080ti"),
        (["--space", "tss", "--oracle", "measured[batch=64]"], "measured batches: 1, 32, 256"),
        (["--dataset", "cifar10", "cifar100"], "--dataset cifar10 cifar100: the sss study takes "
         "one; several are for --space tss"),
        (["--resume"], "--resume is for --space tss"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_before_anything_is_written(
    argv: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "new"
    assert main(["reproduce", "--out", str(target), *argv]) == 2
    assert words in capsys.readouterr().err
    assert not target.exists()


def test_python_api_refuses_an_unknown_space_and_sss_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown space 'nb101'; choose sss or tss"):
        reproduce(tmp_path / "a", space="nb101")
    with pytest.raises(ValueError, match="does not take budget, workers: those are the sss"):
        reproduce(tmp_path / "a", space="tss", budget=10.0, workers=(1,))
    with pytest.raises(ValueError, match="several datasets or devices are for space='tss'"):
        reproduce(tmp_path / "a", dataset=["cifar10", "cifar100"])


def shared_score_acc() -> np.ndarray:
    """The hp-200 validation accuracy, seed mean, of every cifar10 cell from shared/data, the
    seed records flagged by NATS-Bench issue #36 masked (docs/tss.md's rule)."""
    acc = shared_tss("cifar10-valid_hp200_valid_acc").astype(np.float64)
    flagged = shared_tss("hp200_seed_record_params_mismatch")
    return np.asarray(np.nanmean(np.where(flagged, np.nan, acc), axis=1))


def shared_throughput() -> np.ndarray:
    """Images/s of every cell on the RTX 2080 Ti at batch 256, from HELP's latency in
    shared/data."""
    return 256 / (shared_tss("help_latency_ms_2080ti_256").astype(np.float64) / 1000)


def test_report_of_a_tss_database_draws_fronts_against_the_true_tss_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, folder = tmp_path / "r.db", tmp_path / "report"
    assert main(["run", "--space", "tss", "--searchers", "random,reinforce-mnas", "--seeds",
                 "0-1", "--budget", "20000", "--jobs", "1", "--db", str(db),
                 "--no-progress"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["compare", "--db", str(db), "--space", "tss", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    acc = shared_score_acc()
    thr = 256 / shared_tss("help_latency_ms_2080ti_256").astype(np.float64)
    true_front = set(pareto_max(acc, thr))
    assert len(true_front) == 45  # docs/tss-results.md, cifar10 on the 2080 Ti
    for row in rows:
        ev = np.asarray(sorted(set(row["evaluated"])))
        assert len(row["evaluated"]) == row["n_evaluations"]
        assert sorted(row["front"]) == sorted(int(ev[i]) for i in pareto_max(acc[ev], thr[ev]))
        assert row["recall"] == pytest.approx(len(true_front & set(row["front"])) / 45)
    assert main(["report", "--db", str(db), "--out", str(folder)]) == 0
    stems = {p.stem for p in folder.glob("*.png")}
    assert stems == {"c1_hv", "c1_front_0_random", "c1_front_1_reinforce-mnas"}
    page = (folder / "report.html").read_text()
    assert (
        "real NATS-Bench tss accuracies (observed hp-12 x-valid, seed mean; scored hp-200" in page
    )
    assert "measured 2080ti batch 256 (HELP latency; utilization vs FP32 peak)" in page
    # the metrics table names the scored accuracy in words, not by its code ("valid@200")
    assert "<th>best hp-200 validation acc, seed mean (%)</th>" in page
    assert "valid@200" not in page and page.count("data:image/png;base64,") == 3


@pytest.mark.browser
def test_tss_report_renders_in_chromium(out: Path, tmp_path: Path) -> None:
    from nasfilter.render.drawing import FigureFiles
    from tests.chromium import ChromiumMissing, find_chromium
    from tests.study.test_report_browser import Chromium, _assert_every_figure_renders

    try:
        find_chromium()
    except ChromiumMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    stem = "fig3-cifar10-2080ti"
    figs = [FigureFiles(stem, out / f"{stem}.png", out / f"{stem}.svg", stem)]
    with Chromium(width=1200, height=900) as browser:
        _assert_every_figure_renders(browser, out / "report.html", figs, tmp_path)


def test_demo_on_tss_names_the_spaces_size_and_what_is_measured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["demo", "--space", "tss", "--seeds", "0", "--budget", "20000", "--jobs", "1",
            "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "query the proxy for all 15625 architectures" in text and "32768" not in text
    assert "measured 2080ti batch 256" in text
    assert (
        "the simulated seconds are the measured training epochs plus a modelled validation" in text
    )
    assert "come from modelled times" not in text


def test_each_row_names_the_spec_that_reruns_it_with_nasfilter_run(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nasfilter.registry import parse_spec

    block = json.loads((out / "summary.json").read_text())["blocks"][0]
    row = next(m for m in block["methods"] if m["method"] == "REINFORCE (MnasNet reward)")
    name, params = parse_spec(row["searcher_spec"])
    # the MnasNet target on tss: the GPU's median measured throughput (HELP, shared/data)
    assert name == "reinforce-mnas" and params["target_throughput"] == pytest.approx(
        float(np.median(shared_throughput())), rel=1e-12)  # fmt: skip
    assert next(m for m in block["methods"] if m["method"] == "random search")[
        "searcher_spec"] == "random"  # fmt: skip
    db = tmp_path / "r.db"
    argv = ["run", "--space", "tss", "--searchers", row["searcher_spec"], "--seeds", "0-1",
            "--budget", "20000", "--jobs", "1", "--db", str(db), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["compare", "--db", str(db), "--space", "tss", "--json"]) == 0
    runs = sorted(json.loads(capsys.readouterr().out), key=lambda r: r["seed"])
    assert [r["hv_ratio"] for r in runs] == [s[0] for s in row["per_seed"]]
