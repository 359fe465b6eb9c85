"""Which cheap signal pays: the condition of a method, the ablation of low-fidelity
accuracy, and the goal table of a set of scored runs (:class:`CheapSignals`).

A method's **condition** says which cheap signal it reads besides full evaluations: the
study's hardware signal (the proxy's utilization: ``uses_utilization`` of the searcher or
its filter), low-fidelity accuracy (evaluations after fewer epochs: the searcher's
``uses_fidelities``), both, a zero-cost proxy's scores (``uses_zerocost``, alone or
with the others), or none. Reading throughput alone is no signal: it is the
front's second objective (docs/searchers.md, "The study's answer: which cheap signal pays").

The **ablation** asks how far low-fidelity accuracy can rank: Spearman, over every
architecture, of the validation accuracy after 1, 3 and 9 epochs of hp 12 (seed 777) with
the final one (seed 888) and with the test accuracy; and the share of the final accuracy's
variance beyond the free features (a ridge model on them) that the partial one explains.

``reproduce`` and ``benchmarks/bench_multifidelity.py`` both use these functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from nasfilter.bench.fidelity import LearningCurves
from nasfilter.bench.table import BenchmarkTable
from nasfilter.filters import make_filter
from nasfilter.runs.meanse import mean_se
from nasfilter.runs.metrics import FrontReference
from nasfilter.runs.records import ScoredRun
from nasfilter.runs.results import score_events
from nasfilter.searchers import make_searcher
from nasfilter.searchers.features import RidgeModel, base_features
from nasfilter.stats import pearson, spearman
from nasfilter.study.json_values import Stat
from nasfilter.study.signal_summary import CONDITIONS, Ablation, CheapSignals, Goal, SignalRow

__all__ = [
    "ABLATION_EPOCHS",
    "CONDITIONS",
    "EARLY_SEED",
    "FINAL_SEED",
    "GOAL_LEVEL",
    "GOAL_PEERS",
    "GOAL_TIMES",
    "ablation",
    "beyond_features",
    "cheap_signals",
    "condition",
    "goal",
    "goal_times",
    "hv_at",
]

GOAL_LEVEL = 0.99  # the best method's mean hypervolume ratio at the first goal time
GOAL_TIMES = (20_000.0, 55_000.0, 110_000.0)  # worker-seconds of the goal table
GOAL_PEERS = ("model-based", "optuna-tpe-hyperband")  # searchers the best must beat
ABLATION_EPOCHS = (1, 3, 9)
ABLATION_HP = "12"
EARLY_SEED, FINAL_SEED = 777, 888


def condition(searcher: str, filter: str | None = "none") -> str:
    """The condition (one of :data:`CONDITIONS`) of a searcher spec behind a filter spec
    (None or ``"none"``: no filter), read from the plugins' ``uses_utilization``,
    ``uses_fidelities`` and ``uses_zerocost`` attributes."""
    made = make_searcher(searcher)
    plugins = [made] if filter in (None, "none") else [made, make_filter(str(filter))]
    hardware = any(p.uses_utilization for p in plugins)
    low_fidelity = bool(getattr(made, "uses_fidelities", False))
    zerocost = any(p.uses_zerocost for p in plugins)
    return CONDITIONS[int(hardware) + 2 * int(low_fidelity) + 4 * int(zerocost)]


def goal_times(budget: float) -> tuple[float, ...]:
    """The :data:`GOAL_TIMES` within ``budget`` worker-seconds; ``(budget,)`` below them."""
    return tuple(t for t in GOAL_TIMES if t <= budget) or (float(budget),)


# ------------------------------------------------------------------ the ablation
def beyond_features(acc: np.ndarray) -> np.ndarray:
    """What the free features (:func:`~nasfilter.searchers.features.base_features`) do not
    predict of ``acc`` (32768,): its residual from a ridge fit on every architecture. The
    squared correlation of two such residuals is the share of the final accuracy's variance
    beyond the features that a partial evaluation explains, the most a screen of
    ``model-based-mf`` can learn."""
    x = base_features()
    return acc - RidgeModel.fit(x, acc).mean(x)


def _accuracies(curves: LearningCurves, n: int, seed: int, iepoch: int) -> np.ndarray:
    """Validation accuracy (percent) of architectures 0..n-1 after epoch ``iepoch`` (0-based)
    of hp 12 with ``seed``, (n,); NaN where the curves lack that seed."""
    out = np.full(n, math.nan)
    for i in range(n):
        try:
            out[i] = curves.evaluation(i, ABLATION_HP, seed, iepoch)[0]
        except (KeyError, ValueError, IndexError):
            continue
    return out


def ablation(
    table: BenchmarkTable, curves: LearningCurves, epochs: Sequence[int] = ABLATION_EPOCHS
) -> Ablation:
    """The ablation (module docstring) over the architectures whose curves have both seeds."""
    n = table.test_acc.shape[0]
    final = _accuracies(curves, n, FINAL_SEED, curves.epochs(ABLATION_HP) - 1)
    early = [_accuracies(curves, n, EARLY_SEED, e - 1) for e in epochs]
    ok = np.isfinite(final) & np.logical_and.reduce([np.isfinite(a) for a in early])
    if not ok.all():  # a real archive may lack a seed for some architectures
        final, early = final[ok], [a[ok] for a in early]
    test = np.asarray(table.test_acc, dtype=np.float64)[ok]
    rest = _beyond(final, ok)
    return Ablation(
        epochs=tuple(int(e) for e in epochs),
        vs_final=tuple(spearman(a, final) for a in early),
        vs_test=tuple(spearman(a, test) for a in early),
        beyond_features=tuple(pearson(_beyond(a, ok), rest) ** 2 for a in early),
        features_r2_final=1.0 - float(rest.var() / final.var()),
        early_seed=EARLY_SEED,
        final_seed=FINAL_SEED,
        n_architectures=int(ok.sum()),
    )


def _beyond(acc: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """:func:`beyond_features` of ``acc`` over the architectures ``ok`` (all: the space)."""
    if ok.all():
        return beyond_features(acc)
    x = base_features()[ok]
    return acc - RidgeModel.fit(x, acc).mean(x)


# ------------------------------------------------------------------ the goal table
def hv_at(
    runs: Sequence[ScoredRun],
    reference: FrontReference,
    table: BenchmarkTable,
    times: Sequence[float],
    workers: int = 1,
) -> tuple[Stat, ...]:
    """Mean ± SE over ``runs`` of the hypervolume ratio after each of ``times`` (T,)
    worker-seconds (simulated wall clock ``t / workers``), scored by
    :func:`~nasfilter.runs.results.score_events` from each run's events; NaN with no run."""
    if not runs:
        return tuple(Stat(math.nan, math.nan) for _ in times)
    at = np.asarray(times, dtype=np.float64) / workers
    hv = []
    for run in runs:
        if run.events is None:
            raise ValueError(f"run {run.spec.key()} (seed {run.seed}) was loaded without events")
        hv.append(score_events(reference, table, run.events, at)[1]["hv_ratio"])
    stacked = np.stack(hv)
    return tuple(Stat.of(mean_se(stacked[:, i])) for i in range(len(times)))


def goal(rows: Sequence[SignalRow], at: float, level: float = GOAL_LEVEL) -> Goal:
    """The goal verdict over ``rows`` (their first time is ``at``): the best mean there
    (the first of equal ones) against ``level`` and the :data:`GOAL_PEERS` among the rows."""
    means = {r.method: r.hv[0].mean for r in rows if r.hv and math.isfinite(r.hv[0].mean)}
    best = max(means, key=lambda label: means[label]) if means else ""
    condition_of = {r.method: r.condition for r in rows}
    peers = tuple(
        (r.method, r.hv[0].mean) for r in rows if r.filter == "none" and r.searcher in GOAL_PEERS
    )
    return Goal(level, at, best, condition_of.get(best, ""), means.get(best, math.nan), peers)


def cheap_signals(
    per_method: Sequence[tuple[str, str, str, Sequence[ScoredRun]]],
    table: BenchmarkTable,
    curves: LearningCurves,
    reference: FrontReference,
    budget: float,
    workers: int = 1,
) -> CheapSignals:
    """The section "Which cheap signal pays" of ``per_method`` = (label, searcher spec,
    filter spec, its scored runs with events) at :func:`goal_times` of ``budget``."""
    times = goal_times(budget)
    rows = tuple(
        SignalRow(label, searcher, flt, condition(searcher, flt), len(runs),
                  hv_at(runs, reference, table, times, workers))
        for label, searcher, flt, runs in per_method
    )  # fmt: skip
    return CheapSignals(times, workers, rows, goal(rows, times[0]), ablation(table, curves))
