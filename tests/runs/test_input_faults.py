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

from nasfilter.bench.lookup import load_table
from nasfilter.bench.spaces.sss import N_ARCHS, as_arch
from nasfilter.bench.table import BenchmarkTable
from nasfilter.cli import main
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


# ------------------------------------------------------------------ oracle specs
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("roofline[batch=0]", "batch must be a positive integer, got 0"),
        ("roofline[nonsense=1]", "backend 'roofline' takes no setting 'nonsense'"),
        ("calibrated[zzz=1]", "backend 'calibrated' takes no setting 'zzz'"),
        ("roofline[device='a100']", "the device is its own option, --device"),
        ("onnxruntime[bogus=1]", "backend 'onnxruntime' takes no setting 'bogus'"),
        ("onnxruntime[batch=1]", "measured with batch=64, not as 'onnxruntime[batch=1]'"),
    ],
)
def test_proxy_table_checks_every_oracle_setting(spec: str, message: str) -> None:
    from nasfilter.oracle import proxy_table

    with pytest.raises(ValueError) as info:
        proxy_table(spec)
    assert message in str(info.value) and spec in str(info.value)


def test_an_unknown_setting_lists_the_valid_ones() -> None:
    from nasfilter.oracle import proxy_table

    with pytest.raises(ValueError, match=r"its settings are: batch=1024: images per batch"):
        proxy_table("roofline[nonsense=1]")


def test_oracle_settings_change_the_numbers_and_the_label() -> None:
    from nasfilter.oracle import proxy_table
    from nasfilter.oracle.roofline import roofline

    small = proxy_table("roofline[batch=1]")
    assert small.label == "roofline v100 fp16 batch 1"
    reference = roofline("v100", "cifar10", batch=1)  # the model called directly
    assert np.array_equal(small.throughput, reference.throughput)
    assert not np.array_equal(small.throughput, proxy_table("roofline").throughput)
    matching = proxy_table("onnxruntime[batch=64,trials=5]")  # what the sample recorded
    assert np.array_equal(matching.throughput, proxy_table("onnxruntime").throughput, True)


@pytest.mark.parametrize("spec", ["roofline[batch=0]", "roofline[nonsense=1]", "calibrated[zzz=1]"])
def test_run_and_measure_refuse_the_same_oracle_specs(
    tmp_path: Path, spec: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    argv = ["run", "--searchers", "random", "--seeds", "0", "--budget", "500", "--db", str(db)]
    assert main([*argv, "--oracle", spec, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--oracle" in err and "Traceback" not in err and not db.exists()
    cache = tmp_path / "c.sqlite"
    assert main(["measure", "--backend", spec, "--archs", "sample:3", "--cache", str(cache)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_measure_over_ray_checks_setting_names_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["measure", "--backend", "roofline[nonsense=1]", "--archs", "sample:3"]
    assert main([*argv, "--cache", str(tmp_path / "c.sqlite"), "--ray"]) == 2
    assert "takes no setting 'nonsense'" in capsys.readouterr().err


def test_show_prints_the_numbers_of_the_settings_given(capsys: pytest.CaptureFixture[str]) -> None:
    from nasfilter.oracle.roofline import roofline

    assert main(["show", "5", "--oracle", "roofline[batch=1]", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["oracle"] == "roofline v100 fp16 batch 1"
    assert shown["throughput"] == float(roofline("v100", batch=1).throughput[5])


# ------------------------------------------------------------------ default device, --jobs
def _onnx_cache(path: Path) -> Path:
    """A measurement cache holding the shipped onnxruntime sample's rows (a CPU device)."""
    from nasfilter.oracle.cache import MeasurementCache
    from nasfilter.oracle.measurement import Measurement, Status
    from nasfilter.oracle.proxies import load_sample

    sample = load_sample()
    rows = [
        Measurement(
            arch=int(arch),
            dataset=sample.dataset,
            backend="onnxruntime",
            config=sample.meta["config"],
            device=sample.meta["device"],
            status=Status.OK,
            throughput=float(thr),
            batch_size=64,
            max_batch=None,
            flops_per_image=float(fpi),
            peak_flops=float(peak),
            peak_source="measured",
            timings={},
        )
        for arch, thr, fpi, peak in zip(
            sample.arch, sample.throughput, sample.flops_per_image, sample.peak_flops, strict=True
        )
    ]
    with MeasurementCache(path) as cache:
        cache.put_many(rows)
    return path


def test_run_with_an_onnxruntime_cache_needs_no_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = _onnx_cache(tmp_path / "onnx.sqlite")
    db = tmp_path / "r.db"
    argv = ["run", "--searchers", "random", "--seeds", "0", "--budget", "300", "--db", str(db)]
    argv += ["--oracle", "onnxruntime", "--oracle-cache", str(cache), "--no-progress"]
    assert main(argv) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "oracle  onnxruntime on AMD EPYC" in err and "v100" not in err


def test_the_default_device_follows_the_backend() -> None:
    from nasfilter.oracle.registry import default_device

    assert default_device("calibrated") == default_device("roofline") == "v100"
    assert default_device("onnxruntime") == "cpu"
    assert default_device("torch-cuda") is None  # the one device of the cache


def test_jobs_are_capped_at_the_cpus_and_the_runs_and_the_banner_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from nasfilter.cli.run import plan_jobs

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert plan_jobs(1000, 12) == (2, " (--jobs 1000 capped at the 2 CPU(s) this process may use)")
    assert plan_jobs(8, 1) == (1, " (--jobs 8 capped at the 1 run(s))")
    both = " (--jobs 9 capped at the 2 CPU(s) this process may use and the 2 run(s))"
    assert plan_jobs(9, 2) == (2, both)
    assert plan_jobs(None, 1) == (1, "") and plan_jobs(2, 5) == (2, "")
    db = tmp_path / "r.db"
    argv = ["run", "--searchers", "random", "--seeds", "0", "--budget", "300", "--db", str(db)]
    assert main([*argv, "--jobs", "1000", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "1 process(es) (--jobs 1000 capped at" in err and "1000 process(es)" not in err


# ------------------------------------------------------------------ resource bounds
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "evolution[tournament_size=1000000000]",
            r"tournament_size must be an integer in \[1, 32768\]",
        ),
        ("evolution[tournament_size=30000000]", r"got 30000000"),
        (
            "evolution[population_size=100000]",
            r"population_size must be an integer in \[1, 32768\]",
        ),
        ("model-based[init=1000000]", r"init \(valid range: \[3, 32768\]\)"),
        ("model-based[init_proxy=10000000]", r"init_proxy \(valid range: \[0, 32768\]\)"),
    ],
)
def test_searcher_settings_that_would_exhaust_memory_are_refused(spec: str, message: str) -> None:
    from nasfilter.searchers import make_searcher

    with pytest.raises(ValueError, match=message):
        make_searcher(spec)


# ------------------------------------------------------------------ the ask/tell API
def _set_up(searcher: Any, seed: int = 0) -> Any:
    from nasfilter.sim.problem import Budget, Problem
    from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
    from tests.tables import random_proxy

    problem = Problem(random_table(), np.random.default_rng(seed), Budget(1e9), random_proxy())
    searcher.setup(SearchContext(np.random.default_rng(seed), ProxyHandle(problem)))
    return searcher


@pytest.mark.parametrize(
    "outcome", ["abc", np.array([1.0, 2.0]), math.nan, math.inf, 1e300, -50.0, 100.5, True]
)
@pytest.mark.parametrize("name", ["random", "reinforce", "evolution", "model-based"])
def test_a_refused_tell_leaves_the_trial_pending(name: str, outcome: Any) -> None:
    from nasfilter.searchers import make_searcher

    searcher = _set_up(make_searcher(name))
    trial = searcher.ask()
    with pytest.raises(ValueError, match="validation accuracy in percent, a finite number"):
        searcher.tell(trial, outcome)
    assert searcher.pending == (trial,)
    searcher.tell(trial, 71.5)  # the same trial, now with a valid outcome
    assert searcher.pending == ()


def test_reinforce_stays_finite_after_a_refused_nan() -> None:
    from nasfilter.searchers import make_searcher

    searcher = _set_up(make_searcher("reinforce"))
    trial = searcher.ask()
    with pytest.raises(ValueError):
        searcher.tell(trial, math.nan)
    searcher.tell(trial, 80.0)
    distinct = {searcher.ask().arch for _ in range(20)}
    assert len(distinct) > 1  # a non-finite policy would propose one architecture only


def test_valid_outcomes_of_every_number_type_are_taken() -> None:
    from nasfilter.searchers import make_searcher

    searcher = _set_up(make_searcher("random"))
    for outcome in (0, 100, 55.5, np.float32(60.0), np.float64(70.0), np.int64(3), None):
        searcher.tell(searcher.ask(), outcome)
    assert searcher.pending == ()


def test_ask_and_keep_before_setup_say_to_call_setup() -> None:
    from nasfilter.filters import make_filter
    from nasfilter.searchers import make_searcher

    for name in ("random", "evolution", "reinforce", "utilization-pareto"):
        with pytest.raises(RuntimeError, match=r"call setup\(SearchContext\(rng, proxy\)\)"):
            make_searcher(name).ask()
    for name in ("successive-frontiers", "proxy-threshold"):
        with pytest.raises(RuntimeError, match=r"call setup\(SearchContext\(rng, proxy\)\) before"):
            make_filter(name).keep(as_arch(5))


def test_a_plugin_filter_gets_the_same_checks() -> None:
    from nasfilter.filters.base import Filter

    class Fast(Filter):
        name = "fast"

        def keep(self, arch: Any) -> bool:
            return bool(self.proxy.query(arch).throughput > 1e5)

    with pytest.raises(RuntimeError, match="call setup"):
        Fast().keep(as_arch(5))
    with pytest.raises(ValueError, match=r"keep\(\) takes one Arch .* got int 5"):
        Fast().keep(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [5, "x", "8:16:24:32:40", None])
def test_keep_of_something_not_an_arch_says_what_it_takes(bad: Any) -> None:
    from nasfilter.filters import make_filter
    from nasfilter.sim.problem import Budget, Problem
    from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
    from tests.tables import random_proxy

    flt = make_filter("successive-frontiers")
    problem = Problem(random_table(), np.random.default_rng(0), Budget(1e9), random_proxy())
    flt.setup(SearchContext(np.random.default_rng(0), ProxyHandle(problem)))
    with pytest.raises(
        ValueError, match=r"keep\(\) takes one Arch \(nasfilter.bench.spaces.sss.as_arch"
    ):
        flt.keep(bad)
    assert problem.n_proxy == 0  # refused before any charged query


def test_run_search_twice_on_one_problem_is_refused() -> None:
    from nasfilter.runs.runner import make_problem, run_search
    from nasfilter.searchers import make_searcher

    problem = make_problem(random_table(), 2000.0, 0)
    first = run_search(make_searcher("random"), problem)
    assert first.n_evaluations > 0
    with pytest.raises(ValueError, match=r"this Problem was used already .* fresh one"):
        run_search(make_searcher("random"), problem)


@pytest.mark.parametrize("proxy_dataset", ["cifar100", "ImageNet16-120"])
def test_a_proxy_of_another_dataset_is_refused_naming_both(proxy_dataset: str) -> None:
    from nasfilter.oracle import proxy_table
    from nasfilter.runs.runner import make_problem
    from nasfilter.sim.problem import Budget, Problem

    table, proxy = random_table(), proxy_table("roofline", dataset=proxy_dataset)
    both = rf"'cifar10' but the proxy .* for '{proxy_dataset}'"
    with pytest.raises(ValueError, match=both):
        make_problem(table, 2000.0, 0, proxy)
    with pytest.raises(ValueError, match=both):  # by construction: no Problem holds the pair
        Problem(table, np.random.default_rng(0), Budget(2000.0), proxy=proxy)
    make_problem(table, 2000.0, 0, proxy_table("roofline", dataset="cifar10"))  # same: fine


@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_advance_refuses_an_infinite_or_nan_time(bad: float) -> None:
    from nasfilter.runs.runner import make_problem

    problem = make_problem(random_table(), 2000.0, 0)
    problem.advance(10.0)
    with pytest.raises(ValueError, match=rf"advance\({bad!r}\).*finite"):
        problem.advance(bad)
    assert problem.clock == 10.0 and not problem.exhausted
    problem.advance(5.0)  # backward: still a no-op
    assert problem.clock == 10.0


# ------------------------------------------------------------------ a full disk in measure
def _full_disk(monkeypatch: pytest.MonkeyPatch, pages: int) -> None:
    """SQLite connections of the cache that can grow to ``pages`` pages only: SQLite then
    answers SQLITE_FULL ("database or disk is full"), as on a full disk."""
    import sqlite3

    import nasfilter.oracle.cache as cache_module

    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real(*args, **kwargs)
        held = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count={max(pages, held)}")
        return conn

    monkeypatch.setattr(cache_module.sqlite3, "connect", connect)


def test_a_full_disk_while_creating_a_cache_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "c.sqlite"
    _full_disk(monkeypatch, 1)
    argv = ["measure", "--backend", "roofline", "--archs", "sample:3", "--quiet"]
    assert main([*argv, "--cache", str(cache)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write measurement cache {str(cache)!r}: the disk is full" in err
    assert "may be corrupt" not in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no 0-byte cache, no -wal or -shm


def test_a_full_disk_during_a_sweep_keeps_the_rows_stored_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from nasfilter.oracle.cache import MeasurementCache

    cache = tmp_path / "c.sqlite"
    argv = ["measure", "--backend", "roofline", "--quiet", "--cache", str(cache)]
    assert main([*argv, "--archs", "sample:3"]) == 0
    capsys.readouterr()
    _full_disk(monkeypatch, 0)  # no room beyond what the file holds now
    assert main([*argv, "--archs", "all"]) == 2
    err = capsys.readouterr().err
    assert f"cannot write measurement cache {str(cache)!r}: the disk is full" in err
    assert "rows stored before are intact" in err and "Traceback" not in err
    monkeypatch.undo()
    with MeasurementCache(cache, readonly=True) as reader:
        assert len(reader) == 3
