"""Produce the shipped onnxruntime-CPU sample: nasfilter/data/onnxruntime_cpu_sample.npz.

A stratified sample of CIFAR-10 architectures (8 MACs bins x 8 arithmetic-intensity bins,
256 drawn with seed 0, plus the 32 corners) is measured with the onnxruntime backend on this
machine's CPU, through a resumable cache, and exported with the device fingerprint, the
settings, the measured CPU peak and the machine load. Takes about 5-10 minutes on 2 cores.

    python scripts/measure_sample.py [--cache /tmp/ort-sample.sqlite] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nasfilter.bench.datasets import get_dataset  # noqa: E402
from nasfilter.oracle.cache import Group, MeasurementCache  # noqa: E402
from nasfilter.oracle.cpu_peak import cached_peak, cpu_peak_key, measure_cpu_peak  # noqa: E402
from nasfilter.oracle.onnx_backend import OnnxRuntimeBackend  # noqa: E402
from nasfilter.oracle.sweep import export_table, stratified_sample, sweep  # noqa: E402

SEED = 0
N_STRATIFIED = 256
SETTINGS: dict[str, Any] = {"batch": 64, "threads": None, "window": 1.0, "trials": 5, "warmup": 1}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default="/tmp/nasfilter-ort-sample.sqlite")
    parser.add_argument("--out", default=str(REPO / "nasfilter/data/onnxruntime_cpu_sample.npz"))
    parser.add_argument("--peaks", default="/tmp/nasfilter-ort-sample-peaks.json")
    args = parser.parse_args()

    ds = get_dataset("cifar10")
    archs = stratified_sample(N_STRATIFIED, np.random.default_rng(SEED), ds)
    load_start = os.getloadavg()
    started = time.time()
    # The peak is the best of three rounds of the GEMM microbenchmark (the machine is shared).
    rounds = [measure_cpu_peak(None) for _ in range(3)]
    peak = cached_peak(cpu_peak_key(None), lambda: max(rounds), args.peaks)
    backend = OnnxRuntimeBackend(**SETTINGS, peak_cache=args.peaks)
    assert backend.peak() == peak
    with MeasurementCache(args.cache) as cache:
        summary = sweep(backend, archs, ds, cache, progress=True)
        group = Group.make(ds.name, backend.name, backend.config, backend.fingerprint())
        extra = {
            "sampling": (
                f"stratified: {N_STRATIFIED} of 8 MACs x 8 arithmetic-intensity (roofline "
                f"V100, batch 1024) equal-count strata, seed {SEED}, plus the 32 corners"
            ),
            "settings": SETTINGS,
            "peak_rounds_flops": rounds,
            "load_average_start": list(load_start),
            "load_average_end": list(os.getloadavg()),
            "wall_seconds": time.time() - started,
            "script": "scripts/measure_sample.py",
        }
        path = export_table(cache, group, args.out, extra)
    print(
        f"{summary.n_rows} rows ({summary.n_measured} measured now, {summary.n_failed} failed) "
        f"in {time.time() - started:.0f} s; peak {peak / 1e9:.1f} GFLOP/s; wrote {path} "
        f"({path.stat().st_size} bytes)"
    )
    return 0 if summary.n_failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
