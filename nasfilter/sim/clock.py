"""The simulated clocks of a run and its budget (:class:`Budget`, the one budget type).

Two clocks, never confused: **worker-seconds** (:attr:`SimClock.spent`), the simulated
seconds charged by every query summed over all workers, and the **wall clock**
(:attr:`SimClock.now`), the simulated seconds since the run began, with K workers'
evaluations overlapping. With one worker they agree whenever no evaluation is running.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class BudgetExhausted(RuntimeError):
    """A query was asked for after the budget was spent."""


def _check_seconds(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be finite and > 0, got {value!r}")


BUDGET_CLOCKS = ("worker", "wall")  # what a Budget's seconds count


@dataclass(frozen=True, init=False)
class Budget:
    """The search budget: simulated seconds on one clock, and optionally a cap on
    evaluations (the first limit reached ends the run). The one budget type of the
    simulator and of a run spec (:class:`~nasfilter.runs.records.RunSpec`).

    Attributes:
        seconds: simulated seconds (finite, > 0), counted on ``clock``.
        max_evaluations: a cap on accuracy evaluations, or None.
        clock: ``"worker"``: worker-seconds, the total simulated seconds charged
            (evaluations and proxy queries) by all workers together (the same compute for
            every K); ``"wall"``: simulated wall-clock seconds (with K workers,
            evaluations overlap).

    ``Budget(None, wall_seconds=S)``, the older spelling, is ``Budget(S, clock="wall")``.
    No query starts once a limit is reached; one started before may end past it.
    """

    seconds: float
    max_evaluations: int | None = None
    clock: str = "worker"

    def __init__(
        self,
        seconds: float | None,
        max_evaluations: int | None = None,
        clock: str = "worker",
        *,
        wall_seconds: float | None = None,
    ) -> None:
        if wall_seconds is not None:  # the older spelling of a wall-clock budget
            if seconds is not None or clock != "worker":
                raise ValueError(
                    f"a budget counts one clock, got seconds={seconds!r} and "
                    f"wall_seconds={wall_seconds!r}; write Budget(seconds) for "
                    "worker-seconds or Budget(seconds, clock='wall') for wall-clock seconds"
                )
            seconds, clock = wall_seconds, "wall"
        if seconds is None:
            raise ValueError("a budget needs seconds, e.g. Budget(20000.0)")
        _check_seconds(seconds, "budget seconds")
        if not isinstance(clock, str) or clock not in BUDGET_CLOCKS:
            raise ValueError(
                f"a budget's clock must be one of {BUDGET_CLOCKS}, got {clock!r} (a wall-clock "
                "budget is Budget(seconds, clock='wall'); wall_seconds= is its older spelling)"
            )
        if max_evaluations is not None and (
            isinstance(max_evaluations, bool)
            or not isinstance(max_evaluations, (int, np.integer))
            or max_evaluations < 1
        ):
            raise ValueError(
                f"max_evaluations must be a positive integer or None, got {max_evaluations!r}"
            )
        # numpy scalars become Python numbers, so a Budget always serialises as plain JSON
        for name, value in (("seconds", seconds), ("max_evaluations", max_evaluations)):
            object.__setattr__(self, name, value.item() if isinstance(value, np.generic) else value)
        object.__setattr__(self, "clock", clock)

    @classmethod
    def of(cls, value: Budget | float, clock: str | None = None) -> Budget:
        """``value`` as a Budget: a Budget as is, a number of seconds on ``clock`` (None:
        ``"worker"``). ValueError for anything else, or for a ``clock`` that contradicts
        ``value``'s."""
        if isinstance(value, Budget):
            if clock is not None and clock != value.clock:
                raise ValueError(
                    f"budget {value!r} counts {value.clock}-seconds but the clock given is "
                    f"{clock!r}; give the clock in the Budget only"
                )
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(
                f"budget must be a number of seconds or a Budget, got {value!r}"
            )
        return cls(value, clock="worker" if clock is None else clock)

    @property
    def worker_seconds(self) -> float | None:
        """The limit in worker-seconds, or None when the budget counts the wall clock."""
        return self.seconds if self.clock == "worker" else None

    @property
    def wall_seconds(self) -> float | None:
        """The limit in wall-clock seconds, or None when the budget counts worker-seconds."""
        return self.seconds if self.clock == "wall" else None

    @property
    def horizon(self) -> float:
        """The simulated time axis of this budget's curves: its seconds (with one worker
        the two clocks agree)."""
        return float(self.seconds)

    def __float__(self) -> float:
        """The seconds (so ``float(spec.budget)``, as when the budget was a number)."""
        return float(self.seconds)

    def __format__(self, format_spec: str) -> str:
        """A number's format spec formats the seconds (``f"{budget:g}"``, as when the
        budget was a number); none gives the repr."""
        return format(self.seconds, format_spec) if format_spec else repr(self)

    def _refuse_order(self, other: object) -> bool:
        raise TypeError(
            f"a Budget is not ordered (it counts {self.clock}-seconds and may cap "
            "evaluations); compare budget.seconds"
        )

    __lt__ = __le__ = __gt__ = __ge__ = _refuse_order

    def describe(self) -> str:
        """What the budget allows, e.g. ``"20000 worker-seconds or 50 evaluations"``."""
        clock = "worker-seconds" if self.clock == "worker" else "wall-clock seconds"
        parts = [f"{self.seconds:g} {clock}"]
        if self.max_evaluations is not None:
            parts.append(f"{self.max_evaluations} evaluations")
        return " or ".join(parts)


class SimClock:
    """Worker-seconds charged (``spent``) and the wall clock (``now``) of one run, against
    its :class:`Budget`, which is the run's stopping criterion: no query starts once
    :attr:`time_spent` (or the evaluation cap, see :meth:`exhausted`)."""

    __slots__ = ("budget", "limit", "now", "spent", "wall_limit")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.spent = 0.0  # worker-seconds charged
        self.now = 0.0  # simulated wall clock, s
        # The limits of the two clocks, NaN for "no such limit": every comparison with NaN
        # is False, so the checks on the hot path need no None test
        worker, wall = budget.worker_seconds, budget.wall_seconds
        self.limit = math.nan if worker is None else worker
        self.wall_limit = math.nan if wall is None else wall

    @property
    def time_spent(self) -> bool:
        """True once either clock has reached its limit."""
        return self.spent >= self.limit or self.now >= self.wall_limit

    def exhausted(self, n_evaluations: int) -> bool:
        """True once no further query may start (``n_evaluations`` full evaluations so far
        against the budget's cap)."""
        cap = self.budget.max_evaluations
        return (
            self.spent >= self.limit
            or self.now >= self.wall_limit
            or (cap is not None and n_evaluations >= cap)
        )

    def check_open(self, what: str) -> None:
        """BudgetExhausted (saying it could not ``what``) once either clock is spent."""
        if self.spent >= self.limit or self.now >= self.wall_limit:
            raise BudgetExhausted(
                f"cannot {what}: the budget of {self.budget.describe()} is spent "
                f"({self.spent:.1f} worker-seconds, wall clock {self.now:.1f} s)"
            )

    def advance(self, time: float) -> None:
        """Move the wall clock forward to ``time`` (simulated seconds); never backward.

        Raises ValueError for an infinite or NaN ``time``, which no evaluation ends at."""
        if time > self.now:
            if time == math.inf:
                self._refuse_time(time)
            self.now = float(time)
        elif time != time:  # NaN compares false with everything
            self._refuse_time(time)

    def _refuse_time(self, time: float) -> None:
        raise ValueError(
            f"advance({time!r}): the wall clock moves to a finite number of simulated "
            f"seconds (now {self.now:g}); pass the end time start_evaluation() returned"
        )

    def allowed(self, spent_before: np.ndarray, now_before: np.ndarray) -> int:
        """How many of serial queries may start in turn, given the worker-seconds and the
        wall clock before each (s, shape (k,), nondecreasing): each one may start while
        both clocks are below their limits."""
        k = len(spent_before)
        if self.budget.clock == "worker":
            k = min(k, int(np.searchsorted(spent_before, self.limit, side="left")))
        else:
            k = min(k, int(np.searchsorted(now_before, self.wall_limit, side="left")))
        return k

    @property
    def overshoot(self) -> float:
        """Worker-seconds charged past the budget (0 if within, or without that limit)."""
        limit = self.budget.worker_seconds
        return 0.0 if limit is None else max(0.0, self.spent - limit)

    @property
    def remaining(self) -> float:
        """Seconds left before a limit of the budget is reached (>= 0), in its own clock."""
        if self.budget.clock == "worker":
            return max(0.0, self.budget.seconds - self.spent)
        return max(0.0, self.budget.seconds - self.now)
