"""Real time of the multi-fidelity searchers' own computation in a 110000-s run.

For successive halving, Hyperband, ASHA, BOHB, MO-ASHA and model-based-mf on the embedded
table (SYNTHETIC curves, the V100 roofline proxy that MO-ASHA and model-based-mf query), at
K = 1 and 16 simulated workers: the seconds spent inside the searcher's ``propose`` and
``observe`` over a whole 110000-s run (median of three seeds; goal < 2 s), counted as this
process's CPU time (one thread: its real time on an unshared core), with the
ratio of the whole run's real time to random search's on the same budget and K (the named
reference: a searcher that computes almost nothing). BOHB's seconds include its density
model (two fits per bracket, ``n_samples`` candidates scored per new architecture), MO-ASHA's
its non-dominated sorting and the proxy queries it makes.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from benchmarks import result
from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.surrogate import embedded_table
from nasfilter.oracle import proxy_table
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import make_searcher
from nasfilter.searchers.base import Searcher
from nasfilter.sim.problem import Budget

BUDGET = 110_000.0
SEEDS = (0, 1, 2)
GOAL_SECONDS = 2.0
SEARCHERS = ("successive-halving", "hyperband", "asha", "bohb", "mo-asha", "model-based-mf")


@cache
def _proxy() -> ProxyTable:
    return proxy_table("roofline", "v100", "cifar10")


def _timed(fn: Callable[..., Any], spent: list[float]) -> Callable[..., Any]:
    def wrapper(*args: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args)
        finally:
            spent[0] += time.process_time() - start

    return wrapper


def _one_run(name: str, workers: int, seed: int) -> tuple[float, float]:
    """(CPU seconds inside propose/observe, real seconds of the whole run)."""
    searcher: Searcher = make_searcher(name)
    spent = [0.0]
    searcher.propose = _timed(searcher.propose, spent)  # type: ignore[method-assign]
    searcher.observe = _timed(searcher.observe, spent)  # type: ignore[method-assign]
    problem = make_problem(embedded_table("cifar10"), Budget(BUDGET), seed, proxy=_proxy())
    run = run_search(searcher, problem, workers=workers)
    return spent[0], run.wall_seconds


def run() -> Iterator[dict[str, Any]]:
    for workers in (1, 16):
        reference = statistics.median(_one_run("random", workers, s)[1] for s in SEEDS)
        for name in SEARCHERS:
            own, whole = zip(*(_one_run(name, workers, s) for s in SEEDS), strict=True)
            value = statistics.median(own)
            yield result(
                f"{name}_own_seconds_110000s_K{workers}",
                value,
                "s",
                f"median < {GOAL_SECONDS:g} s in propose/observe (process CPU time)",
                value < GOAL_SECONDS,
                ratio=statistics.median(whole) / reference,
                reference="random search, whole run, same budget and K",
            )
