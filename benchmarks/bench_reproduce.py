"""`nasfilter reproduce --out DIR` with the defaults: goal under 60 s on 2 cores, end to end.

Defaults: the real table (modelled times), the calibrated V100 oracle, nine seeds, 110000 simulated
seconds, every built-in searcher and filter at K = 1, 4 and 16 simulated workers, the peers
(model-based with and without utilization features; Optuna NSGA-II and random when Optuna
is installed) at K = 1, all figures, summary.json and report.html, and the command's default
``--jobs`` (the CPUs it may use). Run as the command a user types, in a fresh process
(``benchmarks.nasfilter_command``, as for ``nasfilter demo``), so its imports and worker
processes count too; the phases come from the ``summary.json`` it writes. Beside the wall
clock: the CPU seconds of the command and its worker processes, which a shared machine
changes less.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import nasfilter_command, result

GOAL_SECONDS = 60.0


def run() -> Iterator[dict[str, Any]]:
    from nasfilter.study.reproduce import METHODS, PEER_METHODS

    with tempfile.TemporaryDirectory(prefix="bench-reproduce-") as tmp:
        out = Path(tmp) / "out"
        done, wall, cpu = nasfilter_command("reproduce", "--out", str(out), "--quiet")
        summary_file = out / "summary.json"
        summary = json.loads(summary_file.read_text()) if summary_file.is_file() else None
    ok = done.returncode == 0 and summary is not None
    phases = summary["timings_seconds"] if summary else {}
    yield result(
        f"reproduce: defaults end to end (9 seeds x {len(METHODS) - len(PEER_METHODS)} methods "
        f"x K=1,4,16 + {len(PEER_METHODS)} peers at K=1, 110000 s, figures, report)",
        wall,
        "s",
        f"< {GOAL_SECONDS:g} s on 2 cores",
        ok and wall < GOAL_SECONDS,
        exit_code=done.returncode,
        stderr_tail=done.stderr[-400:] if not ok else "",
        cpu_seconds=round(cpu, 3),
        runs=len(summary["runs"]) * len(summary["parameters"]["workers"]) if summary else 0,
        runs_seconds=round(phases.get("runs", float("nan")), 3),
        figures_seconds=round(phases.get("figures", float("nan")), 3),
        inputs_seconds=round(phases.get("inputs", float("nan")), 3),
    )
