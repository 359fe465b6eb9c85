"""The full-fidelity ``convert`` under hostile inputs: ``--force`` never deletes a
user's folder, a decompression bomb or a damaged record is refused in one line naming the
file, bad values are refused naming the record and field, and SIGTERM or a killed process
leaves no hidden staging folder behind."""

from __future__ import annotations

import bz2
import copy
import os
import pickle
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nasfilter.cli
from nasfilter.bench.archive_pickle import DamagedArchiveError, load_archive_pickle
from nasfilter.bench.fullbench import FullBenchmark, convert_full
from nasfilter.bench.fullbench.staging import staging_name
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE
REPO = Path(__file__).parent.resolve().parent.parent


def _archive(root: Path) -> Path:
    target = root / "NATS-sss-v1_0-50262-simple"
    shutil.copytree(FIXTURE, target)
    return target


def _record(index: int = 284) -> dict[str, Any]:
    with bz2.open(FIXTURE / f"{index:06d}.pickle.pbz2", "rb") as fh:
        return pickle.load(fh)  # the official fixture: trusted


def _write(path: Path, obj: object) -> None:
    with bz2.open(path, "wb") as fh:
        pickle.dump(obj, fh, protocol=4)


def _convert(archive: Path, out: Path, *extra: str) -> list[str]:
    """Run ``nasfilter convert``; return its stderr lines (asserting it failed with 2)."""
    return _cli(["convert", str(archive), "-o", str(out), "--allow-partial", "--quiet", *extra])


def _cli(argv: list[str], code: int = 2) -> list[str]:
    import io
    from contextlib import redirect_stderr

    err = io.StringIO()
    with redirect_stderr(err):
        assert nasfilter.cli.main(argv) == code, err.getvalue()
    return err.getvalue().splitlines()


# ------------------------------------------------------------------ --force (bug 3)
def test_force_keeps_a_folder_whose_index_is_not_a_benchmarks(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "index.json").write_text('{"chapters": 3}')
    (mine / "thesis.tex").write_text("keep me")
    lines = _convert(FIXTURE, mine, "--force")
    assert len(lines) == 1 and "'" + str(mine) + "'" in lines[0]
    assert "not a nasfilter benchmark folder" in lines[0] and "nothing was deleted" in lines[0]
    assert (mine / "thesis.tex").read_text() == "keep me"


def test_force_keeps_user_files_inside_a_real_benchmark(tmp_path: Path) -> None:
    out = tmp_path / "full"
    convert_full(FIXTURE, out, True, progress=False)
    (out / "thesis.tex").write_text("keep me")
    lines = _convert(FIXTURE, out, "--force")
    assert "'thesis.tex'" in lines[0] and "nothing was deleted" in lines[0]
    assert (out / "thesis.tex").read_text() == "keep me"


@pytest.mark.parametrize("kind", ["file", "link", "unparsable"])
def test_force_refuses_what_is_not_provably_a_benchmark(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("data")
    elif kind == "link":
        real = tmp_path / "real"
        convert_full(FIXTURE, real, True, progress=False)
        out.symlink_to(real)
    else:
        out.mkdir()
        (out / "index.json").write_text("{not json")
    lines = _convert(FIXTURE, out, "--force")
    assert len(lines) == 1 and "not a nasfilter benchmark folder" in lines[0]
    assert out.exists() or out.is_symlink()


def test_force_replaces_an_earlier_benchmark(tmp_path: Path) -> None:
    out = tmp_path / "full"
    convert_full(FIXTURE, out, True, progress=False)
    (out / "index.json").touch()  # a newer mtime: a different folder afterwards
    _cli(["convert", str(FIXTURE), "-o", str(out), "--allow-partial", "--quiet", "--force"], 0)
    assert FullBenchmark.open(out).index["n_present"] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


# ------------------------------------------------------------------ decompression bomb (bug 4)
def test_a_decompression_bomb_is_refused_before_it_fills_memory(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    bomb = archive / "000011.pickle.pbz2"
    # a list of 512 Mi zeros, 1 GiB pickled, as concatenated bz2 streams (bz2 reads them all)
    zeros = bz2.compress(b"K\x00" * (1 << 19), 9)
    bomb.write_bytes(bz2.compress(b"\x80\x02](") + zeros * 1024 + bz2.compress(b"e."))
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(DamagedArchiveError, match=r"000011\.pickle\.pbz2.*decompression bomb"):
            load_archive_pickle(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20  # bytes: the cap (100 x the file, at least 4 MiB) as a list, not
    # the 4 GiB that 512 Mi list items take
    lines = _convert(archive, tmp_path / "out")
    assert len(lines) == 1 and "000011.pickle.pbz2" in lines[0] and "bomb" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [archive.name]


def test_a_declared_terabyte_string_is_refused_without_allocating_it(tmp_path: Path) -> None:
    path = tmp_path / "000011.pickle.pbz2"
    path.write_bytes(bz2.compress(b"\x80\x04\x8d" + struct.pack("<Q", 1 << 40) + b"abc"))
    with pytest.raises(DamagedArchiveError, match=r"000011\.pickle\.pbz2.* too large|bomb"):
        load_archive_pickle(path)


# ------------------------------------------------------------------ damaged archive files
def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _random(path: Path) -> None:
    path.write_bytes(np.random.default_rng(5).bytes(4096))


def _passwd(path: Path) -> None:
    path.unlink()
    path.symlink_to("/etc/passwd")


DAMAGES = {
    "truncated": _truncated,
    "empty": lambda p: p.write_bytes(b""),
    "random-bytes": _random,
    "bz2-of-random": lambda p: p.write_bytes(bz2.compress(np.random.default_rng(6).bytes(999))),
    "symlink-to-passwd": _passwd,
}


@pytest.mark.parametrize("file_name", ["000011.pickle.pbz2", "meta.pickle.pbz2"])
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_archive_file_is_one_line_naming_it(
    tmp_path: Path, damage: str, file_name: str
) -> None:
    archive = _archive(tmp_path)
    DAMAGES[damage](archive / file_name)
    lines = _convert(archive, tmp_path / "out")
    assert len(lines) == 1 and file_name in lines[0], lines
    assert "Traceback" not in lines[0]
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ bad values
def _run_of(record: dict[str, Any]) -> dict[str, Any]:
    return record["12"]["all_results"][("cifar10-valid", 777)]


def _set(field: str, key: Any, value: Any) -> Any:
    def change(record: dict[str, Any]) -> None:
        _run_of(record)[field][key] = value
    return change


def _seeds(record: dict[str, Any]) -> None:
    record["12"]["dataset_seed"]["cifar10"] = [777, 777, 888, 999]


def _arch(record: dict[str, Any]) -> None:
    record["12"]["arch_str"] = _record(11)["12"]["arch_str"]


BAD_VALUES = {
    "nan-accuracy": (_set("eval_acc1es", "x-valid@3", float("nan")), r"eval_acc1es x-valid.*3"),
    "300-percent": (_set("eval_acc1es", "ori-test@11", 300.0), r"eval_acc1es ori-test.*300"),
    "string-accuracy": (_set("train_acc1es", 2, "85.1"), r"train_acc1es at epoch 2 is '85.1'"),
    "none-accuracy": (_set("eval_acc1es", "x-valid@0", None), r"x-valid at epoch 0 is None"),
    "true-accuracy": (_set("eval_acc1es", "x-valid@0", True), r"x-valid at epoch 0 is True"),
    "negative-time": (_set("train_times", 4, -3.5), r"train_times at epoch 4 is -3.5"),
    "infinite-time": (_set("eval_times", "ori-test@1", float("inf")), r"eval_times ori-test"),
    "none-flop": (lambda r: _run_of(r).__setitem__("flop", None), r"flop is None"),
    "empty-latency": (lambda r: _run_of(r).__setitem__("latency", []), r"latency is \[\]"),
    "string-epochs": (lambda r: _run_of(r).__setitem__("epochs", "12"), r"epochs is '12'"),
    "duplicated-seed": (_seeds, r"cifar10 seeds \[777, 777, 888, 999\] repeat seed"),
    "swapped-arch-str": (_arch, r"arch_str is .*but architecture 284 is '8:8:40:32:40'"),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_a_bad_value_is_refused_naming_record_and_field(tmp_path: Path, case: str) -> None:
    change, match = BAD_VALUES[case]
    archive = _archive(tmp_path)
    record = copy.deepcopy(_record())
    change(record)
    _write(archive / "000284.pickle.pbz2", record)
    with pytest.raises(ValueError, match=match) as info:
        convert_full(archive, tmp_path / "out", True, progress=False)
    assert "000284.pickle.pbz2" in str(info.value) and "hp 12" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == [archive.name]


def test_an_epoch_count_mismatch_does_not_contradict_itself(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    record = copy.deepcopy(_record())
    _run_of(record)["epochs"] = 11
    _write(archive / "000284.pickle.pbz2", record)
    with pytest.raises(ValueError, match=r"has 11 epochs, where the records before it have 12"):
        convert_full(archive, tmp_path / "out", True, progress=False)


# ------------------------------------------------------------------ staging, signals, paths
def _converting_child(archive: Path, out: Path, stop_at: int) -> subprocess.Popen[str]:
    """``nasfilter convert`` in a child that sends itself SIGTERM at record ``stop_at``."""
    code = (
        "import os, signal, sys\n"
        "import nasfilter.bench.fullbench.writer as w, nasfilter.cli\n"
        "orig = w._read_record\n"
        "def read(sink, index, *a):\n"
        f"    if index == {stop_at}: os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return orig(sink, index, *a)\n"
        "w._read_record = read\n"
        f"sys.exit(nasfilter.cli.main(['convert', {str(archive)!r}, '-o', {str(out)!r},"
        " '--allow-partial', '--quiet']))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.subprocess
def test_sigterm_leaves_no_staging_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    child = _converting_child(FIXTURE, out, stop_at=11)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 128 + signal.SIGTERM, err
    assert list(tmp_path.iterdir()) == []  # no out, no .out.converting-PID


def test_a_later_run_removes_stale_staging_of_a_killed_one(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    out = tmp_path / "out"
    stale = staging_name(out, "converting", dead.pid)
    (stale / "hp12").mkdir(parents=True)
    (stale / "hp12" / "big.raw").write_bytes(b"x" * 1000)
    other = tmp_path / ".other.converting-1"  # another output's staging: not ours
    other.mkdir()
    _cli(["convert", str(FIXTURE), "-o", str(out), "--allow-partial", "--quiet"], 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.converting-1", "out"]


def test_a_write_error_names_the_output_not_the_staging_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    real_mkdir = Path.mkdir

    def refuse(self: Path, *args: Any, **kwargs: Any) -> None:
        if ".converting-" in self.name:
            raise PermissionError(13, "Permission denied", str(self))
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refuse)
    lines = _convert(FIXTURE, out)
    assert len(lines) == 1 and f"'{out}'" in lines[0] and "Permission denied" in lines[0]
    assert ".converting-" not in lines[0]


@pytest.mark.subprocess
def test_the_suggested_next_command_works_on_a_partial_archive(tmp_path: Path, capsys) -> None:
    out = tmp_path / "full"
    _cli(["convert", str(FIXTURE), "-o", str(out), "--allow-partial", "--quiet"], 0)
    suggestion = capsys.readouterr().out.splitlines()[-1]
    command = suggestion[suggestion.index("python -c"):]
    argv = shlex.split(command)
    argv[0] = sys.executable
    done = subprocess.run(argv, env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "'valid-accuracy': 28.700000000610352" in done.stdout  # fixture arch 0, hp 01
