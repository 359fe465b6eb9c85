"""Every number of a reproduction, computed from the scored runs into the typed summary
(:mod:`nasfilter.study.summary`).

The runs come scored by :mod:`nasfilter.runs.results` (a :class:`~nasfilter.runs.records.ScoredRun`
each, with its events); nothing here reads a file or draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nasfilter.bench.fidelity import NoCurvesError, curves_for
from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.table import BenchmarkTable
from nasfilter.oracle.calibrated import calibrated
from nasfilter.oracle.compare import oracle_figures
from nasfilter.oracle.roofline import roofline
from nasfilter.pareto import nondominated_mask
from nasfilter.runs.metrics import FrontReference, front_of
from nasfilter.runs.records import ScoredRun
from nasfilter.runs.results import (
    REACH_LEVEL,
    completed_evaluations,
    curve_band,
    evaluated_nothing,
    first_reaching,
    mean_se,
)
from nasfilter.stats import spearman
from nasfilter.study.ceilings import row_of
from nasfilter.study.cheap_signals import cheap_signals
from nasfilter.study.methods import FILTERING, REINFORCE_MNAS, Method
from nasfilter.study.metrics_table import KEYS
from nasfilter.study.signal_ranking import signal_ranking
from nasfilter.study.signal_summary import CheapSignals
from nasfilter.study.summary import (
    Band,
    Comparison,
    Fig3Numbers,
    FilteringFront,
    MetricsRow,
    Parameters,
    RunEntry,
    SeedFronts,
    Stat,
    StudySummary,
    TrueFront,
    WorkersComparison,
    WorkersEntry,
)

WORKERS_FRACTIONS = (1 / 16, 1 / 4, 1.0)  # of the budget: wall-clock times of the K table


def methods_at(methods: Sequence[Method], ks: Sequence[int], k: int) -> list[Method]:
    """The methods run with ``k`` workers: all at the first K, the ``every_k`` ones after."""
    return [m for m in methods if k == ks[0] or m.every_k]


@dataclass(frozen=True)
class StudyRuns:
    """The scored runs of a reproduction and the method of each (by its spec key)."""

    methods: tuple[Method, ...]
    workers: tuple[int, ...]
    results: tuple[ScoredRun, ...]
    method_of: dict[str, Method]  # RunSpec.key() -> method

    def of(self, method: Method, k: int) -> list[ScoredRun]:
        """The runs of ``method`` with ``k`` workers, in run order."""
        return [
            r
            for r in self.results
            if r.spec.workers == k and self.method_of[r.spec.key()] == method
        ]


def study_summary(
    runs: StudyRuns, table: BenchmarkTable, proxy: ProxyTable, reference: FrontReference,
    parameters: Parameters,
) -> StudySummary:  # fmt: skip
    """Every number of the outputs, from the scored runs (the first K's for the metrics
    table and Figs. 5 and 6)."""
    main_k = runs.workers[0]
    main = [r for r in runs.results if r.spec.workers == main_k]
    entries = tuple(_run_entry(runs.method_of[r.spec.key()], r, reference) for r in main)
    first = parameters.seeds[0]
    filtering = [r for r in runs.of(FILTERING, main_k) if r.seed == first]
    fig6 = _seed_fronts(REINFORCE_MNAS, entries)
    fig5 = _seed_fronts(FILTERING, entries)
    return StudySummary(
        table_label=table.label,
        oracle_label=proxy.label,
        synthetic_table=table.synthetic,
        accuracy_label=table.score_label,
        scored=table.provenance.scored,
        table_real=table.provenance.real,
        table_modelled=table.provenance.modelled,
        fig3=fig3_numbers(table, proxy),
        true_front=TrueFront(
            reference.true_front,
            table.test_acc[reference.true_front],
            proxy.throughput[reference.true_front],
        ),
        fig5=FilteringFront(
            FILTERING.label,
            first,
            fig5.fronts.get(first, np.zeros(0, dtype=np.int64)),
            _evaluated(filtering[0]) if filtering else np.zeros(0, dtype=np.int64),
            fig5.hv_ratio.get(first, np.nan),
        ),
        fig6=fig6,
        comparison=_comparison(runs, main_k),
        metrics_table=tuple(_metrics_row(m, entries) for m in runs.methods),
        workers_comparison=_workers_comparison(runs, parameters.budget_seconds),
        runs=entries,
        parameters=parameters,
        cheap_signals=_cheap_signals(runs, table, reference, parameters.budget_seconds),
        signal_ranking=signal_ranking(table, proxy),
        ceiling=row_of(table, reference, parameters.dataset, proxy.label).to_json(),
    )


def _cheap_signals(
    runs: StudyRuns, table: BenchmarkTable, reference: FrontReference, budget: float
) -> CheapSignals | None:
    """Which cheap signal pays, from the first K's runs; None when ``table`` has no
    learning curves (the ablation reads them)."""
    try:
        curves = curves_for(table)
    except NoCurvesError:
        return None
    k = runs.workers[0]
    per_method = [(m.label, m.searcher, m.filter, runs.of(m, k)) for m in runs.methods]
    return cheap_signals(per_method, table, curves, reference, budget, k)


def _evaluated(run: ScoredRun) -> np.ndarray:
    """The distinct architectures a run evaluated, sorted, int64 (E,)."""
    assert run.events is not None
    return np.unique(completed_evaluations(run.events)[0])


def _run_entry(method: Method, run: ScoredRun, reference: FrontReference) -> RunEntry:
    assert run.events is not None
    return RunEntry(
        method=method.label,
        searcher=run.spec.searcher,
        filter=run.spec.filter,
        workers=run.spec.workers,
        seed=run.seed,
        status=run.status,
        metrics=dict(run.metrics),
        summary=dict(run.summary),
        front=front_of(reference, completed_evaluations(run.events)[0]),
        hv_ratio_curve=np.asarray(run.curves["hv_ratio"], dtype=np.float64),
    )


def fig3_numbers(table: BenchmarkTable, proxy: ProxyTable) -> Fig3Numbers:
    """Fig. 3's Pareto set of (throughput, utilization) and the rank correlations."""
    util, thr, acc = proxy.utilization, proxy.throughput, table.test_acc
    pareto_set = np.flatnonzero(nondominated_mask(np.stack([thr, util], axis=1)))
    return Fig3Numbers(
        n_architectures=int(np.isfinite(util).sum()),
        pareto_set=pareto_set.astype(np.int64),
        spearman_utilization_accuracy=spearman(util, acc),
        spearman_throughput_accuracy=spearman(thr, acc),
        spearman_macs_accuracy=spearman(table.macs, acc),
        spearman_params_accuracy=spearman(table.params, acc),
    )


def _seed_fronts(method: Method, entries: Sequence[RunEntry]) -> SeedFronts:
    mine = [r for r in entries if r.method == method.label]
    fronts = {r.seed: r.front for r in mine}
    return SeedFronts(method.label, fronts, {r.seed: float(r.metrics["hv_ratio"]) for r in mine})


def _metrics_row(method: Method, entries: Sequence[RunEntry]) -> MetricsRow:
    mine = [r for r in entries if r.method == method.label]
    stats = {
        key: Stat.of(mean_se([r.metrics.get(key, r.summary.get(key)) for r in mine]))
        for key in KEYS
    }
    empty = sum(1 for r in mine if evaluated_nothing(r.summary))
    return MetricsRow(method.label, method.searcher, method.filter, len(mine), empty, stats)


def _band(results: Sequence[ScoredRun]) -> Band:
    """Mean and standard error over runs of the hv_ratio curves, as plotted."""
    if not results:
        return Band.empty()
    band = curve_band(results, "hv_ratio")
    return Band(np.asarray(band.mean, dtype=np.float64), np.asarray(band.se, dtype=np.float64))


def _comparison(runs: StudyRuns, k: int) -> Comparison:
    main = [r for r in runs.results if r.spec.workers == k]
    times = np.asarray(main[0].curves["clock"], dtype=np.float64) if main else np.zeros(0)
    bands = {m.label: _band(runs.of(m, k)) for m in runs.methods}
    # Simulated seconds at which each method's mean first reaches the level; None: never.
    reaches = {
        label: first_reaching(times, b.mean) if b.has_runs else None for label, b in bands.items()
    }
    return Comparison(times, bands, REACH_LEVEL, reaches)


def _workers_entry(results: Sequence[ScoredRun], at: Sequence[int]) -> WorkersEntry:
    """One method at one K: its band, its value at the ticks ``at``, its final wall clock."""
    hv = np.stack([np.asarray(r.curves["hv_ratio"]) for r in results]) if results else None
    points = tuple(Stat.of(mean_se(hv[:, i]) if hv is not None else None) for i in at)
    wall = Stat.of(mean_se([r.summary["clock"] for r in results]))
    return WorkersEntry(_band(results), points, wall, len(results))


def _workers_comparison(runs: StudyRuns, budget: float) -> WorkersComparison:
    """Per method and K: the hv_ratio band over simulated wall-clock time and its value at
    :data:`WORKERS_FRACTIONS` of the budget (the time axis is shared by every K)."""
    times = np.asarray(runs.results[0].curves["clock"]) if runs.results else np.zeros(0)
    at = [int(np.searchsorted(times, f * budget - 1e-9)) for f in WORKERS_FRACTIONS]
    methods = {
        m.label: {
            k: _workers_entry(runs.of(m, k), at)
            for k in (runs.workers if m.every_k else runs.workers[:1])
        }
        for m in runs.methods
    }
    return WorkersComparison(runs.workers, times, WORKERS_FRACTIONS, methods)


def oracle_comparison(
    backend: str, device: str | None, table: BenchmarkTable, proxy: ProxyTable
) -> dict[str, object]:
    """The run's oracle beside the analytic ones on the same device (:mod:`.oracle.compare`).

    The plain roofline and the calibrated model are added unless the run uses them already;
    an analytic oracle the device cannot feed (a user spec without an SM count, a CUDA
    device name) is left out, with the reason in ``skipped``.
    """
    proxies, skipped = [proxy], {}
    for name, make in (("roofline", roofline), ("calibrated", calibrated)):
        if name == backend:
            continue
        try:
            proxies.append(make(device, table.dataset).proxy_table())
        except ValueError as exc:  # unknown or incomplete device spec
            skipped[name] = str(exc)
    return {"oracles": oracle_figures(proxies, table.test_acc), "skipped": skipped}
