"""Timing a repeated run: warm-up, equal trials filling a window, median and spread."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

# timer(run, n) runs ``run`` n times and returns the seconds they took.
Timer = Callable[[Callable[[], object], int], float]


def wall_timer(run: Callable[[], object], n: int) -> float:
    """Wall-clock seconds of ``n`` calls of ``run`` (for synchronous runs such as the CPU's)."""
    start = time.perf_counter()
    for _ in range(n):
        run()
    return time.perf_counter() - start


@dataclass(frozen=True)
class Timing:
    """The result of :func:`time_runs`. Seconds throughout."""

    median: float  # seconds per run, median over trials
    cv: float  # coefficient of variation of the trials' seconds per run
    runs_per_trial: int
    trials: int
    warmup_seconds: float
    timed_seconds: float

    def as_dict(self) -> dict[str, float]:
        return {
            "median_s": self.median,
            "cv": self.cv,
            "runs_per_trial": float(self.runs_per_trial),
            "trials": float(self.trials),
            "warmup_s": self.warmup_seconds,
            "timed_s": self.timed_seconds,
        }


def time_runs(
    run: Callable[[], object],
    window: float,
    trials: int,
    warmup: int,
    timer: Timer = wall_timer,
) -> Timing:
    """Warm up with ``warmup`` runs (at least one), then time ``trials`` trials of n runs each.

    n is chosen so that each trial lasts about ``window / trials`` seconds: first from the
    fastest warm-up run (the first run of a fresh session pays for lazy set-up), then again
    after every trial from the median so far.
    """
    if trials < 1 or warmup < 0 or not window > 0:
        raise ValueError(
            f"need trials >= 1, warmup >= 0 and window > 0, got {trials}, {warmup}, {window}"
        )
    target = window / trials
    start = time.perf_counter()
    one = min(timer(run, 1) for _ in range(max(warmup, 1)))
    warmed = time.perf_counter()
    per_trial = max(1, round(target / max(one, 1e-9)))
    times: list[float] = []
    counts: list[int] = []
    for _ in range(trials):
        times.append(timer(run, per_trial) / per_trial)
        counts.append(per_trial)
        per_trial = max(1, round(target / max(statistics.median(times), 1e-9)))
    timed = time.perf_counter() - warmed
    mean = statistics.fmean(times)
    cv = statistics.pstdev(times) / mean if trials > 1 and mean > 0 else 0.0
    return Timing(
        statistics.median(times),
        cv,
        round(statistics.median(counts)),
        trials,
        warmed - start,
        timed,
    )
