"""Pareto routines on 32768 two-objective points (one per architecture), against moocore.

Two point sets: uniform random (continuous, about 360 front layers) and table-like (accuracy
rounded to 0.01 percent, integer images/s: many ties). ``ratio`` is our time divided by
moocore's on the same points in the same run (below 1: we are faster). Every timing is
checked for the same answer as moocore first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np

from benchmarks import median_seconds, result
from nasfilter.pareto import (
    Normalization,
    compare_fronts,
    hypervolume_2d,
    nondominated_mask,
    nondominated_ranks,
)

N_POINTS = 32768
GOALS_MS = {"nondominated_mask": 10.0, "nondominated_ranks": 50.0, "hypervolume_2d": 10.0}


def _point_sets(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    size = rng.uniform(0, 1, N_POINTS)
    table_like = np.column_stack(
        [
            np.round(80 + 14 * size + rng.normal(0, 1.5, N_POINTS), 2),
            np.round(2e5 * np.exp(-3 * size + rng.normal(0, 0.3, N_POINTS))),
        ]
    )
    return {"uniform": rng.uniform(0, 1, (N_POINTS, 2)), "table-like": table_like}


def run() -> Iterator[dict[str, Any]]:
    import moocore

    for label, pts in _point_sets().items():
        ref = pts.min(axis=0) - 0.01 * np.ptp(pts, axis=0)
        cases: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
            "nondominated_mask": (
                partial(nondominated_mask, pts),
                partial(moocore.is_nondominated, pts, maximise=True, keep_weakly=True),
            ),
            "nondominated_ranks": (
                partial(nondominated_ranks, pts),
                partial(moocore.pareto_rank, pts, maximise=True),
            ),
            "hypervolume_2d": (
                partial(hypervolume_2d, pts, ref),
                partial(moocore.hypervolume, pts, ref=ref, maximise=True),
            ),
        }
        n_layers = int(nondominated_ranks(pts).max()) + 1
        for name, (ours, theirs) in cases.items():
            same = np.allclose(np.asarray(ours()), np.asarray(theirs()), rtol=1e-12, atol=0)
            ours_s = median_seconds(ours, repeat=11)
            theirs_s = median_seconds(theirs, repeat=11)
            goal = GOALS_MS[name]
            yield result(
                f"pareto.{name}[{label}, n={N_POINTS}]",
                ours_s * 1e3,
                "ms",
                goal=f"< {goal:g} ms and same answer as moocore; ratio = ours / moocore time",
                passed=same and ours_s * 1e3 < goal,
                ratio=ours_s / theirs_s,
                moocore_ms=theirs_s * 1e3,
                same_as_moocore=same,
                n_layers=n_layers,
            )

        norm = Normalization.from_points(pts)
        true = pts[nondominated_mask(pts)]
        run_points = pts[np.random.default_rng(1).choice(N_POINTS, 200, replace=False)]
        seconds = median_seconds(partial(compare_fronts, run_points, true, norm), repeat=7)
        yield result(
            f"pareto.compare_fronts[{label}, run=200, true={len(true)}]",
            seconds * 1e3,
            "ms",
            goal="< 5 ms",
            passed=seconds * 1e3 < 5.0,
        )
