"""Which cheap signal pays: the condition of each method, the ablation, the goal verdict,
the typed summary and the report section of ``reproduce``."""

from __future__ import annotations

import html.parser
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from benchmarks import bench_multifidelity
from nasfilter.bench.fidelity import HOW_TO_ADD_CURVES, SyntheticCurves
from nasfilter.bench.lookup import load_table
from nasfilter.bench.table import BenchmarkTable
from nasfilter.render.html_page import ReportTable, render_report
from nasfilter.study.cheap_signals import ablation, condition, goal, goal_times
from nasfilter.study.json_values import Stat
from nasfilter.study.methods import (
    CHEAP_SIGNAL_METHODS,
    METHODS,
    MULTI_FIDELITY_METHODS,
    PEER_METHODS,
    Method,
)
from nasfilter.study.reproduce import FILTERING, REINFORCE_MNAS, reproduce
from nasfilter.study.signal_report import goal_text
from nasfilter.study.signal_summary import CONDITIONS, CheapSignals, SignalRow
from nasfilter.study.summary import StudySummary

DOCS = Path(__file__).parent.resolve().parents[1] / "docs" / "searchers.md"
SEEDS = (0, 1)
LOW = "low fidelity"
BUDGET = 20_000.0

# What each method of reproduce's catalogue reads besides full evaluations, by hand.
CATALOGUE_CONDITIONS = {
    "approximate filtering": "hardware",
    "REINFORCE (MnasNet reward)": "none",  # throughput in its reward: an objective
    "REINFORCE (accuracy reward)": "none",
    "random search": "none",
    "regularized evolution": "none",
    "successive frontiers": "hardware",
    "random + successive-frontiers filter": "hardware",
    "REINFORCE (MnasNet) + proxy-threshold filter": "hardware",
    "model-based search": "none",
    "model-based + utilization features": "hardware",
    "Optuna NSGA-II": "none",
    "Optuna random": "none",
    "ASHA (asynchronous successive halving)": "low fidelity",
    "MO-ASHA (accuracy and throughput)": "low fidelity",
    "Hyperband": "low fidelity",
    "BOHB": "low fidelity",
    "model-based + low-fidelity screens": "low fidelity",
    "model-based + screens + utilization features": "both",
    "MO-ASHA + online proxy-threshold filter": "both",
}


# ------------------------------------------------------------------ conditions
def _docs_conditions() -> dict[str, str]:
    """Method label -> condition, from the goal table of docs/searchers.md."""
    text = DOCS.read_text("utf-8").split("### The study's answer: which cheap signal pays")[1]
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 2 and cells[0] in CONDITIONS:
            out[cells[1].replace("`", "")] = cells[0]
    return out


def test_the_bench_conditions_are_the_documented_ones() -> None:
    documented = _docs_conditions()
    assert len(documented) == len(bench_multifidelity.METHODS) == 12
    for method in bench_multifidelity.METHODS:
        assert method.condition == documented[method.label], method.label


def test_each_catalogue_method_has_its_condition() -> None:
    for method in (*METHODS, *MULTI_FIDELITY_METHODS, *CHEAP_SIGNAL_METHODS):
        assert condition(method.searcher, method.filter) == CATALOGUE_CONDITIONS[method.label]
    assert condition("random", None) == condition("random", "none") == "none"
    assert condition("mo-asha", "proxy-threshold[scan=False]") == "both"


def test_reading_a_zero_cost_proxy_is_a_condition_of_its_own() -> None:
    # a zero-cost score is a cheap signal: a method reading one is never "none"
    assert condition("model-based[zerocost=synflow]", None) == "zero-cost"
    assert condition("model-based[hardware=True,zerocost=synflow]", None) == (
        "hardware + zero-cost"
    )
    assert condition("random", "zerocost-frontiers[score=synflow]") == "zero-cost"
    assert condition("model-based-mf", "zerocost-frontiers") == "low fidelity + zero-cost"
    assert condition("model-based-mf[hardware=True]", "zerocost-frontiers") == "all three"
    assert condition("model-based", None) == "none"


# ------------------------------------------------------------------ the ablation
class _Curves:
    """Learning curves from arrays (architectures, epochs) per seed; ``missing``
    architectures lack seed 888."""

    dataset = "cifar10"
    synthetic = True

    def __init__(self, by_seed: dict[int, np.ndarray], missing: tuple[int, ...] = ()) -> None:
        self.by_seed, self.missing = by_seed, set(missing)

    def hps(self) -> list[str]:
        return ["12"]

    def epochs(self, hp: str) -> int:
        return 12

    def seeds(self, index: int, hp: str) -> list[int]:
        return sorted(self.by_seed)

    def evaluation(self, index: int, hp: str, seed: int, iepoch: int) -> tuple[float, float]:
        if seed == 888 and index in self.missing:
            raise KeyError(f"no seed 888 for {index}")
        return float(self.by_seed[seed][index, iepoch]), 1.0


@pytest.fixture(scope="module")
def surrogate() -> BenchmarkTable:
    return load_table("synthetic", "cifar10")


def _fake_curves(table: BenchmarkTable, missing: tuple[int, ...] = ()) -> _Curves:
    rng = np.random.default_rng(5)
    n = table.test_acc.shape[0]
    noise = np.linspace(20.0, 0.5, 12)  # later epochs follow the test accuracy closer
    by_seed = {
        s: table.test_acc[:, None] + rng.normal(0.0, 1.0, (n, 12)) * noise for s in (777, 888)
    }
    return _Curves(by_seed, missing)


@pytest.mark.slow
def test_ablation_matches_scipy_spearman(surrogate: BenchmarkTable) -> None:
    curves = _fake_curves(surrogate)
    got = ablation(surrogate, curves, (1, 3, 9))
    final = curves.by_seed[888][:, 11]
    for k, e in enumerate((1, 3, 9)):
        early = curves.by_seed[777][:, e - 1]
        assert got.vs_final[k] == pytest.approx(stats.spearmanr(early, final)[0], abs=1e-12)
        assert got.vs_test[k] == pytest.approx(
            stats.spearmanr(early, surrogate.test_acc)[0], abs=1e-12
        )
    assert got.vs_final[0] < got.vs_final[1] < got.vs_final[2]  # less noise, better ranks
    assert 0.0 <= min(got.beyond_features) and max(got.beyond_features) <= 1.0
    assert got.n_architectures == surrogate.test_acc.shape[0]


@pytest.mark.slow
def test_ablation_leaves_out_architectures_without_the_seed(surrogate: BenchmarkTable) -> None:
    missing = tuple(range(0, 32768, 7))
    curves = _fake_curves(surrogate, missing)
    got = ablation(surrogate, curves, (1,))
    keep = np.setdiff1d(np.arange(32768), missing)
    want = stats.spearmanr(curves.by_seed[777][keep, 0], curves.by_seed[888][keep, 11])[0]
    assert got.n_architectures == keep.size
    assert got.vs_final[0] == pytest.approx(want, abs=1e-12)


@pytest.mark.slow
def test_the_surrogate_ablation_is_the_documented_one(surrogate: BenchmarkTable) -> None:
    got = ablation(surrogate, SyntheticCurves("cifar10"))
    # docs/searchers.md, the ablation table of the surrogate
    assert [round(r, 3) for r in got.vs_final] == [0.089, 0.158, 0.557]
    assert [round(r, 3) for r in got.vs_test] == [0.088, 0.163, 0.561]


# ------------------------------------------------------------------ the goal verdict
def _row(label: str, hv: float, searcher: str, cond: str = "none") -> SignalRow:
    return SignalRow(label, searcher, "none", cond, 9, (Stat(hv, 0.001),))


def test_goal_met_above_the_level_and_the_peers() -> None:
    g = goal([_row("mb", 0.990, "model-based"), _row("mf", 0.995, "mo-asha", LOW)], 20_000.0)
    assert (g.best, g.best_mean, g.best_condition, g.met) == ("mf", 0.995, LOW, True)
    assert "met: " in goal_text(g) and "0.0050 above the level" in goal_text(g)


def test_goal_missed_below_the_level() -> None:
    g = goal([_row("mb", 0.980, "model-based"), _row("mf", 0.985, "mo-asha", LOW)], 20_000.0)
    assert g.best == "mf" and g.beats_peers and not g.reaches_level and not g.met
    assert "not met: " in goal_text(g) and "0.0050 short" in goal_text(g)


def test_goal_missed_when_equal_to_model_based() -> None:
    g = goal([_row("mf", 0.992, "mo-asha", LOW), _row("mb", 0.992, "model-based")], 20_000.0)
    assert g.best == "mf" and g.reaches_level and not g.beats_peers and not g.met
    assert "not above mb (0.9920)" in goal_text(g)


def test_goal_not_met_when_the_best_reads_no_cheap_signal() -> None:
    # The best is no peer of its own (the bench's row passes), but no cheap signal paid.
    g = goal([_row("mb", 0.995, "model-based"), _row("mf", 0.9, "mo-asha", LOW)], 20_000.0)
    assert g.reaches_level and g.beats_peers and not g.met
    assert "not met: " in goal_text(g) and "the peer mb itself" in goal_text(g)
    g = goal([_row("r", 0.995, "random"), _row("mb", 0.99, "model-based")], 20_000.0)
    assert g.beats_peers and not g.met and "the best reads no cheap signal" in goal_text(g)


def test_goal_times_within_the_budget() -> None:
    assert goal_times(110_000.0) == (20_000.0, 55_000.0, 110_000.0)
    assert goal_times(60_000.0) == (20_000.0, 55_000.0)
    assert goal_times(5_000.0) == (5_000.0,)


# ------------------------------------------------------------------ reproduce
@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("signals") / "out"
    methods = [
        FILTERING,
        REINFORCE_MNAS,
        Method("random search", "random"),
        PEER_METHODS[0],  # model-based search
        Method("random + successive-frontiers filter", "random", "successive-frontiers"),
        *MULTI_FIDELITY_METHODS[:2],  # ASHA, MO-ASHA
        CHEAP_SIGNAL_METHODS[2],  # MO-ASHA behind the online proxy-threshold filter
    ]
    summary = reproduce(
        out, table="synthetic", seeds=SEEDS, budget=BUDGET, quiet=True, methods=methods,
        workers=(1,), survey=False,
    )  # fmt: skip
    return out, summary


def _per_seed_hv(summary: dict[str, Any], label: str) -> np.ndarray:
    """The final hypervolume ratio of each run of ``label`` (its budget: BUDGET)."""
    return np.array([r["metrics"]["hv_ratio"] for r in summary["runs"] if r["method"] == label])


@pytest.mark.slow
def test_summary_hv_is_the_runs_own(study: tuple[Path, dict[str, Any]]) -> None:
    _, summary = study
    cs = summary["cheap_signals"]
    assert cs["times"] == [BUDGET] and cs["workers"] == 1
    assert len(cs["rows"]) == 8
    ran = {"none", "hardware", "low fidelity", "both"}  # no zero-cost method in the catalogue
    assert {r["condition"] for r in cs["rows"]} == ran
    for row in cs["rows"]:
        hv = _per_seed_hv(summary, row["method"])
        assert row["runs"] == hv.size == len(SEEDS)
        assert row["hv"][0]["mean"] == pytest.approx(hv.mean(), abs=1e-12)
        assert row["hv"][0]["se"] == pytest.approx(hv.std(ddof=1) / math.sqrt(hv.size), abs=1e-12)
        assert row["condition"] == CATALOGUE_CONDITIONS[row["method"]]
    means = {r["method"]: r["hv"][0]["mean"] for r in cs["rows"]}
    best = max(means, key=lambda k: means[k])
    assert cs["goal"]["best"] == best and cs["goal"]["best_mean"] == means[best]
    assert cs["goal"]["peers"] == {"model-based search": means["model-based search"]}
    others = [m for m in means if m != best]
    beats = all(means[best] > means[m] for m in others if m == "model-based search")
    cond = CATALOGUE_CONDITIONS[best]
    assert cs["goal"]["met"] == (means[best] >= 0.99 and beats and cond != "none")


@pytest.mark.slow
def test_summary_json_round_trip(study: tuple[Path, dict[str, Any]]) -> None:
    out, _ = study
    data = json.loads((out / "summary.json").read_text("utf-8"))
    back = StudySummary.from_json(data)
    assert back.cheap_signals is not None
    assert back.cheap_signals.to_json() == data["cheap_signals"]
    assert CheapSignals.from_json(back.cheap_signals.to_json()) == back.cheap_signals
    older = {k: v for k, v in data.items() if k != "cheap_signals"}  # before the section
    assert StudySummary.from_json(older).cheap_signals is None


class _Tables(html.parser.HTMLParser):
    """Each <h2> title -> (the text until its table, the table's rows of cell texts)."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, tuple[str, list[list[str]]]] = {}
        self._title: str | None = None
        self._tag = ""
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tag = tag
        if tag == "h2":
            self._title = ""
        elif tag == "tr" and self._title in self.sections:
            self.sections[self._title][1].append([])

    def handle_endtag(self, tag: str) -> None:
        self._tag = ""

    def handle_data(self, data: str) -> None:
        if self._tag == "h2" and self._title == "":
            self._title = data
            self.sections[data] = ("", [])
        elif self._title in self.sections and self._tag in ("td", "th"):
            self.sections[self._title][1][-1].append(data)
        elif self._title in self.sections and self._tag == "p":
            text, rows = self.sections[self._title]
            self.sections[self._title] = (text + data, rows)


def _sections(page: str) -> dict[str, tuple[str, list[list[str]]]]:
    parser = _Tables()
    parser.feed(page)
    return parser.sections


@pytest.mark.slow
def test_report_section_shows_the_numbers(study: tuple[Path, dict[str, Any]]) -> None:
    out, summary = study
    sections = _sections((out / "report.html").read_text("utf-8"))
    title = "Which cheap signal pays (SYNTHETIC table, not NATS-Bench data)"
    caption, rows = sections[title]
    assert rows[0] == ["condition", "method", "runs", "HV ratio at 20,000 s"]
    body = {r[1]: r for r in rows[1:]}
    for row in summary["cheap_signals"]["rows"]:
        hv = _per_seed_hv(summary, row["method"])
        se = hv.std(ddof=1) / math.sqrt(hv.size)
        want = f"{hv.mean():.4f} ± {se:.4f}" if se > 0 else f"{hv.mean():.4f}"
        assert body[row["method"]] == [row["condition"], row["method"], "2", want]
    conditions = [r[0] for r in rows[1:]]
    assert conditions == sorted(conditions, key=CONDITIONS.index)
    goal_words = "met: " if summary["cheap_signals"]["goal"]["met"] else "not met: "
    assert "Goal (the best method >= 0.99 at 20,000 s" in caption and goal_words in caption
    caption, rows = sections["Which cheap signal pays: the ablation (SYNTHETIC table, not "
                             "NATS-Bench data)"]  # fmt: skip
    ab = summary["cheap_signals"]["ablation"]
    assert [r[1] for r in rows[1:]] == [f"{v:.3f}" for v in ab["vs_final"]]
    assert [r[2] for r in rows[1:]] == [f"{v:.3f}" for v in ab["vs_test"]]
    assert f"Spearman {ab['vs_final'][0]:.2f}" in caption
    assert "rungs promote close to at random" in caption  # the surrogate: 0.09


@pytest.mark.slow
@pytest.mark.browser
def test_report_section_renders_in_chromium(study: tuple[Path, dict[str, Any]]) -> None:
    from tests.chromium import Chromium, ChromiumMissing, find_chromium

    try:
        find_chromium()
    except ChromiumMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    out, summary = study
    with Chromium() as browser:
        browser.open(out / "report.html")
        got = browser.evaluate(SECTION_JS)
    assert got is not None, "no 'Which cheap signal pays' section"
    assert got["width"] > 300 and got["height"] > 40  # laid out, not hidden
    labels = [r[1] for r in got["rows"][1:]]
    assert sorted(labels) == sorted(r["method"] for r in summary["cheap_signals"]["rows"])


SECTION_JS = """
(() => {
  const h = Array.from(document.querySelectorAll('h2'))
    .find(e => e.textContent.startsWith('Which cheap signal pays ('));
  if (!h) return null;
  let el = h.nextElementSibling;
  while (el && !el.querySelector('table')) el = el.nextElementSibling;
  const table = el.querySelector('table');
  const r = table.getBoundingClientRect();
  return {rows: Array.from(table.querySelectorAll('tr'))
            .map(tr => Array.from(tr.cells).map(c => c.textContent)),
          width: r.width, height: r.height};
})()
"""


@pytest.mark.slow
def test_without_curves_the_section_says_why(tmp_path: Path) -> None:
    out = tmp_path / "study"
    summary = reproduce(
        out, seeds=[0], budget=2000.0, quiet=True, methods=[FILTERING, REINFORCE_MNAS],
        workers=(1,), survey=False,
    )  # fmt: skip
    assert "cheap_signals" not in summary  # as in a summary.json from before the section
    page = (out / "report.html").read_text("utf-8")
    caption, rows = _sections(page)["Which cheap signal pays"]
    assert rows == []
    assert "SYNTHETIC" not in page  # the real table's report labels nothing synthetic
    assert "has no learning curves" in caption and HOW_TO_ADD_CURVES in caption


def test_an_empty_report_table_shows_its_caption_only() -> None:
    page = render_report("t", [], [ReportTable("Empty", ("a",), (), caption="why")])
    section = page.split("<h2>Empty</h2>")[1]
    assert re.match(r"\s*<p>why</p>", section) and "<table" not in section
