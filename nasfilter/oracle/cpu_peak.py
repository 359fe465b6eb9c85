"""The CPU's peak FLOP/s, measured once per machine by a GEMM microbenchmark, and cached.

The onnxruntime backend computes utilization against this peak. The GEMM runs in onnxruntime
itself (one float32 ``MatMul`` node, the same MLAS kernels and thread count that run the
networks), and the peak is the best of several timed products. The result is stored in a
small JSON file (``peaks.json`` in the nasfilter cache folder: ``$NASFILTER_CACHE_DIR``, else
``$XDG_CACHE_HOME/nasfilter``, else ``~/.cache/nasfilter``) keyed by the machine fingerprint
and the settings, so later runs on the same machine reuse it.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nasfilter.files import atomic_write
from nasfilter.oracle.measurement import canonical_json

# Square float32 products of these sizes; the best rate over all of them is the peak (small
# products stay in cache, large ones amortize call overhead; which wins depends on the CPU).
GEMM_SIZES = (256, 512, 1024)
GEMM_REPEATS = 20


def cache_dir() -> Path:
    """The folder for per-machine caches (peaks.json)."""
    env = os.environ.get("NASFILTER_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "nasfilter"


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), or the platform's description."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown cpu"


def cpu_fingerprint() -> dict[str, Any]:
    """The CPU as a device fingerprint: model, logical CPUs, architecture, OS."""
    return {
        "kind": "cpu",
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count() or 1,
        "machine": platform.machine(),
        "system": platform.system(),
    }


def cached_peak(
    key: dict[str, Any],
    measure: Callable[[], float],
    path: str | os.PathLike[str] | None = None,
) -> float:
    """The peak stored under ``key`` in the JSON file ``path``, else ``measure()`` stored there.

    ``path`` defaults to ``cache_dir() / "peaks.json"``. A missing or unreadable file is
    replaced; the file is written atomically.
    """
    target = Path(path) if path is not None else cache_dir() / "peaks.json"
    name = canonical_json(key)
    data: dict[str, Any] = {}
    if target.is_file():
        try:
            loaded = json.loads(target.read_text())
            if isinstance(loaded, dict):
                data = loaded
        except (OSError, ValueError):
            data = {}
    entry = data.get(name)
    if isinstance(entry, dict) and isinstance(entry.get("peak_flops"), (int, float)):
        value = float(entry["peak_flops"])
        if math.isfinite(value) and value > 0:  # a damaged entry is measured again
            return value
    peak = float(measure())
    if not (math.isfinite(peak) and peak > 0):
        raise ValueError(f"a peak microbenchmark returned {peak!r} FLOP/s; expected finite > 0")
    data[name] = {"peak_flops": peak, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ")}
    with atomic_write(target, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    return peak


def gemm_model(n: int) -> bytes:
    """A serialized ONNX model: one float32 MatMul of (n, n) x (n, n)."""
    from onnx import TensorProto, helper

    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "gemm", [a, b], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data: bytes = model.SerializeToString()
    return data


def measure_cpu_peak(
    threads: int | None = None, sizes: tuple[int, ...] = GEMM_SIZES, repeats: int = GEMM_REPEATS
) -> float:
    """Best float32 GEMM FLOP/s of onnxruntime on this CPU with ``threads`` intra-op threads,
    over square products of each of ``sizes``."""
    return max(_gemm_rate(threads, n, repeats) for n in sizes)


def _gemm_rate(threads: int | None, n: int, repeats: int) -> float:
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(gemm_model(n), options, providers=["CPUExecutionProvider"])
    # Deterministic operands in [-1, 1); values do not change the speed of a dense GEMM.
    a = (np.arange(n * n, dtype=np.float32).reshape(n, n) % 97) / 48.5 - 1.0
    feeds = {"a": a, "b": a.T.copy()}
    for _ in range(2):
        session.run(None, feeds)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        session.run(None, feeds)
        best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best


def cpu_peak_key(threads: int | None = None) -> dict[str, Any]:
    """The peaks.json key of this machine's CPU peak for ``threads`` threads."""
    import onnxruntime as ort

    return {
        **cpu_fingerprint(),
        "benchmark": "onnxruntime-sgemm-" + "-".join(map(str, GEMM_SIZES)),
        "onnxruntime": ort.__version__,
        "threads": threads or 0,
    }


def cpu_peak(threads: int | None = None, path: str | os.PathLike[str] | None = None) -> float:
    """This machine's measured CPU peak FLOP/s for ``threads`` threads (cached per machine)."""
    return cached_peak(cpu_peak_key(threads), lambda: measure_cpu_peak(threads), path)
