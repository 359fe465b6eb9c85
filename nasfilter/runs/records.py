"""The run's value types: :class:`RunSpec`, :class:`RunRecord`, :class:`ScoredRun` (and the
:class:`StoredScores` a storage caches).

The bottom of the ``runs`` layer (docs/architecture.md): the runner, storage, results and
experiment modules all import these types, and this module imports none of them. It imports
the layers below ``runs`` that a spec is made of (the problem's budget, the searcher and
filter registries, the table names), never anything above.

- :class:`RunSpec`: everything that defines a run except its seed, as strings (storable).
- :class:`RunRecord`: what a run produced (events, why it stopped, the searcher's and
  filter's parameters); what the runner returns and a storage stores. Every summary number
  is a property computed from the events by :func:`nasfilter.runs.run_summary.run_summary`.
- :class:`ScoredRun`: a record with the metrics and curves :mod:`nasfilter.runs.results`
  computed from its events.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import numbers
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.fidelity import CHARGINGS
from nasfilter.bench.lookup import check_table_argument, table_name
from nasfilter.bench.proxy import DEFAULT_ORACLE
from nasfilter.checks import check_positive_int, check_workers
from nasfilter.defaults import DEFAULT_BUDGET, DEFAULT_TICKS
from nasfilter.filters import Filter, make_filter
from nasfilter.registry import resolve_plugin
from nasfilter.runs.run_summary import run_summary
from nasfilter.searchers import Searcher, make_searcher
from nasfilter.sim.clock import BUDGET_CLOCKS
from nasfilter.sim.problem import DEFAULT_PROXY_COST, EVALUATE, Budget

DEFAULT_MAX_IDLE = 10_000  # consecutive proposals without an evaluation before "stalled"
# Fields left out of RunSpec.key() at their default, so keys written before they existed
# still name the same runs.
_KEY_DEFAULTS = {"workers": 1, "budget_clock": "worker", "charging": "retrain"}

_DEFAULT_BUDGET = Budget(DEFAULT_BUDGET)  # the study's: worker-seconds, no evaluation cap

SearcherArg = str | Searcher | Callable[[], Searcher]
FilterArg = str | Filter | Callable[[], Filter]


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines a run except its seed. Strings only, so it can be stored.

    Attributes:
        searcher: ``NAME[key=value,...]``, a plugin path ``module:Class[...]``, or an
            in-process :class:`~nasfilter.searchers.Searcher` instance or factory (a
            zero-argument callable returning one): it is then named
            ``module:Class[params]`` and each run gets a fresh copy (with ``jobs > 1`` it
            must be picklable: a module-level class or function).
        filter: the same for a filter; ``"none"`` evaluates every proposal.
        dataset: the dataset name.
        budget: the run's :class:`~nasfilter.sim.clock.Budget`: simulated seconds (> 0),
            the clock they count (``"worker"``: worker-seconds, all workers' charged
            seconds together, the same compute for every K; ``"wall"``: simulated
            wall-clock seconds) and an optional cap on evaluations. A number is
            ``Budget(number)``, worker-seconds.
        proxy_cost: simulated seconds per proxy query (>= 0).
        table: a table's name (``"real"``, the default; ``"synthetic"``, the embedded
            surrogate) or the path of a table converted with ``nasfilter convert``; None
            means ``"real"``.
        oracle: the proxy backend ("calibrated", the default; "roofline", the plain
            baseline; or a measured one with ``oracle_cache``).
        device: the device of the oracle (calibrated, roofline: a device spec name).
        oracle_cache: a measurement cache or exported table for measured backends.
        max_idle: proposals in a row without an evaluation before a run stops "stalled".
        n_ticks: points of each metric curve over simulated wall-clock time, up to
            ``budget`` seconds.
        workers: simulated parallel workers K (1 = one evaluation at a time).
        budget_clock: the older spelling of the budget's clock, with a number ``budget``
            (``budget=S, budget_clock="wall"`` is ``budget=Budget(S, clock="wall")``);
            read back, it is ``budget.clock``.
        charging: how evaluations at a fidelity below the full one are charged
            (``nasfilter.bench.fidelity.CHARGINGS``): ``"retrain"`` from scratch (NATS-Bench's) or
            ``"resume"`` from the last epoch trained (:meth:`Problem.start_at_fidelity`).
    """

    searcher: str
    filter: str = "none"
    dataset: str = "cifar10"
    budget: Budget = _DEFAULT_BUDGET
    proxy_cost: float = DEFAULT_PROXY_COST
    table: str | None = None
    oracle: str = DEFAULT_ORACLE
    device: str | None = "v100"
    oracle_cache: str | None = None
    max_idle: int = DEFAULT_MAX_IDLE
    n_ticks: int = DEFAULT_TICKS
    workers: int = 1
    budget_clock: InitVar[str | None] = None  # the older spelling: the clock of a number budget
    charging: str = "retrain"
    # In-process plugins (not stored, not compared: the spec strings name them).
    searcher_factory: Callable[[], Searcher] | None = field(default=None, compare=False, repr=False)
    filter_factory: Callable[[], Filter] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self, budget_clock: str | None) -> None:
        searcher, s_factory = resolve_plugin(self.searcher, Searcher, "searcher")
        filt, f_factory = resolve_plugin(self.filter, Filter, "filter")
        object.__setattr__(self, "searcher", searcher)
        object.__setattr__(self, "filter", filt)
        object.__setattr__(self, "searcher_factory", s_factory or self.searcher_factory)
        object.__setattr__(self, "filter_factory", f_factory or self.filter_factory)
        object.__setattr__(self, "dataset", get_dataset(self.dataset).name)
        if budget_clock is not None and budget_clock not in BUDGET_CLOCKS:
            raise ValueError(f"budget_clock must be one of {BUDGET_CLOCKS}, got {budget_clock!r}")
        real = isinstance(self.budget, numbers.Real) and not isinstance(self.budget, bool)
        budget = float(self.budget) if real else self.budget  # numpy numbers too
        object.__setattr__(self, "budget", Budget.of(budget, budget_clock))  # raises for <= 0
        if (
            isinstance(self.proxy_cost, bool)
            or not isinstance(self.proxy_cost, numbers.Real)
            or not (math.isfinite(self.proxy_cost) and self.proxy_cost >= 0)
        ):
            raise ValueError(f"proxy_cost must be finite seconds >= 0, got {self.proxy_cost!r}")
        object.__setattr__(self, "proxy_cost", float(self.proxy_cost))
        check_table_argument(self.table)
        named = table_name(self.table)  # None (the default) names the real table
        if named is None:
            named = str(Path(str(self.table)).resolve())
        object.__setattr__(self, "table", named)
        if self.oracle_cache is not None:
            object.__setattr__(self, "oracle_cache", str(Path(self.oracle_cache).resolve()))
        for name in ("max_idle", "n_ticks"):
            value = getattr(self, name)
            object.__setattr__(self, name, check_positive_int(value, name))  # numpy too
        object.__setattr__(self, "workers", check_workers(self.workers))
        if self.charging not in CHARGINGS:
            raise ValueError(
                f"charging must be one of {list(CHARGINGS)} (how evaluations at a fidelity "
                f"are charged: retrain from scratch, or resume), got {self.charging!r}"
            )

    def key(self) -> str:
        """A canonical JSON text of the spec: equal keys mean the same runs. The budget is
        written as before the Budget type (``budget``: seconds, ``budget_clock``; and
        ``max_evaluations`` when capped), so stored keys name the same runs."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.compare}
        budget = fields.pop("budget")
        fields.update(budget=float(budget.seconds), budget_clock=budget.clock)
        if budget.max_evaluations is not None:
            fields["max_evaluations"] = budget.max_evaluations
        for name, default in _KEY_DEFAULTS.items():
            if fields[name] == default:
                del fields[name]
        return json.dumps(fields, sort_keys=True)

    @classmethod
    def from_key(cls, key: str) -> RunSpec:
        """The spec whose :meth:`key` is ``key``.

        A key stored with ``"table": null`` predates the named tables, when no table meant
        the synthetic surrogate; it reads back as ``"synthetic"``."""
        fields = json.loads(key)
        if "table" in fields and fields["table"] is None:
            fields["table"] = "synthetic"
        if "budget" in fields:  # seconds, clock and cap, as key() writes them
            fields["budget"] = Budget(
                fields.pop("budget"),
                fields.pop("max_evaluations", None),
                fields.pop("budget_clock", "worker"),
            )
        return cls(**fields)

    @classmethod
    def of(cls, searcher: SearcherArg, filter: FilterArg = "none", **fields: Any) -> RunSpec:
        """A spec whose searcher and filter may be in-process plugins (instances or
        factories) as well as spec strings; ``fields`` as the constructor's."""
        return cls(searcher, filter, **fields)  # type: ignore[arg-type]

    def make_budget(self) -> Budget:
        """The :class:`~nasfilter.sim.clock.Budget` of a run of this spec (:attr:`budget`;
        kept for older callers)."""
        return self.budget

    def make_searcher(self) -> Searcher:
        """A fresh searcher of this spec (from its factory, or its spec string)."""
        if self.searcher_factory is not None:
            return self.searcher_factory()
        return make_searcher(self.searcher)

    def make_filter(self) -> Filter:
        """A fresh filter of this spec (from its factory, or its spec string)."""
        if self.filter_factory is not None:
            return self.filter_factory()
        return make_filter(self.filter)

    def validate(self) -> None:
        """Build the searcher and filter once, so bad names and parameters fail now."""
        self.make_searcher()
        self.make_filter()

    @property
    def label(self) -> str:
        label = self.searcher if self.filter == "none" else f"{self.searcher} | {self.filter}"
        if self.charging != "retrain":
            label = f"{label} [{self.charging}]"
        return label if self.workers == 1 else f"{label} (K={self.workers})"


# Read back, the older ``budget_clock`` is the budget's clock (set after the class: the
# name is also the constructor's InitVar, whose default the dataclass reads from the class).
_CLOCK = property(lambda self: self.budget.clock, doc="The clock the budget counts.")
setattr(RunSpec, "budget_clock", _CLOCK)  # noqa: B010 (mypy knows the name as the InitVar)


RUN_INFO = ("searcher_config", "filter_config", "wall_seconds")  # what info always holds


@dataclass(frozen=True)
class RunRecord:
    """What one run produced: the runner's product and what a storage stores. Made
    complete by whoever makes it (the runner, a storage reading it back) and never patched
    afterwards (frozen; a copy with other fields is ``dataclasses.replace``).

    Attributes:
        spec, seed: what ran (None for a run made by :func:`~nasfilter.runs.runner.run_search`
            outside an experiment: it knows no spec, and its seed may be a SeedSequence).
        status: why it stopped (:data:`nasfilter.runs.runner.STATUSES`).
        events: the event columns (:data:`nasfilter.sim.problem.EVENT_COLUMNS`), arrays of
            shape (n_events,); ``{}`` (no columns) for a record a storage listed without
            them.
        info: ``searcher_config``, ``filter_config``, ``wall_seconds`` (real seconds, not
            part of any result), ``unlogged`` when the trace left events out past
            ``Problem.trace_limit`` (:attr:`~nasfilter.sim.problem.Problem.unlogged`), and
            ``zerocost_proxies`` when it read any: the names of the ``proxy`` codes.
        workers: simulated workers K.
        run_id, table_label, oracle_label, table_id, oracle_id: set by the storage that
            holds it (ids, and the provenance labels and content ids of its inputs).

    The counters (``n_evaluations``, ``clock``, ``best_index``, ...) are properties: the
    fields of :func:`nasfilter.runs.run_summary.run_summary` of the events, the one place they are
    computed.
    """

    spec: RunSpec | None
    seed: int | None
    status: str
    events: dict[str, np.ndarray] = field(repr=False)
    info: dict[str, Any] = field(default_factory=dict)
    workers: int = 1
    run_id: int | None = None
    table_label: str = ""
    oracle_label: str = ""
    table_id: str = ""
    oracle_id: str = ""

    def stored_info(self) -> dict[str, Any]:
        """``info`` as a storage keeps it (JSON-safe: :data:`RUN_INFO`, then ``unlogged``
        and ``zerocost_proxies`` when present)."""
        keys = RUN_INFO + tuple(k for k in ("unlogged", "zerocost_proxies") if k in self.info)
        return json.loads(json.dumps({k: self.info.get(k) for k in keys}, default=str))

    def require_events(self) -> dict[str, np.ndarray]:
        """The events; ValueError for a record listed without them."""
        if not self.events:
            raise ValueError(f"run {self.run_id} was read without its events")
        return self.events

    @functools.cached_property
    def summary(self) -> dict[str, Any]:
        """:func:`nasfilter.runs.run_summary.run_summary` of the events (computed once)."""
        return run_summary(self.require_events(), self.info.get("unlogged"))

    @property
    def searcher_config(self) -> dict[str, Any]:
        return dict(self.info.get("searcher_config") or {})

    @property
    def filter_config(self) -> dict[str, Any]:
        return dict(self.info.get("filter_config") or {})

    @property
    def wall_seconds(self) -> float:
        """Real seconds the run took (not part of any result)."""
        return float(self.info.get("wall_seconds", math.nan))

    @property
    def unlogged(self) -> dict[str, float]:
        """What the trace left out (:attr:`~nasfilter.sim.problem.Problem.unlogged`); {} if
        nothing."""
        return dict(self.info.get("unlogged") or {})

    @property
    def n_unlogged(self) -> int:
        """Events the trace left out past ``Problem.trace_limit``; 0 for ordinary runs."""
        u = self.unlogged
        return int(u.get("evaluate", 0) + u.get("proxy", 0) + u.get("drop", 0))

    @property
    def evaluated(self) -> np.ndarray:
        """Indices of the evaluations in order, with repeats, int64 (n_evaluations,)."""
        events = self.require_events()
        return events["index"][events["kind"] == EVALUATE]

    # The counters, all from the events (run_summary).
    @property
    def clock(self) -> float:
        """Simulated wall-clock seconds when the run ended."""
        return float(self.summary["clock"])

    @property
    def worker_seconds(self) -> float:
        """Simulated seconds charged, all workers together (may exceed the budget by the
        evaluations that were running); with one worker it equals ``clock``."""
        return float(self.summary["worker_seconds"])

    @property
    def evaluation_seconds(self) -> float:
        return float(self.summary["evaluation_seconds"])

    @property
    def proxy_seconds(self) -> float:
        return float(self.summary["proxy_seconds"])

    @property
    def n_evaluations(self) -> int:
        return int(self.summary["n_evaluations"])

    @property
    def n_proxy(self) -> int:
        return int(self.summary["n_proxy"])

    @property
    def n_asked(self) -> int:
        """Trials asked for."""
        return int(self.summary["n_asked"])

    @property
    def n_dropped(self) -> int:
        """Trials the filter dropped."""
        return int(self.summary["n_dropped"])

    @property
    def best_index(self) -> int:
        """The selected architecture (the searcher's last recommendation, else the
        evaluated one with the highest validation accuracy, first on ties); -1 if none."""
        return int(self.summary["best_index"])

    @property
    def best_valid_acc(self) -> float:
        """The highest validation accuracy (percent) seen for ``best_index``."""
        return float(self.summary["best_valid_acc"])


@dataclass(frozen=True)
class StoredScores:
    """Scores cached for a run by :mod:`nasfilter.runs.results`, with the metrics version."""

    version: int
    summary: dict[str, Any]
    metrics: dict[str, float]
    curves: dict[str, np.ndarray]


@dataclass
class ScoredRun:
    """A :class:`RunRecord` with what :mod:`nasfilter.runs.results` computed from its events.

    Attributes:
        record: the run.
        version: the metrics version the scores were computed by.
        summary: :func:`nasfilter.runs.run_summary.run_summary` of the events; ``metrics``,
            ``curves``: :func:`nasfilter.runs.results.score_events`.
        computed: True when the scores were computed now (no cache held them).
    """

    record: RunRecord
    version: int
    summary: dict[str, Any]
    metrics: dict[str, float]
    curves: dict[str, np.ndarray]
    computed: bool = True

    @property
    def spec(self) -> RunSpec:
        assert self.record.spec is not None, "a scored run has a spec"
        return self.record.spec

    @property
    def seed(self) -> int:
        assert self.record.seed is not None, "a scored run has a seed"
        return self.record.seed

    @property
    def status(self) -> str:
        return self.record.status

    @property
    def info(self) -> dict[str, Any]:
        return self.record.info

    @property
    def events(self) -> dict[str, np.ndarray]:
        return self.record.events

    @property
    def run_id(self) -> int | None:
        return self.record.run_id

    @property
    def table_label(self) -> str:
        return self.record.table_label

    @property
    def oracle_label(self) -> str:
        return self.record.oracle_label

    @property
    def table_id(self) -> str:
        return self.record.table_id

    @property
    def oracle_id(self) -> str:
        return self.record.oracle_id

    def scores(self) -> StoredScores:
        """The scores as a storage caches them."""
        return StoredScores(self.version, self.summary, self.metrics, self.curves)

    def row(self) -> dict[str, Any]:
        """A flat dict: the spec's fields, seed, status, summary and metrics."""
        spec = self.spec
        fields: tuple[str, ...] = ("searcher", "filter", "dataset")
        fields += ("workers", "proxy_cost", "max_idle", "n_ticks", "oracle", "device")
        return {
            "run_id": self.run_id,
            "spec_key": spec.key(),
            **{name: getattr(spec, name) for name in fields[:3]},
            "budget": float(spec.budget.seconds),
            "budget_clock": spec.budget.clock,
            **{name: getattr(spec, name) for name in fields[3:]},
            "seed": self.seed,
            "status": self.status,
            "table_label": self.table_label,
            "oracle_label": self.oracle_label,
            "table_id": self.table_id,
            "oracle_id": self.oracle_id,
            **self.summary,
            **self.metrics,
        }

    def same_results(self, other: ScoredRun) -> bool:
        """Equal spec, seed, status, configs, summary, metrics, curves and events (real
        seconds aside)."""
        a, b = self.record, other.record

        def configs(r: RunRecord) -> dict[str, Any]:
            return {k: v for k, v in r.stored_info().items() if k != "wall_seconds"}

        return (
            (a.spec, a.seed, a.status) == (b.spec, b.seed, b.status)
            and configs(a) == configs(b)
            and nan_equal(self.summary, other.summary)
            and nan_equal(self.metrics, other.metrics)
            and arrays_equal(self.curves, other.curves)
            and arrays_equal(a.require_events(), b.require_events())
        )


def arrays_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    """Same keys and equal arrays (NaN equal to NaN in float columns)."""
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") for k in a
    )


def nan_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Same keys and equal values, a float NaN equal to NaN."""
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k]))
        for k in a
    )


def record_and_scores(
    run: RunRecord | ScoredRun, scores: StoredScores | None = None
) -> tuple[RunRecord, StoredScores | None]:
    """(the record, the scores to cache) of what a storage's ``add_run`` is given: a
    scored run carries its own scores."""
    if isinstance(run, ScoredRun):
        return run.record, run.scores() if scores is None else scores
    if not isinstance(run, RunRecord):
        raise ValueError(f"add_run takes a RunRecord or a ScoredRun, got {run!r}")
    return run, scores
