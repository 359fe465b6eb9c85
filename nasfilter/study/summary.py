"""The typed summary of one reproduction: every number ``reproduce`` shows, as dataclasses
holding numpy arrays, with :meth:`StudySummary.to_json` for ``summary.json`` and
:meth:`StudySummary.from_json` to read one back (also one written before the format had a
version, :data:`SUMMARY_VERSION` 1).

Figures and the report draw from these types (:mod:`nasfilter.study.figures`,
:mod:`nasfilter.study.report`); :mod:`nasfilter.study.numbers` computes them from the
scored runs. In JSON, a number that is not finite (NaN: undefined, e.g. the standard error
of one run) is written as null and read back as NaN.

Units: seconds are simulated seconds, accuracies percent, throughput images/s; arrays of
indices are int64 architecture indices, curves float64 of shape (T,) over the ticks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nasfilter.runs.metrics import current_names
from nasfilter.study.json_values import Stat, finite_or_none, json_safe, plain_json
from nasfilter.study.json_values import json_float as _float
from nasfilter.study.json_values import json_floats as _floats
from nasfilter.study.json_values import json_ints as _ints
from nasfilter.study.signal_ranking import SignalRanking
from nasfilter.study.signal_summary import CheapSignals

# 2: every nasfilter.study.metrics_table column, and a version key; 1: the files before it.
SUMMARY_VERSION = 2
STUDY = "arXiv 2212.07936: GPU utilization as a filter for NAS"


# ------------------------------------------------------------------ parts
@dataclass(frozen=True)
class Band:
    """Mean and standard error over runs of a curve, each (T,); both (0,) for no run."""

    mean: np.ndarray
    se: np.ndarray

    @classmethod
    def empty(cls) -> Band:
        return cls(np.zeros(0), np.zeros(0))

    @property
    def has_runs(self) -> bool:
        return self.mean.size > 0

    def to_json(self) -> dict[str, Any]:
        return {"mean": json_safe(self.mean), "se": json_safe(self.se)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Band:
        return cls(_floats(data["mean"]), _floats(data["se"]))


_CORRELATED = ("utilization", "throughput", "macs", "params")  # Spearman with the accuracy


@dataclass(frozen=True)
class Fig3Numbers:
    """Fig. 3: the throughput–utilization Pareto set and the rank correlations with the
    accuracy over the ``n_architectures`` with a finite utilization."""

    n_architectures: int
    pareto_set: np.ndarray  # int64 (P,) indices
    spearman_utilization_accuracy: float
    spearman_throughput_accuracy: float
    spearman_macs_accuracy: float
    spearman_params_accuracy: float

    @property
    def pareto_size(self) -> int:
        return int(self.pareto_set.size)

    def to_json(self) -> dict[str, Any]:
        return {
            "n_architectures": self.n_architectures,
            "pareto_throughput_utilization": self.pareto_size,
            "pareto_set": json_safe(self.pareto_set),
            **{
                f"spearman_{name}_accuracy": finite_or_none(
                    getattr(self, f"spearman_{name}_accuracy")
                )
                for name in _CORRELATED
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fig3Numbers:
        return cls(
            int(data["n_architectures"]),
            _ints(data["pareto_set"]),
            *(_float(data.get(f"spearman_{n}_accuracy")) for n in _CORRELATED),
        )  # fmt: skip


@dataclass(frozen=True)
class TrueFront:
    """The true accuracy–throughput front: indices (F,), their accuracy and throughput."""

    indices: np.ndarray
    test_acc: np.ndarray
    throughput: np.ndarray

    def to_json(self) -> dict[str, Any]:
        return plain_json(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrueFront:
        return cls(_ints(data["indices"]), _floats(data["test_acc"]), _floats(data["throughput"]))


@dataclass(frozen=True)
class FilteringFront:
    """Fig. 5: one run's front (K,) and every architecture it evaluated (E,)."""

    method: str
    seed: int
    front: np.ndarray
    evaluated: np.ndarray
    hv_ratio: float  # NaN: no such run

    def to_json(self) -> dict[str, Any]:
        return plain_json(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FilteringFront:
        return cls(
            str(data["method"]), int(data["seed"]), _ints(data["front"]),
            _ints(data["evaluated"]), _float(data.get("hv_ratio")),
        )  # fmt: skip


@dataclass(frozen=True)
class SeedFronts:
    """Fig. 6: a method's front per seed (seed -> indices) and its hypervolume ratio."""

    method: str
    fronts: dict[int, np.ndarray]
    hv_ratio: dict[int, float]

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "fronts": {str(s): json_safe(f) for s, f in self.fronts.items()},
            "hv_ratio": {str(s): finite_or_none(v) for s, v in self.hv_ratio.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SeedFronts:
        fronts = {int(s): _ints(f) for s, f in data["fronts"].items()}
        ratios = {int(s): _float(v) for s, v in data["hv_ratio"].items()}
        return cls(str(data["method"]), fronts, ratios)


@dataclass(frozen=True)
class Comparison:
    """The hypervolume ratio over simulated time (``times``, (T,)) per method, and where
    each method's mean first reaches ``reach_level`` (None: never)."""

    times: np.ndarray
    curves: dict[str, Band]
    reach_level: float
    first_reaches: dict[str, float | None]
    metric: str = "hv_ratio"

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "times_seconds": json_safe(self.times),
            "curves": {label: band.to_json() for label, band in self.curves.items()},
            "reach_level": self.reach_level,
            "first_reaches": {k: finite_or_none(v) for k, v in self.first_reaches.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Comparison:
        return cls(
            _floats(data["times_seconds"]),
            {label: Band.from_json(b) for label, b in data["curves"].items()},
            float(data["reach_level"]),
            {k: None if v is None else float(v) for k, v in data["first_reaches"].items()},
            str(data.get("metric", "hv_ratio")),
        )


@dataclass(frozen=True)
class MetricsRow:
    """One method's row of the metrics table: a :class:`Stat` per column key
    (:data:`nasfilter.study.metrics_table.KEYS`) over its ``runs`` (``empty_runs`` evaluated
    nothing)."""

    method: str
    searcher: str
    filter: str
    runs: int
    empty_runs: int
    stats: dict[str, Stat]

    def stat(self, key: str) -> Stat:
        """The column ``key``; NaN for a column an older summary did not have."""
        return self.stats.get(key, Stat(math.nan, math.nan))

    def to_json(self) -> dict[str, Any]:
        head = {"method": self.method, "searcher": self.searcher, "filter": self.filter}
        counts = {"runs": self.runs, "empty_runs": self.empty_runs}
        return head | counts | {k: s.to_json() for k, s in self.stats.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetricsRow:
        fixed = ("method", "searcher", "filter", "runs", "empty_runs")
        named = current_names(data, "a summary's metrics row")
        stats = {k: Stat.from_json(v) for k, v in named.items() if k not in fixed}
        return cls(
            str(data["method"]), str(data["searcher"]), str(data["filter"]),
            int(data["runs"]), int(data.get("empty_runs", 0)), stats,
        )  # fmt: skip


@dataclass(frozen=True)
class WorkersEntry:
    """One method at one K: its band over wall-clock time, its value at each fraction of
    the budget, and its wall clock at the end of the run."""

    band: Band
    at_fractions: tuple[Stat, ...]
    wall_clock: Stat
    runs: int

    def to_json(self) -> dict[str, Any]:
        return {
            "band": self.band.to_json(),
            "at_fractions": [s.to_json() for s in self.at_fractions],
            "wall_clock_seconds": self.wall_clock.to_json(),
            "runs": self.runs,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkersEntry:
        return cls(
            Band.from_json(data["band"]),
            tuple(Stat.from_json(s) for s in data["at_fractions"]),
            Stat.from_json(data["wall_clock_seconds"]),
            int(data["runs"]),
        )


@dataclass(frozen=True)
class WorkersComparison:
    """Every method with each number K of simulated workers (method -> K -> entry), on a
    wall-clock axis ``times`` (T,) shared by every K."""

    workers: tuple[int, ...]
    times: np.ndarray
    fractions: tuple[float, ...]
    methods: dict[str, dict[int, WorkersEntry]]
    metric: str = "hv_ratio"

    def to_json(self) -> dict[str, Any]:
        return {
            "workers": list(self.workers),
            "metric": self.metric,
            "times_seconds": json_safe(self.times),
            "fractions": list(self.fractions),
            "methods": {
                label: {str(k): e.to_json() for k, e in per_k.items()}
                for label, per_k in self.methods.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkersComparison:
        methods = {
            label: {int(k): WorkersEntry.from_json(e) for k, e in per_k.items()}
            for label, per_k in data["methods"].items()
        }
        return cls(
            tuple(int(k) for k in data["workers"]), _floats(data["times_seconds"]),
            tuple(float(f) for f in data["fractions"]), methods,
            str(data.get("metric", "hv_ratio")),
        )  # fmt: skip


@dataclass(frozen=True)
class RunEntry:
    """One run at the first K: its metrics and summary (:mod:`nasfilter.runs.results`), its
    front (K,) and its hypervolume-ratio curve (T,)."""

    method: str
    searcher: str
    filter: str
    workers: int
    seed: int
    status: str
    metrics: dict[str, Any]
    summary: dict[str, Any]
    front: np.ndarray
    hv_ratio_curve: np.ndarray

    def to_json(self) -> dict[str, Any]:
        return plain_json(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunEntry:
        metrics = {k: math.nan if v is None else v
                   for k, v in current_names(data["metrics"], "a summary's run").items()}
        return cls(
            str(data["method"]), str(data["searcher"]), str(data["filter"]),
            int(data["workers"]), int(data["seed"]), str(data["status"]), metrics,
            dict(data["summary"]), _ints(data["front"]), _floats(data["hv_ratio_curve"]),
        )  # fmt: skip


@dataclass(frozen=True)
class Parameters:
    """The arguments of a reproduction (budgets in simulated seconds)."""

    dataset: str
    seeds: tuple[int, ...]
    budget_seconds: float
    workers: tuple[int, ...]
    proxy_cost_seconds: float
    backend: str
    device: str | None
    oracle_cache: str | None
    table: str | None
    n_ticks: int
    budget_clock: str = "worker"

    def to_json(self) -> dict[str, Any]:
        return plain_json(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Parameters:
        return cls(
            str(data["dataset"]), tuple(int(s) for s in data["seeds"]),
            float(data["budget_seconds"]), tuple(int(k) for k in data.get("workers", (1,))),
            float(data["proxy_cost_seconds"]), str(data["backend"]), data.get("device"),
            data.get("oracle_cache"), data.get("table"), int(data.get("n_ticks", 100)),
            str(data.get("budget_clock", "worker")),
        )  # fmt: skip


# ------------------------------------------------------------------ the whole
@dataclass(frozen=True)
class StudySummary:
    """Every number of one reproduction (the contents of ``summary.json``).

    ``table`` and ``oracle`` are the inputs' provenance records, ``oracles`` the oracles
    side by side (:func:`nasfilter.oracle.compare.oracle_figures`), ``survey`` the CNN
    survey's summary (None: not run; ``{"skipped": why}``: its extra is missing), as the
    modules that make them write them; ``cheap_signals`` the answer to "which cheap signal
    pays" (None: the table has no learning curves, or the file predates it);
    ``signal_ranking`` every cheap signal as a ranking of the accuracy (None: the file
    predates it); ``ceiling`` the table and oracle's clairvoyant ceiling and best set by the
    observed accuracy (:meth:`nasfilter.study.ceilings.CeilingRow.to_json`; None: the file
    predates it).
    """

    table_label: str
    oracle_label: str
    synthetic_table: bool
    accuracy_label: str  # what the accuracies are, in words
    scored: str  # what scores the runs, e.g. "test@90" or "valid@90"
    table_real: str | None
    table_modelled: str | None
    fig3: Fig3Numbers
    true_front: TrueFront
    fig5: FilteringFront
    fig6: SeedFronts
    comparison: Comparison
    metrics_table: tuple[MetricsRow, ...]
    workers_comparison: WorkersComparison
    runs: tuple[RunEntry, ...]
    parameters: Parameters
    table: dict[str, Any] = field(default_factory=dict)
    oracle: dict[str, Any] = field(default_factory=dict)
    oracles: dict[str, Any] = field(default_factory=lambda: {"oracles": [], "skipped": {}})
    survey: dict[str, Any] | None = None
    cheap_signals: CheapSignals | None = None
    signal_ranking: SignalRanking | None = None  # None: the file predates it
    ceiling: dict[str, Any] | None = None  # None: the file predates it
    timings_seconds: dict[str, float] = field(default_factory=dict)
    created: str = ""
    study: str = STUDY

    def runs_of(self, label: str) -> list[RunEntry]:
        """The runs of the method labelled ``label``, in run order."""
        return [r for r in self.runs if r.method == label]

    def to_json(self) -> dict[str, Any]:
        """The summary as strict JSON values (NaN written as null), in the file's order."""
        out: dict[str, Any] = {"summary_version": SUMMARY_VERSION, "study": self.study}
        for name in ("table_label", "oracle_label", "synthetic_table", "accuracy_label"):
            out[name] = getattr(self, name)
        out |= {"scored": self.scored, "table_real": self.table_real}
        out["table_modelled"] = self.table_modelled
        for name in ("fig3", "true_front", "fig5", "fig6", "comparison"):
            out[name] = getattr(self, name).to_json()
        out["metrics_table"] = [row.to_json() for row in self.metrics_table]
        out["workers_comparison"] = self.workers_comparison.to_json()
        out["runs"] = [run.to_json() for run in self.runs]
        out |= {"table": self.table, "oracle": self.oracle, "oracles": self.oracles}
        out["parameters"] = self.parameters.to_json()
        out["survey"] = self.survey
        if self.cheap_signals is not None:  # absent: no learning curves (as in older files)
            out["cheap_signals"] = self.cheap_signals.to_json()
        if self.signal_ranking is not None:  # absent in older files
            out["signal_ranking"] = self.signal_ranking.to_json()
        if self.ceiling is not None:  # absent in older files
            out["ceiling"] = self.ceiling
        out |= {"timings_seconds": self.timings_seconds, "created": self.created}
        safe: dict[str, Any] = json_safe(out)
        return safe

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StudySummary:
        """A summary read back from ``summary.json`` (version 1 or 2); ValueError for a
        newer version or a file that is no summary of ``reproduce``."""
        version = data.get("summary_version", 1)
        if version not in (1, SUMMARY_VERSION) or "fig3" not in data:
            raise ValueError(
                f"not a summary.json of this nasfilter's reproduce (summary_version "
                f"{version!r}; this version reads 1 to {SUMMARY_VERSION}): rerun reproduce"
            )
        return cls(
            table_label=str(data["table_label"]),
            oracle_label=str(data["oracle_label"]),
            synthetic_table=bool(data["synthetic_table"]),
            # Summaries from before the real table name no accuracy: test accuracy.
            accuracy_label=str(data.get("accuracy_label", "test accuracy after 90 epochs")),
            scored=str(data.get("scored", "test@90")),
            table_real=data.get("table_real"),
            table_modelled=data.get("table_modelled"),
            fig3=Fig3Numbers.from_json(data["fig3"]),
            true_front=TrueFront.from_json(data["true_front"]),
            fig5=FilteringFront.from_json(data["fig5"]),
            fig6=SeedFronts.from_json(data["fig6"]),
            comparison=Comparison.from_json(data["comparison"]),
            metrics_table=tuple(MetricsRow.from_json(r) for r in data["metrics_table"]),
            workers_comparison=WorkersComparison.from_json(data["workers_comparison"]),
            runs=tuple(RunEntry.from_json(r) for r in data["runs"]),
            parameters=Parameters.from_json(data["parameters"]),
            table=dict(data.get("table", {})),
            oracle=dict(data.get("oracle", {})),
            oracles=dict(data.get("oracles", {"oracles": [], "skipped": {}})),
            survey=data.get("survey"),
            cheap_signals=CheapSignals.from_json(data.get("cheap_signals")),
            signal_ranking=SignalRanking.from_json(data.get("signal_ranking")),
            ceiling=data.get("ceiling"),
            timings_seconds=dict(data.get("timings_seconds", {})),
            created=str(data.get("created", "")),
            study=str(data.get("study", STUDY)),
        )
