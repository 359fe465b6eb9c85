"""One door for a researcher's own runs: ``nasfilter report`` on any results database
(a plugin searcher's runs included), and ``compare --json`` rows with ``evaluated`` and
``front``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import nasfilter
from nasfilter.cli import main
from nasfilter.runs.storage.sqlite_store import Store

REPO = Path(__file__).parent.resolve().parent.parent
PLUGIN = f"{REPO}/examples/custom_searcher.py:LocalSearch[patience=20]"
BUDGET = "8000"


@pytest.fixture(scope="module")
def plugin_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database of a plugin searcher's runs and random search's, two seeds each."""
    db = tmp_path_factory.mktemp("runs") / "r.db"
    argv = ["run", "--searchers", f"{PLUGIN},random", "--seeds", "0-1", "--budget", BUDGET,
            "--table", "synthetic", "--oracle", "roofline", "--db", str(db),
            "--no-progress", "--jobs", "1"]  # fmt: skip
    assert main(argv) == 0
    return db


def _compare_rows(db: Path, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    capsys.readouterr()
    assert main(["compare", "--db", str(db), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _brute_front(evaluated: list[int], acc: np.ndarray, thr: np.ndarray) -> list[int]:
    distinct = sorted(set(evaluated))
    return [
        i
        for i in distinct
        if not any(
            acc[j] >= acc[i] and thr[j] >= thr[i] and (acc[j] > acc[i] or thr[j] > thr[i])
            for j in distinct
        )
    ]


def test_compare_json_rows_carry_what_each_run_evaluated_and_its_front(
    plugin_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _compare_rows(plugin_db, capsys)
    assert len(rows) == 4 and {r["searcher"] for r in rows} >= {"random"}
    table = nasfilter.load_table("synthetic", "cifar10")
    proxy = nasfilter.proxy_table("roofline", "v100", "cifar10")
    with Store(plugin_db) as store:  # the stored events, read without the results layer
        stored = {run.seed: run for run in store.stored_runs() if run.spec.searcher == "random"}
        events = {seed: store.events(run.run_id) for seed, run in stored.items()}
    for row in rows:
        assert len(row["evaluated"]) == row["n_evaluations"] > 0
        assert row["front"] == _brute_front(row["evaluated"], table.test_acc, proxy.throughput)
        assert len(row["front"]) == row["front_size"]
        if row["searcher"] == "random":
            ev = events[row["seed"]]
            done = ev["kind"] == "evaluate"
            order = np.argsort(ev["end"][done], kind="stable")
            assert row["evaluated"] == ev["index"][done][order].tolist()


def test_report_writes_figures_and_html_for_a_plugin_searcher_s_runs(
    plugin_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _compare_rows(plugin_db, capsys)
    out = tmp_path / "report"
    assert main(["report", "--db", str(plugin_db), "--out", str(out)]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    stems = re.findall(r'id="img-([^"]+)"', html)
    assert stems[0] == "c1_hv" and len(stems) == 3  # HV over time, then one per method
    assert any("LocalSearch" in s for s in stems) and "c1_front_1_random" in stems
    for stem in stems:
        assert (out / f"{stem}.png").read_bytes()[:4] == b"\x89PNG"
        assert (out / f"{stem}.svg").exists()
    assert "LocalSearch[patience=20]" in html and "SYNTHETIC" in html
    # The metrics table: random's HV ratio over its two seeds, as compare --json gives them.
    hv = [r["hv_ratio"] for r in rows if r["searcher"] == "random"]
    mean, se = np.mean(hv), np.std(hv, ddof=1) / np.sqrt(2)
    assert f"<td>random</td><td>2</td><td>{mean:.3f} ± {se:.3f}</td>" in html


def test_report_refuses_an_empty_database_and_a_full_folder(
    plugin_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.db"
    Store(empty).close()
    assert main(["report", "--db", str(empty), "--out", str(tmp_path / "a")]) == 2
    assert "holds no runs" in capsys.readouterr().err
    full = tmp_path / "full"
    full.mkdir()
    (full / "x.txt").write_text("mine")
    assert main(["report", "--db", str(plugin_db), "--out", str(full)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["report", "--db", str(tmp_path / "none.db"), "--out", str(full)]) == 2
    assert "does not exist" in capsys.readouterr().err
