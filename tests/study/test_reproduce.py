"""`nasfilter reproduce`: every output, numbers checked against independent references."""

from __future__ import annotations

import base64
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from nasfilter.bench.lookup import load_table
from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.spaces.sss import N_ARCHS
from nasfilter.cli import main
from nasfilter.study.reproduce import (
    FIGURE_STEMS,
    METHODS,
    OUTPUT_FILES,
    MissingColumnError,
    check_out_dir,
    reproduce,
    require_proxy,
)
from tests.paths import NATS_SSS_FIXTURE

SEEDS = (0, 1)
BUDGET = 80_000.0  # enough for approximate filtering to scan the space and evaluate its front
FIXTURE = NATS_SSS_FIXTURE


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("study") / "out"
    argv = ["reproduce", "--out", str(folder), "--seeds", "0-1", "--budget", str(BUDGET)]
    assert main([*argv, "--quiet"]) == 0
    return folder


@pytest.fixture(scope="module")
def summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text("utf-8"))
    return data


@pytest.fixture(scope="module")
def inputs() -> tuple[Any, ProxyTable]:
    from nasfilter.oracle import proxy_table

    # reproduce's default oracle: the calibrated GPU model on a V100
    return load_table(None, "cifar10"), proxy_table("calibrated", "v100", "cifar10")


@pytest.mark.slow
def test_every_output_is_written(out: Path, summary: dict[str, Any]) -> None:
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_FILES)
    for stem in FIGURE_STEMS:
        assert (out / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        root = ET.fromstring((out / f"{stem}.svg").read_text("utf-8"))
        # Every figure's title names the table's provenance and the oracle. A long label (the
        # calibrated model's names its fit data) wraps onto several <text> lines: join them.
        lines = [" ".join(el.itertext()) for el in root.iter() if el.tag.endswith("}text")]
        text = " ".join(" ".join(lines).split())
        assert "real NATS-Bench accuracies (hp-90 x-valid, seed 777); modelled times" in text
        assert "SYNTHETIC" not in text and summary["oracle_label"] in text, stem
    params = summary["parameters"]
    assert params["seeds"] == list(SEEDS) and params["budget_seconds"] == BUDGET
    assert summary["synthetic_table"] is False  # the default: the real table
    assert summary["table"]["synthetic"] is False and summary["table"]["path"] == "real"
    assert summary["accuracy_label"] == "real validation accuracy after 90 epochs, seed 777"
    assert len(summary["runs"]) == len(METHODS) * len(SEEDS)


@pytest.mark.slow
def test_report_includes_the_cnn_survey(out: Path, summary: dict[str, Any]) -> None:
    # timm is in the test extra, so the survey section is there (docs/survey.md).
    survey = summary["survey"]
    assert survey["device"] == "rtx4090" and survey["n_cnn_models"] == 8
    assert survey["n_cnn_rows_measured"] > 0 and 0 < survey["median_measured_utilization_cnn"] < 1
    for name in ("survey.csv", "layers.csv", "summary.json", "fig1.png", "fig2a.png", "fig2b.png"):
        assert (out / "survey" / name).stat().st_size > 0, name
    html = (out / "report.html").read_text("utf-8")
    assert "CNN survey" in html and 'id="img-fig2b"' in html


@pytest.mark.slow
def test_fig3_numbers_match_independent_references(
    summary: dict[str, Any], inputs: tuple[Any, ProxyTable]
) -> None:
    import moocore

    table, proxy = inputs
    points = np.stack([proxy.throughput, proxy.utilization], axis=1)
    expected = np.flatnonzero(moocore.is_nondominated(points, maximise=True, keep_weakly=True))
    fig3 = summary["fig3"]
    assert fig3["pareto_set"] == expected.tolist()
    assert fig3["pareto_throughput_utilization"] == expected.size
    assert fig3["n_architectures"] == N_ARCHS
    # Spearman as the Pearson correlation of ranks, not through scipy's spearmanr.
    ranks = [stats.rankdata(x) for x in (proxy.utilization, table.test_acc)]
    rho = np.corrcoef(ranks[0], ranks[1])[0, 1]
    assert fig3["spearman_utilization_accuracy"] == pytest.approx(rho, abs=1e-12)


@pytest.mark.slow
def test_true_front_matches_moocore(
    summary: dict[str, Any], inputs: tuple[Any, ProxyTable]
) -> None:
    import moocore

    table, proxy = inputs
    points = np.stack([table.test_acc, proxy.throughput], axis=1)
    expected = np.flatnonzero(moocore.is_nondominated(points, maximise=True, keep_weakly=True))
    assert summary["true_front"]["indices"] == expected.tolist()
    np.testing.assert_array_equal(summary["true_front"]["test_acc"], table.test_acc[expected])


@pytest.mark.slow
def test_fronts_of_figs_5_and_6_are_non_dominated_subsets(
    summary: dict[str, Any], inputs: tuple[Any, ProxyTable]
) -> None:
    import moocore

    table, proxy = inputs
    fig5, fig6 = summary["fig5"], summary["fig6"]
    assert set(fig5["front"]) <= set(fig5["evaluated"])
    assert fig5["front"], "approximate filtering evaluated nothing within the budget"
    assert set(fig6["fronts"]) == {str(s) for s in SEEDS}  # one panel per seed
    for front in [fig5["front"], *fig6["fronts"].values()]:
        pts = np.stack([table.test_acc[front], proxy.throughput[front]], axis=1)
        assert moocore.is_nondominated(pts, maximise=True, keep_weakly=True).all()
    # The evaluated set of approximate filtering is the throughput-utilization Pareto set.
    assert fig5["evaluated"] == summary["fig3"]["pareto_set"]


@pytest.mark.slow
def test_metrics_table_aggregates_the_runs(summary: dict[str, Any]) -> None:
    for row in summary["metrics_table"]:
        runs = [r for r in summary["runs"] if r["method"] == row["method"]]
        assert row["runs"] == len(runs) == len(SEEDS)
        hv = [r["metrics"]["hv_ratio"] for r in runs]
        assert row["hv_ratio"]["mean"] == pytest.approx(np.mean(hv))
        assert row["hv_ratio"]["se"] == pytest.approx(stats.sem(hv), abs=1e-12)
        proxy_s = [r["summary"]["proxy_seconds"] for r in runs]
        assert row["proxy_seconds"]["mean"] == pytest.approx(np.mean(proxy_s))
    curves = summary["comparison"]["curves"]
    times = summary["comparison"]["times_seconds"]
    assert times[-1] == pytest.approx(BUDGET) and len(times) == 100
    for label, curve in curves.items():
        runs = [r["hv_ratio_curve"] for r in summary["runs"] if r["method"] == label]
        np.testing.assert_allclose(curve["mean"], np.mean(runs, axis=0))
        for r in (r for r in summary["runs"] if r["method"] == label):
            # The curve ends at the budget; a run's last evaluation may end after it (as in
            # NATS-Bench's `while total < budget`), and only then can the final HV be higher.
            final, at_budget = r["metrics"]["hv_ratio"], r["hv_ratio_curve"][-1]
            if r["summary"]["clock"] <= BUDGET:
                assert at_budget == pytest.approx(final)
            else:
                assert at_budget <= final + 1e-12


@pytest.mark.slow
def test_the_workers_comparison(out: Path, summary: dict[str, Any]) -> None:
    wc = summary["workers_comparison"]
    assert wc["workers"] == [1, 4, 16] == summary["parameters"]["workers"]
    assert set(wc["methods"]) == {m.label for m in METHODS}
    times = np.asarray(wc["times_seconds"])
    every_k = {m.label for m in METHODS if m.every_k}
    assert every_k and every_k != {m.label for m in METHODS}  # the peers run at K=1 only
    for label, per_k in wc["methods"].items():
        assert set(per_k) == ({"1", "4", "16"} if label in every_k else {"1"})
        for entry in per_k.values():
            assert entry["runs"] == len(SEEDS)
            band = np.asarray(entry["band"]["mean"], dtype=float)
            for f, point in zip(wc["fractions"], entry["at_fractions"], strict=True):
                i = int(np.searchsorted(times, f * BUDGET - 1e-9))
                assert point["mean"] == pytest.approx(band[i])
        # K=1 is the metrics table's run set.
        assert per_k["1"]["band"]["mean"] == pytest.approx(
            summary["comparison"]["curves"][label]["mean"]
        )
    # Four workers share the evaluations of REINFORCE: its runs end sooner on the wall clock.
    reinforce = wc["methods"]["REINFORCE (accuracy reward)"]
    walls = [reinforce[k]["wall_clock_seconds"]["mean"] for k in ("1", "4", "16")]
    assert walls[0] > 3 * walls[1] > 3 * 3 * walls[2] * 0.9
    page = (out / "report.html").read_text("utf-8")
    assert "Simulated parallel workers" in page and "HV ratio at 5,000 s" in page


@pytest.mark.slow
def test_markdown_and_csv_tables(out: Path, summary: dict[str, Any]) -> None:
    md = (out / "metrics.md").read_text("utf-8")
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert len(rows) == len(METHODS) + 1  # the header and one row per method
    assert summary["table_label"] in md and summary["oracle_label"] in md
    csv_lines = (out / "metrics.csv").read_text("utf-8").splitlines()
    assert len(csv_lines) == len(METHODS) + 1
    assert csv_lines[0].startswith("method,searcher,filter,runs,hv_ratio_mean,hv_ratio_se")


@pytest.mark.slow
def test_the_ceiling_bounds_every_runs_curve(out: Path, summary: dict[str, Any]) -> None:
    ceiling = summary["ceiling"]
    assert ceiling["dataset"] == "cifar10" and ceiling["hardware"] == summary["oracle_label"]
    assert ceiling["front_size"] == len(summary["true_front"]["indices"])
    times = (20_000.0, 55_000.0)
    assert all(lo <= hi <= 1.0 for lo, hi in zip(ceiling["lower"], ceiling["upper"], strict=True))
    at_least = ceiling["to_target"][0]  # no set of evaluations cheaper than this reaches 0.99
    for run in summary["runs"]:
        curve = np.asarray(run["hv_ratio_curve"], dtype=float)
        ticks = BUDGET * np.arange(1, len(curve) + 1) / len(curve)  # nasfilter's tick_times
        for t, upper in zip(times, ceiling["upper"], strict=True):
            assert np.all(curve[ticks <= t] <= upper + 1e-12), run["method"]
        # one worker: a run's evaluations by time t cost at most t
        assert not np.any((curve >= 0.99) & (ticks < at_least)), run["method"]
    page = (out / "report.html").read_text("utf-8")
    assert "How high could any run go? The clairvoyant ceiling" in page


@pytest.mark.slow
def test_report_embeds_every_figure(out: Path, summary: dict[str, Any]) -> None:
    page = (out / "report.html").read_text("utf-8")
    for stem in FIGURE_STEMS:
        png = base64.b64encode((out / f"{stem}.png").read_bytes()).decode()
        assert f'id="img-{stem}"' in page
        assert f"data:image/png;base64,{png}" in page
    assert "Real: the accuracies (real NATS-Bench accuracies (hp-90 x-valid" in page
    assert "Modelled: modelled times" in page and "SYNTHETIC" not in page
    assert "http://" not in page and "https://" not in page


@pytest.mark.slow
@pytest.mark.browser
def test_report_renders_in_chromium(out: Path) -> None:
    from tests.chromium import Chromium, ChromiumMissing, find_chromium
    from tests.study.test_report_browser import IMAGE_STATUS_JS

    try:
        find_chromium()
    except ChromiumMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    with Chromium() as browser:
        browser.open(out / "report.html")
        status = browser.evaluate(IMAGE_STATUS_JS)
    # The NAS figures, then the CNN survey's Fig. 1, 2a and 2b.
    stems = (*FIGURE_STEMS, "fig1", "fig2a", "fig2b")
    assert [s["id"] for s in status] == [f"img-{stem}" for stem in stems]
    for s in status:
        assert s["complete"] and s["decoded"] and s["naturalWidth"] > 0, s


# ------------------------------------------------------------------ bad input
@pytest.mark.slow
def test_non_empty_out_dir_is_refused(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (out / "summary.json").stat().st_mtime_ns
    assert main(["reproduce", "--out", str(out), "--seeds", "0", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "not empty" in err and "--force" in err
    assert (out / "summary.json").stat().st_mtime_ns == before
    with pytest.raises(FileExistsError, match="--force"):
        reproduce(out, seeds=[0], budget=1000.0, quiet=True)
    assert check_out_dir(out, force=True) == out
    assert check_out_dir(out.parent / "new", force=False) == out.parent / "new"


def test_partial_table_names_the_missing_column(tmp_path: Path) -> None:
    from nasfilter.bench.convert import convert_archive

    path = tmp_path / "fixture.npz"
    convert_archive(FIXTURE, "cifar10", allow_partial=True, progress=False).save(path)
    target = tmp_path / "out"
    with pytest.raises(MissingColumnError) as info:
        reproduce(target, table=path, seeds=[0], budget=1000.0, quiet=True)
    message = str(info.value)
    assert "'test_acc'" in message and f"{N_ARCHS - 3} of {N_ARCHS}" in message
    assert "nasfilter convert" in message and "real-archive.md" in message
    assert not target.exists()


def test_incomplete_proxy_names_the_missing_columns() -> None:
    util = np.full(N_ARCHS, np.nan)
    util[:10] = 0.5
    proxy = ProxyTable(util, np.where(np.isfinite(util), 1e5, np.nan), "partial sample")
    with pytest.raises(MissingColumnError, match="'utilization' and 'throughput'") as info:
        require_proxy(proxy, "onnxruntime")
    assert "nasfilter measure --backend onnxruntime --archs all" in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seeds": []}, "seed list is empty"),
        ({"seeds": [-1]}, "seeds must be integers >= 0"),
        ({"budget": 0.0}, "budget must be finite simulated seconds > 0"),
        ({"budget": math.nan}, "budget must be finite"),
        ({"jobs": 0}, "jobs must be an integer >= 1"),
        ({"workers": [1, 0]}, "workers must be an integer from 1 to 4096"),
        ({"workers": []}, "workers must name at least one K"),
        ({"backend": "nope"}, "unknown backend 'nope'; known backends: .*roofline"),
    ],
)
def test_bad_arguments_fail_before_writing(
    tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    target = tmp_path / "out"
    with pytest.raises(ValueError, match=message):
        reproduce(target, quiet=True, **kwargs)
    assert not target.exists()


@pytest.mark.slow
def test_the_report_sets_both_analytic_oracles_side_by_side(
    out: Path, summary: dict[str, Any], inputs: tuple[Any, ProxyTable]
) -> None:
    import moocore

    from nasfilter.oracle.roofline import roofline

    table, cal = inputs
    records = summary["oracles"]["oracles"]
    # the run's oracle (the default, calibrated) first, the plain roofline baseline beside it
    assert [r["backend"] for r in records] == ["calibrated", "roofline"]
    assert summary["oracles"]["skipped"] == {}
    roof = roofline("v100", "cifar10").proxy_table()
    for rec, proxy in zip(records, (cal, roof), strict=True):
        assert rec["label"] == proxy.label
        points = np.stack([proxy.throughput, proxy.utilization], axis=1)
        front = np.flatnonzero(moocore.is_nondominated(points, maximise=True, keep_weakly=True))
        assert rec["front"] == front.tolist() and rec["front_size"] == front.size
        assert rec["utilization"]["median"] == pytest.approx(np.median(proxy.utilization))
        ranks = [stats.rankdata(x) for x in (proxy.utilization, table.test_acc)]
        rho = np.corrcoef(ranks[0], ranks[1])[0, 1]
        assert rec["spearman_utilization_accuracy"] == pytest.approx(rho, abs=1e-12)
    shared = len(set(records[0]["front"]) & set(records[1]["front"]))
    assert records[1]["front_overlap_with_first"] == shared
    assert records[0]["front_overlap_with_first"] == records[0]["front_size"]
    page = (out / "report.html").read_text("utf-8")
    assert "Oracles side by side" in page and cal.label in page and roof.label in page
