"""Filters: decide which proposed architectures get an accuracy query.

Code passes instances (``run_search(searcher, problem, filter=ProxyThreshold())``);
:data:`FILTERS` maps command-line names to factories and :func:`make_filter` builds one from
``NAME[key=value,...]`` or a plugin path ``package.module:Class[...]``.
"""

from __future__ import annotations

from typing import Any

from nasfilter.filters.base import Filter
from nasfilter.filters.builtins import (
    DropAll,
    PassThrough,
    ProxyThreshold,
    SuccessiveFrontiers,
    log_epsilon,
)
from nasfilter.filters.zerocost import ZeroCostFrontiers
from nasfilter.registry import Registry

FILTERS: Registry[Filter] = Registry("filter", Filter)
FILTERS.register("none", PassThrough, "evaluate every proposal")
FILTERS.register("drop-all", DropAll, "evaluate nothing (for tests)")
FILTERS.register(
    "successive-frontiers",
    SuccessiveFrontiers,
    "pass the throughput-utilization front, then the next layers as each is used up",
)
FILTERS.register(
    "proxy-threshold",
    ProxyThreshold,
    "pass proposals within a tolerance (default 5 %) of the proxy front",
)
FILTERS.register(
    "zerocost-frontiers",
    ZeroCostFrontiers,
    "successive throughput-score fronts of a zero-cost proxy (score=synflow) in place of "
    "utilization",
)


def make_filter(spec: str | Filter | None, **overrides: Any) -> Filter:
    """A filter instance from a spec string (None = ``"none"``), or ``spec`` itself."""
    if spec is None:
        spec = "none"
    if isinstance(spec, Filter):
        if overrides:
            raise ValueError("overrides apply to spec strings, not to filter instances")
        return spec
    return FILTERS.create(spec, **overrides)


__all__ = [
    "FILTERS",
    "DropAll",
    "Filter",
    "PassThrough",
    "ProxyThreshold",
    "SuccessiveFrontiers",
    "ZeroCostFrontiers",
    "log_epsilon",
    "make_filter",
]
