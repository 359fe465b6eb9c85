"""A damaged benchmark folder is refused in one line naming the file, never served:
its index lists every array's shape, dtype and sha256, checked when an array is first used.
Also: resuming on the same folder is not refused for a timestamp, and a reduction factor
that would make millions of rungs is refused naming the bound."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nasfilter.cli
from nasfilter.bench.fullbench import FullBenchmark, convert_full
from nasfilter.bench.fullbench.bench import DamagedBenchmarkError, NotFullBenchmarkError
from nasfilter.bench.fullbench.index import file_digest
from nasfilter.bench.nats_api.derive import compact_table
from nasfilter.runs.storage.base import InMemoryStorage, changed_inputs
from nasfilter.runs.storage.sqlite_store import Store, StoreError
from nasfilter.searchers import ASHA, Hyperband, SuccessiveHalving
from nasfilter.searchers.bohb import BOHB
from nasfilter.searchers.mo_asha import MOASHA
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE
CURVE = "hp12/cifar10-valid/x-valid.acc.npy"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return convert_full(FIXTURE, tmp_path / "full", True, progress=False)


def _index(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "index.json").read_text())


def _write_index(folder: Path, index: Any) -> None:
    (folder / "index.json").write_text(json.dumps(index))


def _read_all(folder: Path) -> None:
    """Everything a search reads: the compact table of every dataset."""
    for dataset in ("cifar10", "cifar100", "ImageNet16-120"):
        compact_table(folder, dataset)


def _cli_line(folder: Path, tmp_path: Path) -> str:
    """The error of ``nasfilter run --table FOLDER`` (one line, exit status 2)."""
    import io
    from contextlib import redirect_stderr

    err = io.StringIO()
    with redirect_stderr(err):
        code = nasfilter.cli.main(["run", "--table", str(folder), "--searchers", "hyperband",
                                   "--db", str(tmp_path / "r.db"),
                                   "--budget", "2000", "--no-progress"])
    lines = err.getvalue().splitlines()
    assert code == 2 and len(lines) == 1, lines
    return lines[0]


# ------------------------------------------------------------------ index.json
def test_deep_json_is_one_line_naming_the_index(folder: Path, tmp_path: Path) -> None:
    (folder / "index.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DamagedBenchmarkError, match=r"index\.json' is unreadable.*Recursion"):
        FullBenchmark.open(folder)
    assert "index.json" in _cli_line(folder, tmp_path)


@pytest.mark.parametrize("key", ["layout", "provenance", "files"])
def test_a_missing_index_key_is_named(folder: Path, tmp_path: Path, key: str) -> None:
    index = _index(folder)
    del index[key]
    _write_index(folder, index)
    with pytest.raises(DamagedBenchmarkError, match=rf"index\.json': {key} is missing"):
        FullBenchmark.open(folder)
    assert f"{key} is missing" in _cli_line(folder, tmp_path)


def test_a_layout_of_the_wrong_type_is_named(folder: Path) -> None:
    index = _index(folder)
    index["layout"]["hps"] = ["12"]
    _write_index(folder, index)
    with pytest.raises(DamagedBenchmarkError, match=r"layout\.hps is a list, expected a dict"):
        FullBenchmark.open(folder)


def test_a_folder_of_the_previous_format_names_the_command_that_recreates_it(
    folder: Path,
) -> None:
    index = _index(folder)
    index["version"] = 2
    del index["files"]
    _write_index(folder, index)
    with pytest.raises(NotFullBenchmarkError, match=rf"version 2.*nasfilter convert .* -o "
                                                    rf"{folder} --force"):
        FullBenchmark.open(folder)


# ------------------------------------------------------------------ arrays
def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 7])


def _shorten(path: Path) -> None:
    np.save(path, np.load(path)[:-1])


DAMAGES = {
    "truncated": _truncate,
    "emptied": lambda p: p.write_bytes(b""),
    "shortened": _shorten,
    "deleted": lambda p: p.unlink(),
    "other-dtype": lambda p: np.save(p, np.load(p).astype(np.float32)),
    "fewer-epochs": lambda p: np.save(p, np.load(p)[:, :11]),
}


@pytest.mark.parametrize("mapped", [False, True], ids=["read", "memory-mapped"])
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_array_is_named_not_served(
    folder: Path, tmp_path: Path, damage: str, mapped: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mapped:
        monkeypatch.setattr("nasfilter.bench.fullbench.bench._MAP_ABOVE", 0)
    DAMAGES[damage](folder / CURVE)
    bench = FullBenchmark.open(folder)
    with pytest.raises(DamagedBenchmarkError, match=r"x-valid\.acc\.npy.*nasfilter convert"):
        bench.series(284, "12", "cifar10-valid", 777, "x-valid", "acc")
    assert "x-valid.acc.npy" in _cli_line(folder, tmp_path)


@pytest.mark.parametrize("mapped", [False, True], ids=["read", "memory-mapped"])
def test_swapped_rows_are_detected(
    folder: Path, mapped: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mapped:
        monkeypatch.setattr("nasfilter.bench.fullbench.bench._MAP_ABOVE", 0)
    rows = np.load(folder / "rows.npy")
    rows[[11, 284]] = rows[[284, 11]]
    np.save(folder / "rows.npy", rows)
    with pytest.raises(DamagedBenchmarkError, match=r"rows\.npy' does not hold the numbers"):
        FullBenchmark.open(folder).series(11, "12", "cifar10-valid", 777, "x-valid", "acc")


def test_swapped_curve_rows_are_detected(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("nasfilter.bench.fullbench.bench._MAP_ABOVE", 0)
    arr = np.load(folder / CURVE)
    arr[[0, 3]] = arr[[3, 0]]  # architecture 0's seed 777 run and 11's
    np.save(folder / CURVE, arr)
    with pytest.raises(DamagedBenchmarkError, match=r"x-valid\.acc\.npy' does not hold"):
        FullBenchmark.open(folder).series(11, "12", "cifar10-valid", 777, "x-valid", "acc")
    with pytest.raises(DamagedBenchmarkError, match=r"x-valid\.acc\.npy"):
        FullBenchmark.open(folder).verify()


def test_out_of_range_rows_and_indices_are_refused(folder: Path) -> None:
    rows = np.load(folder / "rows.npy")
    rows[284] = 99
    np.save(folder / "rows.npy", rows)
    index = _index(folder)  # as if the writer had recorded it so
    index["files"]["rows.npy"]["sha256"] = file_digest(folder / "rows.npy")
    _write_index(folder, index)
    bench = FullBenchmark.open(folder)
    with pytest.raises(DamagedBenchmarkError, match=r"rows\.npy' gives architecture 284 row 99"):
        bench.seeds(284, "12", "cifar10")
    for bad in (-1, 32768, 1.5, True):
        with pytest.raises(IndexError, match=r"out of range 0\.\.32767"):
            bench.row(bad)  # type: ignore[arg-type]


def test_a_sound_folder_verifies(folder: Path) -> None:
    bench = FullBenchmark.open(folder)
    bench.verify()
    assert set(bench.index["files"]) >= {"rows.npy", "present.npy", CURVE}
    spec = bench.index["files"][CURVE]
    assert spec["shape"] == [9, 12] and spec["dtype"] == "<f8"  # 3 archs x 3 seeds, 12 epochs


# ------------------------------------------------------------------ resume (bug 5)
def test_a_table_derived_twice_is_the_same_input(folder: Path) -> None:
    first = compact_table(folder, "cifar10").provenance
    time.sleep(1.1)  # 'created' has one-second resolution
    second = compact_table(folder, "cifar10").provenance
    assert first.created != second.created
    old = {**first.__dict__, "sha256": "abc"}
    new = {**second.__dict__, "sha256": "abc"}
    assert changed_inputs(old, new) == []
    assert changed_inputs(old, {**new, "sha256": "def"}) == [
        "the table's content (sha256) was 'abc', now 'def'"]


def _spec() -> Any:
    from nasfilter.runs.records import RunSpec

    return RunSpec(searcher="hyperband", budget=2000.0)


def test_resuming_is_not_refused_for_a_timestamp(tmp_path: Path) -> None:
    spec = _spec()
    table = {"label": "full", "sha256": "abc", "created": "2026-12-06T10:00:00+00:00"}
    later = dict(table, created="2026-12-06T11:00:00+00:00")
    oracle = {"label": "v100", "sha256": "o"}
    memory = InMemoryStorage()
    memory.add_spec(spec, table, oracle)
    memory.add_spec(spec, later, oracle)
    with Store(tmp_path / "r.db") as store:
        store.add_spec(spec, table, oracle)
    with Store(tmp_path / "r.db") as store:
        store.add_spec(spec, later, oracle)
        with pytest.raises(StoreError, match="the table's content"):
            store.add_spec(spec, dict(later, sha256="other"), oracle)


# ------------------------------------------------------------------ eta bound (bug 7)
@pytest.mark.parametrize("cls", [Hyperband, SuccessiveHalving, ASHA, BOHB, MOASHA])
def test_a_tiny_eta_is_refused_naming_the_bound(cls: Any) -> None:
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"eta=1\.0000001 .* 24849068 rungs.*at most 64 "
                                         r"rungs.*eta must be >= 1\.0403"):
        cls(eta=1.0000001)
    assert time.perf_counter() - start < 1.0
    assert cls(eta=1.0403).eta == 1.0403  # the bound itself is accepted
