"""The prepared GPU check: run it on a machine with a CUDA GPU (under 8 minutes).

1. measures the GPU's FP16 peak (a matrix product, CUDA events);
2. measures about 200 CIFAR-10 architectures (a stratified sample of 168 plus the 32
   corners) with the torch-cuda backend, stopping early if the time budget runs out;
3. writes the rows as a measurement table (.npz, with the device fingerprint) and prints a
   JSON summary, including the Spearman correlation between the roofline prediction (for the
   matching device spec, when one is known) and the measured throughput.

    python scripts/gpu_check.py [--out DIR] [--budget SECONDS]

Commit the table it writes (nasfilter/data/torch_cuda_<gpu>_sample.npz is a good name) with
its fingerprint. Without CUDA it exits with status 2 and says why.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nasfilter.bench.datasets import get_dataset  # noqa: E402
from nasfilter.oracle.base import BackendUnavailable  # noqa: E402
from nasfilter.oracle.cache import Group, MeasurementCache  # noqa: E402
from nasfilter.oracle.measurement import Measurement  # noqa: E402
from nasfilter.oracle.sweep import export_table, stratified_sample, sweep  # noqa: E402

SEED = 0
N_STRATIFIED = 168  # + 32 corners = 200
# Fewer batch sizes tried than the defaults: each new shape costs cudnn autotuning.
SETTINGS: dict[str, Any] = {
    "start_batch": 512,
    "batch_cap": 2048,
    "window": 0.25,
    "trials": 5,
    "warmup": 3,
}


def _spec_for(gpu: str) -> str | None:
    for name in ("h200", "h100", "a100", "v100"):
        if re.search(name, gpu, re.IGNORECASE):
            return name
    return None


class _OutOfTime(Exception):
    pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="output folder")
    parser.add_argument("--budget", type=float, default=390.0, help="seconds for measuring")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()

    from nasfilter.oracle.torch_cuda import TorchCudaBackend

    try:
        backend = TorchCudaBackend("cuda", peak_cache=str(out / "peaks.json"), **SETTINGS)
    except BackendUnavailable as exc:
        print(f"gpu_check: {exc}", file=sys.stderr)
        return 2
    ds = get_dataset("cifar10")
    fingerprint = backend.fingerprint()
    t = time.time()
    peak = backend.peak()
    peak_seconds = time.time() - t
    print(f"gpu_check: {fingerprint['gpu']}, FP16 peak {peak / 1e12:.1f} TFLOP/s", flush=True)

    archs = stratified_sample(N_STRATIFIED, np.random.default_rng(SEED), ds)
    deadline = started + args.budget

    def stop_when_late(m: Measurement) -> None:
        print(
            f"  {m.arch:5d} {m.status.value:5s} {m.throughput:12.0f} img/s "
            f"util {m.utilization:.3f} batch {m.batch_size}",
            flush=True,
        )
        if time.time() > deadline:
            raise _OutOfTime

    cache_path = out / "gpu_check.sqlite"
    with MeasurementCache(cache_path) as cache:
        try:
            sweep(backend, archs, ds, cache, on_row=stop_when_late)
            finished = True
        except _OutOfTime:
            finished = False
        group = Group.make(ds.name, backend.name, backend.config, fingerprint)
        thr, util = cache.columns(group)
        measured = np.flatnonzero(np.isfinite(thr))
        tag = re.sub(r"[^a-z0-9]+", "_", str(fingerprint["gpu"]).lower()).strip("_")
        table_path = out / f"torch_cuda_{tag}_sample.npz"
        extra = {
            "sampling": f"stratified {N_STRATIFIED} + 32 corners, seed {SEED}",
            "settings": SETTINGS,
            "script": "scripts/gpu_check.py",
            "finished": finished,
        }
        if len(measured):
            export_table(cache, group, table_path, extra)

    summary: dict[str, object] = {
        "gpu": fingerprint,
        "peak_flops": peak,
        "peak_seconds": peak_seconds,
        "n_planned": len(archs),
        "n_measured": len(measured),
        "finished": finished,
        "seconds": time.time() - started,
        "table": str(table_path) if len(measured) else None,
        "throughput_range": [float(np.nanmin(thr)), float(np.nanmax(thr))]
        if len(measured)
        else None,
        "utilization_max": float(np.nanmax(util)) if len(measured) else None,
    }
    spec = _spec_for(str(fingerprint["gpu"]))
    if spec and len(measured) > 2:
        from scipy.stats import spearmanr

        from nasfilter.oracle.roofline import roofline

        predicted = roofline(spec, ds).throughput[measured]
        summary["roofline_spec"] = spec
        summary["spearman_roofline_vs_measured"] = float(
            spearmanr(predicted, thr[measured]).statistic
        )
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
