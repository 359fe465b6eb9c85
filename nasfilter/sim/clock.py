"""The simulated clocks of a run and its budget.

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


@dataclass(frozen=True)
class Budget:
    """The search budget, in either clock (or both; the first spent ends the run).

    Attributes:
        seconds: worker-seconds: the total simulated seconds charged (evaluations and proxy
            queries), whatever the number of workers. None: no such limit.
        max_evaluations: a cap on accuracy evaluations, or None.
        wall_seconds: simulated wall-clock seconds (with K workers, evaluations overlap),
            or None: no such limit.

    No query starts once a limit is reached; one started before may end past it.
    """

    seconds: float | None
    max_evaluations: int | None = None
    wall_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.seconds is None and self.wall_seconds is None:
            raise ValueError("a budget needs seconds (worker-seconds) or wall_seconds")
        if self.seconds is not None:
            _check_seconds(self.seconds, "budget seconds")
        if self.wall_seconds is not None:
            _check_seconds(self.wall_seconds, "budget wall_seconds")
        if self.max_evaluations is not None and (
            isinstance(self.max_evaluations, bool)
            or not isinstance(self.max_evaluations, (int, np.integer))
            or self.max_evaluations < 1
        ):
            raise ValueError(
                f"max_evaluations must be a positive integer or None, got {self.max_evaluations!r}"
            )
        # numpy scalars become Python numbers, so a Budget always serialises as plain JSON
        for name in ("seconds", "max_evaluations", "wall_seconds"):
            value = getattr(self, name)
            if isinstance(value, np.generic):
                object.__setattr__(self, name, value.item())

    @property
    def horizon(self) -> float:
        """The simulated time axis of this budget's curves: wall_seconds if given, else
        seconds (with one worker the two clocks agree)."""
        value = self.wall_seconds if self.wall_seconds is not None else self.seconds
        assert value is not None
        return float(value)

    def describe(self) -> str:
        parts = []
        if self.seconds is not None:
            parts.append(f"{self.seconds:g} worker-seconds")
        if self.wall_seconds is not None:
            parts.append(f"{self.wall_seconds:g} wall-clock seconds")
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
        self.limit = math.nan if budget.seconds is None else budget.seconds
        self.wall_limit = math.nan if budget.wall_seconds is None else budget.wall_seconds

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
        if self.budget.seconds is not None:
            k = min(k, int(np.searchsorted(spent_before, self.limit, side="left")))
        if self.budget.wall_seconds is not None:
            k = min(k, int(np.searchsorted(now_before, self.wall_limit, side="left")))
        return k

    @property
    def overshoot(self) -> float:
        """Worker-seconds charged past the budget (0 if within, or without that limit)."""
        limit = self.budget.seconds
        return 0.0 if limit is None else max(0.0, self.spent - limit)

    @property
    def remaining(self) -> float:
        """Seconds left before a limit of the budget is reached (>= 0), in its own clock."""
        left = math.inf
        if self.budget.seconds is not None:
            left = self.budget.seconds - self.spent
        if self.budget.wall_seconds is not None:
            left = min(left, self.budget.wall_seconds - self.now)
        return max(0.0, left)
