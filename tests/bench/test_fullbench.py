"""Full-fidelity conversion: every record, setting, seed and epoch comes back as the archive
holds it (checked against the archive's own pickles, read with the standard library)."""

from __future__ import annotations

import bz2
import functools
import json
import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nasfilter.cli
from nasfilter.bench.fullbench import FullBenchmark, NotFullBenchmarkError, convert_full
from nasfilter.bench.spaces.sss import N_ARCHS
from nasfilter.testing.nats_full_archive import write_varied_archive
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE
TEMPLATE = FIXTURE / "000284.pickle.pbz2"
VARIED = (0, 1, 7, 11, 284, 4095, 20000, 32767)


def raw_records(archive: Path) -> dict[int, Any]:
    out = {}
    for path in sorted(archive.glob("0*.pickle.pbz2")):
        with bz2.open(path, "rb") as fh:
            out[int(path.name[:6])] = pickle.load(fh)
    return out


@functools.cache
def fixture_bench(root: str) -> FullBenchmark:
    return FullBenchmark.open(convert_full(FIXTURE, Path(root) / "full", True, progress=False))


@pytest.fixture(scope="module")
def fixture_full(tmp_path_factory: pytest.TempPathFactory) -> FullBenchmark:
    return fixture_bench(str(tmp_path_factory.mktemp("fx")))


@pytest.fixture(scope="module", params=[True, False], ids=["constant-times", "varying-times"])
def varied(request: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, FullBenchmark]:
    root = tmp_path_factory.mktemp("varied")
    rng = np.random.default_rng(17)
    archive = write_varied_archive(root, TEMPLATE, VARIED, rng, constant_times=request.param,
                                   compresslevel=1)
    bench = FullBenchmark.open(convert_full(archive, root / "full", True, progress=False))
    return archive, bench


def assert_same_as_archive(bench: FullBenchmark, records: dict[int, Any]) -> None:
    """Every run of every record equals the archive: accuracies and times bit for bit,
    losses and training accuracies to float32."""
    assert np.flatnonzero(bench.present).tolist() == sorted(records)
    for index, record in records.items():
        assert bench.hp_order == list(record)
        for hp, state in record.items():
            assert bench.records(hp) == list(state["dataset_seed"])
            for ds, seeds in state["dataset_seed"].items():
                assert bench.seeds(index, hp, ds) == seeds
                for seed in seeds:
                    rc = state["all_results"][(ds, seed)]
                    assert_run(bench, index, hp, ds, seed, rc)


def assert_run(bench: FullBenchmark, index: int, hp: str, ds: str, seed: int, rc: Any) -> None:
    epochs = rc["epochs"]
    assert bench.epochs(hp) == epochs and bench.eval_sets(hp, ds) == rc["eval_names"]

    def got(name: str, metric: str) -> list[float]:
        return bench.series(index, hp, ds, seed, name, metric)

    assert got("train", "time") == [rc["train_times"][e] for e in range(epochs)]
    f32 = {"rtol": 2**-23, "atol": 0}
    np.testing.assert_allclose(got("train", "acc"), [rc["train_acc1es"][e] for e in range(epochs)],
                               **f32)
    np.testing.assert_allclose(got("train", "loss"), [rc["train_losses"][e] for e in range(epochs)],
                               **f32)
    for name in rc["eval_names"]:
        keys = [f"{name}@{e}" for e in range(epochs)]
        accs = got(name, "acc")
        assert accs == [rc["eval_acc1es"][k] for k in keys]
        assert all(type(a) is float for a in accs)
        assert got(name, "time") == [rc["eval_times"][k] for k in keys]
        np.testing.assert_allclose(got(name, "loss"), [rc["eval_losses"][k] for k in keys], **f32)
    cost = bench.cost(index, hp, ds, seed)
    assert cost["flop"] == rc["flop"] and type(cost["flop"]) is type(rc["flop"])
    assert cost["params"] == rc["params"] and type(cost["params"]) is type(rc["params"])
    latency = sum(rc["latency"]) / len(rc["latency"])
    assert cost["latency"] == latency and type(cost["latency"]) is type(latency)


def test_the_fixture_comes_back_as_the_archive_holds_it(fixture_full: FullBenchmark) -> None:
    assert_same_as_archive(fixture_full, raw_records(FIXTURE))
    assert fixture_full.index["n_present"] == 3 and not fixture_full.synthetic


def test_fixture_values_match_the_published_table(fixture_full: FullBenchmark) -> None:
    last = [fixture_full.series(0, "12", "cifar10-valid", s, "x-valid", "acc")[-1]
            for s in (777, 888, 999)]
    assert [round(v, 2) for v in last] == [66.60, 66.25, 66.59]
    assert fixture_full.cost(284, "12", "cifar10-valid", 777)["flop"] == 21.827994


def test_a_varied_archive_comes_back_exactly(varied: tuple[Path, FullBenchmark]) -> None:
    archive, bench = varied
    records = raw_records(archive)
    assert_same_as_archive(bench, records)
    seed_lists = {tuple(r["12"]["dataset_seed"]["cifar10-valid"]) for r in records.values()}
    assert len(seed_lists) > 1  # uneven seed lists were written, and kept
    assert bench.synthetic  # the writer's mark survives the conversion


def test_missing_seeds_stay_missing(varied: tuple[Path, FullBenchmark]) -> None:
    archive, bench = varied
    missing = 0
    for index, record in raw_records(archive).items():
        seeds = record["12"]["dataset_seed"]["cifar100"]
        for seed in {777, 888, 999} - set(seeds):
            missing += 1
            with pytest.raises(KeyError, match=f"no run with seed {seed}"):
                bench.series(index, "12", "cifar100", seed, "x-valid", "acc")
    assert missing > 0


def test_absent_architectures_have_no_runs(fixture_full: FullBenchmark) -> None:
    assert fixture_full.seeds(1, "12", "cifar10") == [] and fixture_full.row(1) == -1
    assert int(np.asarray(fixture_full.present).sum()) == 3 and len(fixture_full.present) == N_ARCHS


def test_unknown_setting_and_record_are_named(fixture_full: FullBenchmark) -> None:
    with pytest.raises(KeyError, match=r"hp='200'.*\['01', '12', '90'\]"):
        fixture_full.epochs("200")
    with pytest.raises(KeyError, match="'cifar10-test'"):
        fixture_full.seeds(0, "12", "cifar10-test")


def test_opening_reads_only_the_index(fixture_full: FullBenchmark) -> None:
    bench = FullBenchmark.open(fixture_full.root)
    assert bench._arrays == {} and bench._present is None  # nothing mapped until asked
    bench.seeds(284, "12", "cifar10")
    assert sorted(bench._arrays) == [("12", "cifar10", "offsets"), ("12", "cifar10", "seeds"),
                                     ("rows",)]


def test_not_a_benchmark_folder_says_how_to_convert(tmp_path: Path) -> None:
    with pytest.raises(NotFullBenchmarkError, match="nasfilter convert"):
        FullBenchmark.open(tmp_path)
    (tmp_path / "index.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(NotFullBenchmarkError, match="not a nasfilter-full-nats-sss index"):
        FullBenchmark.open(tmp_path)


def test_partial_archive_needs_allow_partial(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="32765 of 32768 architectures are missing"):
        convert_full(FIXTURE, tmp_path / "out", progress=False)
    assert list(tmp_path.iterdir()) == []  # nothing left behind


def test_a_bad_record_is_named_and_nothing_is_left(tmp_path: Path) -> None:
    archive = tmp_path / "NATS-sss-v1_0-50262-simple"
    shutil.copytree(FIXTURE, archive)
    with bz2.open(archive / "000011.pickle.pbz2", "wb") as fh:
        pickle.dump({"12": {"dataset_seed": {"cifar10": [777]}}}, fh)
    with pytest.raises(ValueError, match=r"000011\.pickle\.pbz2: hp 12 lists records"):
        convert_full(archive, tmp_path / "out", True, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["NATS-sss-v1_0-50262-simple"]


# ------------------------------------------------------------------ the command line
def test_cli_converts_the_fixture_into_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "full"
    argv = ["convert", str(FIXTURE), "-o", str(out), "--allow-partial", "--quiet"]
    assert nasfilter.cli.main(argv) == 0
    line = capsys.readouterr().out
    assert "3 of 32768 architectures" in line and "['01', '12', '90']" in line
    assert_same_as_archive(FullBenchmark.open(out), raw_records(FIXTURE))
    assert nasfilter.cli.main(argv) == 2
    assert "already exists; pass --force" in capsys.readouterr().err
    assert nasfilter.cli.main([*argv, "--force"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


def test_cli_refuses_a_npz_name_without_dataset_and_a_foreign_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["convert", str(FIXTURE), "--allow-partial", "--quiet", "-o"]
    assert nasfilter.cli.main([*base, str(tmp_path / "t.npz")]) == 2
    assert "pass --dataset for a compact table" in capsys.readouterr().err
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    assert nasfilter.cli.main([*base, str(tmp_path / "mine"), "--force"]) == 2
    assert "not a nasfilter benchmark folder" in capsys.readouterr().err
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


# ------------------------------------------------------------------ the compact table
@pytest.mark.parametrize("dataset", ["cifar10", "cifar100", "ImageNet16-120"])
def test_the_compact_table_derives_from_the_full_benchmark(
    fixture_full: FullBenchmark, dataset: str
) -> None:
    from nasfilter.bench.convert import convert_archive
    from nasfilter.bench.nats_api.derive import compact_table

    derived = compact_table(fixture_full, dataset)
    direct = convert_archive(FIXTURE, dataset, allow_partial=True, progress=False)  # nats_bench
    assert derived.seeds == direct.seeds and derived.dataset == direct.dataset
    np.testing.assert_array_equal(derived.present, direct.present)
    for name in ("valid_acc", "test_acc", "train_time", "valid_time", "latency", "params",
                 "macs"):
        np.testing.assert_array_equal(getattr(derived, name), getattr(direct, name), name)
    assert not derived.synthetic


# ------------------------------------------------------------------ other archive forms
def test_the_single_file_archive_converts_the_same(tmp_path: Path) -> None:
    with bz2.open(FIXTURE / "meta.pickle.pbz2", "rb") as fh:
        meta = pickle.load(fh)
    records = raw_records(FIXTURE)
    single = tmp_path / "NATS-sss-v1_0-50262.pickle.pbz2"
    with bz2.open(single, "wb") as fh:
        pickle.dump({"meta_archs": meta["meta_archs"], "arch2infos": records,
                     "evaluated_indexes": set(records)}, fh, protocol=4)
    bench = FullBenchmark.open(convert_full(single, tmp_path / "full", True, progress=False))
    assert_same_as_archive(bench, records)
    assert bench.provenance["source"] == str(single.resolve())


def test_convert_full_refuses_a_crafted_archive_and_runs_nothing(tmp_path: Path) -> None:
    from nasfilter.bench.archive_pickle import UnsafeArchiveError
    from tests.bench.test_archive_pickle import _crafted_archive

    marker = tmp_path / "ran"
    archive = _crafted_archive(tmp_path, "000284.pickle.pbz2", marker)
    with pytest.raises(UnsafeArchiveError, match=r"000284\.pickle\.pbz2.*posix\.system"):
        convert_full(archive, tmp_path / "out", True, progress=False)
    assert not marker.exists() and not (tmp_path / "out").exists()
