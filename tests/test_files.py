"""Atomic writes: the target appears whole or not at all, with umask permissions."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nasfilter.files import atomic_write


def test_writes_text_and_bytes_with_umask_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with atomic_write(tmp_path / "sub" / "a.txt", "w") as fh:
            fh.write("héllo")
        with atomic_write(tmp_path / "b.bin") as fh:
            fh.write(b"\x00\x01")
    finally:
        os.umask(old)
    assert (tmp_path / "sub" / "a.txt").read_text("utf-8") == "héllo"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert stat.S_IMODE((tmp_path / "b.bin").stat().st_mode) == 0o644


def test_failure_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"), atomic_write(target, "w") as fh:
        fh.write("half")
        raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]


def test_rejects_other_modes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode"), atomic_write(tmp_path / "x", "a"):
        pass


def test_read_npz_refuses_missing_foreign_and_pickled_files(tmp_path: Path) -> None:
    import numpy as np

    from nasfilter.files import read_npz

    good = tmp_path / "good.npz"
    np.savez(good, a=np.arange(3))
    assert read_npz(good, "thing", "`make thing`", {"a": 1024})["a"].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match=r"thing file .* does not exist"):
        read_npz(tmp_path / "absent.npz", "thing", "`make thing`", {"a": 1024})
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(ValueError, match=r"is not a thing: it is not an .npz file") as junk:
        read_npz(tmp_path / "junk.npz", "thing", "`make thing`", {"a": 1024})
    assert "the .npz file (a zip of arrays) that `make thing` writes" in str(junk.value)
    (tmp_path / "empty.npz").write_bytes(b"")
    with pytest.raises(ValueError, match=r"is not a thing: it is an empty file"):
        read_npz(tmp_path / "empty.npz", "thing", "`make thing`", {"a": 1024})
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, a=np.array([{"x": 1}], dtype=object))
    with pytest.raises(ValueError, match="is not a thing: it holds pickled Python") as info:
        read_npz(pickled, "thing", "`make thing`", {"a": 1024})
    # numpy's own message invites loading the file "unsafely"; ours never does.
    assert "allow_pickle" not in str(info.value) and "unsafe" not in str(info.value)


def test_read_npz_reads_every_layout_numpy_writes(tmp_path: Path) -> None:
    import numpy as np

    from nasfilter.files import read_npz

    arrays = {
        "fortran": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
        "big": np.arange(5, dtype=">i4"),
        "text": np.array("hello"),
        "empty": np.zeros((0, 3)),
        "flags": np.array([True, False]),
    }
    np.savez_compressed(tmp_path / "all.npz", **arrays)
    got = read_npz(tmp_path / "all.npz", "thing", "`make thing`", dict.fromkeys(arrays, 1024))
    for name, expected in arrays.items():  # np.load is the reference reader
        assert got[name].dtype == expected.dtype and np.array_equal(got[name], expected)
    with np.load(tmp_path / "all.npz") as npz:
        assert all(np.array_equal(got[k], npz[k]) for k in arrays)
    only = read_npz(tmp_path / "all.npz", "thing", "`make thing`", {"big": 20, "absent": 9})
    assert list(only) == ["big"]  # only the members asked for, and only those present
