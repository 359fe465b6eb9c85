"""Each run's front as a value: the architectures it returns, with their two objectives.

A run returns the non-dominated set of the architectures it evaluated at full fidelity
(:func:`nasfilter.runs.metrics.front_of`), on the axes every metric uses: the table's scoring
accuracy (``BenchmarkTable.score_label`` says which split, epochs and seed) and the
oracle's throughput. :func:`run_front` gives it for one run (a scored run or a record with
its events), :func:`load_fronts` for every run of a storage, like Optuna's
``study.best_trials``. Results layer: computed from the stored events, never stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.spaces.sss import arch_from_index
from nasfilter.bench.table import BenchmarkTable
from nasfilter.runs.inputs import inputs
from nasfilter.runs.metrics import FrontReference, front_of
from nasfilter.runs.records import DEFAULT_TICKS, RunRecord, ScoredRun
from nasfilter.runs.results import (
    METRICS_VERSION,
    UntrustedPluginError,
    load_results,
    oracle_plugin,
    score_events,
    tick_times,
)
from nasfilter.runs.run_summary import completed_evaluations, run_summary
from nasfilter.runs.storage.base import Storage


@dataclass(frozen=True, eq=False)
class RunFront:
    """A run's front and what it evaluated.

    Attributes:
        indices: the front's architecture indices, int64 (f,), ascending.
        accuracy: their scoring accuracy (percent), float64 (f,): ``accuracy_label``.
        throughput: their throughput (images/s), float64 (f,), from ``throughput_label``
            (a model's prediction unless that oracle measured it).
        evaluated: every architecture index the run evaluated at full fidelity, int64
            (k,), in completion order (repeats kept).
        accuracy_label: which accuracy (split, epochs, seed), from the table.
        throughput_label: the oracle that gave the throughput.
        table_label: the table (``SYNTHETIC`` for the surrogate's modelled accuracies).
    """

    indices: np.ndarray
    accuracy: np.ndarray
    throughput: np.ndarray
    evaluated: np.ndarray
    accuracy_label: str
    throughput_label: str
    table_label: str

    def archs(self) -> list[str]:
        """The front's architectures as NATS channel strings (``"8:16:32:64:8"``)."""
        return [str(arch_from_index(int(i))) for i in self.indices]

    def rows(self) -> list[dict[str, Any]]:
        """One dict per front member: index, arch, accuracy, throughput (JSON-ready)."""
        return [
            {"index": int(i), "arch": a, "accuracy": float(acc), "throughput": float(thr)}
            for i, a, acc, thr in zip(
                self.indices, self.archs(), self.accuracy, self.throughput, strict=True
            )
        ]


def front_from_events(
    events: dict[str, np.ndarray],
    table: BenchmarkTable,
    proxy: ProxyTable,
    reference: FrontReference,
) -> RunFront:
    """The :class:`RunFront` of a run's ``events`` on ``table`` with ``proxy``."""
    evaluated = np.asarray(completed_evaluations(events)[0], dtype=np.int64)
    front = front_of(reference, evaluated)
    return RunFront(
        indices=front,
        accuracy=np.asarray(table.test_acc[front], dtype=np.float64),
        throughput=np.asarray(proxy.throughput[front], dtype=np.float64),
        evaluated=evaluated,
        accuracy_label=table.score_label,
        throughput_label=proxy.label,
        table_label=table.label,
    )


def run_front(run: ScoredRun | RunRecord, trust_plugins: bool = True) -> RunFront:
    """The front of one run of a spec (from :func:`~nasfilter.runs.experiment.run_one`,
    :func:`~nasfilter.runs.experiment.run_experiment`, or
    :func:`~nasfilter.runs.results.load_results`
    with ``with_events=True``), on its spec's table and oracle.

    ValueError for a run without its events (loaded without ``with_events``) or without
    a spec (a :func:`~nasfilter.runs.runner.run_search` record: its front is
    ``nasfilter.search``'s). Without ``trust_plugins``, a run whose oracle is a plugin
    (its throughput would import it) raises
    :class:`~nasfilter.runs.results.UntrustedPluginError`, as scoring it would."""
    record = run.record if isinstance(run, ScoredRun) else run
    if record.spec is None:
        raise ValueError(
            "only a run of a RunSpec knows its table and oracle; nasfilter.search returns "
            "its run with the front (.front)"
        )
    if not record.events:
        raise ValueError(
            f"run {record.run_id} was loaded without its events; load it with "
            "load_results(storage, with_events=True), or use load_fronts(storage)"
        )
    plugin = oracle_plugin(record.spec)
    if plugin is not None and not trust_plugins:
        raise UntrustedPluginError(
            f"the front of run {record.run_id} needs the throughput of the oracle plugin "
            f"{plugin!r} that its spec names; pass trust_plugins=True (--trust-plugins) if "
            "you trust it"
        )
    return front_from_events(record.events, *inputs(record.spec))


@dataclass
class SearchRun(ScoredRun):
    """What :func:`nasfilter.search` returns: the run scored (``metrics``, ``curves``,
    ``summary``, as any :class:`ScoredRun`) with its ``front``. Whatever else a
    :class:`RunRecord` answers (``n_evaluations``, ``evaluated``, ``events``, ...) it
    answers too. It has no spec: its table and oracle were given as objects."""

    front: RunFront | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "record":  # copy and pickle probe these
            raise AttributeError(name)
        return getattr(self.record, name)


def score_search(
    record: RunRecord,
    table: BenchmarkTable,
    proxy: ProxyTable,
    horizon: float,
    n_ticks: int = DEFAULT_TICKS,
) -> SearchRun:
    """``record`` (a run on ``table``) scored against the true front of ``table`` and
    ``proxy``, its curves at ``n_ticks`` times up to ``horizon`` simulated seconds."""
    reference = FrontReference.build(table, proxy)
    metrics, curves = score_events(
        reference, table, record.require_events(), tick_times(horizon, n_ticks)
    )
    summary = run_summary(record.require_events(), record.info.get("unlogged"))
    front = front_from_events(record.require_events(), table, proxy, reference)
    return SearchRun(record, METRICS_VERSION, summary, metrics, curves, front=front)


def load_fronts(
    storage: Storage,
    select: Iterable[tuple[str, int]] | None = None,
    trust_plugins: bool = False,
) -> list[tuple[ScoredRun, RunFront]]:
    """Every stored run (or those whose (spec key, seed) is in ``select``), scored, with
    its front: ``[(run, front), ...]`` in storage order (``trust_plugins`` as in
    :func:`~nasfilter.runs.results.load_results`)."""
    runs = load_results(storage, select=select, with_events=True, trust_plugins=trust_plugins)
    return [(run, run_front(run, trust_plugins)) for run in runs]


__all__ = [
    "RunFront",
    "SearchRun",
    "front_from_events",
    "load_fronts",
    "run_front",
    "score_search",
]
