"""`nasfilter run` with the multi-fidelity searchers: the embedded table (SYNTHETIC curves),
--workers, --charging resume, and a compact table without curves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.surrogate import embedded_table
from nasfilter.cli import main
from nasfilter.runs.storage.sqlite_store import Store
from tests.tables import random_table

TABLE = embedded_table("cifar10")
SEARCHERS = "hyperband,asha,successive-halving"


def _run(tmp_path: Path, capsys, *extra: str) -> tuple[int, str, Store]:
    db = tmp_path / "r.db"
    code = main(
        [
            "run",
            "--searchers",
            SEARCHERS,
            "--table",
            "synthetic",
            "--budget",
            "20000",
            "--db",
            str(db),
            "--jobs",
            "1",
            "--no-progress",
            *extra,
        ]
    )
    return code, capsys.readouterr().err, Store(db)


def _by_searcher(store: Store) -> dict[tuple[str, int, int], dict[str, np.ndarray]]:
    return {
        (run.spec.searcher, run.spec.workers, run.seed): store.events(run.run_id)
        for run in store.stored_runs()
    }


@pytest.mark.parametrize("workers", ["1", "4", "16"])
def test_runs_on_the_embedded_table(tmp_path: Path, capsys, workers: str) -> None:
    code, err, store = _run(tmp_path, capsys, "--seeds", "0-1", "--workers", workers)
    assert code == 0
    assert "curves  SYNTHETIC learning curves (not NATS-Bench data)" in err
    runs = _by_searcher(store)
    assert len(runs) == 6 and {s for s, _, _ in runs} == set(SEARCHERS.split(","))
    for (searcher, _, _), ev in runs.items():
        full = ev["kind"] == "evaluate"
        assert full.sum() > 0 and (ev["kind"] == "partial").sum() > full.sum()
        assert ev["worker"].max() < int(workers)
        if searcher == "successive-halving":  # 9 x 1 epoch, 3 x 4, 1 x 12, by hand
            epochs = ev["epochs"][:12].tolist()
            assert epochs == [1] * 9 + [4] * 3 and full[12] and not full[:12].any()
    store.close()


def test_resume_charges_promotions_by_hand(tmp_path: Path, capsys) -> None:
    code, _, store = _run(tmp_path, capsys, "--seeds", "0", "--charging", "resume")
    assert code == 0
    runs = store.stored_runs()
    assert {r.spec.charging for r in runs} == {"resume"}
    sh = next(r for r in runs if r.spec.searcher == "successive-halving")
    ev = store.events(sh.run_id)
    t, v = TABLE.train_time, TABLE.valid_time
    for j in range(9, 13):  # rung 1 (4 epochs) and the full rung (12) continue earlier runs
        i = int(ev["index"][j])
        before = 1 if j < 12 else 4
        after = 4 if j < 12 else 12
        assert ev["cost"][j] == pytest.approx((after - before) * t[i] + v[i])
        assert (
            ev["seed"][j] == ev["seed"][(ev["index"] == i) & (np.arange(len(ev["index"])) < j)][0]
        )
    store.close()


def test_model_based_runs_beside_them(tmp_path: Path, capsys) -> None:
    db = tmp_path / "m.db"
    code = main(
        [
            "run",
            "--searchers",
            "asha,model-based",
            "--table",
            "synthetic",
            "--budget",
            "5000",
            "--seeds",
            "0",
            "--workers",
            "4",
            "--db",
            str(db),
            "--jobs",
            "1",
            "--no-progress",
        ]
    )
    assert code == 0
    with Store(db) as store:
        assert {r.spec.searcher for r in store.stored_runs()} == {"asha", "model-based"}


def test_a_table_without_curves_names_the_conversion(tmp_path: Path, capsys) -> None:
    table = random_table(7).save(tmp_path / "t.npz")
    db = tmp_path / "r.db"
    code = main(
        [
            "run",
            "--searchers",
            "hyperband",
            "--table",
            str(table),
            "--budget",
            "20000",
            "--seeds",
            "0",
            "--db",
            str(db),
            "--jobs",
            "1",
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "has no learning curves" in err and "nasfilter convert" in err
    assert "Traceback" not in err and not db.exists()


def test_resume_without_curves_fails_before_any_run(tmp_path: Path, capsys) -> None:
    db = tmp_path / "r.db"
    code = main(
        [
            "run",
            "--searchers",
            "random",
            "--table",
            str(random_table(7).save(tmp_path / "t.npz")),
            "--charging",
            "resume",
            "--seeds",
            "0",
            "--db",
            str(db),
            "--jobs",
            "1",
            "--no-progress",
        ]
    )
    assert code == 2 and "has no learning curves" in capsys.readouterr().err
    assert not db.exists()
