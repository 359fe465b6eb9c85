"""The CNN survey's speed goals, on 2 cores:

- analysing every timm CNN at its native size, from an empty cache, in under 60 s
  (``--jobs 2``: two spawned worker processes, each importing torch and timm first);
- a whole survey (RTX 4090, its shipped NCHW measurements, fold f = 4) from cached layer
  tables in under 5 s.

Which architectures are CNNs (>= 90 % of MACs in convolutions) is found by a first, untimed
pass over every timm architecture with a published ImageNet result.

On a shared machine the wall time depends on the other load, so each row also reports the
1-minute load average before and after, and the CPU seconds the work took (the worker
processes' user + system time, and the parent's): for the cold analysis CPU seconds / 2 is
about the wall time the same work takes on 2 idle cores (``idle_2_core_seconds``, and its
ratio to the goal); the cached survey runs in one process, so its CPU seconds are its idle
wall time (``cpu_over_goal``). ``passed`` is judged on the wall time measured.
"""

from __future__ import annotations

import os
import resource
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import result

ANALYSIS_GOAL = 60.0
SURVEY_GOAL = 5.0
JOBS = 2


def run() -> Iterator[dict[str, Any]]:
    from nasfilter.oracle.devices import get_device
    from nasfilter.survey import cache
    from nasfilter.survey.survey import SurveySettings, run_survey
    from nasfilter.survey.timm_import import import_timm
    from nasfilter.survey.timm_models import _default_size, timm_architectures
    from nasfilter.timm_data import imagenet_top1, read_benchmark, shipped_benchmark

    timm = import_timm()
    known = set(timm_architectures())
    archs = sorted({a for a, _ in imagenet_top1() if a in known})
    native = [(a, _default_size(timm, a) or 224) for a in archs]
    with tempfile.TemporaryDirectory(prefix="bench-survey-") as tmp:
        first = cache.profile_all(native, Path(tmp) / "all", jobs=JOBS)
        cnns = [k for k, p in first.items() if not isinstance(p, str) and p.is_cnn]

        load_before, cpu_before = os.getloadavg()[0], _cpu_seconds()
        start = time.perf_counter()
        cache.profile_all(cnns, Path(tmp) / "cnn", jobs=JOBS)
        wall = time.perf_counter() - start
        cpu = _cpu_seconds() - cpu_before
        yield result(
            f"survey: analyse every timm CNN at its native size, empty cache, {JOBS} jobs",
            wall,
            "s",
            f"< {ANALYSIS_GOAL:g} s on 2 cores",
            wall < ANALYSIS_GOAL,
            n_cnn=len(cnns),
            n_architectures=len(archs),
            seconds_per_model=round(wall / max(len(cnns), 1), 4),
            cpu_seconds=round(cpu, 1),
            idle_2_core_seconds=round(cpu / 2, 1),
            idle_estimate_over_goal=round(cpu / 2 / ANALYSIS_GOAL, 3),
            idle_estimate_passed=cpu / 2 < ANALYSIS_GOAL,
            load_before=round(load_before, 1),
            load_after=round(os.getloadavg()[0], 1),
            cpus=os.cpu_count(),
        )

        source = shipped_benchmark("rtx4090", "nchw")
        settings = SurveySettings(
            device=get_device("rtx4090"),
            measured=read_benchmark(source),
            measured_label=source.name,
            models=[(a, s) for a, s in cnns],
            jobs=JOBS,
            cache_root=Path(tmp) / "survey",
        )
        run_survey(settings)  # fills the cache, folded tables included
        load_before, cpu_before = os.getloadavg()[0], _cpu_seconds()
        start = time.perf_counter()
        summary = run_survey(settings).summary
        wall = time.perf_counter() - start
        cpu = _cpu_seconds() - cpu_before
        yield result(
            "survey: a whole survey from cached layer tables (RTX 4090 NCHW, fold 4)",
            wall,
            "s",
            f"< {SURVEY_GOAL:g} s",
            wall < SURVEY_GOAL,
            n_rows=summary["n_rows"],
            n_folded=summary["n_folded"],
            cpu_seconds=round(cpu, 2),
            cpu_over_goal=round(cpu / SURVEY_GOAL, 3),
            load_before=round(load_before, 1),
            load_after=round(os.getloadavg()[0], 1),
        )


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
