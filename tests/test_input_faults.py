"""Hostile and mistaken inputs: crafted table files, bad table values, oracle specs the
backends do not take, settings that would exhaust memory, and misuse of the Python API.

Each case is refused with a message naming the value and what to do, before anything is
consumed; valid inputs behave exactly as before."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.cli import main
from nasfilter.space import N_ARCHS, as_arch
from nasfilter.table import BenchmarkTable, load_table
from tests.tables import random_table


# ------------------------------------------------------------------ crafted table files
def _npy_header(shape: tuple[int, ...], dtype: str = "<f8") -> bytes:
    """A .npy header declaring ``shape`` (the data that follows may be much shorter)."""
    import io

    buf = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue()  # the magic string and the header


def _with_member(tmp_path: Path, name: str, payload: bytes) -> Path:
    """A valid saved table with the member ``name`` added or replaced by raw ``payload``."""
    good = random_table().save(tmp_path / "good.npz")
    path = tmp_path / "crafted.npz"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.namelist():
            if item != name:
                dst.writestr(item, src.read(item))
        dst.writestr(name, payload)
    return path


def test_a_table_with_an_extra_huge_member_loads_without_reading_it(tmp_path: Path) -> None:
    # The extra member declares 8 TiB; reading it at all would fail or exhaust memory.
    path = _with_member(tmp_path, "junk.npy", _npy_header((2**40,)) + b"\0" * 64)
    table = BenchmarkTable.load(path)
    assert table.seeds == (777, 888, 999)
    reference = random_table()
    assert np.array_equal(table.test_acc, reference.test_acc)


def test_a_known_member_declaring_more_than_its_shape_is_refused_unread(tmp_path: Path) -> None:
    path = _with_member(tmp_path, "test_acc.npy", _npy_header((2**33,)) + b"\0" * 64)
    with pytest.raises(ValueError, match=r"crafted\.npz") as info:
        BenchmarkTable.load(path)
    assert "'test_acc.npy' declares 68,719,476,736 bytes" in str(info.value)
    assert f"more than the {8 * N_ARCHS:,}" in str(info.value)


def test_a_measurement_table_with_an_extra_member_reads_only_its_columns(tmp_path: Path) -> None:
    from nasfilter.oracle.proxies import load_sample, sample_path

    path = tmp_path / "sample.npz"
    with zipfile.ZipFile(sample_path()) as src, zipfile.ZipFile(path, "w") as dst:
        for item in src.namelist():
            dst.writestr(item, src.read(item))
        dst.writestr("junk.npy", _npy_header((2**40,)) + b"\0" * 64)
    from nasfilter.oracle.tablefile import load_table_file

    assert np.array_equal(load_table_file(path).arch, load_sample().arch)


def test_load_table_of_a_non_path_says_what_it_takes() -> None:
    with pytest.raises(TypeError, match=r"a table path must be a str or os.PathLike.*got int 5"):
        load_table(5)  # type: ignore[arg-type]


# ------------------------------------------------------------------ bad table values
def _saved_with(tmp_path: Path, column: str, index: int, value: Any) -> Path:
    table = random_table()
    data = {
        key: np.array(getattr(table, key))
        for key in (
            "valid_acc",
            "test_acc",
            "train_time",
            "valid_time",
            "latency",
            "params",
            "macs",
            "present",
        )
    }
    data[column][index] = value
    path = table.save(tmp_path / "good.npz")
    with np.load(path) as npz:
        meta = str(npz["meta"])
    bad = tmp_path / "bad.npz"
    np.savez(bad, meta=np.array(meta), **data)
    return bad


@pytest.mark.parametrize(
    ("column", "value", "shown"),
    [
        ("train_time", -3.5, "-3.5"),
        ("train_time", math.nan, "nan"),
        ("valid_time", math.inf, "inf"),
        ("test_acc", 300.0, "300.0"),
        ("test_acc", -1.0, "-1.0"),
        ("valid_acc", 279.5, "279.5"),
        ("macs", -5.0, "-5.0"),
        ("params", math.inf, "inf"),
        ("latency", -0.01, "-0.01"),
    ],
)
def test_bad_table_values_are_refused_naming_file_column_value_and_index(
    tmp_path: Path, column: str, value: float, shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _saved_with(tmp_path, column, 1234, value)
    with pytest.raises(ValueError) as info:
        BenchmarkTable.load(path)
    message = str(info.value)
    assert "bad.npz" in message and f"column {column!r}" in message
    assert shown in message and "index 1234" in message and str(as_arch(1234)) in message
    assert "np.float64" not in message
    assert main(["show", "5", "--table", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nasfilter show: error: --table: ") and "Traceback" not in err


def test_nan_accuracies_of_absent_seeds_are_still_accepted(tmp_path: Path) -> None:
    path = _saved_with(tmp_path, "valid_acc", 7, math.nan)  # one seed's run missing
    assert np.isnan(BenchmarkTable.load(path).valid_acc[7]).sum() == 3


def test_duplicated_seeds_are_refused_naming_the_seed(tmp_path: Path) -> None:
    good = random_table().save(tmp_path / "good.npz")
    with np.load(good) as npz:
        data = {key: npz[key] for key in npz.files}
    meta = json.loads(str(data["meta"]))
    meta["seeds"] = [777, 777, 777]
    data["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "dup.npz", **data)
    twice = r"dup\.npz.*'seeds' holds seed 777 twice \(index 0 and 1\)"
    with pytest.raises(ValueError, match=twice):
        BenchmarkTable.load(tmp_path / "dup.npz")
