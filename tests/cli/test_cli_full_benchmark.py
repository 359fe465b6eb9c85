"""`nasfilter run` and `load_table` on a full-fidelity benchmark folder: a real-format archive of
all 32768 architectures written by nasfilter (SYNTHETIC), converted, read back through the
real nats_bench API, and searched by the multi-fidelity searchers; and the errors for
folders that are not such a benchmark."""

from __future__ import annotations

import os
import random
from pathlib import Path

import nats_bench
import numpy as np
import pytest

from nasfilter.bench.fidelity import NoCurvesError, curves_for
from nasfilter.bench.fullbench import convert_full
from nasfilter.bench.lookup import load_table
from nasfilter.bench.nats_api.curves import BenchmarkCurves
from nasfilter.cli import main
from nasfilter.runs.storage.sqlite_store import Store
from nasfilter.testing.nats_full_archive import (
    CIFAR10_SEARCH,
    search_benchmark,
    write_varied_archive,
)
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE
TEMPLATE = FIXTURE / "000284.pickle.pbz2"
SAMPLE = (0, 11, 284, 9999, 20000, 32767)
SEARCHERS = "hyperband,bohb,asha,mo-asha,model-based"


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(benchmark folder, its archive): all 32768 architectures, written once (minutes) into
    ``$NASFILTER_CACHE_DIR`` when set (content-addressed: bench_multifidelity's), else here."""
    root = os.environ.get("NASFILTER_CACHE_DIR") or tmp_path_factory.mktemp("full-search")
    folder = search_benchmark(root, TEMPLATE, keep_archive=True)
    return folder, folder.parent / "archive" / "NATS-sss-v1_0-50262-simple"


def _run(tmp_path: Path, table: str, *extra: str) -> tuple[int, Path]:
    db = tmp_path / "r.db"
    code = main(["run", "--table", table, "--budget", "20000", "--db", str(db), "--jobs", "1",
                 "--no-progress", *extra])
    return code, db


@pytest.mark.slow
def test_the_written_records_read_the_same_through_nats_bench(full: tuple[Path, Path]) -> None:
    folder, archive = full
    api = nats_bench.create(str(archive), "sss", fast_mode=True, verbose=False)
    table = load_table(folder, "cifar10")
    curves = curves_for(table)
    assert table.is_complete and table.provenance.synthetic and curves.synthetic
    assert curves.hps() == ["12"]  # hp 90 holds cifar10 only, not the search record
    for index in SAMPLE:
        for k, seed in enumerate(table.seeds):
            info = api.get_more_info(index, "cifar10-valid", hp="12", is_random=seed)
            assert table.valid_acc[index, k] == info["valid-accuracy"]
            for iepoch in (0, 4, 11):
                info = api.get_more_info(index, "cifar10-valid", iepoch, "12", is_random=seed)
                assert curves.evaluation(index, "12", seed, iepoch) == (
                    info["valid-accuracy"], info["train-all-time"] + info["valid-per-time"])
        final = api.get_more_info(index, "cifar10", hp="90", is_random=False)
        assert table.test_acc[index] == final["test-accuracy"]
        times = api.get_more_info(index, "cifar10-valid", hp="12", is_random=False)
        assert table.train_time[index] == times["train-per-time"]
        cost = api.get_cost_info(index, "cifar10", hp="12")
        assert (table.macs[index], table.latency[index]) == (cost["flops"], cost["latency"])
        random.seed(index)
        acc, _, spent, _ = api.simulate_train_eval(index, "cifar10", iepoch=3, hp="12")
        assert (acc, spent) in {curves.evaluation(index, "12", s, 3) for s in table.seeds}
    assert table.seeds == (777, 888, 999) and np.isfinite(table.valid_acc).all()


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("workers", ["1", "4", "16"])
def test_the_multifidelity_searchers_run_on_it(full: tuple[Path, Path], tmp_path: Path, capsys,
                                               workers: str) -> None:
    folder, _ = full
    code, db = _run(tmp_path, str(folder), "--dataset", "cifar10", "--searchers", SEARCHERS,
                    "--seeds", "0", "--workers", workers)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "SYNTHETIC" in err and "curves  SYNTHETIC learning curves" in err and "hp 12" in err
    bench_curves = BenchmarkCurves(folder, "cifar10")
    with Store(db) as store:
        runs = store.stored_runs()
        assert {r.spec.searcher for r in runs} == set(SEARCHERS.split(","))
        for run in runs:
            ev = store.events(run.run_id)
            partial = ev["kind"] == "partial"
            assert (ev["kind"] == "evaluate").sum() > 0 and ev["worker"].max() < int(workers)
            assert partial.any() == (run.spec.searcher != "model-based")
            for j in np.flatnonzero(partial)[:5].tolist():  # the benchmark's own curves
                index, seed, epochs = int(ev["index"][j]), int(ev["seed"][j]), int(ev["epochs"][j])
                acc, cost = bench_curves.evaluation(index, "12", seed, epochs - 1)
                assert (ev["accuracy"][j], ev["cost"][j]) == (acc, pytest.approx(cost))


def test_a_partial_benchmark_is_refused_naming_the_full_archive(tmp_path: Path, capsys) -> None:
    out = convert_full(FIXTURE, tmp_path / "full", allow_partial=True, progress=False)
    assert load_table(out, "cifar10").n_present == 3
    code, db = _run(tmp_path, str(out), "--searchers", "hyperband", "--seeds", "0")
    err = capsys.readouterr().err
    assert code == 2 and "holds 3 of 32768 architectures" in err
    assert "convert the full archive" in err and "Traceback" not in err and not db.exists()


def test_a_folder_that_is_not_a_benchmark_names_what_is_missing(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    code, _ = _run(tmp_path, str(tmp_path / "empty"), "--searchers", "hyperband", "--seeds", "0")
    err = capsys.readouterr().err
    assert code == 2 and "not a full-fidelity benchmark: index.json is missing" in err
    code, _ = _run(tmp_path, str(FIXTURE), "--searchers", "hyperband", "--seeds", "0")
    err = capsys.readouterr().err
    assert code == 2 and "is a NATS-Bench archive, not a converted benchmark" in err
    assert f"nasfilter convert {str(FIXTURE)!r} -o FOLDER" in err and "Traceback" not in err


def test_a_benchmark_without_the_final_record_is_refused(tmp_path: Path) -> None:
    archive = write_varied_archive(tmp_path, TEMPLATE, [3], np.random.default_rng(1),
                                   compresslevel=1, keep={"12": {"cifar10-valid": ("x-valid",)}})
    out = convert_full(archive, tmp_path / "full", allow_partial=True, progress=False)
    with pytest.raises(ValueError, match=r"no hp-90 record 'cifar10'.*settings: \['12'\]"):
        load_table(out, "cifar10")
    with pytest.raises(ValueError, match=r"no hp-12 record 'cifar100'"):
        load_table(out, "cifar100")


def test_keep_names_what_the_template_holds(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for keep, match in (({"07": {}}, r"hp '07' is not in the template; it has \['01', '12'"),
                        ({"12": {"svhn": ("x-valid",)}}, r"record 'svhn' is not in .* hp 12"),
                        ({"12": {"cifar10": ("x-valid",)}}, r"subset of the template's "
                                                            r"\['ori-test'\]")):
        with pytest.raises(ValueError, match=match):
            write_varied_archive(tmp_path / "a", TEMPLATE, [0], rng, keep=keep)


def test_lean_records_keep_what_was_asked(tmp_path: Path) -> None:
    archive = write_varied_archive(tmp_path, TEMPLATE, [7, 300], np.random.default_rng(3),
                                   compresslevel=1, keep=CIFAR10_SEARCH, even_seeds=True)
    api = nats_bench.create(str(archive), "sss", fast_mode=True, verbose=False)
    for index in (7, 300):
        meta = api.query_meta_info_by_index(index, "12")
        assert meta.get_dataset_names() == ["cifar10-valid", "cifar10"]
        assert meta.get_dataset_seeds("cifar10-valid") == [777, 888, 999]
        final = api.query_meta_info_by_index(index, "90")
        assert final.get_dataset_names() == ["cifar10"]
        info = api.get_more_info(index, "cifar10", hp="90", is_random=False)
        assert info["test-accuracy"] == round(info["test-accuracy"], 2)  # of 10,000 images


def test_curves_of_a_benchmark_that_is_gone_name_it(tmp_path: Path) -> None:
    out = convert_full(FIXTURE, tmp_path / "full", allow_partial=True, progress=False)
    table = load_table(out, "cifar10")
    assert isinstance(curves_for(table), BenchmarkCurves)
    out.rename(tmp_path / "moved")
    with pytest.raises(NoCurvesError, match=r"derived from, '.*full', which is no longer there"):
        curves_for(table)
