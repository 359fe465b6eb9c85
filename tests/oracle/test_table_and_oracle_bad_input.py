"""Bad input to tables, the oracle and their files: each gets a clear error.

Corrupt table files, NaN in a record shown as JSON, negative indices, infinite proxy values,
negative costs, NaN backend settings, output paths that only fail after a sweep, unreadable
architecture files, empty caches and damaged peak caches.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.spaces.sss import N_ARCHS, as_arch
from nasfilter.bench.table import BenchmarkTable
from nasfilter.cli import main
from nasfilter.oracle.cpu_peak import cached_peak
from nasfilter.oracle.roofline import RooflineBackend
from nasfilter.sim.problem import Budget, Problem
from tests.paths import NATS_SSS_FIXTURE
from tests.tables import random_proxy, random_table

FIXTURE = NATS_SSS_FIXTURE


def _variant(tmp_path: Path, name: str, change: Callable[[dict[str, Any]], None]) -> Path:
    """A saved random table with its metadata or columns changed by ``change``."""
    good = random_table().save(tmp_path / "good.npz")
    with np.load(good) as npz:
        data = {key: npz[key] for key in npz.files}
    meta = json.loads(str(data["meta"]))
    data["meta"] = meta
    change(data)
    data["meta"] = np.array(json.dumps(data["meta"]))
    path = tmp_path / name
    np.savez(path, **data)
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["meta"].pop("dataset"), "missing key 'dataset'"),
        (lambda d: d["meta"]["provenance"].update(zzz=1), "unexpected keyword argument 'zzz'"),
        (lambda d: d["meta"].update(provenance=5), "must be a mapping"),
        (lambda d: d["meta"].update(seeds="abc"), "'seeds' must be a non-empty list"),
        # 3 seeds of accuracies where the metadata names 2: refused before decompressing
        (lambda d: d["meta"].update(seeds=[1, 2]), "shape (32768, 3), float64), more than"),
        (lambda d: d.update(test_acc=np.full(N_ARCHS, "a")), "column 'test_acc' holds <U1"),
    ],
)
def test_corrupt_table_files_are_refused_naming_the_file(
    tmp_path: Path,
    change: Callable[[dict[str, Any]], None],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _variant(tmp_path, "bad.npz", change)
    with pytest.raises(ValueError, match=r"bad\.npz") as info:
        BenchmarkTable.load(path)
    assert message in str(info.value)
    assert main(["show", "5", "--table", str(path)]) == 2  # no traceback
    assert "nasfilter show: error:" in capsys.readouterr().err


def test_show_json_is_strict_json_when_a_seed_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def drop_seed(d: dict[str, Any]) -> None:
        valid = d["valid_acc"].copy()
        valid[5, 1] = np.nan
        d["valid_acc"] = valid

    path = _variant(tmp_path, "seed.npz", drop_seed)
    assert main(["show", "5", "--table", str(path), "--json"]) == 0
    out = capsys.readouterr().out

    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    record = json.loads(out, parse_constant=refuse)
    table = BenchmarkTable.load(path)
    assert record["valid_acc_hp12"] == [table.valid_acc[5, 0], None, table.valid_acc[5, 2]]


@pytest.mark.parametrize("text", ["-1", " -5 ", "+40000"])
def test_signed_index_strings_get_the_index_range(text: str) -> None:
    with pytest.raises(ValueError, match=r"must be in \[0, 32767\]"):
        as_arch(text)
    assert as_arch("+3").index == 3


def test_proxy_table_refuses_infinite_or_non_float_values() -> None:
    good = random_proxy()
    thr = good.throughput.copy()
    thr[7] = np.inf
    with pytest.raises(ValueError, match="'throughput' holds infinite"):
        ProxyTable(good.utilization.copy(), thr, "inf")
    with pytest.raises(ValueError, match="must hold floats"):
        ProxyTable(np.ones(N_ARCHS, dtype=np.int64), good.throughput.copy(), "ints")


def test_problem_refuses_negative_costs_and_wrong_types() -> None:
    table = random_table()
    rng = np.random.default_rng(0)
    negative = random_table()
    train = negative.train_time.copy()
    train[42] = -200.0
    object.__setattr__(negative, "train_time", train)
    with pytest.raises(ValueError, match=r"negative evaluation costs.*index 42"):
        Problem(negative, rng, Budget(10))
    with pytest.raises(ValueError, match="table must be a BenchmarkTable"):
        Problem("table.npz", rng, Budget(10))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="proxy must be a ProxyTable"):
        Problem(table, rng, Budget(10), proxy=lambda a: 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="proxy_cost"):
        Problem(table, rng, Budget(10), proxy_cost=True)
    budget = Budget(np.float64(100.0), max_evaluations=np.int64(3))  # type: ignore[arg-type]
    assert type(budget.seconds) is float and type(budget.max_evaluations) is int
    assert json.dumps([budget.seconds, budget.max_evaluations]) == "[100.0, 3]"


@pytest.mark.parametrize(
    ("indices", "message"),
    [
        (np.array([5, -1]), r"in \[0, 32767\], got \[-1\]"),
        (np.array([N_ARCHS]), r"got \[32768\]"),
        (np.array([1.7]), "integer architecture indices"),
        (np.array([True, False]), "integer architecture indices"),
    ],
)
def test_bulk_proxy_refuses_bad_indices_before_charging(indices: np.ndarray, message: str) -> None:
    problem = Problem(random_table(), np.random.default_rng(0), Budget(1e6), proxy=random_proxy())
    with pytest.raises(ValueError, match=message):
        problem.query_proxy_many(indices)
    assert problem.clock == 0.0 and problem.events == []
    answered, _ = problem.query_proxy_many(np.array([], dtype=np.int64))
    assert answered.size == 0


@pytest.mark.parametrize(
    "kw", [{"batch": math.nan}, {"launch_overhead": math.nan}, {"launch_overhead": True}]
)
def test_roofline_backend_checks_its_settings_when_built(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"batch|launch_overhead"):
        RooflineBackend("v100", **kw)


def _measure(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["measure", "--backend", "roofline", "--quiet", *argv])
    return code, capsys.readouterr().err


def test_measure_refuses_bad_options_before_sweeping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "c.sqlite"
    (tmp_path / "dir.npz").mkdir()
    cases = [
        (["--export", str(tmp_path / "out.csv")], "--export must name a .npz file"),
        (["--export", str(tmp_path / "dir.npz")], "is a folder"),
        (["--chunk-size", "0", "--ray"], "argument --chunk-size: expected an integer >= 1"),
        (["--chunk-size", "8"], "applies to Ray sweeps only"),
        (["--backend", "roofline[batch=nan]"], "batch must be a positive integer"),
    ]
    for extra, message in cases:
        code, err = _measure(capsys, "--archs", "all", "--cache", str(cache), *extra)
        assert code == 2 and "nasfilter measure: error:" in err and message in err, err
        assert not cache.exists()  # nothing was measured or written
    binary = tmp_path / "archs.txt"
    binary.write_bytes(b"\xff\xfe12\n")
    code, err = _measure(capsys, "--archs", str(binary), "--cache", str(cache))
    assert code == 2 and "archs.txt" in err and "UTF-8" in err


def test_reading_an_empty_file_as_a_cache_leaves_it_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    argv = ["show", "3", "--oracle", "onnxruntime", "--oracle-cache", str(empty)]
    assert main(argv) == 2
    assert "is empty" in capsys.readouterr().err
    assert empty.stat().st_size == 0


def test_convert_reports_an_unwritable_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    output = blocker / "t.npz"
    argv = [
        "convert",
        str(FIXTURE),
        "--allow-partial",
        "--dataset",
        "cifar10",
        "--quiet",
        "-o",
        str(output),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "nasfilter convert: error: -o/--output" in err and "t.npz" in err
    assert "is not a folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_damaged_peak_entries_are_measured_again(tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    key = {"cpu": "test"}
    calls: list[int] = []

    def measure() -> float:
        calls.append(1)
        return 1e11

    path.write_text(json.dumps({json.dumps(key, separators=(",", ":")): {"peak_flops": 1e999}}))
    assert "Infinity" in path.read_text()
    assert cached_peak(key, measure, path) == 1e11 and len(calls) == 1
    assert cached_peak(key, measure, path) == 1e11 and len(calls) == 1  # now cached
    with pytest.raises(ValueError, match="expected finite > 0"):
        cached_peak({"cpu": "other"}, lambda: math.inf, path)


def test_show_json_carries_the_archive_provenance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/real-archive.md: path, checksum, nats_bench version and time are in show --json."""
    import importlib.metadata

    output = tmp_path / "t.npz"
    argv = [
        "convert",
        str(FIXTURE),
        "--allow-partial",
        "--dataset",
        "cifar10",
        "--quiet",
        "-o",
        str(output),
    ]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["show", "284", "--table", str(output), "--json"]) == 0
    prov = json.loads(capsys.readouterr().out)["provenance"]
    assert prov["synthetic"] is False and Path(prov["source"]) == FIXTURE.resolve()
    assert prov["checksum"] == BenchmarkTable.load(output).provenance.checksum
    assert len(prov["checksum"]) == 64 and prov["created"]
    assert prov["nats_bench_version"] == importlib.metadata.version("nats_bench")
    assert main(["show", "284", "--table", str(output)]) == 0
    assert f"sha256 {prov['checksum'][:12]}" in capsys.readouterr().out


def test_export_never_overwrites_a_file_that_is_not_a_measurement_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    converted = random_table().save(tmp_path / "cifar10.npz")  # an expensive conversion
    before = converted.read_bytes()
    cache = str(tmp_path / "c.sqlite")
    code, err = _measure(
        capsys, "--archs", "sample:3", "--cache", cache, "--export", str(converted)
    )
    assert code == 2 and "already exists; pass --force" in err
    assert converted.read_bytes() == before
    export = str(tmp_path / "roof.npz")
    code, err = _measure(capsys, "--archs", "sample:3", "--cache", cache, "--export", export)
    assert code == 0, err
    # A second export over the first needs --force, as every output file does.
    code, err = _measure(capsys, "--archs", "sample:3", "--cache", cache, "--export", export)
    assert code == 2 and "already exists; pass --force" in err
    argv = ["--archs", "sample:3", "--cache", cache, "--export", export, "--force"]
    code, err = _measure(capsys, *argv)
    assert code == 0, err
