"""Speed benchmarks, run by ``make bench`` (``python -m benchmarks``).

Each ``bench_*.py`` module defines ``run() -> Iterable[dict]``; every dict is one result with
at least ``name``, ``value``, ``unit``, ``goal`` and ``passed``, and ``ratio`` where two
implementations are compared side by side in the same run. Use :func:`result` to build them.
"""

from __future__ import annotations

import compileall
import gc
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def result(
    name: str,
    value: float,
    unit: str,
    goal: str,
    passed: bool,
    ratio: float | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One benchmark line. ``goal`` states the target in words, e.g. ``"ratio >= 100"``."""
    row: dict[str, Any] = {
        "name": name,
        "value": value,
        "unit": unit,
        "goal": goal,
        "passed": bool(passed),
    }
    if ratio is not None:
        row["ratio"] = ratio
    row.update(extra)
    return row


def median_seconds(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """Median wall seconds of one call of ``fn`` over ``repeat`` trials of ``number`` calls.

    The garbage collector is paused while timing, as ``timeit`` does: otherwise a collection
    walks every object of the process, and a reference holding a large Python heap (the
    nats_bench API) would slow whatever is timed next to it.
    """
    times = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times.append((time.perf_counter() - start) / number)
    finally:
        if enabled:
            gc.enable()
    return statistics.median(times)


def nasfilter_command(*args: str) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run ``python -m nasfilter ARGS`` as a user types it, in a fresh process; return it
    (output captured), its wall seconds and the CPU seconds of it and its worker processes.

    The package's bytecode is compiled first, as Python caches it after a user's first run
    (where ``PYTHONDONTWRITEBYTECODE`` is set, every process would compile it again)."""
    import nasfilter

    compileall.compile_dir(Path(nasfilter.__file__).parent, quiet=1)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "nasfilter", *args], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, wall, cpu
