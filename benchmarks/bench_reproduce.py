"""`nasfilter reproduce` with the defaults: goal under 60 s on 2 cores, end to end.

Defaults: the real table (modelled times), the calibrated V100 oracle, nine seeds, 110000 simulated
seconds, every built-in searcher and filter at K = 1, 4 and 16 simulated workers, the peers
(model-based with and without utilization features; Optuna NSGA-II and random when Optuna
is installed) at K = 1, all figures, summary.json and report.html.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import result

GOAL_SECONDS = 60.0


def run() -> Iterator[dict[str, Any]]:
    from nasfilter.reproduce import METHODS, PEER_METHODS, reproduce

    with tempfile.TemporaryDirectory(prefix="bench-reproduce-") as tmp:
        start = time.perf_counter()
        summary = reproduce(Path(tmp) / "out", quiet=True)
        wall = time.perf_counter() - start
    phases = summary["timings_seconds"]
    yield result(
        f"reproduce: defaults end to end (9 seeds x {len(METHODS) - len(PEER_METHODS)} methods "
        f"x K=1,4,16 + {len(PEER_METHODS)} peers at K=1, 110000 s, figures, report)",
        wall,
        "s",
        f"< {GOAL_SECONDS:g} s on 2 cores",
        wall < GOAL_SECONDS,
        runs=len(summary["runs"]) * len(summary["parameters"]["workers"]),
        runs_seconds=round(phases["runs"], 3),
        figures_seconds=round(phases["figures"], 3),
        inputs_seconds=round(phases["inputs"], 3),
    )
