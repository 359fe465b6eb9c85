"""The searcher interface: ask for an architecture, tell it the outcome.

A searcher is one small class, passed as an instance::

    class MySearcher(Searcher):
        name = "mine"

        def reset(self) -> None:          # optional: start a fresh run
            self.seen = []

        def ask(self) -> Arch | None:     # propose, or None when done
            return space.sample(self.rng)

        def tell(self, arch: Arch, accuracy: float | None) -> None:
            self.seen.append((arch, accuracy))  # None: a filter dropped it

The runner calls :meth:`Searcher.setup` once per run, before the first :meth:`ask`: it
hands in the run's random generator (the only source of randomness a searcher may use) and
a metered :class:`~nasfilter.metered.ProxyHandle` (utilization and throughput, charged to the
simulated clock; never accuracy), then calls :meth:`reset`. Accuracies arrive only through
:meth:`tell`: validation accuracy in percent after 12 epochs, one random training seed.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from nasfilter.metered import ProxyHandle, SearchContext
from nasfilter.space import Arch


class Searcher(abc.ABC):
    """Base class of every searcher. Subclasses implement :meth:`ask` and :meth:`tell`.

    Class attributes:
        name: a short name used in results (the registry may register it under others).
        needs_proxy: True when the searcher queries the proxy (a class or an instance
            attribute); a run without a proxy then fails before it starts.
    """

    name: ClassVar[str] = "searcher"
    needs_proxy: bool = False

    rng: np.random.Generator
    proxy: ProxyHandle

    def setup(self, context: SearchContext) -> None:
        """Start a fresh run: store the generator and proxy, then call :meth:`reset`."""
        if self.needs_proxy:
            context.proxy.require(f"searcher {self.name!r}")
        self.rng = context.rng
        self.proxy = context.proxy
        self.reset()

    def reset(self) -> None:  # noqa: B027 (an optional hook, empty by default)
        """Clear all per-run state. Called by :meth:`setup`; override when there is state."""

    @abc.abstractmethod
    def ask(self) -> Arch | None:
        """The next architecture to evaluate, or None when the searcher has nothing more."""

    @abc.abstractmethod
    def tell(self, arch: Arch, accuracy: float | None) -> None:
        """The outcome of ``arch``: validation accuracy (percent), or None if not evaluated."""

    def recommend(self) -> Arch | None:
        """The evaluated architecture this searcher returns at the end of a run.

        None (the default) lets the runner pick the evaluated architecture with the highest
        validation accuracy seen. A searcher with another criterion (REINFORCE's best reward)
        overrides this; it must return an architecture evaluated in this run.
        """
        return None

    def config(self) -> dict[str, Any]:
        """The searcher's parameters, recorded with its results (JSON-serialisable)."""
        return {}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({params})"


def check_positive_int(value: object, name: str, minimum: int = 1) -> int:
    """``value`` as an int if it is an integer >= ``minimum``, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_real(
    value: object,
    name: str,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> float:
    """``value`` as a finite float within [low, high] (low excluded if ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (x <= low if low_open else x < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low:g}, got {value!r}")
    if high is not None and x > high:
        raise ValueError(f"{name} must be <= {high:g}, got {value!r}")
    return x
