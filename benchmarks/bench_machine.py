"""This machine's speed on three fixed workloads, to compare the timings of two machines.

Many goals of ``make bench`` are wall times on "2 cores", and two 2-core machines can differ
several times over: the same tree timed REINFORCE at 43 ms on one and 14 ms on another. These
rows time workloads of the same kinds as nasfilter's hot paths, with nothing of nasfilter in
them, so the ratio of two machines' rows says how far their other timings should differ:

- ``machine_python_loop``: a pure-Python loop of 200000 multiply-adds (the interpreter, as
  in the runner's trial path and the Optuna adapter);
- ``machine_numpy_small_call``: one numpy ufunc call on 40-element arrays (the per-step
  overhead of REINFORCE's update and of the front arithmetic);
- ``machine_numpy_sort``: sorting 2**20 float64 values (memory-bound numpy work, as in a
  scan of all 32768 architectures).

Every row is a report; none has a goal.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from benchmarks import median_seconds, result

GOAL = "(report: this machine's speed, to compare timings across machines)"
SMALL_CALLS = 10_000


def _python_loop() -> int:
    total = 0
    for i in range(200_000):
        total += i * i
    return total


def _small_calls(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    for _ in range(SMALL_CALLS):
        np.multiply(a, b, out=out)


def run() -> Iterator[dict[str, Any]]:
    yield result("machine_python_loop", median_seconds(_python_loop, 9) * 1e3, "ms", GOAL, True)
    a, b = np.linspace(0.0, 1.0, 40), np.linspace(1.0, 2.0, 40)
    out = np.empty(40)
    small = median_seconds(lambda: _small_calls(a, b, out), 9) / SMALL_CALLS
    yield result("machine_numpy_small_call", small * 1e6, "us", GOAL, True)
    values = np.random.default_rng(0).random(2**20)
    sort = median_seconds(lambda: np.sort(values), 9)
    yield result("machine_numpy_sort", sort * 1e3, "ms", GOAL, True)
