"""Converting a real NATS-Bench sss archive, checked against the real nats_bench API."""

from __future__ import annotations

import bz2
import functools
import hashlib
import importlib.metadata
import pickle
import random
import re
import shutil
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import nats_bench
import numpy as np
import pytest

import nasfilter.cli
from nasfilter.bench.convert import WRITTEN_MARK, MissingDependencyError, convert_archive
from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.spaces.sss import N_ARCHS
from nasfilter.bench.table import BenchmarkTable, Provenance
from nasfilter.bench.tss_real import tss_table
from nasfilter.testing.nats_archive import write_nats_archive
from tests.paths import NATS_SSS_FIXTURE
from tests.tables import random_table

FIXTURE = NATS_SSS_FIXTURE
INDICES = (0, 11, 284)
DATASETS = ("cifar10", "cifar100", "ImageNet16-120")
COLUMNS = ("valid_acc", "test_acc", "train_time", "valid_time", "latency", "params", "macs")
FILE_NAME = "NATS-sss-v1_0-50262.pickle.pbz2"


@functools.cache
def converted(dataset: str) -> BenchmarkTable:
    return convert_archive(FIXTURE, dataset, allow_partial=True, progress=False)


def real_api(path: Path = FIXTURE) -> Any:
    return nats_bench.create(str(path), "sss", fast_mode=path.is_dir(), verbose=False)


def copy_fixture(root: Path, name: str = "NATS-sss-v1_0-50262-simple") -> Path:
    target = root / name
    shutil.copytree(FIXTURE, target)
    return target


def bz2_pickle(obj: object, path: Path) -> Path:
    with bz2.open(path, "wb") as fh:
        pickle.dump(obj, fh, protocol=4)
    return path


def assert_same_rows(a: BenchmarkTable, b: BenchmarkTable, rtol: float = 0.0) -> None:
    assert a.seeds == b.seeds and a.dataset == b.dataset
    np.testing.assert_array_equal(a.present, b.present)
    for name in COLUMNS:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=rtol, atol=0)


# ------------------------------------------------------------------ the real fixture
def test_refuses_a_partial_archive_without_allow_partial() -> None:
    with pytest.raises(ValueError, match="32765 of 32768 architectures are missing") as info:
        convert_archive(FIXTURE, "cifar10", progress=False)
    assert "allow_partial=True" in str(info.value) and "--allow-partial" in str(info.value)


@pytest.mark.parametrize("dataset", DATASETS)
def test_rows_equal_what_the_api_returns(dataset: str) -> None:
    table = converted(dataset)
    ds = get_dataset(dataset)
    api = real_api()
    for i in INDICES:
        seeds = api.query_meta_info_by_index(i, "12").get_dataset_seeds(ds.search_record)
        assert table.seeds == tuple(seeds)
        for slot, seed in enumerate(seeds):
            info = api.get_more_info(i, ds.search_record, hp="12", is_random=seed)
            assert table.valid_acc[i, slot] == info["valid-accuracy"]
        mean = api.get_more_info(i, ds.search_record, hp="12", is_random=False)
        assert table.train_time[i] == mean["train-per-time"]
        assert table.valid_time[i] == mean["valid-per-time"]
        final = api.get_more_info(i, ds.final_record, hp="90", is_random=False)
        assert table.test_acc[i] == final["test-accuracy"]
        cost = api.get_cost_info(i, dataset)
        assert table.macs[i] == cost["flops"] and table.params[i] == cost["params"]
        assert table.latency[i] == api.get_latency(i, dataset)


@pytest.mark.parametrize("dataset", DATASETS)
def test_rows_match_simulate_train_eval(dataset: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """simulate_train_eval draws its seed with random.choice: force each seed in turn."""
    table = converted(dataset)
    api = real_api()
    drawn: list[Sequence[int]] = []
    for i in INDICES:
        for slot, seed in enumerate(table.seeds):

            def choose(seq: Sequence[int], seed: int = seed) -> int:
                drawn.append(list(seq))
                return seed

            monkeypatch.setattr(random, "choice", choose)
            acc, latency, time_cost, _ = api.simulate_train_eval(i, dataset)
            assert acc == table.valid_acc[i, slot]
            assert latency == table.latency[i]
            expected = 12 * table.train_time[i] + table.valid_time[i]
            assert time_cost == pytest.approx(expected, rel=1e-9)
            assert time_cost == pytest.approx(table.eval_cost[i], rel=1e-9)
    assert drawn and all(seq == list(table.seeds) for seq in drawn)


def test_cifar10_rows_match_the_published_fixture_values() -> None:
    """Independent reference: the values listed in docs/facts.md §3 (rounded as printed there)."""
    t = converted("cifar10")
    np.testing.assert_allclose(t.valid_acc[0], [66.60, 66.25, 66.59], atol=0.006)
    np.testing.assert_allclose(t.valid_acc[284], [79.35, 79.52, 79.08], atol=0.006)
    np.testing.assert_allclose(t.test_acc[[0, 11, 284]], [79.79, 85.77, 89.51], atol=0.006)
    np.testing.assert_allclose(t.train_time[[0, 11, 284]], [3.548, 2.940, 3.347], atol=6e-4)
    np.testing.assert_allclose(t.macs[[0, 11, 284]], [4.481114, 6.84065, 21.827994], rtol=1e-9)
    assert t.eval_cost[0] == pytest.approx(43.80, abs=0.01)


@pytest.mark.parametrize("dataset", DATASETS)
def test_absent_rows_are_nan_never_zero(dataset: str) -> None:
    t = converted(dataset)
    assert t.n_present == 3 and t.present[list(INDICES)].all()
    absent = ~t.present
    for name in COLUMNS:
        col = getattr(t, name)
        assert np.isnan(col[absent]).all(), name
        assert np.isfinite(col[t.present]).all(), name


def test_provenance_describes_the_archive(tmp_path: Path) -> None:
    t = converted("cifar10")
    p = t.provenance
    assert p.synthetic is False and not t.synthetic
    assert p.source == str(FIXTURE.resolve())
    assert p.nats_bench_version == importlib.metadata.version("nats_bench")
    assert p.extra == {"n_present": 3, "format": "folder"}
    assert p.created is not None
    created = datetime.fromisoformat(p.created)
    assert created.utcoffset() == timezone.utc.utcoffset(None)
    assert p.checksum is not None and len(p.checksum) == 64
    int(p.checksum, 16)
    assert "NATS-sss-v1_0-50262-simple" in t.label and "SYNTHETIC" not in t.label
    # the checksum follows the files, not their location
    copy = copy_fixture(tmp_path)
    same = convert_archive(copy, "cifar10", allow_partial=True, progress=False)
    assert same.provenance.checksum == p.checksum
    (copy / "000011.pickle.pbz2").unlink()
    fewer = convert_archive(copy, "cifar10", allow_partial=True, progress=False)
    assert fewer.provenance.checksum != p.checksum
    assert not fewer.present[11] and np.isnan(fewer.test_acc[11]) and fewer.present[284]
    assert fewer.provenance.extra["n_present"] == 2


def test_save_load_round_trip(tmp_path: Path) -> None:
    t = converted("cifar10")
    u = BenchmarkTable.load(t.save(tmp_path / "t.npz"))
    assert u.provenance == t.provenance
    assert_same_rows(t, u)


def test_the_api_does_not_keep_the_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each architecture's records are dropped after reading (memory stays bounded)."""
    apis: list[Any] = []
    real_create = nats_bench.create

    def spy(*args: Any, **kwargs: Any) -> Any:
        api = real_create(*args, **kwargs)
        apis.append(api)
        return api

    monkeypatch.setattr(nats_bench, "create", spy)
    convert_archive(FIXTURE, "cifar10", allow_partial=True, progress=False)
    assert len(apis) == 1
    assert len(apis[0].arch2infos_dict) == 0 and len(apis[0].evaluated_indexes) == 0


def test_progress_bar_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    convert_archive(FIXTURE, "cifar10", allow_partial=True, progress=True)
    assert "3/3" in capsys.readouterr().err
    convert_archive(FIXTURE, "cifar10", allow_partial=True, progress=False)
    assert capsys.readouterr().err == ""


# -------------------------------------------------------------- single-file format
@pytest.fixture(scope="module")
def single_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with bz2.open(FIXTURE / "meta.pickle.pbz2", "rb") as fh:
        meta = pickle.load(fh)
    infos = {}
    for i in INDICES:
        with bz2.open(FIXTURE / f"{i:06d}.pickle.pbz2", "rb") as fh:
            infos[i] = pickle.load(fh)
    archive = {
        "meta_archs": meta["meta_archs"],
        "total_archs": meta["total_archs"],
        "arch2infos": infos,
        "evaluated_indexes": set(INDICES),
    }
    return bz2_pickle(archive, tmp_path_factory.mktemp("single") / FILE_NAME)


def test_nats_bench_reads_the_built_single_file(single_file: Path) -> None:
    api, ref = real_api(single_file), real_api()
    assert api.evaluated_indexes == set(INDICES)
    for i in INDICES:
        for hp in ("12", "90"):
            assert api.get_more_info(i, "cifar10", hp=hp, is_random=False) == ref.get_more_info(
                i, "cifar10", hp=hp, is_random=False
            )


@pytest.mark.parametrize("dataset", DATASETS)
def test_single_file_converts_to_the_same_table(single_file: Path, dataset: str) -> None:
    t = convert_archive(single_file, dataset, allow_partial=True, progress=False)
    assert_same_rows(t, converted(dataset))
    assert t.provenance.extra == {"n_present": 3, "format": "file"}
    assert t.provenance.source == str(single_file.resolve())
    digest = hashlib.sha256(single_file.read_bytes()).hexdigest()
    assert t.provenance.checksum != digest  # the name is hashed too, not the bytes alone
    with pytest.raises(ValueError, match="32765 of 32768"):
        convert_archive(single_file, dataset, progress=False)


# ----------------------------------------------------------------------- bad input
def test_path_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ValueError, match=re.escape(f"{str(missing)!r} does not exist")):
        convert_archive(missing, "cifar10")


def test_unknown_dataset() -> None:
    with pytest.raises(ValueError, match="unknown dataset 'cifar1000'"):
        convert_archive(FIXTURE, "cifar1000")


def test_folder_without_meta(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path)
    (folder / "meta.pickle.pbz2").unlink()
    with pytest.raises(ValueError, match=r"meta\.pickle\.pbz2 is missing") as info:
        convert_archive(folder, "cifar10", allow_partial=True)
    assert str(folder) in str(info.value)


def test_folder_with_a_wrong_name(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path, "my-archive")
    with pytest.raises(ValueError, match="got a folder named 'my-archive'") as info:
        convert_archive(folder, "cifar10", allow_partial=True)
    assert str(folder) in str(info.value)


def test_parent_folder_gets_a_hint(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path)
    with pytest.raises(ValueError, match="did you mean") as info:
        convert_archive(tmp_path, "cifar10", allow_partial=True)
    assert str(folder) in str(info.value)


@pytest.mark.parametrize("name", ["284.pickle.pbz2", "032768.pickle.pbz2"])
def test_folder_with_a_wrong_layout(tmp_path: Path, name: str) -> None:
    folder = copy_fixture(tmp_path)
    shutil.copy(folder / "000284.pickle.pbz2", folder / name)
    with pytest.raises(ValueError, match=re.escape(name)):
        convert_archive(folder, "cifar10", allow_partial=True)


@pytest.mark.parametrize("name", ["000284.pickle.pbz2", "meta.pickle.pbz2"])
def test_one_file_of_the_folder_gets_a_hint(name: str) -> None:
    with pytest.raises(ValueError, match="give the folder") as info:
        convert_archive(FIXTURE / name, "cifar10", allow_partial=True)
    assert str(FIXTURE.resolve()) in str(info.value)


def test_folder_of_another_search_space(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path)
    with bz2.open(folder / "meta.pickle.pbz2", "rb") as fh:
        meta = pickle.load(fh)
    meta["meta_archs"] = meta["meta_archs"][:15625]  # the topology space's size
    bz2_pickle(meta, folder / "meta.pickle.pbz2")
    with pytest.raises(ValueError, match=r"not a NATS-Bench size-space .* 15625"):
        convert_archive(folder, "cifar10", allow_partial=True)


def test_corrupt_meta(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path)
    data = (folder / "meta.pickle.pbz2").read_bytes()
    (folder / "meta.pickle.pbz2").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"meta\.pickle\.pbz2.* is truncated or empty"):
        convert_archive(folder, "cifar10", allow_partial=True)


@pytest.mark.parametrize(
    "content",
    [b"not a bz2 file", bz2.compress(b"bz2 but no pickle"), bz2.compress(pickle.dumps([1, 2]))],
    ids=["text", "bz2-not-pickle", "pickle-not-archive"],
)
def test_file_that_is_not_an_archive(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / FILE_NAME
    path.write_bytes(content)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        convert_archive(path, "cifar10", allow_partial=True)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated bz2
        lambda data: data[:10] + bytes(len(data) - 10),  # zeroed
        lambda data: bz2.compress(pickle.dumps({"12": "garbage"})),  # wrong content
    ],
    ids=["truncated", "zeroed", "wrong-content"],
)
def test_corrupt_architecture_record_names_its_file(tmp_path: Path, damage: Any) -> None:
    folder = copy_fixture(tmp_path)
    record = folder / "000011.pickle.pbz2"
    record.write_bytes(damage(record.read_bytes()))
    with pytest.raises(ValueError, match=r"000011\.pickle\.pbz2") as info:
        convert_archive(folder, "cifar10", allow_partial=True, progress=False)
    assert "architecture 11" in str(info.value)


def test_missing_nats_bench_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nats_bench", None)  # import now raises ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install nasfilter\[nats\]"):
        convert_archive(FIXTURE, "cifar10", allow_partial=True)


# ---------------------------------------------------------------------------- CLI
@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``nasfilter.cli.main`` with only this subcommand registered (isolates its tests)."""
    monkeypatch.setattr(nasfilter.cli, "COMMAND_MODULES", ("convert",))
    return nasfilter.cli.main


def test_cli_converts_and_summarises(
    cli: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.npz"
    argv = ["convert", str(FIXTURE), "--dataset", "cifar100", "-o", str(out)]
    assert cli([*argv, "--allow-partial", "--quiet"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert len(lines) == 1 and captured.err == ""
    t = BenchmarkTable.load(out)
    assert_same_rows(t, converted("cifar100"))
    assert t.provenance.checksum is not None
    assert "3 of 32768" in lines[0] and str(FIXTURE.resolve()) in lines[0]
    assert t.provenance.checksum[:12] in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.npz"]


def test_cli_refuses_partial_and_writes_nothing(
    cli: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.npz"
    assert cli(["convert", str(FIXTURE), "--dataset", "cifar10", "-o", str(out), "--quiet"]) == 2
    assert "32765 of 32768" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_cli_refuses_to_overwrite_without_force(
    cli: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.npz"
    out.write_bytes(b"precious")
    argv = ["convert", str(FIXTURE), "--dataset", "cifar10", "-o", str(out)]
    argv += ["--allow-partial", "--quiet"]
    assert cli(argv) == 2
    assert "already exists" in capsys.readouterr().err and out.read_bytes() == b"precious"
    assert cli([*argv, "--force"]) == 0
    assert BenchmarkTable.load(out).n_present == 3


def test_cli_failed_conversion_leaves_no_output(
    cli: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy_fixture(tmp_path / "in")
    record = folder / "000284.pickle.pbz2"
    record.write_bytes(record.read_bytes()[:1000])
    outdir = tmp_path / "out"
    outdir.mkdir()
    argv = ["convert", str(folder), "--dataset", "cifar10", "-o", str(outdir / "t.npz")]
    argv += ["--allow-partial", "--quiet"]
    assert cli(argv) == 2
    assert "000284.pickle.pbz2" in capsys.readouterr().err
    assert list(outdir.iterdir()) == []
    (outdir / "t.npz").write_bytes(b"old")  # with --force, a failure keeps the old file
    assert cli([*argv, "--force"]) == 2
    assert [p.name for p in outdir.iterdir()] == ["t.npz"]
    assert (outdir / "t.npz").read_bytes() == b"old"


def test_cli_reports_a_missing_nats_bench(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "nats_bench", None)
    out = tmp_path / "t.npz"
    argv = ["convert", str(FIXTURE), "--dataset", "cifar10", "-o", str(out), "--allow-partial"]
    assert cli(argv) == 2
    assert "pip install nasfilter[nats]" in capsys.readouterr().err
    assert not out.exists()


def test_cli_shows_progress_unless_quiet(
    cli: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "t.npz")
    assert cli(["convert", str(FIXTURE), "--dataset", "cifar10", "-o", out, "--allow-partial"]) == 0
    assert "converting" in capsys.readouterr().err


# --------------------------------------------------------- writing NATS archives
TEMPLATE = FIXTURE / "000000.pickle.pbz2"


def test_written_meta_equals_the_official_one(tmp_path: Path) -> None:
    folder = write_nats_archive(random_table(1), tmp_path, TEMPLATE, indices=[5])
    with bz2.open(folder / "meta.pickle.pbz2", "rb") as fh:
        ours = pickle.load(fh)
    with bz2.open(FIXTURE / "meta.pickle.pbz2", "rb") as fh:
        official = pickle.load(fh)
    mark = ours.pop(WRITTEN_MARK)  # the one addition: who wrote it, from which table
    assert mark["synthetic"] is True and mark["table_source"] == "tests.tables.random_table"
    assert WRITTEN_MARK not in official
    assert ours == official
    assert sorted(p.name for p in folder.iterdir()) == ["000005.pickle.pbz2", "meta.pickle.pbz2"]


def test_a_tss_table_is_refused_naming_its_space(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"size-space \(sss\) archive; table .* is of the tss "):
        write_nats_archive(tss_table("cifar10"), tmp_path, TEMPLATE, indices=[5])
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_written_archive_is_read_by_nats_bench_and_converts_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = random_table(2)
    rows = [0, 7, 12, 4095, 32767]
    folder = write_nats_archive(table, tmp_path, TEMPLATE, indices=rows)
    api = real_api(folder)
    for i in rows:
        for slot, seed in enumerate(table.seeds):
            info = api.get_more_info(i, "cifar10-valid", hp="12", is_random=seed)
            assert info["valid-accuracy"] == table.valid_acc[i, slot]
            monkeypatch.setattr(random, "choice", lambda seq, seed=seed: seed)
            acc, latency, time_cost, _ = api.simulate_train_eval(i, "cifar10")
            assert acc == table.valid_acc[i, slot]
            assert latency == pytest.approx(table.latency[i], rel=1e-12)
            assert time_cost == pytest.approx(table.eval_cost[i], rel=1e-9)
        final = api.get_more_info(i, "cifar10", hp="90", is_random=False)
        assert final["test-accuracy"] == table.test_acc[i]
        assert api.arch(i) == api.get_net_config(i, "cifar10")["channels"]
    back = convert_archive(folder, "cifar10", allow_partial=True, progress=False)
    assert np.flatnonzero(back.present).tolist() == rows
    for name in COLUMNS:
        np.testing.assert_allclose(
            getattr(back, name)[rows], getattr(table, name)[rows], rtol=1e-12
        )
    np.testing.assert_array_equal(back.valid_acc[rows], table.valid_acc[rows])
    np.testing.assert_array_equal(back.test_acc[rows], table.test_acc[rows])


def test_fixture_table_written_and_converted_is_unchanged(tmp_path: Path) -> None:
    t = converted("cifar10")
    folder = write_nats_archive(t, tmp_path, TEMPLATE)  # every present row: 0, 11, 284
    assert_same_rows(
        convert_archive(folder, "cifar10", allow_partial=True, progress=False), t, 1e-12
    )


def test_cifar100_table_round_trip(tmp_path: Path) -> None:
    t = random_table(3, dataset="cifar100")
    rows = [3, 2000]
    folder = write_nats_archive(t, tmp_path, TEMPLATE, indices=rows, datasets=("cifar100",))
    back = convert_archive(folder, "cifar100", allow_partial=True, progress=False)
    for name in COLUMNS:
        np.testing.assert_allclose(getattr(back, name)[rows], getattr(t, name)[rows], rtol=1e-12)


def test_a_missing_seed_is_nan_after_the_round_trip(tmp_path: Path) -> None:
    t = random_table(4)
    valid = t.valid_acc.copy()
    valid[9, 2] = np.nan  # no seed-999 run for architecture 9
    holed = BenchmarkTable(
        dataset=t.dataset,
        seeds=t.seeds,
        valid_acc=valid,
        test_acc=t.test_acc,
        train_time=t.train_time,
        valid_time=t.valid_time,
        latency=t.latency,
        params=t.params,
        macs=t.macs,
        present=t.present,
        provenance=Provenance(synthetic=True, source="test"),
    )
    folder = write_nats_archive(holed, tmp_path, TEMPLATE, indices=[8, 9])
    assert real_api(folder).query_meta_info_by_index(9, "12").get_dataset_seeds(
        "cifar10-valid"
    ) == [777, 888]
    back = convert_archive(folder, "cifar10", allow_partial=True, progress=False)
    assert back.seeds == (777, 888, 999)
    assert np.isnan(back.valid_acc[9, 2]) and not np.isnan(back.valid_acc[9, :2]).any()
    np.testing.assert_array_equal(back.valid_acc[8], t.valid_acc[8])


def test_write_refuses_bad_requests(tmp_path: Path) -> None:
    present = np.zeros(N_ARCHS, dtype=bool)
    present[[1, 2]] = True
    t = random_table(5, present=present)
    with pytest.raises(ValueError, match=r"indices \[3\]"):
        write_nats_archive(t, tmp_path, TEMPLATE, indices=[1, 3])
    with pytest.raises(ValueError, match="datasets must hold"):
        write_nats_archive(t, tmp_path, TEMPLATE, datasets=("cifar10-valid",))
    with pytest.raises(ValueError, match="not a usable NATS-Bench"):
        write_nats_archive(t, tmp_path, FIXTURE / "meta.pickle.pbz2")
    write_nats_archive(t, tmp_path, TEMPLATE)
    with pytest.raises(ValueError, match="not empty"):
        write_nats_archive(t, tmp_path, TEMPLATE)
