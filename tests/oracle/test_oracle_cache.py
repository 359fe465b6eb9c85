"""The SQLite measurement cache: keys, refusals, several writers, and a killed sweep."""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.datasets import get_dataset
from nasfilter.oracle.cache import CacheFileError, Group, MeasurementCache
from nasfilter.oracle.measurement import InvalidMeasurement, Measurement, Status
from nasfilter.oracle.roofline import RooflineBackend

CIFAR = get_dataset("cifar10")
REPO = Path(__file__).parent.resolve().parent.parent


def _rows(archs: list[int], device: str = "v100") -> list[Measurement]:
    return list(RooflineBackend(device).measure_many(archs, CIFAR))


def _group(device: str = "v100") -> Group:
    b = RooflineBackend(device)
    return Group.make("cifar10", "roofline", b.config, b.fingerprint())


def test_put_get_and_columns(tmp_path: Path) -> None:
    rows = _rows([0, 5, 32767])
    with MeasurementCache(tmp_path / "c.sqlite") as cache:
        assert cache.put_many(rows) == 3
        group = _group()
        assert cache.get(group, 5) == rows[1]
        assert cache.get(group, 6) is None
        assert cache.contains(group, 0) and not cache.contains(group, 1)
        np.testing.assert_array_equal(cache.cached_indices(group), [0, 5, 32767])
        thr, util = cache.columns(group)
        assert thr.shape == util.shape == (32768,)
        assert np.isfinite(thr).sum() == 3
        assert thr[32767] == rows[2].throughput and util[0] == rows[0].utilization
        assert list(cache.rows(group)) == rows
        # another device is another group
        assert cache.get(_group("a100"), 5) is None
        infos = cache.groups(dataset="cifar10", backend="roofline")
        assert [(i.group, i.n_rows) for i in infos] == [(group, 3)]


def test_a_cached_key_is_never_replaced(tmp_path: Path) -> None:
    first = _rows([7])[0]
    second = Measurement(**{**first.__dict__, "throughput": first.throughput * 2})
    with MeasurementCache(tmp_path / "c.sqlite") as cache:
        assert cache.put(first) is True
        assert cache.put(second) is False
        assert cache.get(_group(), 7) == first


def test_cache_persists_across_opens(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with MeasurementCache(path) as cache:
        cache.put_many(_rows(list(range(10))))
    with MeasurementCache(path) as cache:
        assert len(cache) == 10
        assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _bad(m: Measurement, throughput: float) -> Measurement:
    """A row whose throughput was broken after validation (what a buggy backend could do)."""
    object.__setattr__(m, "throughput", throughput)
    return m


@pytest.mark.parametrize("bad", [math.nan, math.inf, 0.0, -1.0])
def test_nan_inf_zero_throughput_never_cached(tmp_path: Path, bad: float) -> None:
    good, broken = _rows([1, 2])
    with MeasurementCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(InvalidMeasurement, match="throughput"):
            cache.put_many([good, _bad(broken, bad)])
        assert len(cache) == 0  # the whole transaction was refused


def test_failed_rows_are_not_cached(tmp_path: Path) -> None:
    row = _rows([3])[0]
    failed = Measurement(
        **{**row.__dict__, "status": Status.ERROR, "throughput": math.nan, "error": "boom"}
    )
    with MeasurementCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(InvalidMeasurement, match="only ok"):
            cache.put(failed)
        assert len(cache) == 0


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_foreign_and_corrupt_files_are_refused_and_untouched(tmp_path: Path) -> None:
    text = tmp_path / "notes.sqlite"
    text.write_text("my precious notes\n")
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
        conn.execute("INSERT INTO people VALUES ('ada')")
    conn.close()
    corrupt = tmp_path / "corrupt.sqlite"
    with MeasurementCache(corrupt) as cache:
        cache.put_many(_rows([1, 2, 3]))
    data = bytearray(corrupt.read_bytes())
    data[100:4096] = os.urandom(3996)  # smash the schema page
    corrupt.write_bytes(bytes(data))
    for path in (text, other, corrupt):
        before = _digest(path)
        with pytest.raises(CacheFileError, match="refusing to touch it"):
            MeasurementCache(path)
        assert _digest(path) == before


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CacheFileError, match="not a file"):
        MeasurementCache(tmp_path)


def test_other_cache_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    MeasurementCache(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value='999' WHERE key='format'")
    conn.close()
    with pytest.raises(CacheFileError, match="format 999"):
        MeasurementCache(path)


def _writer(args: tuple[str, int, int]) -> int:
    """Write archs [start, start + n) one transaction each; return how many were new."""
    path, start, n = args
    backend = RooflineBackend("v100")
    added = 0
    with MeasurementCache(path) as cache:
        for m in backend.measure_many(list(range(start, start + n)), CIFAR):
            added += cache.put(m)
    return added


@pytest.mark.slow
@pytest.mark.subprocess
def test_several_writer_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    jobs = [(path, 0, 300), (path, 150, 300), (path, 300, 300), (path, 0, 600)]
    with multiprocessing.get_context("fork").Pool(4) as pool:
        added = pool.map(_writer, jobs)
    with MeasurementCache(path) as cache:
        assert len(cache) == 600
        np.testing.assert_array_equal(cache.cached_indices(_group()), np.arange(600))
    assert sum(added) == 600  # every key written exactly once, whoever came first


_SLOW_SWEEP = textwrap.dedent(
    """
    import sys, time
    from nasfilter.bench.datasets import get_dataset
    from nasfilter.oracle.cache import MeasurementCache
    from nasfilter.oracle.roofline import RooflineBackend
    from nasfilter.oracle.sweep import sweep

    class Slow(RooflineBackend):
        name = "slow-roofline"
        commit_every = 1

        def measure_many(self, archs, dataset):
            for m in super().measure_many(archs, dataset):
                time.sleep(0.02)
                yield m

    def done(m):
        print("stored", m.arch, flush=True)

    with MeasurementCache(sys.argv[1]) as cache:
        summary = sweep(Slow("v100"), range(60), get_dataset("cifar10"), cache, on_row=done)
    print("summary", summary.n_cached, summary.n_measured, summary.n_rows, flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_killed_sweep_loses_only_the_architecture_in_flight(tmp_path: Path) -> None:
    script = tmp_path / "slow_sweep.py"
    script.write_text(_SLOW_SWEEP)
    path = tmp_path / "c.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    reported: list[int] = []
    for line in proc.stdout:
        if line.startswith("stored"):
            reported.append(int(line.split()[1]))
        if len(reported) == 12:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with MeasurementCache(path) as cache:
        group = next(iter(cache.groups())).group
        kept = cache.cached_indices(group).tolist()
    # every reported row survived; at most the one in flight went further
    assert set(reported) <= set(kept)
    assert len(kept) - len(reported) in (0, 1)
    # resuming measures exactly the rest
    done = subprocess.run(
        [sys.executable, str(script), str(path)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    summary = [ln for ln in done.stdout.splitlines() if ln.startswith("summary")][-1].split()
    n_cached, n_measured, n_rows = map(int, summary[1:])
    assert (n_cached, n_measured, n_rows) == (len(kept), 60 - len(kept), 60)
    restarted = [int(ln.split()[1]) for ln in done.stdout.splitlines() if ln.startswith("stored")]
    assert not set(restarted) & set(kept)


def test_roofline_rows_round_trip_through_json_columns(tmp_path: Path) -> None:
    with MeasurementCache(tmp_path / "c.sqlite") as cache:
        cache.put_many(_rows([9]))
        raw = cache._conn.execute("SELECT row FROM measurements").fetchone()[0]
    data: dict[str, Any] = json.loads(raw)
    assert "device" not in data and "config" not in data  # held once by the group
    assert data["throughput"] > 0
