"""Experiments across seeds: a grid of searcher x filter (x dataset) x seed, in parallel.

Each (spec, seed) pair runs as a pure function of the two (:func:`run_one`): the table, the
proxy and the searcher and filter are rebuilt from the spec's strings, and every generator
comes from ``np.random.SeedSequence(seed)`` (:func:`nasfilter.runner.seed_streams`). Results
are therefore identical whatever the number of worker processes and whichever worker runs
which pair. With a :class:`~nasfilter.store.Store`, results are written in grid order, one
transaction per run, and pairs already in the store are skipped (resume).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nasfilter.datasets import get_dataset
from nasfilter.fidelity import CHARGINGS
from nasfilter.filters import make_filter
from nasfilter.metrics import FrontReference
from nasfilter.problem import DEFAULT_PROXY_COST, Budget, Problem
from nasfilter.proxy import DEFAULT_ORACLE, ProxyTable
from nasfilter.registry import format_spec, parse_spec
from nasfilter.runner import DEFAULT_MAX_IDLE, check_workers, make_problem, run_search
from nasfilter.searchers import make_searcher
from nasfilter.table import ARRAY_COLUMNS, BenchmarkTable
from nasfilter.tables import load_table, table_name

if TYPE_CHECKING:  # pragma: no cover
    from nasfilter.storage import Storage

DEFAULT_BUDGET = 110_000.0  # simulated seconds, the study's budget (docs/facts.md §4)
DEFAULT_TICKS = 100
BUDGET_CLOCKS = ("worker", "wall")  # what RunSpec.budget counts
# Fields left out of RunSpec.key() at their default, so keys written before they existed
# still name the same runs.
_KEY_DEFAULTS = {"workers": 1, "budget_clock": "worker", "charging": "retrain"}


def _canonical(spec: str) -> str:
    name, params = parse_spec(spec)
    return format_spec(name, params)


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines a run except its seed. Strings only, so it can be stored.

    Attributes:
        searcher: ``NAME[key=value,...]`` or a plugin path ``module:Class[...]``.
        filter: the same for a filter; ``"none"`` evaluates every proposal.
        dataset: the dataset name.
        budget: simulated seconds (> 0), counted on the clock ``budget_clock`` names.
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
        budget_clock: ``"worker"``: the budget is worker-seconds (all workers' charged
            seconds together; the same compute for every K); ``"wall"``: simulated
            wall-clock seconds.
        charging: how evaluations at a fidelity below the full one are charged
            (``nasfilter.fidelity.CHARGINGS``): ``"retrain"`` from scratch (NATS-Bench's) or
            ``"resume"`` from the last epoch trained (:meth:`Problem.start_at_fidelity`).
    """

    searcher: str
    filter: str = "none"
    dataset: str = "cifar10"
    budget: float = DEFAULT_BUDGET
    proxy_cost: float = DEFAULT_PROXY_COST
    table: str | None = None
    oracle: str = DEFAULT_ORACLE
    device: str | None = "v100"
    oracle_cache: str | None = None
    max_idle: int = DEFAULT_MAX_IDLE
    n_ticks: int = DEFAULT_TICKS
    workers: int = 1
    budget_clock: str = "worker"
    charging: str = "retrain"

    def __post_init__(self) -> None:
        object.__setattr__(self, "searcher", _canonical(self.searcher))
        object.__setattr__(self, "filter", _canonical(self.filter))
        object.__setattr__(self, "dataset", get_dataset(self.dataset).name)
        if isinstance(self.budget, bool) or not isinstance(self.budget, (int, float)):
            raise ValueError(f"budget must be a number of seconds, got {self.budget!r}")
        Budget(float(self.budget))  # raises for <= 0, NaN, inf
        object.__setattr__(self, "budget", float(self.budget))
        if (
            isinstance(self.proxy_cost, bool)
            or not isinstance(self.proxy_cost, (int, float))
            or not (math.isfinite(self.proxy_cost) and self.proxy_cost >= 0)
        ):
            raise ValueError(f"proxy_cost must be finite seconds >= 0, got {self.proxy_cost!r}")
        object.__setattr__(self, "proxy_cost", float(self.proxy_cost))
        named = table_name(self.table)  # None (the default) names the real table
        if named is None:
            named = str(Path(str(self.table)).resolve())
        object.__setattr__(self, "table", named)
        if self.oracle_cache is not None:
            object.__setattr__(self, "oracle_cache", str(Path(self.oracle_cache).resolve()))
        for name in ("max_idle", "n_ticks"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        object.__setattr__(self, "workers", check_workers(self.workers))
        if self.charging not in CHARGINGS:
            raise ValueError(
                f"charging must be one of {list(CHARGINGS)} (how evaluations at a fidelity "
                f"are charged: retrain from scratch, or resume), got {self.charging!r}"
            )
        if self.budget_clock not in BUDGET_CLOCKS:
            raise ValueError(
                f"budget_clock must be one of {BUDGET_CLOCKS}, got {self.budget_clock!r}"
            )

    def key(self) -> str:
        """A canonical JSON text of the spec: equal keys mean the same runs."""
        fields = asdict(self)
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
        return cls(**fields)

    def make_budget(self) -> Budget:
        """The :class:`~nasfilter.problem.Budget` of a run of this spec."""
        if self.budget_clock == "wall":
            return Budget(None, wall_seconds=self.budget)
        return Budget(self.budget)

    def validate(self) -> None:
        """Build the searcher and filter once, so bad names and parameters fail now."""
        make_searcher(self.searcher)
        make_filter(self.filter)

    @property
    def label(self) -> str:
        label = self.searcher if self.filter == "none" else f"{self.searcher} | {self.filter}"
        if self.charging != "retrain":
            label = f"{label} [{self.charging}]"
        return label if self.workers == 1 else f"{label} (K={self.workers})"


def grid(
    searchers: Sequence[str],
    filters: Sequence[str] = ("none",),
    datasets: Sequence[str] = ("cifar10",),
    **common: Any,
) -> list[RunSpec]:
    """Every searcher x filter x dataset as a :class:`RunSpec` (``common`` fills the rest).

    Raises ValueError, before anything runs, for an empty list, an unknown name or a bad
    parameter.
    """
    for what, values in (("searchers", searchers), ("filters", filters), ("datasets", datasets)):
        if isinstance(values, str) or not values:
            raise ValueError(f"{what} must be a non-empty list, got {values!r}")
    specs = [
        RunSpec(searcher=s, filter=f, dataset=d, **common)
        for d in datasets
        for s in searchers
        for f in filters
    ]
    for spec in specs:
        spec.validate()
    return list(dict.fromkeys(specs))  # drop duplicates, keep order


def check_seeds(seeds: Iterable[int]) -> list[int]:
    """``seeds`` as a list of distinct integers in [0, 2**63) (what the results database
    holds); ValueError if empty or bad."""
    out = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 0 <= s < 2**63:
            raise ValueError(f"seeds must be integers >= 0 and < 2**63, got {s!r}")
        out.append(int(s))
    if not out:
        raise ValueError("the seed list is empty; give at least one seed, e.g. 0-8")
    return list(dict.fromkeys(out))


# ------------------------------------------------------------------- inputs, per process
FileIdentity = tuple[str, int, int] | None  # (resolved path, size, mtime in ns), or None


def file_identity(path: str | os.PathLike[str] | None) -> FileIdentity:
    """(resolved path, size in bytes, mtime in ns) of a file, or None for no path.

    The per-process caches key on this, so a table rewritten in place is loaded afresh."""
    if path is None:
        return None
    resolved = Path(path).resolve()
    try:
        st = resolved.stat()
    except OSError:
        return (str(resolved), -1, -1)  # the loader reports the missing file
    return (str(resolved), st.st_size, st.st_mtime_ns)


def table_identity(table: str | os.PathLike[str] | None) -> FileIdentity:
    """:func:`file_identity` of a table file; a table's name (None: the default) is its own
    identity, ``(name, 0, 0)``."""
    named = table_name(table)
    return (named, 0, 0) if named is not None else file_identity(table)


@functools.lru_cache(maxsize=16)
def _table_at(identity: FileIdentity, dataset: str) -> BenchmarkTable:
    return load_table(None if identity is None else identity[0], dataset)


def cached_table(path: str | os.PathLike[str] | None, dataset: str) -> BenchmarkTable:
    """:func:`~nasfilter.table.load_table`, cached per process by file identity."""
    return _table_at(table_identity(path), dataset)


def load_proxy(
    oracle: str = DEFAULT_ORACLE,
    device: str | None = "v100",
    dataset: str = "cifar10",
    cache: str | None = None,
) -> ProxyTable:
    """The proxy table of an oracle backend (:func:`nasfilter.oracle.proxy_table`)."""
    from nasfilter.oracle import proxy_table

    return proxy_table(backend=oracle, device=device, dataset=dataset, cache=cache)


@functools.lru_cache(maxsize=16)
def _proxy_at(oracle: str, device: str | None, dataset: str, cache: FileIdentity) -> ProxyTable:
    return load_proxy(oracle, device, dataset, None if cache is None else cache[0])


def cached_proxy(
    oracle: str, device: str | None, dataset: str, cache: str | os.PathLike[str] | None
) -> ProxyTable:
    """:func:`load_proxy`, cached per process by the cache file's identity."""
    return _proxy_at(oracle, device, dataset, file_identity(cache))


@functools.lru_cache(maxsize=16)
def _reference_at(
    table: FileIdentity, dataset: str, oracle: str, device: str | None, cache: FileIdentity
) -> FrontReference:
    return FrontReference.build(
        _table_at(table, dataset), _proxy_at(oracle, device, dataset, cache)
    )


def inputs(spec: RunSpec) -> tuple[BenchmarkTable, ProxyTable, FrontReference]:
    """The table, proxy and front reference of ``spec`` (loaded once per process).

    Raises ValueError for a partial table (a search may propose any architecture) and for
    one without test accuracy for every architecture (the metrics need the true front).
    """
    table_id, cache_id = table_identity(spec.table), file_identity(spec.oracle_cache)
    table = _table_at(table_id, spec.dataset)
    if not table.is_complete:
        raise ValueError(
            f"table {table.label!r} holds {table.n_present} of 32768 architectures; a search "
            "may propose any of them, so it needs a complete table (convert the full archive)"
        )
    missing_test = int(np.count_nonzero(~np.isfinite(table.test_acc)))
    if missing_test:
        raise ValueError(
            f"table {table.label!r} lacks column 'test_acc' (test accuracy after 90 epochs) "
            f"for {missing_test} of 32768 architectures; the metrics need it for the true "
            "front. Convert the full NATS-Bench archive with `nasfilter convert` "
            "(docs/real-archive.md), or omit --table to use the real table"
        )
    proxy = _proxy_at(spec.oracle, spec.device, spec.dataset, cache_id)
    ref = _reference_at(table_id, spec.dataset, spec.oracle, spec.device, cache_id)
    return table, proxy, ref


def content_digest(*arrays: np.ndarray) -> str:
    """SHA-256 (hex) of ``arrays``' shapes, dtypes and bytes: what identifies a table's or
    an oracle's numbers, wherever they were read from."""
    digest = hashlib.sha256()
    for arr in arrays:
        a = np.ascontiguousarray(arr)
        digest.update(f"{a.dtype.str}{a.shape};".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


def provenance(spec: RunSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """(table provenance, oracle provenance) of ``spec``, JSON-serialisable, each with the
    ``sha256`` of its numbers (:func:`content_digest`)."""
    table, proxy, _ = inputs(spec)
    table_prov = asdict(table.provenance) | {
        "label": table.provenance.label,
        "dataset": table.dataset.name,
        "path": spec.table,
        "sha256": content_digest(
            np.asarray(table.seeds), *(getattr(table, c) for c in ARRAY_COLUMNS)
        ),
    }
    oracle_prov = {
        "label": proxy.label,
        **proxy.provenance,
        "sha256": content_digest(proxy.utilization, proxy.throughput),
    }
    return table_prov, json.loads(json.dumps(oracle_prov, default=str))


# ------------------------------------------------------------------------------- one run
@dataclass
class RunRecord:
    """The outcome of one (spec, seed): its events and what :mod:`nasfilter.results`
    computes from them.

    Attributes:
        summary: ``status``, ``searcher_config``, ``filter_config``, ``wall_seconds`` (real
            seconds; what the run records besides events) and
            :func:`nasfilter.results.run_summary` of the events.
        metrics, curves: :func:`nasfilter.results.score_events` of the events.
        events: the event columns (:data:`nasfilter.problem.EVENT_COLUMNS`).
        scores_version: the metrics version of ``summary``/``metrics``/``curves``.
    """

    spec: RunSpec
    seed: int
    summary: dict[str, Any]
    metrics: dict[str, float]
    curves: dict[str, np.ndarray]
    events: dict[str, np.ndarray] = field(repr=False)
    scores_version: int | None = None

    def same_results(self, other: RunRecord) -> bool:
        """Equal spec, seed, summary (wall time aside), metrics, curves and events."""

        def arrays_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
            return a.keys() == b.keys() and all(
                np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") for k in a
            )

        strip = {"wall_seconds"}
        return (
            self.spec == other.spec
            and self.seed == other.seed
            and _nan_equal(
                {k: v for k, v in self.summary.items() if k not in strip},
                {k: v for k, v in other.summary.items() if k not in strip},
            )
            and _nan_equal(self.metrics, other.metrics)
            and arrays_equal(self.curves, other.curves)
            and arrays_equal(self.events, other.events)
        )


def _nan_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k]))
        for k in a
    )


def run_one(
    spec: RunSpec, seed: int, on_progress: Callable[[Problem, int], None] | None = None
) -> RunRecord:
    """Run ``spec`` with ``seed``: a pure function of the two (wall time aside).
    ``on_progress`` is passed to :func:`~nasfilter.runner.run_search`."""
    from nasfilter.results import METRICS_VERSION, score_spec_events

    table, proxy, _ = inputs(spec)
    problem = make_problem(
        table,
        spec.make_budget(),
        seed,
        proxy=proxy,
        proxy_cost=spec.proxy_cost,
        charging=spec.charging,
    )
    result = run_search(
        make_searcher(spec.searcher),
        problem,
        filter=make_filter(spec.filter),
        seed=seed,
        max_idle=spec.max_idle,
        workers=spec.workers,
        on_progress=on_progress,
    )
    unlogged = result.unlogged if result.n_unlogged else None
    summary, metrics, curves = score_spec_events(spec, result.events, unlogged)
    info: dict[str, Any] = {
        "status": result.status,
        "wall_seconds": result.wall_seconds,
        "searcher_config": result.searcher_config,
        "filter_config": result.filter_config,
    }
    if unlogged is not None:  # the trace left events out past Problem.trace_limit
        info["unlogged"] = unlogged
    return RunRecord(spec, seed, info | summary, metrics, curves, result.events, METRICS_VERSION)


def _run_task(task: tuple[RunSpec, int]) -> RunRecord:
    return run_one(*task)


PARENT_POLL_SECONDS = 0.5  # how often a worker checks that its parent is still alive


def _exit_when_orphaned(parent: int, poll: float) -> None:
    """Exit this worker soon after its parent process dies (runs in a daemon thread).

    A worker whose parent was killed (SIGKILL, out of memory) would otherwise block for
    ever writing its result to a pipe it also holds the read end of, and leak.
    """
    while os.getppid() == parent:
        time.sleep(poll)
    os._exit(1)


def _worker_init() -> None:
    # Ctrl-C goes to the whole process group; only the parent handles it, so that it can
    # stop handing out work and leave the database consistent.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(
        target=_exit_when_orphaned,
        args=(os.getppid(), PARENT_POLL_SECONDS),
        name="nasfilter-orphan-watch",
        daemon=True,
    ).start()


class WorkerDied(RuntimeError):
    """A worker process died (killed, or out of memory); completed runs are kept."""


def _records(
    tasks: list[tuple[RunSpec, int]],
    jobs: int,
    on_progress: Callable[[Problem, int], None] | None = None,
) -> Iterator[RunRecord]:
    if jobs == 1 or len(tasks) <= 1:  # in this process, so a run can show its own progress
        for spec, seed in tasks:
            yield run_one(spec, seed, on_progress)
        return
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=min(jobs, len(tasks)), mp_context=context, initializer=_worker_init
    )
    try:
        yield from pool.map(_run_task, tasks, chunksize=1)
    except BrokenProcessPool as exc:
        raise WorkerDied(
            "a worker process died (killed, or out of memory) before finishing its runs"
        ) from exc
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_experiment(
    specs: Sequence[RunSpec],
    seeds: Iterable[int],
    *,
    store: Storage | None = None,
    jobs: int = 1,
    progress: bool = False,
    on_record: Callable[[RunRecord], None] | None = None,
) -> list[RunRecord]:
    """Run every (spec, seed) pair, in grid order; return the records of the runs made now.

    With ``store`` (any :class:`~nasfilter.storage.Storage`), pairs already stored are
    skipped and each new record is written (one transaction) as soon as it and every
    earlier pair are done, so an interrupted experiment resumes where it stopped. ``jobs``
    worker processes (1 = this process) give identical records. ``progress`` shows a
    progress bar on stderr.
    """
    specs = list(specs)
    if not specs:
        raise ValueError("the experiment has no run specs; give at least one searcher")
    for spec in specs:
        if not isinstance(spec, RunSpec):
            raise ValueError(f"specs must be RunSpec objects, got {spec!r}")
        spec.validate()
    seed_list = check_seeds(seeds)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    tasks = [(spec, seed) for spec in specs for seed in seed_list]
    if store is not None:
        for spec in dict.fromkeys(specs):
            store.add_spec(spec, *provenance(spec))
        done = store.completed()
        tasks = [(spec, seed) for spec, seed in tasks if (spec.key(), seed) not in done]
    from tqdm import tqdm

    records = []
    inner: list[Any] = []  # the bar of the current run, made when a run is long enough

    def show(problem: Problem, n_distinct: int) -> None:
        budget = problem.budget  # progress in the clock the budget limits (worker first)
        wall = budget.seconds is None
        total = budget.horizon
        if not inner:
            inner.append(tqdm(total=total, unit="s", desc="run", leave=False))
        inner[0].n = min(problem.clock if wall else problem.worker_seconds, total)
        inner[0].set_postfix_str(
            f"{problem.n_evaluations:,} evaluations of {n_distinct:,} architectures",
            refresh=True,
        )

    with tqdm(total=len(tasks), disable=not progress, unit="run", desc="runs", leave=False) as bar:
        try:
            for record in _records(tasks, jobs, show if progress else None):
                if inner:
                    inner.pop().close()
                if store is not None:
                    store.add_run(record)
                records.append(record)
                if on_record is not None:
                    on_record(record)
                bar.update(1)
        except WorkerDied as exc:
            hint = (
                f"the {len(records)} runs completed so far are saved in {store.describe()}; "
                "run the same command again to resume"
                if store is not None
                else "no results database was given, so nothing was kept; run it again"
            )
            raise WorkerDied(f"{exc}; {hint}") from exc.__cause__
        finally:
            for open_bar in inner:
                open_bar.close()
    return records


def default_jobs() -> int:
    """Worker processes to use by default: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)
