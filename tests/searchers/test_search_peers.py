"""The Optuna searchers, budget-aware scans, flagged empty runs, the structured
synthetic table."""

from __future__ import annotations

import builtins
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.cli import main
from nasfilter.filters import ProxyThreshold, SuccessiveFrontiers
from nasfilter.runs.experiment import RunSpec, run_one
from nasfilter.runs.results import NOTHING_EVALUATED
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import SEARCHERS, OptunaSearcher, RandomSearch, UtilizationPareto
from nasfilter.searchers.optuna_adapter import OptunaMissingError
from nasfilter.sim.scan import check_scan_share, scan_size
from nasfilter.study.metrics_table import format_summary, summarize
from nasfilter.testing.contracts import default_inputs
from nasfilter.testing.structured_table import structured_table
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE


def _inputs() -> tuple[Any, Any]:
    return default_inputs()  # the synthetic table and the roofline proxy, once per process


# ------------------------------------------------------------------------------ Optuna
@pytest.mark.parametrize("name", ["optuna-nsga2", "optuna-tpe", "optuna-random"])
def test_optuna_searchers_are_registered_and_run(name: str) -> None:
    table, proxy = _inputs()
    searcher = SEARCHERS.create(name)
    result = run_search(searcher, make_problem(table, 6_000, 2, proxy=proxy))
    assert result.n_evaluations > 20
    # Throughput was asked of the proxy (charged) for every evaluated architecture.
    events = result.events
    proxied = set(events["index"][events["kind"] == "proxy"].tolist())
    assert set(result.evaluated.tolist()) <= proxied
    assert result.proxy_seconds == pytest.approx(2.0 * len(proxied))


def test_optuna_is_seeded_from_the_run_generator() -> None:
    table, proxy = _inputs()

    def trace(seed: int) -> list[int]:
        problem = make_problem(table, 5_000, seed, proxy=proxy)
        return run_search(OptunaSearcher("nsga2"), problem).evaluated.tolist()

    assert trace(3) == trace(3)
    assert trace(3) != trace(4)


@pytest.mark.slow
def test_optuna_repeats_are_answered_from_memory() -> None:
    table, proxy = _inputs()
    problem = make_problem(table, 60_000, 0, proxy=proxy)
    result = run_search(OptunaSearcher("nsga2", max_repeats=100), problem)
    evaluated = result.evaluated
    # NSGA-II re-proposes converged architectures often; none of them is charged again.
    assert len(np.unique(evaluated)) == len(evaluated)


def test_optuna_study_holds_both_objectives() -> None:
    table, proxy = _inputs()
    searcher = OptunaSearcher("random")
    run_search(searcher, make_problem(table, 3_000, 1, proxy=proxy))
    trial = searcher._study.trials[0]
    assert len(trial.values) == 2
    assert 0 < trial.values[0] < 100  # validation accuracy, percent
    assert 3 < trial.values[1] < 7  # log10 images/s


def test_missing_optuna_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_optuna(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "optuna" or name.startswith("optuna."):
            raise ImportError("No module named 'optuna'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_optuna)
    with pytest.raises(OptunaMissingError, match=r"pip install 'nasfilter\[optuna\]'"):
        SEARCHERS.create("optuna-nsga2")


def test_missing_optuna_is_a_clean_cli_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real_import = builtins.__import__

    def no_optuna(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "optuna":
            raise ImportError("No module named 'optuna'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_optuna)
    code = main(
        ["run", "--searchers", "optuna-tpe", "--seeds", "0", "--db", str(tmp_path / "x.db")]
    )
    assert code == 2
    assert "nasfilter[optuna]" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"sampler": "cmaes"}, "sampler must be one of"),
        ({"population_size": 1}, r"population_size \(valid range: >= 2\)"),
        ({"max_repeats": -1}, r"max_repeats \(valid range: >= 0\)"),
    ],
)
def test_optuna_bad_parameters(params: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OptunaSearcher(**params)


# ------------------------------------------------------------------ budget-aware scans
def test_scan_share_is_checked() -> None:
    assert check_scan_share(None) is None
    assert check_scan_share(1) == 1.0
    for bad in (0, -0.1, 1.5, math.nan, True, "half"):
        with pytest.raises(ValueError, match=r"scan_share must be a number in \(0, 1\]"):
            check_scan_share(bad)


@pytest.mark.parametrize("budget", [20_000.0, 55_000.0])
def test_small_budgets_still_evaluate(budget: float) -> None:
    """Every scanning method evaluates something below the full-scan cost (65536 s)."""
    table, proxy = _inputs()
    cases = [
        (UtilizationPareto(), None),
        (RandomSearch(), SuccessiveFrontiers()),
        (RandomSearch(), ProxyThreshold()),
    ]
    for searcher, filt in cases:
        result = run_search(
            searcher, make_problem(table, budget, 0, proxy=proxy), filter=filt)
        assert result.n_evaluations > 0, (searcher, filt)
        # The default share keeps the scan to 60 % of the budget (plus single queries).
        assert result.proxy_seconds <= 0.6 * budget + 2.0 * result.n_asked + 2.0


def test_the_study_full_scan_is_still_available() -> None:
    table, proxy = _inputs()
    problem = make_problem(table, 55_000, 0, proxy=proxy)
    result = run_search(UtilizationPareto(scan_share=None), problem)
    assert result.n_evaluations == 0 and result.proxy_seconds >= 55_000
    big = run_search(UtilizationPareto(), make_problem(table, 110_000, 0, proxy=proxy))
    full = run_search(
        UtilizationPareto(scan_share=None), make_problem(table, 110_000, 0, proxy=proxy))
    assert big.events["index"].tolist() == full.events["index"].tolist()  # same at 110000 s


def test_scan_size_follows_the_share() -> None:
    table, proxy = _inputs()
    from nasfilter.sim.proxy_handle import ProxyHandle

    handle = ProxyHandle(make_problem(table, 20_000, 0, proxy=proxy))
    assert scan_size(handle, 0.6) == 6000  # 0.6 x 20000 s / 2 s
    assert scan_size(handle, None) == 32768


# ------------------------------------------------------------------- empty runs flagged
def test_an_empty_run_is_flagged_in_compare_and_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "r.db")
    spec = "utilization-pareto[scan_share=None]"
    args = ["run", "--searchers", spec, "random", "--seeds", "0", "--budget", "9000"]
    assert main([*args, "--db", db, "--jobs", "1", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert f"warning: {spec} evaluated nothing in 1 of 1 run(s)" in err
    assert main(["compare", "--db", db]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(spec))
    assert NOTHING_EVALUATED in row and "0.000" not in row
    assert f"warning: {spec} evaluated nothing in 1 of 1 run(s)" in out
    random_row = next(line for line in out.splitlines() if line.startswith("random "))
    assert NOTHING_EVALUATED not in random_row


def test_format_summary_warns_for_partly_empty_methods() -> None:
    record = run_one(RunSpec("random", budget=3000.0), 0)
    base = {
        "searcher": "x",
        "filter": "none",
        "dataset": "cifar10",
        "budget": 3000.0,
        "budget_clock": "worker",
        "workers": 1,
        "table_label": "t",
        "oracle_label": "o",
        "status": "budget",
        **record.metrics,
        **{
            k: record.summary[k]
            for k in ("n_evaluations", "proxy_seconds", "evaluation_seconds", "clock")
        },
    }
    empty = dict(base, n_evaluations=0, hv_ratio=0.0)
    text = format_summary(summarize([base, empty]))
    assert "warning: x evaluated nothing in 1 of 2 run(s)" in text


# --------------------------------------------------------------- the structured table
def test_structured_table_is_synthetic_and_unlike_the_surrogate() -> None:
    t = structured_table()
    assert t.synthetic and "NOT NATS-Bench" in t.provenance.description
    assert t.is_complete
    again = structured_table()
    assert np.array_equal(t.valid_acc, again.valid_acc)
    surrogate = default_inputs()[0]
    from scipy.stats import spearmanr

    # Another accuracy model and time model: rankings differ from the surrogate's.
    assert spearmanr(t.test_acc, surrogate.test_acc)[0] < 0.95
    assert spearmanr(t.train_time, surrogate.train_time)[0] < 0.97


@pytest.mark.slow
def test_structured_table_survives_the_real_archive_format(tmp_path: Path) -> None:
    """The round trip bench_model_based skips: write the real NATS format, run
    ``nasfilter convert``, and get the built table back, on 1000 random rows and both ends
    (writing all 32768 takes about 18 minutes; the rows are a uniform random sample)."""
    pytest.importorskip("nats_bench")
    from nasfilter.bench.lookup import load_table
    from nasfilter.testing.nats_archive import write_nats_archive

    table = structured_table()
    rng = np.random.default_rng(2026)
    rows = sorted({0, 32767, *rng.choice(32768, 1000, replace=False).tolist()})
    template = FIXTURE / "000000.pickle.pbz2"
    folder = write_nats_archive(table, tmp_path, template, indices=rows, compresslevel=1)
    out = tmp_path / "structured.npz"
    argv = [
        "convert",
        str(folder),
        "-o",
        str(out),
        "--allow-partial",
        "--dataset",
        "cifar10",
        "--quiet",
    ]
    assert main(argv) == 0
    back = load_table(out, "cifar10")
    assert back.synthetic  # the written mark keeps the SYNTHETIC label
    assert np.flatnonzero(back.present).tolist() == rows
    np.testing.assert_array_equal(back.valid_acc[rows], table.valid_acc[rows])
    # The archive stores times per epoch, test accuracy per seed and MACs/params in millions;
    # convert sums, averages and scales them: the same values up to the last bits of the
    # float arithmetic (< 1e-12 relative).
    for column in ("test_acc", "train_time", "valid_time", "macs", "params"):
        np.testing.assert_allclose(
            getattr(back, column)[rows], getattr(table, column)[rows], rtol=1e-12, atol=0
        )


@pytest.mark.slow
def test_the_report_warns_about_a_method_that_evaluated_nothing(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from nasfilter.study.reproduce import reproduce

    out = tmp_path / "study"
    reproduce(out, seeds=[0], budget=3000.0, quiet=True)  # below the study's full scan
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "warning: approximate filtering evaluated nothing in 1 of 1 run(s)" in page
    assert "Warning: random search" not in page
    # Every method's first crossing of 0.99 is stated; at 3000 s none gets there.
    assert "approximate filtering: never reaches 0.99" in page
    assert "model-based search: never reaches 0.99" in page


def test_first_reaching_and_its_wording() -> None:
    from nasfilter.runs.results import first_reaching, reach_text

    times = [10.0, 20.0, 30.0, 40.0]
    assert first_reaching(times, [0.5, 0.99, 0.98, 1.0]) == 20.0
    assert first_reaching(times, [math.nan, 0.9, 0.95, 0.989]) is None
    assert first_reaching(times, [0.2, 0.4, 0.6, 0.8], level=0.5) == 30.0
    assert reach_text(12345.0) == "reaches 0.99 at 12,345 s"
    assert reach_text(None) == "never reaches 0.99"
    with pytest.raises(ValueError, match="one length"):
        first_reaching(times, [0.1])
