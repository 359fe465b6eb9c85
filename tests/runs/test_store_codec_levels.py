"""The events columns' zlib level: barely compressible columns are stored (level 0), the
rest deflated (level 1); either way the reader gets every byte back."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

from nasfilter.runs.experiment import RunSpec, provenance, run_one
from nasfilter.runs.storage.sqlite_store import SAMPLE_BYTES, Store, column_level, encode_events
from nasfilter.sim.events import DISK_DTYPES

SCAN = RunSpec("random", "proxy-threshold", budget=20_000.0, n_ticks=4, table="synthetic")


def test_random_floats_are_stored_and_repetitive_ints_deflated() -> None:
    noise = np.random.default_rng(0).random(4096).tobytes()  # 32 KiB of distinct float64s
    repeated = np.zeros(8192, dtype="<i4").tobytes()
    scanned = np.random.default_rng(1).permutation(32768).astype("<i4").tobytes()
    assert column_level(noise) == 0
    assert column_level(scanned) == 0  # a scan's indices shrink by about a third only
    assert column_level(repeated) == 1
    assert column_level(noise[: SAMPLE_BYTES - 8]) == 1  # short columns: always deflated
    stored = zlib.compress(noise, column_level(noise))
    assert len(stored) > len(noise)  # stored blocks: the bytes plus zlib's framing
    assert zlib.decompress(stored) == noise
    assert len(zlib.compress(repeated, column_level(repeated))) < len(repeated) // 100


def test_a_proxy_scan_stores_its_readings_uncompressed_and_reads_back_exactly(
    tmp_path: Path,
) -> None:
    run = run_one(SCAN, 3)
    assert len(run.record.events["index"]) * 8 > 2 * SAMPLE_BYTES  # proxy readings, then runs
    blobs = dict(zip(DISK_DTYPES, encode_events(run.record.events), strict=True))
    # Stored blocks make a stream longer than its content; deflate a shorter one.
    stored = {name for name, blob in blobs.items() if len(blob) > len(zlib.decompress(blob))}
    assert {"utilization", "throughput", "index"} <= stored  # the scan's readings, indices
    assert not stored & {"kind", "trial", "seed", "hp", "epochs"}  # repetitive: deflated
    with Store(tmp_path / "r.db") as store:
        store.add_spec(SCAN, *provenance(SCAN))
        run_id = store.add_run(run)
        assert run_id is not None
        back = store.events(run_id)
    for name, column in run.record.events.items():
        np.testing.assert_array_equal(back[name], column, strict=True)
