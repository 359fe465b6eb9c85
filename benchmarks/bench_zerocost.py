"""Zero-cost proxies: reading a precomputed score against a table lookup, and computing one.

Reading: a synflow read through the metered problem (``Problem.query_zerocost_many``, the
shipped tss CIFAR-10 file) against a hardware reading of the same indices
(``Problem.query_proxy_many``, the measured 2080 Ti table), side by side, each a first query
on a fresh problem whose lane has answered once: 500 indices one per call (the seconds per
call: a searcher reading one score at a time), and the other 15624 in one call. Goal: a
read costs what a table lookup costs (ratio <= 2).

Computing: one network's proxies from scratch (``score_arch``: the xautodl network built, then
every proxy; CPU seconds, one torch thread) on a fixed sample of tss cells, the median per
proxy and for all of them together. Goal: < 1 s per network on one core (median over the
sample), as docs/cheap-signals.md states; the data-needing proxies miss it there too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from benchmarks import result
from nasfilter.bench.tss_real import tss_table
from nasfilter.oracle.measured import measured_proxy
from nasfilter.runs.runner import make_problem
from nasfilter.sim.problem import Problem

SAMPLE = 5  # tss cells timed from scratch (seconds each: the data proxies dominate)
ONE_A_CALL = 500  # single-index calls timed together: one sub-millisecond call is noise


def _read(problem: Problem, idx: np.ndarray) -> object:
    return problem.query_zerocost_many("synflow", idx)


def _lookup(problem: Problem, idx: np.ndarray) -> object:
    return problem.query_proxy_many(idx)


def _first_query_seconds(
    query: Callable[[Problem, np.ndarray], object],
    idx: np.ndarray,
    one_a_call: bool,
    repeat: int = 5,
) -> float:
    """Median wall seconds per call of ``query`` on a fresh problem each trial, after one
    query of index 0, every index of ``idx`` (0 left out) a first query, charged: each index
    in a call of its own (``one_a_call``: the seconds of all the calls / their number) or
    all of them in one call."""
    table, proxy = tss_table("cifar10"), measured_proxy("2080ti")
    calls = [idx[i : i + 1] for i in range(len(idx))] if one_a_call else [idx]
    times = []
    for _ in range(repeat):
        problem = make_problem(table, 1e12, 0, proxy=proxy)
        query(problem, np.array([0]))  # the lane set up (its cost read) before the timed read
        start = time.perf_counter()
        for call in calls:
            query(problem, call)
        times.append((time.perf_counter() - start) / len(calls))
    return float(np.median(times))


def _reads() -> Iterator[dict[str, Any]]:
    everything = np.arange(1, 15625)
    _first_query_seconds(_read, everything[:1], False, repeat=1)  # load the score file once
    cases = ((f"{ONE_A_CALL} indices one a call (per call)", everything[:ONE_A_CALL], True),
             ("the other 15624 in one call", everything, False))  # fmt: skip
    for what, idx, one_a_call in cases:
        read = _first_query_seconds(_read, idx, one_a_call)
        lookup = _first_query_seconds(_lookup, idx, one_a_call)
        ratio = read / lookup
        yield result(
            f"zero-cost read (synflow, tss cifar10), {what}, against a hardware lookup",
            read, "s", "ratio <= 2", ratio <= 2.0, ratio=ratio, lookup_s=lookup,
        )  # fmt: skip


def _compute() -> Iterator[dict[str, Any]]:
    import torch

    from nasfilter.zerocost import known_proxies, parse_proxies
    from nasfilter.zerocost.compute import score_arch

    torch.set_num_threads(1)
    sample = np.random.default_rng(0).permutation(15625)[:SAMPLE].tolist()
    names = list(known_proxies())
    proxies = parse_proxies(",".join(names))
    seconds: dict[str, list[float]] = {n: [] for n in names}
    whole = []
    for arch in sample:
        start = time.process_time()
        scores = score_arch("tss", int(arch), "cifar10", proxies)
        whole.append(time.process_time() - start)  # the network's build included
        for n in names:
            seconds[n].append(scores[n][1])
    for n in names:
        med = float(np.median(seconds[n]))
        yield result(f"zero-cost compute, {n}, tss cifar10, median of {SAMPLE} cells", med,
                     "CPU s", "informative", True)  # fmt: skip
    med = float(np.median(whole))
    yield result(
        f"zero-cost compute, all {len(names)} proxies of one tss cifar10 network, build "
        f"included (median of {SAMPLE})", med, "CPU s", "< 1 s", med < 1.0,
    )  # fmt: skip


def run() -> Iterator[dict[str, Any]]:
    yield from _reads()
    yield from _compute()
