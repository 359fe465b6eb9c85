"""Every result, computed from a run's events: metrics, curves, mean ± standard error.

The data flow runs one way: runner (a :class:`~nasfilter.runs.records.RunRecord` of events) ->
storage (stores the events) -> results (this module). Here a record becomes a
:class:`~nasfilter.runs.records.ScoredRun`:

- its summary (:func:`nasfilter.runs.run_summary.run_summary`): counts, simulated seconds on either
  clock, the selected architecture;
- its final metrics and their curves over simulated wall-clock time (:func:`score_events`);
- means and standard errors over seeds (:func:`nasfilter.runs.meanse.mean_se`, the one
  statistics function, and :func:`group_rows`).

``run``, ``compare``, ``demo``, ``reproduce``, the plots and the report all read through
here, so a metric is defined once. This module owns the scores cache: it computes the
scores (:func:`score_record`), hands them to a storage with the run (:func:`store_run`, one
transaction) and reads them back under :data:`METRICS_VERSION` (:func:`load_results`);
a storage only keeps what it is given. After a metric changes, bump the version and
recompute from the stored events (:func:`load_results` with ``recompute=True``,
``nasfilter compare --recompute``).

Time: an evaluation counts from the wall-clock second it completes (its ``end``). The
selected architecture at time t is the searcher's latest recommendation made by t (a
``recommend`` event); before any, the evaluated architecture with the highest validation
accuracy completed by t (the first on ties), the NATS-Bench convention.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from nasfilter.bench.table import BenchmarkTable
from nasfilter.registry import parse_spec
from nasfilter.runs.inputs import RunInputs, inputs
from nasfilter.runs.meanse import MeanSE, format_mean_se, mean_se
from nasfilter.runs.metrics import METRICS, FrontReference, front_steps, score
from nasfilter.runs.records import DEFAULT_TICKS, RunRecord, RunSpec, ScoredRun, StoredScores
from nasfilter.runs.run_summary import (
    SUMMARY_FIELDS,
    completed_evaluations,
    recommendations,
    run_summary,
    selected_after_each,
)
from nasfilter.runs.storage.base import Storage

METRICS_VERSION = 2  # bump when a metric or a summary field changes meaning


# ------------------------------------------------------------------ one run
def tick_times(budget: float, n_ticks: int = DEFAULT_TICKS) -> np.ndarray:
    """``n_ticks`` simulated times (s) evenly spaced in (0, budget], shape (n_ticks,)."""
    if isinstance(n_ticks, bool) or not isinstance(n_ticks, int) or n_ticks < 1:
        raise ValueError(f"n_ticks must be an integer >= 1, got {n_ticks!r}")
    if not (math.isfinite(budget) and budget > 0):
        raise ValueError(f"budget must be finite seconds > 0, got {budget!r}")
    steps = np.arange(1, n_ticks + 1)
    if budget > sys.float_info.max / n_ticks:  # budget * n_ticks would overflow to inf
        return budget * (steps / n_ticks)
    return budget * steps / n_ticks


def score_events(
    reference: FrontReference,
    table: BenchmarkTable,
    events: dict[str, np.ndarray],
    times: np.ndarray,
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """The final metrics of a run and every metric after each of ``times`` (T,) simulated
    wall-clock seconds.

    Returns ``(metrics, curves)``: ``metrics`` as :class:`~nasfilter.runs.metrics.RunMetrics`
    fields; ``curves`` = ``{"clock": times, "n_evaluations": (T,), metric: (T,) for metric
    in METRICS}``, each nondecreasing in time except ``selected_acc`` (a searcher may
    change its recommendation). Before the first evaluation hv_ratio and recall are 0,
    igd_plus and epsilon inf, the accuracies NaN.
    """
    idx, acc, end = completed_evaluations(events)
    rec_idx, rec_end = recommendations(events)
    selected = int(rec_idx[-1]) if len(rec_idx) else None
    metrics = score(reference, idx, acc, table, selected=selected).as_dict()
    return metrics, _curves(reference, table, idx, acc, end, rec_idx, rec_end, times)


def _curves(
    reference: FrontReference,
    table: BenchmarkTable,
    idx: np.ndarray,
    acc: np.ndarray,
    end: np.ndarray,
    rec_idx: np.ndarray,
    rec_end: np.ndarray,
    times: np.ndarray,
) -> dict[str, np.ndarray]:
    times = np.asarray(times, dtype=np.float64)
    if times.ndim != 1 or np.any(np.diff(times) < 0):
        raise ValueError("times must be a nondecreasing 1-D array of simulated seconds")
    counts = np.searchsorted(end, times, side="right")
    n = len(idx)
    out: dict[str, np.ndarray] = {"clock": times, "n_evaluations": counts.astype(np.int64)}
    test = table.test_acc[idx]
    best_test = np.concatenate([[math.nan], np.fmax.accumulate(test) if n else []])
    by_rule = np.concatenate([[math.nan], table.test_acc[idx[selected_after_each(idx, acc)]]])
    selected = by_rule[counts]
    if len(rec_idx):
        k = np.searchsorted(rec_end, times, side="right") - 1
        selected = np.where(k >= 0, table.test_acc[rec_idx[np.maximum(k, 0)]], selected)
    first = np.zeros(n, dtype=bool)
    first[np.unique(idx, return_index=True)[1]] = True
    found = np.concatenate([[0], np.cumsum(first & np.isin(idx, reference.true_front))])
    out["best_acc"] = best_test[counts]
    out["selected_acc"] = selected
    out["recall"] = found[counts] / len(reference.true_front)
    # Front indicators: computed once per front met at a tick (the fronts change at the
    # evaluations front_steps finds).
    for name in ("hv_ratio", "igd_plus", "epsilon"):
        out[name] = np.empty(len(times))
    steps, fronts = front_steps(reference, idx)
    at_tick = np.searchsorted(np.asarray(steps, dtype=np.int64), counts, side="right") - 1
    last, values = -1, reference.indicators(np.zeros(0, dtype=np.int64))
    for i, j in enumerate(at_tick.tolist()):
        if j != last:
            values, last = reference.indicators(fronts[j]), j
        out["hv_ratio"][i], out["igd_plus"][i], out["epsilon"][i] = values
    return out


# ------------------------------------------------------------------ scoring a record
def score_spec_events(
    spec: RunSpec,
    events: dict[str, np.ndarray],
    unlogged: dict[str, float] | None = None,
    resolved: RunInputs | None = None,
) -> tuple[dict[str, Any], dict[str, float], dict[str, np.ndarray]]:
    """(summary, metrics, curves) of a run of ``spec`` from its events (and what its trace
    left out, see :func:`~nasfilter.runs.run_summary.run_summary`), against ``resolved``,
    the spec's inputs the run ran on (None: :func:`~nasfilter.runs.inputs.inputs` of the
    spec, loaded once per process)."""
    table, _, reference = inputs(spec) if resolved is None else resolved
    times = tick_times(spec.budget.horizon, spec.n_ticks)
    metrics, curves = score_events(reference, table, events, times)
    return run_summary(events, unlogged), metrics, curves


def score_record(record: RunRecord, resolved: RunInputs | None = None) -> ScoredRun:
    """``record`` scored from its events, under :data:`METRICS_VERSION`, against
    ``resolved`` (its spec's inputs, as it ran on them; None: resolved now)."""
    if record.spec is None:
        raise ValueError("only a record of a RunSpec can be scored (run_one, run_experiment)")
    summary, metrics, curves = score_spec_events(
        record.spec, record.require_events(), record.info.get("unlogged"), resolved
    )
    return ScoredRun(record, METRICS_VERSION, summary, metrics, curves)


def store_run(storage: Storage, run: ScoredRun) -> int | None:
    """Write ``run`` to ``storage`` with its scores as the cache, in one transaction;
    its id, or None when that (spec, seed) is stored already."""
    return storage.add_run(run)


class StaleMetricsError(ValueError):
    """Stored scores were computed by another metrics version; recompute them."""


class UntrustedPluginError(ValueError):
    """Scoring a stored run would import plugin code named inside the storage."""


def oracle_plugin(spec: RunSpec) -> str | None:
    """The plugin path (``module:Class``, ``file.py:Class``) of ``spec``'s oracle backend,
    or None for a built-in one. Built-in names never hold ``:``."""
    name, _ = parse_spec(spec.oracle)
    return name if ":" in name else None


def _refuse_plugin(run: RunRecord, storage: Storage) -> None:
    assert run.spec is not None
    plugin = oracle_plugin(run.spec)
    if plugin is not None:
        raise UntrustedPluginError(
            f"run {run.run_id} of {storage.describe()} has no cached scores, and computing "
            f"them would import and run the oracle plugin {plugin!r} that the database names. "
            "nasfilter never runs code named by a file it reads; if you trust this database "
            "and that plugin, pass --trust-plugins (trust_plugins=True)"
        )


def _usable_cache(storage: Storage, run: RunRecord, recompute: bool) -> StoredScores | None:
    """The cached scores of ``run`` to use, or None to compute them; StaleMetricsError for
    a cache of another version that could be rewritten."""
    assert run.run_id is not None
    cached = None if recompute else storage.scores(run.run_id)
    if cached is None or cached.version == METRICS_VERSION:
        return cached
    if storage.readonly:
        return None  # cannot be rewritten: score in memory
    raise StaleMetricsError(
        f"run {run.run_id} of {storage.describe()} holds metrics of version "
        f"{cached.version}; this nasfilter computes version {METRICS_VERSION}. "
        "Recompute them from the stored events: nasfilter compare --db PATH --recompute"
    )


def _load_one(
    storage: Storage, run: RunRecord, recompute: bool, with_events: bool, trust_plugins: bool
) -> ScoredRun:
    run_id = run.run_id
    assert run_id is not None
    cached = _usable_cache(storage, run, recompute)
    if cached is None or with_events:
        run = dataclasses.replace(run, events=storage.events(run_id))
    if cached is not None:
        c = cached
        return ScoredRun(run, c.version, c.summary, c.metrics, c.curves, computed=False)
    if not trust_plugins:
        _refuse_plugin(run, storage)
    scored = score_record(run)
    if not storage.readonly:
        s = scored
        storage.put_scores(run_id, s.version, s.summary, s.metrics, s.curves)
    if not with_events:  # the scores computed, the events are not kept
        scored.record = dataclasses.replace(run, events={})
    return scored


def load_results(
    storage: Storage,
    *,
    recompute: bool = False,
    select: Iterable[tuple[str, int]] | None = None,
    with_events: bool = False,
    trust_plugins: bool = False,
) -> list[ScoredRun]:
    """Every stored run (or those whose (spec key, seed) is in ``select``), scored.

    Scores cached in ``storage`` under :data:`METRICS_VERSION` are used as they are; with
    ``recompute`` every run's scores are computed afresh from its events and the cache is
    rewritten. A cached score of another version raises :class:`StaleMetricsError` naming
    the versions (and ``nasfilter compare --recompute``) unless ``recompute``. A
    :attr:`~nasfilter.runs.storage.base.Storage.readonly` storage is never written: missing or
    stale scores are computed in memory.

    Scoring needs the run's oracle; where that is a plugin named inside the storage, it is
    imported only with ``trust_plugins`` (else :class:`UntrustedPluginError`, naming it):
    reading results never runs code that the file being read names.
    """
    wanted = None if select is None else set(select)
    out = []
    for run in storage.stored_runs():
        assert run.spec is not None
        if wanted is None or (run.spec.key(), run.seed) in wanted:
            out.append(_load_one(storage, run, recompute, with_events, trust_plugins))
    return out


# ------------------------------------------------------------------ over seeds
# Every setting that changes a result: a table and an oracle count by their content.
GROUP_FIELDS = (
    "searcher",
    "filter",
    "dataset",
    "budget",
    "budget_clock",
    "workers",
    "proxy_cost",
    "max_idle",
    "n_ticks",
    "oracle",
    "device",
    "table_id",
    "oracle_id",
    "table_label",
    "oracle_label",
)


def group_rows(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], by: Sequence[str] = GROUP_FIELDS
) -> list[dict[str, Any]]:
    """One dict per distinct ``by`` tuple, in first-seen order: the group's fields,
    ``n_seeds``, ``statuses``, ``n_empty`` (runs that evaluated nothing,
    :func:`evaluated_nothing`) and a :class:`MeanSE` per column of ``columns``.

    A seed counts once per group: a second run of it (the same inputs read from another
    path) is left out, and counted in ``n_repeated``."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    repeated: dict[tuple[Any, ...], int] = {}
    for row in rows:
        key = tuple(row.get(k) for k in by)  # a field a row lacks groups as None
        members = groups.setdefault(key, [])
        if "seed" in row and any(m.get("seed") == row["seed"] for m in members):
            repeated[key] = repeated.get(key, 0) + 1
            continue
        members.append(row)
    out = []
    for key, members in groups.items():
        entry: dict[str, Any] = dict(zip(by, key, strict=True))
        entry["n_seeds"] = len(members)
        entry["n_repeated"] = repeated.get(key, 0)
        entry["statuses"] = sorted({m["status"] for m in members})
        entry["n_empty"] = sum(1 for m in members if evaluated_nothing(m))
        for col in columns:
            entry[col] = mean_se([m.get(col) for m in members])
        out.append(entry)
    return out


REACH_LEVEL = 0.99  # the hypervolume ratio whose first crossing the report marks


def first_reaching(times: Any, curve: Any, level: float = REACH_LEVEL) -> float | None:
    """The first of ``times`` (T,) simulated seconds at which ``curve`` (T,) is >= ``level``,
    or None when it never is (NaN never counts)."""
    t = np.asarray(times, dtype=np.float64)
    c = np.asarray(curve, dtype=np.float64)
    if t.shape != c.shape or t.ndim != 1:
        raise ValueError(f"times and curve must be 1-D of one length, got {t.shape} and {c.shape}")
    hit = np.flatnonzero(c >= level)
    return float(t[hit[0]]) if len(hit) else None


def reach_text(reached: float | None, level: float = REACH_LEVEL) -> str:
    """``"reaches 0.99 at 12,300 s"`` or ``"never reaches 0.99"``."""
    if reached is None:
        return f"never reaches {level:g}"
    return f"reaches {level:g} at {reached:,.0f} s"


# ------------------------------------------------------------------ empty runs
NOTHING_EVALUATED = "NOTHING EVALUATED"  # shown instead of the metrics of an empty method


def evaluated_nothing(summary: dict[str, Any]) -> bool:
    """True when a run (its :func:`run_summary`, or a
    :meth:`~nasfilter.runs.records.ScoredRun.row`) completed no evaluation: its metrics are then
    no result (hv_ratio 0, accuracies NaN)."""
    return not summary.get("n_evaluations")


def empty_run_warning(label: str, n_empty: int, n_runs: int, budget: float) -> str:
    """The one wording of the warning for a method with runs that evaluated nothing."""
    return (
        f"warning: {label} evaluated nothing in {n_empty} of {n_runs} run(s) at {budget:g} s: "
        "the budget went to proxy queries, so its metrics there are not a result (see "
        "docs/searchers.md, smallest budgets)"
    )


def curve_band(results: Sequence[ScoredRun], metric: str = "hv_ratio") -> MeanSE:
    """Mean and standard error over runs of one metric's curve, arrays of shape (T,)."""
    if not results:
        raise ValueError("curve_band needs at least one run")
    return mean_se(np.stack([np.asarray(r.curves[metric], dtype=np.float64) for r in results]))


__all__ = [
    "DEFAULT_TICKS",
    "METRICS",
    "METRICS_VERSION",
    "NOTHING_EVALUATED",
    "REACH_LEVEL",
    "SUMMARY_FIELDS",
    "MeanSE",
    "ScoredRun",
    "StaleMetricsError",
    "UntrustedPluginError",
    "completed_evaluations",
    "curve_band",
    "empty_run_warning",
    "evaluated_nothing",
    "first_reaching",
    "format_mean_se",
    "group_rows",
    "load_results",
    "mean_se",
    "oracle_plugin",
    "reach_text",
    "recommendations",
    "run_summary",
    "score_events",
    "score_record",
    "store_run",
    "tick_times",
]
