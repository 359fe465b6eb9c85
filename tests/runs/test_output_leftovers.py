"""Outputs that fail half-way leave nothing partial: ``reproduce`` on a full disk
removes what it wrote, and ``profile --out`` never writes over a folder named like one of its
files."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest

from nasfilter.cli import main


@pytest.mark.parametrize("existing", [False, True], ids=["new-folder", "empty-folder"])
def test_reproduce_on_a_full_disk_leaves_no_partial_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    existing: bool,
) -> None:
    out = tmp_path / "out"
    if existing:
        out.mkdir()
    import nasfilter.study.reproduce as reproduce

    def full_disk(folder: Path, *args: Any) -> None:
        assert (folder / "fig3.png").is_file()  # the figures were written before it
        raise OSError(errno.ENOSPC, f"cannot write {str(folder / 'report.html')!r}: No space "
                      "left on device (the disk is full: free some space)")

    monkeypatch.setattr(reproduce, "write_study_report", full_disk)
    argv = ["reproduce", "--out", str(out), "--seeds", "0", "--budget", "3000", "--workers",
            "1", "--jobs", "1", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "report.html" in err and "disk is full" in err and "Traceback" not in err
    if existing:
        assert list(out.iterdir()) == []  # as it was
    else:
        assert not out.exists()


@pytest.mark.parametrize("kind", ["folder", "link"])
def test_profile_refuses_a_folder_named_like_its_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    out = tmp_path / "prof"
    out.mkdir()
    entry = out / "profile.json"
    if kind == "folder":
        entry.mkdir()
        (entry / "notes.txt").write_text("keep me")
    else:
        (tmp_path / "elsewhere.json").write_text("keep me")
        entry.symlink_to(tmp_path / "elsewhere.json")
    argv = ["profile", "resnet18", "--device", "v100", "--out", str(out), "--quiet"]
    for extra in ([], ["--force"]):
        assert main([*argv, *extra]) == 2
        err = capsys.readouterr().err
        assert f"holds 'profile.json', which is a {kind}" in err and "Traceback" not in err
        assert sorted(p.name for p in out.iterdir()) == ["profile.json"]  # nothing written
    kept = entry / "notes.txt" if kind == "folder" else tmp_path / "elsewhere.json"
    assert kept.read_text() == "keep me"
