"""``nasfilter compare`` on a database without cached scores (as ``migrate-db`` leaves one):
the second call against the first.

The first call computes every run's metrics from its events (what every call did before
compare kept the scores it computes in a writable database); the second reads them from the
database's cache. Reference: the first call, on the same database in the same process.
"""

from __future__ import annotations

import contextlib
import io
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import result
from nasfilter.cli import main
from nasfilter.runs.experiment import RunSpec, run_experiment
from nasfilter.runs.storage.sqlite_store import Store

N_RUNS = 200  # seeds of one random-search spec
RATIO_GOAL = 5.0


def _compare(db: Path) -> float:
    """Wall seconds of one ``nasfilter compare --db db --json`` (its output discarded)."""
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["compare", "--db", str(db), "--json"])
    assert code == 0
    return time.perf_counter() - start


def run() -> Iterator[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "migrated.db"
        spec = RunSpec("random", budget=3000.0)
        with Store(db) as store:
            run_experiment([spec], range(N_RUNS), store=store, jobs=1)
        con = sqlite3.connect(db)
        con.execute("DELETE FROM scores")  # as after migrate-db
        con.commit()
        con.close()
        first = _compare(db)
        second = _compare(db)
    ratio = first / second
    yield result(
        "compare: second call vs first on a database without cached scores",
        second,
        "s",
        f"ratio >= {RATIO_GOAL:g} (first call / second)",
        ratio >= RATIO_GOAL,
        ratio=ratio,
        first_seconds=first,
        runs=N_RUNS,
    )
