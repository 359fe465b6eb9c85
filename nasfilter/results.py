"""Every result, computed from a run's stored events: metrics, curves, mean ± standard error.

The data flow is trace -> storage -> results. A run writes only its events (and why it
stopped) through a :class:`~nasfilter.storage.Storage`; this module turns them into

- the run's summary (:func:`run_summary`): counts, simulated seconds on either clock, the
  selected architecture;
- its final metrics and their curves over simulated wall-clock time (:func:`score_events`);
- means and standard errors over seeds (:func:`mean_se`, the one statistics function, and
  :func:`group_rows`).

``run``, ``compare``, ``demo``, ``reproduce``, the plots and the report all read through
here, so a metric is defined once. Scores are cached in the storage under
:data:`METRICS_VERSION`; after a metric changes, bump it and recompute from the stored
events (:func:`load_results` with ``recompute=True``, ``nasfilter compare --recompute``).

Time: an evaluation counts from the wall-clock second it completes (its ``end``). The
selected architecture at time t is the searcher's latest recommendation made by t (a
``recommend`` event); before any, the evaluated architecture with the highest validation
accuracy completed by t (the first on ties), the NATS-Bench convention.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nasfilter.metrics import METRICS, FrontReference, front_of, score
from nasfilter.problem import ASK, DROP, EVALUATE, PROXY, RECOMMEND, UNLOGGED_FIELDS
from nasfilter.registry import parse_spec
from nasfilter.table import BenchmarkTable

if TYPE_CHECKING:  # pragma: no cover
    from nasfilter.experiment import RunSpec
    from nasfilter.storage import Storage, StoredRun

_TRIAL_KINDS = (ASK, DROP, EVALUATE)  # each trial appears in exactly one such event
METRICS_VERSION = 2  # bump when a metric or a summary field changes meaning
DEFAULT_TICKS = 100  # points of a metric curve, evenly spaced in simulated time

# Fields of run_summary, all computed from events.
SUMMARY_FIELDS = (
    "clock",  # simulated wall-clock seconds when the run ended
    "worker_seconds",  # simulated seconds charged, all workers together
    "evaluation_seconds",
    "proxy_seconds",
    "n_evaluations",
    "n_proxy",
    "n_asked",
    "n_dropped",
    "best_index",  # the selected architecture (see the module docstring), -1 if none
    "best_valid_acc",  # the highest validation accuracy seen for it (percent)
    "recommended",  # True when best_index is the searcher's recommendation
)


# ------------------------------------------------------------------ statistics
@dataclass(frozen=True)
class MeanSE:
    """Mean and standard error over runs. ``se`` is NaN for fewer than two runs (no band)
    and when any value is infinite; ``n`` counts the values that were not missing."""

    mean: Any  # float, or an array over ticks
    se: Any
    n: int


def mean_se(values: Any) -> MeanSE:
    """Mean and standard error (sample std, ddof 1, over sqrt(n)) over axis 0.

    ``values``: shape (runs,) or (runs, ticks); None and NaN are missing and left out.
    The one statistics function of nasfilter: tables, curves and plots all use it, so a
    single run shows its value with no error band everywhere.
    """
    if not isinstance(values, np.ndarray):
        values = [math.nan if v is None else v for v in values]
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim not in (1, 2):
        raise ValueError(f"values must have shape (runs,) or (runs, ticks), got {arr.shape}")
    present = ~np.isnan(arr)
    n_each = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(present, arr, 0.0).sum(axis=0)
        mean = np.where(n_each > 0, total / np.maximum(n_each, 1), np.nan)
        dev = np.where(present, arr - mean, 0.0)
        var = (dev**2).sum(axis=0) / np.maximum(n_each - 1, 1)
        se = np.sqrt(var / np.maximum(n_each, 1))
        # Runs that agree exactly have no spread: rounding in the mean must not invent one.
        if arr.shape[0]:
            low = np.where(present, arr, np.inf).min(axis=0)
            se = np.where(low == np.where(present, arr, -np.inf).max(axis=0), 0.0, se)
    finite = np.isfinite(np.where(present, arr, 0.0)).all(axis=0)
    se = np.where((n_each >= 2) & finite, se, np.nan)
    n = int(n_each.max()) if arr.size else 0
    if arr.ndim == 1:
        return MeanSE(float(mean), float(se), n)
    return MeanSE(mean, se, n)


def format_mean_se(mean: float, se: float, decimals: int) -> str:
    """``"0.912 ± 0.012"``; the value alone when the standard error is undefined (one run,
    or an infinite value) or zero (every run agrees); ``"n/a"`` if missing."""
    if mean is None or not math.isfinite(mean):
        return "inf" if mean == math.inf else "n/a"

    def fmt(x: float) -> str:
        if abs(mean) >= 1e9:  # a huge budget's seconds: 4 significant digits, not 30
            return f"{x:.4g}"
        return f"{x:,.{decimals}f}" if decimals == 0 else f"{x:.{decimals}f}"

    text = fmt(mean)
    if se is not None and math.isfinite(se) and se > 0:
        text += f" ± {fmt(se)}"
    return text


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


def _selected_after_each(idx: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Position of the running highest validation accuracy (first on ties), (k,)."""
    n = len(idx)
    if not n:
        return np.zeros(0, dtype=np.int64)
    running = np.maximum.accumulate(acc)
    new_best = np.ones(n, dtype=bool)
    new_best[1:] = acc[1:] > running[:-1]
    return np.maximum.accumulate(np.where(new_best, np.arange(n), 0))


def run_summary(
    events: dict[str, np.ndarray], unlogged: dict[str, float] | None = None
) -> dict[str, Any]:
    """The run's counts, seconds and selected architecture (:data:`SUMMARY_FIELDS`).

    ``unlogged``: what the trace left out past ``Problem.trace_limit``
    (:attr:`~nasfilter.problem.Problem.unlogged`), added to the counts and seconds."""
    kind = events["kind"]
    is_eval, is_proxy = kind == EVALUATE, kind == PROXY
    idx, acc, _ = completed_evaluations(events)
    rec_idx, _ = recommendations(events)
    if len(rec_idx):
        best = int(rec_idx[-1])
        best_acc = float(acc[idx == best].max())
    elif len(idx):
        pos = int(np.argmax(acc))
        best, best_acc = int(idx[pos]), float(acc[pos])
    else:
        best, best_acc = -1, math.nan
    has = len(kind) > 0
    u = dict.fromkeys(UNLOGGED_FIELDS, 0.0) if unlogged is None else unlogged
    evaluation_seconds = float(events["cost"][is_eval].sum()) + u["evaluation_seconds"]
    proxy_seconds = float(events["cost"][is_proxy].sum()) + u["proxy_seconds"]
    worker_seconds = float(events["worker_seconds"][-1]) if has else 0.0
    if unlogged is not None:  # the last charge may be one the trace left out
        worker_seconds = max(worker_seconds, evaluation_seconds + proxy_seconds)
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
        "recommended": bool(len(rec_idx)),
    }


def score_events(
    reference: FrontReference,
    table: BenchmarkTable,
    events: dict[str, np.ndarray],
    times: np.ndarray,
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """The final metrics of a run and every metric after each of ``times`` (T,) simulated
    wall-clock seconds.

    Returns ``(metrics, curves)``: ``metrics`` as :class:`~nasfilter.metrics.RunMetrics`
    fields; ``curves`` = ``{"clock": times, "n_evaluations": (T,), metric: (T,) for metric
    in METRICS}``, each nondecreasing in time except ``selected_test_acc`` (a searcher may
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
    by_rule = np.concatenate([[math.nan], table.test_acc[idx[_selected_after_each(idx, acc)]]])
    selected = by_rule[counts]
    if len(rec_idx):
        k = np.searchsorted(rec_end, times, side="right") - 1
        selected = np.where(k >= 0, table.test_acc[rec_idx[np.maximum(k, 0)]], selected)
    first = np.zeros(n, dtype=bool)
    first[np.unique(idx, return_index=True)[1]] = True
    found = np.concatenate([[0], np.cumsum(first & np.isin(idx, reference.true_front))])
    out["best_test_acc"] = best_test[counts]
    out["selected_test_acc"] = selected
    out["recall"] = found[counts] / len(reference.true_front)
    # Front indicators: update the front only when new evaluations arrive, and recompute
    # the indicators only when the front changed.
    for name in ("hv_ratio", "igd_plus", "epsilon"):
        out[name] = np.empty(len(times))
    front = np.zeros(0, dtype=np.int64)
    values = reference.indicators(front)
    last_k = 0
    for i, k in enumerate(counts.tolist()):
        if k != last_k:
            new_front = front_of(reference, np.concatenate([front, idx[last_k:k]]))
            if not np.array_equal(new_front, front):
                front = new_front
                values = reference.indicators(front)
            last_k = k
        out["hv_ratio"][i], out["igd_plus"][i], out["epsilon"][i] = values
    return out


# ------------------------------------------------------------------ stored runs
@dataclass
class RunResults:
    """One stored run with everything computed from its events.

    Attributes:
        run_id: its id in the storage; ``spec``, ``seed``: what was run.
        status: why it stopped; ``info``: what the run recorded besides events (searcher and
            filter configs, real seconds).
        summary: :func:`run_summary`; ``metrics``, ``curves``: :func:`score_events`.
        table_label, oracle_label: the provenance labels of its inputs; ``table_id``,
            ``oracle_id``: what identifies their content
            (:func:`~nasfilter.storage.input_id`).
        events: the event columns, when loaded with ``with_events=True``.
        computed: True when the scores were computed now (the storage had none cached).
    """

    run_id: int
    spec: RunSpec
    seed: int
    status: str
    info: dict[str, Any]
    summary: dict[str, Any]
    metrics: dict[str, float]
    curves: dict[str, np.ndarray]
    table_label: str
    oracle_label: str
    events: dict[str, np.ndarray] | None = None
    table_id: str = ""
    oracle_id: str = ""
    computed: bool = False

    def row(self) -> dict[str, Any]:
        """A flat dict: the spec's fields, seed, status, summary and metrics."""
        spec = self.spec
        return {
            "run_id": self.run_id,
            "spec_key": spec.key(),
            "searcher": spec.searcher,
            "filter": spec.filter,
            "dataset": spec.dataset,
            "budget": spec.budget,
            "budget_clock": spec.budget_clock,
            "workers": spec.workers,
            "proxy_cost": spec.proxy_cost,
            "max_idle": spec.max_idle,
            "n_ticks": spec.n_ticks,
            "oracle": spec.oracle,
            "device": spec.device,
            "seed": self.seed,
            "status": self.status,
            "table_label": self.table_label,
            "oracle_label": self.oracle_label,
            "table_id": self.table_id,
            "oracle_id": self.oracle_id,
            **self.summary,
            **self.metrics,
        }


def score_spec_events(
    spec: RunSpec, events: dict[str, np.ndarray], unlogged: dict[str, float] | None = None
) -> tuple[dict[str, Any], dict[str, float], dict[str, np.ndarray]]:
    """(summary, metrics, curves) of a run of ``spec`` from its events (and what its trace
    left out, see :func:`run_summary`); loads the spec's table and proxy (once per
    process)."""
    from nasfilter.experiment import inputs

    table, _, reference = inputs(spec)
    metrics, curves = score_events(reference, table, events, tick_times(spec.budget, spec.n_ticks))
    return run_summary(events, unlogged), metrics, curves


class StaleMetricsError(ValueError):
    """Stored scores were computed by another metrics version; recompute them."""


class UntrustedPluginError(ValueError):
    """Scoring a stored run would import plugin code named inside the storage."""


def oracle_plugin(spec: RunSpec) -> str | None:
    """The plugin path (``module:Class``, ``file.py:Class``) of ``spec``'s oracle backend,
    or None for a built-in one. Built-in names never hold ``:``."""
    name, _ = parse_spec(spec.oracle)
    return name if ":" in name else None


def _refuse_plugin(run: StoredRun, storage: Storage) -> None:
    plugin = oracle_plugin(run.spec)
    if plugin is not None:
        raise UntrustedPluginError(
            f"run {run.run_id} of {storage.describe()} has no cached scores, and computing "
            f"them would import and run the oracle plugin {plugin!r} that the database names. "
            "nasfilter never runs code named by a file it reads; if you trust this database "
            "and that plugin, pass --trust-plugins (trust_plugins=True)"
        )


def load_results(
    storage: Storage,
    *,
    recompute: bool = False,
    select: Iterable[tuple[str, int]] | None = None,
    with_events: bool = False,
    trust_plugins: bool = False,
) -> list[RunResults]:
    """Every stored run (or those whose (spec key, seed) is in ``select``), scored.

    Scores cached in ``storage`` under :data:`METRICS_VERSION` are used as they are; with
    ``recompute`` every run's scores are computed afresh from its events and the cache is
    rewritten. A cached score of another version raises :class:`StaleMetricsError` naming
    the versions (and ``nasfilter compare --recompute``) unless ``recompute``. A
    :attr:`~nasfilter.storage.Storage.readonly` storage is never written: missing or
    stale scores are computed in memory.

    Scoring needs the run's oracle; where that is a plugin named inside the storage, it is
    imported only with ``trust_plugins`` (else :class:`UntrustedPluginError`, naming it):
    reading results never runs code that the file being read names.
    """
    wanted = None if select is None else set(select)
    out = []
    for run in storage.stored_runs():
        if wanted is not None and (run.spec.key(), run.seed) not in wanted:
            continue
        cached = None if recompute else storage.scores(run.run_id)
        if cached is not None and cached.version != METRICS_VERSION and storage.readonly:
            cached = None  # cannot be rewritten: score in memory
        if cached is not None and cached.version != METRICS_VERSION:
            raise StaleMetricsError(
                f"run {run.run_id} of {storage.describe()} holds metrics of version "
                f"{cached.version}; this nasfilter computes version {METRICS_VERSION}. "
                "Recompute them from the stored events: nasfilter compare --db PATH "
                "--recompute"
            )
        events = storage.events(run.run_id) if cached is None or with_events else None
        if cached is None:
            assert events is not None
            if not trust_plugins:
                _refuse_plugin(run, storage)
            summary, metrics, curves = score_spec_events(run.spec, events, run.info.get("unlogged"))
            if not storage.readonly:
                storage.put_scores(run.run_id, METRICS_VERSION, summary, metrics, curves)
        else:
            summary, metrics, curves = cached.summary, cached.metrics, cached.curves
        out.append(
            RunResults(
                run_id=run.run_id,
                spec=run.spec,
                seed=run.seed,
                status=run.status,
                info=run.info,
                summary=summary,
                metrics=metrics,
                curves=curves,
                table_label=run.table_label,
                oracle_label=run.oracle_label,
                events=events if with_events else None,
                table_id=run.table_id,
                oracle_id=run.oracle_id,
                computed=cached is None,
            )
        )
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
    """True when a run (its :func:`run_summary`, or a :meth:`RunResults.row`) completed no
    evaluation: its metrics are then no result (hv_ratio 0, accuracies NaN)."""
    return not summary.get("n_evaluations")


def empty_run_warning(label: str, n_empty: int, n_runs: int, budget: float) -> str:
    """The one wording of the warning for a method with runs that evaluated nothing."""
    return (
        f"warning: {label} evaluated nothing in {n_empty} of {n_runs} run(s) at {budget:g} s: "
        "the budget went to proxy queries, so its metrics there are not a result (see "
        "docs/searchers.md, smallest budgets)"
    )


def curve_band(results: Sequence[RunResults], metric: str = "hv_ratio") -> MeanSE:
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
    "MeanSE",
    "RunResults",
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
    "tick_times",
]
