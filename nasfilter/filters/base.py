"""The filter interface: choose which proposed architectures are worth an accuracy query.

A filter sits between a searcher's ``ask`` and the problem's ``evaluate``; neither side
knows about the other. It sees the candidates and a metered
:class:`~nasfilter.metered.ProxyHandle` (utilization and throughput, each query charged to
the simulated clock) and returns the candidates to evaluate, a sub-list of its input in its
order. It cannot reach accuracy. A dropped candidate is told to the searcher as ``None``.

A new filter is one small class::

    class FastOnly(Filter):
        name = "fast-only"
        needs_proxy = True

        def select(self, candidates, proxy):
            return [a for a in candidates if proxy.query(a).throughput > 1e5]
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from nasfilter.metered import ProxyHandle, SearchContext
from nasfilter.space import Arch


class Filter(abc.ABC):
    """Base class of every filter. Subclasses implement :meth:`select`.

    Class attributes:
        name: a short name used in results.
        needs_proxy: True when the filter queries the proxy (class or instance attribute).
    """

    name: ClassVar[str] = "filter"
    needs_proxy: bool = False

    rng: np.random.Generator
    proxy: ProxyHandle

    def setup(self, context: SearchContext) -> None:
        """Start a fresh run: store the generator and proxy, then call :meth:`reset`."""
        if self.needs_proxy:
            context.proxy.require(f"filter {self.name!r}")
        self.rng = context.rng
        self.proxy = context.proxy
        self.reset()

    def reset(self) -> None:  # noqa: B027 (an optional hook, empty by default)
        """Clear all per-run state. Called by :meth:`setup`; override when there is state."""

    @abc.abstractmethod
    def select(self, candidates: Sequence[Arch], proxy: ProxyHandle) -> list[Arch]:
        """The candidates to evaluate: a sub-list of ``candidates``, in their order."""

    def config(self) -> dict[str, Any]:
        """The filter's parameters, recorded with its results (JSON-serialisable)."""
        return {}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({params})"
