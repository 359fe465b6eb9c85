"""A read-only, metered view of a :class:`~nasfilter.sim.problem.Problem` for searchers and filters.

Searchers and filters get a :class:`ProxyHandle`, never the problem: it answers proxy
queries (utilization and throughput, each charged to the simulated clock by the problem) and
tells the time, but it has no door to accuracy, validation or test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nasfilter.bench.spaces import Space
from nasfilter.bench.spaces.sss import ArchLike
from nasfilter.sim.problem import Problem, ProxyReading


class ProxyHandle:
    """Proxy queries and the clock of one run; every query is charged by the problem."""

    __slots__ = ("__problem", "__query")

    def __init__(self, problem: Problem) -> None:
        if not isinstance(problem, Problem):
            raise ValueError(f"a ProxyHandle wraps a Problem, got {type(problem).__name__}")
        self.__problem = problem
        self.__query = problem.query_proxy  # bound once: a searcher may query every step

    @property
    def available(self) -> bool:
        """Whether the problem has a proxy at all."""
        return self.__problem.proxy_table is not None

    @property
    def label(self) -> str:
        """The proxy's label ("roofline v100 ..."), or "none"."""
        table = self.__problem.proxy_table
        return "none" if table is None else table.label

    @property
    def space(self) -> Space:
        """The search space of the problem's table (:mod:`nasfilter.bench.spaces`)."""
        return self.__problem.table.space

    @property
    def dataset(self) -> str:
        """The name of the problem's dataset ("cifar10", ...), for free per-dataset facts
        such as :func:`nasfilter.bench.costs.network_costs`."""
        return self.__problem.table.dataset.name

    @property
    def cost(self) -> float:
        """Simulated seconds charged per proxy query."""
        return self.__problem.proxy_cost

    @property
    def clock(self) -> float:
        """The run's simulated wall clock, seconds."""
        return self.__problem.clock

    @property
    def worker_seconds(self) -> float:
        """Simulated seconds charged so far by the run (accuracy and proxy together)."""
        return self.__problem.worker_seconds

    @property
    def budget_seconds(self) -> float | None:
        """The budget in worker-seconds, or None when the run is limited by wall clock."""
        return self.__problem.budget.worker_seconds

    @property
    def remaining(self) -> float:
        """Simulated seconds left before a limit of the budget is reached (>= 0)."""
        return self.__problem.remaining

    @property
    def exhausted(self) -> bool:
        return self.__problem.exhausted

    def require(self, who: str) -> None:
        """Raise ValueError naming ``who`` when the problem has no proxy."""
        if not self.available:
            raise ValueError(
                f"{who} needs a proxy (utilization and throughput), but the problem has none: "
                "pass proxy=... to Problem, or pick a searcher/filter that needs no proxy"
            )

    def fidelity_hps(self) -> list[str]:
        """The training settings evaluations may use (``['01', '12', '90']``), from the
        problem's learning curves; NoCurvesError naming the conversion if it has none."""
        return self.__problem.curves.hps()

    def max_epochs(self, hp: str = "12") -> int:
        """Epochs of training setting ``hp`` (a Fidelity's epochs: 1 .. this); ValueError
        naming the settings for an unknown ``hp``, NoCurvesError without curves."""
        curves = self.__problem.curves
        if hp not in curves.hps():
            raise ValueError(
                f"hp {hp!r} is not a training setting; the settings are {curves.hps()}"
            )
        return curves.epochs(hp)

    def query(self, arch: ArchLike) -> ProxyReading:
        """Utilization (fraction of peak) and throughput (images/s) of ``arch``, charged."""
        return self.__query(arch)

    def query_many(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Query indices (k,) in order until the budget runs out, charging each.

        Returns ``(answered, readings)`` of shapes (m,), (m, 2) with columns utilization and
        throughput, m <= k.
        """
        return self.__problem.query_proxy_many(indices)

    def zerocost_cost(self, proxy: str) -> float:
        """Simulated seconds charged per query of zero-cost ``proxy`` (modelled,
        :func:`nasfilter.sim.zerocost_lane.zerocost_cost`)."""
        return self.__problem.zerocost.cost(proxy)

    def zerocost_coverage(self, proxy: str) -> np.ndarray:
        """bool (size,): the architectures with a computed score of ``proxy`` (free)."""
        return self.__problem.zerocost.coverage(proxy)

    def query_zerocost(self, proxy: str, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Zero-cost scores of ``proxy`` for indices (k,) in order until the budget runs
        out, each charged (:meth:`~nasfilter.sim.problem.Problem.query_zerocost_many`):
        (answered (m,), scores float64 (m,), NaN where the proxy is undefined)."""
        return self.__problem.query_zerocost_many(proxy, indices)


@dataclass(frozen=True)
class SearchContext:
    """What a run hands a searcher or a filter: its own generator and the metered proxy."""

    rng: np.random.Generator
    proxy: ProxyHandle

    def fidelity_hps(self) -> list[str]:
        """The training settings of the run's learning curves (:meth:`ProxyHandle.fidelity_hps`)."""
        return self.proxy.fidelity_hps()

    def max_epochs(self, hp: str = "12") -> int:
        """Epochs of setting ``hp`` in the run's curves (:meth:`ProxyHandle.max_epochs`)."""
        return self.proxy.max_epochs(hp)

    def __post_init__(self) -> None:
        if not isinstance(self.rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator, got {type(self.rng).__name__}")
        if not isinstance(self.proxy, ProxyHandle):
            raise ValueError(f"proxy must be a ProxyHandle, got {type(self.proxy).__name__}")
