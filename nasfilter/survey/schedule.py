"""The order in which a cold survey hands its models to the processes that analyse them.

Two ends of one list are worked at once (:func:`nasfilter.survey.cache.profile_all`): the
spawned workers take items from the front, the survey's own process from the back. Both
should meet the costliest models first and end on the cheapest, so that the processes finish
together (a longest-processing-time order): :func:`work_order` sorts by a static estimate of
each model's cost, its published parameter count (millions, ``results-imagenet.csv``; a
model without one counts as costliest), and deals the sorted list to the two ends in turn.
The estimate is a rank, never a timing, so the order is the same on every run; each model's
analysis does not depend on it.
"""

from __future__ import annotations

import csv
import functools
import math
from collections.abc import Sequence
from typing import TypeVar

from nasfilter.bench.timm_data import RESULTS_FILE

T = TypeVar("T")


@functools.lru_cache(maxsize=1)
def published_params() -> dict[str, float]:
    """The largest published parameter count (millions) per timm architecture."""
    params: dict[str, float] = {}
    with RESULTS_FILE.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            try:
                value = float(row["param_count"].replace(",", ""))
            except (KeyError, AttributeError, ValueError):
                continue  # no count published: the model counts as costliest
            arch = row["model"].split(".", 1)[0]
            params[arch] = max(value, params.get(arch, -math.inf))
    return params


def work_order(items: Sequence[T], archs: Sequence[str]) -> list[T]:
    """``items`` (one per architecture name in ``archs``) in the order of the module docstring:
    read from the front, and from the back, each end goes from costliest to cheapest.

    Ties keep their given order (a stable sort)."""
    if len(items) != len(archs):
        raise ValueError(f"one architecture per item: {len(items)} items, {len(archs)} names")
    params = published_params()
    ranked = sorted(
        range(len(items)), key=lambda k: -params.get(archs[k].split(".", 1)[0], math.inf)
    )
    front, back = ranked[0::2], ranked[1::2]
    return [items[k] for k in front + back[::-1]]
