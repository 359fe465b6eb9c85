"""Golden traces: every built-in searcher x filter, at K = 1 and K = 4 simulated workers.

The guard for refactors: a run is a pure function of its spec, seed and K, so the trace of
each combination on the embedded synthetic table is pinned by a SHA-256 of a canonical byte
serialisation of its events (tests/data/golden_traces.json): integers and kinds exactly,
floats to FLOAT_DIGITS significant digits, so that the same code gives the same hashes on
CPUs whose numpy computes exp and log to other last bits. A refactor that changes no
behaviour keeps every hash; one that changes a trace names the combination and the part of
the trace (evaluations, proxy queries, the other events, the stop status) that moved.

The runs are short (at most MAX_EVALUATIONS accuracy evaluations, MAX_IDLE idle proposals,
a proxy query of PROXY_COST s): the grid takes about 15 CPU seconds, except the combinations
where every proposal costs a model fit or an Optuna trial and most are dropped, which take
several seconds each and are marked slow.

After an intended change of behaviour, regenerate the file and say why in the commit:
``PYTHONPATH=. python -m tests.sim.test_golden_traces``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.surrogate import embedded_table
from nasfilter.bench.table import BenchmarkTable
from nasfilter.filters import FILTERS, make_filter
from nasfilter.oracle import proxy_table
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import SEARCHERS, make_searcher
from nasfilter.sim.problem import DROP, EVALUATE, PROXY, Budget

GOLDEN = Path(__file__).parent.parent / "data" / "golden_traces.json"
SEED = 7
BUDGET_SECONDS = 8000.0  # worker-seconds
MAX_EVALUATIONS = 40
PROXY_COST = 0.1  # simulated seconds a proxy query (a full scan: 3277 s)
MAX_IDLE = 200
WORKERS = (1, 4)

# Each column with the dtype it is hashed as; "kind" is hashed as its name. The labels are
# those the hashes were recorded with: "value" is the accuracy of evaluate and recommend
# events and the utilization of proxy events, "clock" the worker-seconds column (see
# _column), and the "throughput" of a partial evaluation is its fidelity as hp * 1000 +
# epochs (how it was recorded before it had its own columns), so that the recorded hashes
# outlive the renaming of the event columns.
COLUMNS = {
    "trial": np.int64,
    "index": np.int64,
    "value": np.float64,
    "throughput": np.float64,
    "seed": np.int64,
    "cost": np.float64,
    "clock": np.float64,
    "start": np.float64,
    "end": np.float64,
    "worker": np.int64,
}
PARTS = ("evaluations", "proxy", "other", "status")
# Floats are hashed as text with this many significant digits (see _digest): a value that
# differs in its last bits (about 1e-16 relative) between two CPUs crosses a rounding
# boundary of 9 digits with a chance of about 1e-7, while any change of behaviour moves a
# value by far more than 1e-9 relative.
FLOAT_DIGITS = 9
FLOAT_FORMAT = f"%.{FLOAT_DIGITS - 1}e"
# Every proposal refits a model or runs an Optuna trial, and successive-frontiers drops most.
SLOW_SEARCHERS = (
    "model-based", "model-based-hw", "model-based-mf", "optuna-nsga2", "optuna-tpe",
    "optuna-random",
    "optuna-tpe-hyperband",
)
SLOW_FILTERS = ("successive-frontiers",)
# Combinations without a golden trace, each with why. successive-frontiers passes each
# architecture once, so every promotion of TPE + Hyperband is dropped and Optuna prunes
# thousands of trials; its multivariate TPE sampler's cost grows with the square of them
# (minutes a run). To trace again once the adapter caps that cost.
UNTRACED = {
    ("optuna-tpe-hyperband", "successive-frontiers"): "thousands of pruned TPE trials",
}

# Filters without sss traces, each with why (their runs are pinned in their own tests).
UNTRACED_FILTERS = {
    "zerocost-frontiers": "the traced sss tables have no zero-cost scores "
    "(tests/filters/test_zerocost_filter.py runs it on tss and on a hand-made sss file)",
}


def _combos() -> list[tuple[str, str, int]]:
    return [
        (s, f, k)
        for s in sorted(SEARCHERS.names())
        for f in sorted(FILTERS.names())
        for k in WORKERS
        if (s, f) not in UNTRACED and f not in UNTRACED_FILTERS
    ]


def combo_key(searcher: str, filt: str, workers: int) -> str:
    return f"{searcher} | {filt} | K={workers}"


def _column(events: dict[str, np.ndarray], label: str) -> np.ndarray:
    """The event column hashed under ``label`` (see COLUMNS)."""
    if label == "value":
        proxy = np.asarray(events["kind"]).astype(str) == PROXY
        return np.where(proxy, events["utilization"], events["accuracy"])
    if label == "throughput":
        partial = np.asarray(events["kind"]).astype(str) == "partial"
        code = (events["hp"] * 1000 + events["epochs"]).astype(np.float64)
        return np.where(partial, code, events["throughput"])
    return events["worker_seconds" if label == "clock" else label]


def _digest(events: dict[str, np.ndarray], mask: np.ndarray) -> str:
    h = hashlib.sha256()
    h.update("\n".join(str(k) for k in events["kind"][mask]).encode())
    for name, dtype in COLUMNS.items():
        h.update(name.encode())
        column = np.ascontiguousarray(_column(events, name)[mask], dtype=dtype)
        if dtype is np.float64:  # as text, to FLOAT_DIGITS significant digits (see there)
            h.update("\n".join(np.char.mod(FLOAT_FORMAT, column).tolist()).encode())
        else:
            h.update(column.tobytes())
    return h.hexdigest()


def trace_hashes(events: dict[str, np.ndarray], status: str) -> dict[str, str]:
    """SHA-256 of each part of a trace: evaluations, proxy queries, other events, status."""
    kind = np.asarray(events["kind"]).astype(str)
    evaluations, proxy = kind == EVALUATE, kind == PROXY
    return {
        "evaluations": _digest(events, evaluations),
        "proxy": _digest(events, proxy),
        "other": _digest(events, ~(evaluations | proxy)),
        "status": hashlib.sha256(status.encode()).hexdigest(),
    }


def run_combo(
    searcher: str, filt: str, workers: int, table: BenchmarkTable, proxy: ProxyTable
) -> tuple[dict[str, str], dict[str, object]]:
    """(part hashes, a short readable summary) of one combination's run."""
    problem = make_problem(
        table,
        Budget(BUDGET_SECONDS, max_evaluations=MAX_EVALUATIONS),
        SEED,
        proxy=proxy,
        proxy_cost=PROXY_COST,
    )
    result = run_search(
        make_searcher(searcher),
        problem,
        filter=make_filter(filt),
        workers=workers,
        max_idle=MAX_IDLE,
    )
    kind = np.asarray(result.events["kind"]).astype(str)
    summary = {
        "status": result.status,
        "evaluations": int(np.count_nonzero(kind == EVALUATE)),
        "proxy": int(np.count_nonzero(kind == PROXY)),
        "drops": int(np.count_nonzero(kind == DROP)),
        "clock": float(result.clock),
    }
    return trace_hashes(result.events, result.status), summary


@pytest.fixture(scope="module")
def inputs() -> tuple[BenchmarkTable, ProxyTable]:
    # The synthetic table explicitly (load_table(None) may become a real-accuracy table),
    # and the analytic roofline proxy, which reads no cache.
    return embedded_table("cifar10"), proxy_table("roofline", "v100", "cifar10")


@pytest.fixture(scope="module")
def golden() -> dict[str, dict[str, object]]:
    data: dict[str, dict[str, object]] = json.loads(GOLDEN.read_text())["traces"]
    return data


def _param(searcher: str, filt: str, workers: int) -> object:
    marks = []
    if searcher in SLOW_SEARCHERS and filt in SLOW_FILTERS:
        marks.append(pytest.mark.slow)
    return pytest.param(searcher, filt, workers, marks=marks, id=f"{searcher}-{filt}-K{workers}")


def test_every_registered_combination_has_a_golden_trace(
    golden: dict[str, dict[str, object]],
) -> None:
    expected = {combo_key(*c) for c in _combos()}
    missing, stale = sorted(expected - set(golden)), sorted(set(golden) - expected)
    assert not missing, f"no golden trace for {missing}: regenerate {GOLDEN.name}"
    assert not stale, f"golden traces of unregistered combinations {stale}"


def test_golden_traces_are_distinct_where_the_runs_differ(
    golden: dict[str, dict[str, object]],
) -> None:
    # A serialisation that lost its content would hash every run alike.
    evaluations = {g["hashes"]["evaluations"] for g in golden.values()}  # type: ignore[index]
    assert len(evaluations) > len(golden) // 4


@pytest.mark.parametrize(("searcher", "filt", "workers"), [_param(*c) for c in _combos()])
def test_trace_is_unchanged(
    searcher: str,
    filt: str,
    workers: int,
    inputs: tuple[BenchmarkTable, ProxyTable],
    golden: dict[str, dict[str, object]],
) -> None:
    if searcher.startswith("optuna-") and importlib.util.find_spec("optuna") is None:
        pytest.skip("optuna is not installed (pip install nasfilter[optuna])")
    key = combo_key(searcher, filt, workers)
    hashes, summary = run_combo(searcher, filt, workers, *inputs)
    want = golden[key]
    changed = [p for p in PARTS if hashes[p] != want["hashes"][p]]  # type: ignore[index]
    assert not changed, (
        f"the trace of {key} changed in {', '.join(changed)}: now {summary}, "
        f"recorded {want['summary']}. If the change of behaviour is intended, regenerate "
        f"{GOLDEN} (python -m tests.sim.test_golden_traces) and say why in the commit"
    )


def regenerate() -> None:
    """Rewrite tests/data/golden_traces.json from the current code."""
    table, proxy = embedded_table("cifar10"), proxy_table("roofline", "v100", "cifar10")
    traces = {}
    for combo in _combos():
        hashes, summary = run_combo(*combo, table, proxy)
        traces[combo_key(*combo)] = {"hashes": hashes, "summary": summary}
        print(combo_key(*combo), summary, file=sys.stderr)
    settings = {
        "table": "embedded_table('cifar10')",
        "proxy": "roofline, v100",
        "seed": SEED,
        "budget_seconds": BUDGET_SECONDS,
        "max_evaluations": MAX_EVALUATIONS,
        "proxy_cost": PROXY_COST,
        "max_idle": MAX_IDLE,
    }
    GOLDEN.write_text(json.dumps({"settings": settings, "traces": traces}, indent=1) + "\n")


if __name__ == "__main__":
    regenerate()
