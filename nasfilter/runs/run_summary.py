"""A run's summary numbers, computed from its events: the one place they are computed.

Counts, simulated seconds on either clock and the selected architecture
(:data:`SUMMARY_FIELDS`). The runner's record (:class:`~nasfilter.runs.records.RunRecord`)
exposes them as properties, and :mod:`nasfilter.runs.results` stores and reports them; neither
counts anything itself.

Time: an evaluation counts from the wall-clock second it completes (its ``end``). The
selected architecture is the searcher's latest recommendation (a ``recommend`` event);
before any, the evaluated architecture with the highest validation accuracy (the first on
ties), the NATS-Bench convention.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nasfilter.sim.problem import (
    ASK,
    DROP,
    EVALUATE,
    PARTIAL,
    PROXY,
    RECOMMEND,
    UNLOGGED_FIELDS,
    ZEROCOST,
)

_TRIAL_KINDS = (ASK, DROP, EVALUATE, PARTIAL)  # each trial appears in exactly one of these

# Fields of run_summary, all computed from events.
SUMMARY_FIELDS = (
    "clock",  # simulated wall-clock seconds when the run ended
    "worker_seconds",  # simulated seconds charged, all workers together
    "evaluation_seconds",
    "proxy_seconds",  # hardware proxy queries (utilization, throughput)
    "n_evaluations",
    "n_proxy",
    "n_asked",
    "n_dropped",
    "best_index",  # the selected architecture (see the module docstring), -1 if none
    "best_valid_acc",  # the highest validation accuracy seen for it (percent)
    "recommended",  # True when best_index is the searcher's recommendation
    "zerocost_seconds",  # zero-cost proxy queries (0 in a run stored before they were logged)
    "n_zerocost",
)


def completed_evaluations(
    events: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indices, validation accuracies, completion wall-clock seconds) of a run's
    evaluations in completion order (ties: start order), each (k,)."""
    is_eval = events["kind"] == EVALUATE
    end = events["end"][is_eval]
    order = np.argsort(end, kind="stable")
    return events["index"][is_eval][order], events["accuracy"][is_eval][order], end[order]


def recommendations(events: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(indices, wall-clock seconds) of the searcher's recommendations, in order, (r,)."""
    is_rec = events["kind"] == RECOMMEND
    return events["index"][is_rec], events["end"][is_rec]


def selected_after_each(idx: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Position of the running highest validation accuracy (first on ties), (k,)."""
    n = len(idx)
    if not n:
        return np.zeros(0, dtype=np.int64)
    running = np.maximum.accumulate(acc)
    new_best = np.ones(n, dtype=bool)
    new_best[1:] = acc[1:] > running[:-1]
    return np.maximum.accumulate(np.where(new_best, np.arange(n), 0))


def _selected(events: dict[str, np.ndarray]) -> tuple[int, float, bool]:
    """(selected index or -1, its highest validation accuracy, recommended?)."""
    idx, acc, _ = completed_evaluations(events)
    rec_idx, _ = recommendations(events)
    if len(rec_idx):
        best = int(rec_idx[-1])
        return best, float(acc[idx == best].max()), True
    if len(idx):
        pos = int(np.argmax(acc))
        return int(idx[pos]), float(acc[pos]), False
    return -1, math.nan, False


def run_summary(
    events: dict[str, np.ndarray], unlogged: dict[str, float] | None = None
) -> dict[str, Any]:
    """The run's counts, seconds and selected architecture (:data:`SUMMARY_FIELDS`).

    ``unlogged``: what the trace left out past ``Problem.trace_limit``
    (:attr:`~nasfilter.sim.problem.Problem.unlogged`), added to the counts and seconds."""
    kind = events["kind"]
    is_eval, is_proxy = kind == EVALUATE, kind == PROXY
    best, best_acc, recommended = _selected(events)
    has = len(kind) > 0
    u = dict.fromkeys(UNLOGGED_FIELDS, 0.0) if unlogged is None else unlogged
    evaluation_seconds = float(events["cost"][is_eval].sum()) + u["evaluation_seconds"]
    proxy_seconds = float(events["cost"][is_proxy].sum()) + u["proxy_seconds"]
    is_zc = kind == ZEROCOST
    zerocost_seconds = float(events["cost"][is_zc].sum())
    worker_seconds = float(events["worker_seconds"][-1]) if has else 0.0
    if unlogged is not None:  # the last charge may be one the trace left out
        worker_seconds = max(worker_seconds, evaluation_seconds + proxy_seconds + zerocost_seconds)
    n_dropped = int(np.count_nonzero(kind == DROP)) + int(u["drop"])
    return {
        "clock": max(float(events["end"].max()) if has else 0.0, u["end"]),
        "worker_seconds": worker_seconds,
        "evaluation_seconds": evaluation_seconds,
        "proxy_seconds": proxy_seconds,
        "n_evaluations": int(is_eval.sum()) + int(u["evaluate"]),
        "n_proxy": int(is_proxy.sum()) + int(u["proxy"]),
        "n_asked": int(np.count_nonzero((events["trial"] >= 0) & np.isin(kind, _TRIAL_KINDS)))
        + int(u["evaluate"] + u["drop"]),
        "n_dropped": n_dropped,
        "best_index": best,
        "best_valid_acc": best_acc,
        "recommended": recommended,
        "zerocost_seconds": zerocost_seconds,
        "n_zerocost": int(is_zc.sum()),
    }


UNNAMED_PROXY = "(proxy not recorded)"  # zero-cost events logged before the proxy column


def zerocost_by_proxy(
    events: dict[str, np.ndarray], names: list[str] | None = None
) -> dict[str, dict[str, float]]:
    """``{proxy: {"n": queries, "seconds": simulated seconds charged}}`` of a run's
    ``zerocost`` events, in the order of ``names`` (the run's ``info["zerocost_proxies"]``:
    the ``proxy`` column's codes). Events whose code names no proxy (-1: a run stored before
    the column existed) count under :data:`UNNAMED_PROXY`; {} for a run without any."""
    is_zc = events["kind"] == ZEROCOST
    if not is_zc.any():
        return {}
    names = list(names or ())
    codes = events.get("proxy")
    codes = np.full(len(is_zc), -1) if codes is None else np.asarray(codes)
    out: dict[str, dict[str, float]] = {}
    for code in np.unique(codes[is_zc]).tolist():
        hit = is_zc & (codes == code)
        name = names[code] if 0 <= code < len(names) else UNNAMED_PROXY
        entry = out.setdefault(name, {"n": 0, "seconds": 0.0})
        entry["n"] += int(hit.sum())
        entry["seconds"] += float(events["cost"][hit].sum())
    order = {name: i for i, name in enumerate([*names, UNNAMED_PROXY])}
    return dict(sorted(out.items(), key=lambda item: order[item[0]]))
