"""What a :class:`~nasfilter.sim.problem.Problem` is built from, checked once: its table
(costs), generator, budget and proxy (of the table's dataset and space), and the index arrays
its batch queries take. Each check raises ValueError naming the value at fault."""

from __future__ import annotations

import math
import weakref

import numpy as np

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.table import BenchmarkTable
from nasfilter.sim.clock import Budget


def check_same_dataset(table: BenchmarkTable, proxy: ProxyTable) -> None:
    """ValueError naming both when ``proxy`` records another dataset than ``table``
    (other input sizes and classes); no :class:`~nasfilter.sim.problem.Problem` holds such a
    pair."""
    recorded = proxy.provenance.get("dataset")
    if recorded is not None and recorded != table.dataset.name:
        raise ValueError(
            f"the table is for dataset {table.dataset.name!r} but the proxy "
            f"({proxy.label}) was computed for {recorded!r}; load the proxy for "
            f"{table.dataset.name!r} (proxy_table(..., dataset={table.dataset.name!r}))"
        )


def check_proxy_suits(
    table: BenchmarkTable,
    proxy: ProxyTable,
    who: str | None = None,
    remedy: str = "use a proxy of its space",
) -> None:
    """ValueError naming both when ``proxy`` is of another dataset
    (:func:`check_same_dataset`) or another search space than ``table``; ``who`` is how the
    caller named the proxy (default: its label), ``remedy`` what to do instead."""
    check_same_dataset(table, proxy)
    if proxy.space is not table.space:
        who = who or f"the proxy {proxy.label!r}"
        raise ValueError(
            f"{who} is of the {proxy.space.name} space ({proxy.space.title}) but the table "
            f"{table.label!r} is of the {table.space.name} space ({table.space.title}); {remedy}"
        )


def check_problem_inputs(
    table: object, rng: object, budget: object, proxy: object, proxy_cost: object,
    trace_limit: object,
) -> None:  # fmt: skip
    """ValueError naming the first bad argument of :class:`Problem`."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if not isinstance(table, BenchmarkTable):
        raise ValueError(f"table must be a BenchmarkTable, got {type(table).__name__}")
    if not isinstance(budget, Budget):
        raise ValueError(f"budget must be a Budget, got {budget!r}")
    if proxy is not None and not isinstance(proxy, ProxyTable):
        raise ValueError(
            f"proxy must be a ProxyTable (see nasfilter.oracle.proxy_table) or None, "
            f"got {type(proxy).__name__}"
        )
    if proxy is not None:
        check_proxy_suits(table, proxy)
    if not (
        isinstance(proxy_cost, (int, float, np.integer, np.floating))
        and not isinstance(proxy_cost, bool)
        and math.isfinite(proxy_cost)
        and proxy_cost >= 0
    ):
        raise ValueError(f"proxy_cost must be a finite number of seconds >= 0, got {proxy_cost!r}")
    if isinstance(trace_limit, bool) or not isinstance(trace_limit, int) or trace_limit < 0:
        raise ValueError(f"trace_limit must be an integer >= 0, got {trace_limit!r}")
    check_costs(table)


# Tables whose costs passed check_costs (their columns are read-only): checked once
_COSTS_CHECKED: weakref.WeakSet[BenchmarkTable] = weakref.WeakSet()


def check_costs(table: BenchmarkTable) -> None:
    """ValueError unless every present row's evaluation cost is finite and >= 0."""
    if table in _COSTS_CHECKED:
        return
    cost = table.eval_cost
    present_cost = cost[table.present]
    if not np.all(np.isfinite(present_cost)):
        bad = int(np.flatnonzero(table.present)[~np.isfinite(present_cost)][0])
        raise ValueError(
            f"table {table.label!r} has NaN or infinite evaluation costs (first at "
            f"architecture index {bad}: train {table.train_time[bad]!r} s/epoch, valid "
            f"{table.valid_time[bad]!r} s/epoch)"
        )
    if np.any(present_cost < 0):
        bad = int(np.flatnonzero(table.present)[present_cost < 0][0])
        raise ValueError(
            f"table {table.label!r} has negative evaluation costs (first at architecture "
            f"index {bad}: {cost[bad]!r} s); per-epoch times must be >= 0"
        )
    _COSTS_CHECKED.add(table)


def check_indices(indices: np.ndarray, size: int) -> np.ndarray:
    """``indices`` as int64 of shape (k,); ValueError for another shape, dtype or range."""
    raw = np.asarray(indices)
    if raw.ndim != 1:
        raise ValueError(f"indices must be one-dimensional, got shape {raw.shape}")
    if raw.size and (raw.dtype == np.bool_ or not np.issubdtype(raw.dtype, np.integer)):
        raise ValueError(f"indices must be integer architecture indices, got dtype {raw.dtype}")
    idx = raw.astype(np.int64, copy=False)
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        bad = idx[(idx < 0) | (idx >= size)][:5].tolist()
        raise ValueError(f"architecture indices must be in [0, {size - 1}], got {bad}")
    return idx
