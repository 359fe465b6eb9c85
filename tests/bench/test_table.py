"""The benchmark table: columns, records, file round trip and refusal of bad files."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.lookup import load_table
from nasfilter.bench.spaces.sss import N_ARCHS, Arch
from nasfilter.bench.table import BenchmarkTable, MissingArchitectureError
from tests.tables import random_table


def test_eval_cost_is_twelve_epochs_plus_one_validation() -> None:
    t = random_table()
    i = 1234
    assert t.eval_cost[i] == pytest.approx(12 * t.train_time[i] + t.valid_time[i], rel=1e-15)
    assert t.flops[i] == pytest.approx(2e6 * t.macs[i])


def test_record_has_the_show_keys() -> None:
    t = random_table()
    rec = t.record("8:8:40:32:40")
    for key in (
        "index",
        "channels",
        "dataset",
        "macs",
        "flops",
        "params",
        "valid_acc_hp12",
        "test_acc_hp90",
        "observed_acc",
        "score_acc",
        "train_seconds_per_epoch",
        "valid_seconds_per_epoch",
        "latency",
        "synthetic",
        "source",
    ):
        assert key in rec
    assert rec["index"] == 284 and rec["channels"] == "8:8:40:32:40"
    assert rec["valid_acc_hp12"] == t.valid_acc[284].tolist() == rec["observed_acc"]
    assert rec["observed"] == "valid@12" and rec["scored"] == "test@90"
    assert rec["synthetic"] is True
    json.dumps(rec)  # plain Python values only


def test_columns_are_read_only() -> None:
    t = random_table()
    with pytest.raises(ValueError):
        t.test_acc[0] = 100.0


def test_save_load_round_trip(tmp_path: Path) -> None:
    present = np.zeros(N_ARCHS, dtype=bool)
    present[[0, 11, 284]] = True
    t = random_table(present=present)
    path = t.save(tmp_path / "t.npz")
    u = BenchmarkTable.load(path)
    assert u.provenance == t.provenance and u.seeds == t.seeds and u.dataset == t.dataset
    for name in (
        "valid_acc",
        "test_acc",
        "train_time",
        "valid_time",
        "latency",
        "params",
        "macs",
        "present",
    ):
        np.testing.assert_array_equal(getattr(u, name), getattr(t, name))
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind
    assert path.stat().st_size < 5e6


def test_missing_rows_fail_clearly() -> None:
    present = np.zeros(N_ARCHS, dtype=bool)
    present[284] = True
    t = random_table(present=present)
    assert t.n_present == 1 and not t.is_complete
    assert np.isnan(t.test_acc[0])
    with pytest.raises(MissingArchitectureError, match=r"8:8:8:8:8 \(index 0\).*1 of 32768"):
        t.record(0)
    assert t.record(Arch.from_index(284))["index"] == 284


def test_bad_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        BenchmarkTable.load(tmp_path / "absent.npz")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="is not a nasfilter table"):
        BenchmarkTable.load(junk)
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, x=np.arange(3))
    with pytest.raises(ValueError, match="missing columns"):
        BenchmarkTable.load(foreign)
    t = random_table()
    path = t.save(tmp_path / "v.npz")
    with zipfile.ZipFile(path) as zf:
        arrays = {n[:-4]: np.load(zf.open(n)) for n in zf.namelist()}
    meta = json.loads(str(arrays["meta"]))
    meta["schema_version"] = 99
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "future.npz", **arrays)
    with pytest.raises(ValueError, match="schema version 99"):
        BenchmarkTable.load(tmp_path / "future.npz")
    with pytest.raises(ValueError, match=r"end in \.npz"):
        t.save(tmp_path / "t.csv")


def test_failed_save_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(OSError, match="disk full"):
        random_table().save(tmp_path / "t.npz")
    assert list(tmp_path.iterdir()) == []


def test_load_table_checks_the_dataset(tmp_path: Path) -> None:
    path = random_table(dataset="cifar100").save(tmp_path / "c100.npz")
    assert load_table(path, "CIFAR100").dataset.name == "cifar100"
    with pytest.raises(ValueError, match="holds dataset 'cifar100', not 'cifar10'"):
        load_table(path, "cifar10")
    with pytest.raises(ValueError, match="unknown dataset 'mnist'; known datasets"):
        load_table(path, "mnist")


def test_shape_errors_name_the_column() -> None:
    t = random_table()
    with pytest.raises(ValueError, match="'test_acc' must have shape"):
        BenchmarkTable(**{**t.__dict__, "test_acc": np.zeros(3)})
