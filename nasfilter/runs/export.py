"""A storage's runs, events and provenance as rows, a pandas DataFrame or a CSV file; and
the per-method summary of scored runs, mean ± standard error over seeds, as a DataFrame
(:func:`summarize`).

The "runs" rows are scored runs (:func:`nasfilter.runs.results.load_results`), so this module
sits above results; the storage itself knows nothing of them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.extras import require
from nasfilter.files import atomic_write, check_not_input, write_csv
from nasfilter.runs.inputs import spec_table
from nasfilter.runs.metrics import METRICS
from nasfilter.runs.records import ScoredRun
from nasfilter.runs.results import GROUP_FIELDS, group_rows, load_results
from nasfilter.runs.storage.base import Storage
from nasfilter.runs.storage.sqlite_store import Store

EXPORTS = ("runs", "events", "provenance")


def rows(storage: Storage, what: str = "runs", trust_plugins: bool = False) -> list[dict[str, Any]]:
    """Rows of ``what``: "runs" (one per run, with its summary and metrics; ``trust_plugins``
    as in :func:`~nasfilter.runs.results.load_results`), "events" (one row per event, with
    run_id, and ``proxy_name``: the zero-cost proxy a ``zerocost`` event read, "" for the
    other kinds and for runs stored before the ``proxy`` column) or "provenance"."""
    if what == "runs":
        return [r.row() for r in load_results(storage, trust_plugins=trust_plugins)]
    if what == "provenance":
        return [{**r, "data": json.dumps(r["data"], sort_keys=True)} for r in storage.provenance()]
    if what == "events":
        out: list[dict[str, Any]] = []
        for run in storage.stored_runs():
            assert run.run_id is not None
            cols = storage.events(run.run_id)
            known = list(run.info.get("zerocost_proxies") or [])
            cols["proxy_name"] = np.array(  # the zero-cost proxy a zerocost event read, else ""
                [known[c] if 0 <= c < len(known) else "" for c in cols["proxy"].tolist()]
            )
            names = list(cols)
            lists = [cols[k].tolist() for k in names]
            out.extend(
                {"run_id": run.run_id, **dict(zip(names, vals, strict=True))}
                for vals in zip(*lists, strict=True)
            )
        return out
    raise ValueError(f"unknown export {what!r}; choose one of {', '.join(EXPORTS)}")


def to_pandas(storage: Storage, what: str = "runs", trust_plugins: bool = False) -> Any:
    """A pandas DataFrame of ``what`` (see :func:`rows`); needs the pandas extra."""
    require("pandas", "to_pandas")
    import pandas as pd

    return pd.DataFrame(rows(storage, what, trust_plugins))


def export_csv(
    storage: Storage,
    path: str | os.PathLike[str],
    what: str = "runs",
    trust_plugins: bool = False,
) -> Path:
    """Write ``what`` (see :func:`rows`) as CSV with a header row; return the path.
    ValueError when ``path`` is the storage's database (or a file SQLite keeps beside it)."""
    target = Path(path)
    if isinstance(storage, Store):
        check_not_input(target, "export_csv", {"the database": storage.path}, ("the database",))
    table = rows(storage, what, trust_plugins=trust_plugins)
    if table:
        write_csv(target, table)
    else:  # nothing to export: an empty file
        with atomic_write(target, "w"):
            pass
    return target


# ------------------------------------------------------------------ the summary
# What summarize can average: the metrics and the numeric counts and seconds of a run.
SUMMARY_METRICS = (
    *METRICS,
    "n_evaluations",
    "clock",
    "worker_seconds",
    "evaluation_seconds",
    "proxy_seconds",
    "n_proxy",
    "n_asked",
    "n_dropped",
    "best_valid_acc",
)
DEFAULT_SUMMARY = ("hv_ratio", "best_acc", "n_evaluations", "clock")


def _check_summary_args(
    runs: Sequence[ScoredRun], metrics: Sequence[str], at: float | None
) -> list[str]:
    """The metrics to average; ValueError naming a bad one, an empty ``runs`` or a bad
    ``at``."""
    if not runs:
        raise ValueError("summarize needs at least one scored run, got none")
    for run in runs:
        if not isinstance(run, ScoredRun) or run.spec is None:
            raise ValueError(
                f"summarize needs scored runs of a RunSpec (run_experiment, load_results), "
                f"got {type(run).__name__}"
            )
    if at is not None and (
        isinstance(at, bool) or not isinstance(at, (int, float, np.number)) or not np.isfinite(at)
    ):
        raise ValueError(f"at must be finite simulated seconds or None, got {at!r}")
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    known = SUMMARY_METRICS if at is None else ("clock", "n_evaluations", *METRICS)
    unknown = [m for m in names if m not in known]
    if unknown or not names:
        what = f"unknown metric(s) {unknown!r}" if unknown else "no metric given"
        when = "" if at is None else " with at= (the curves over simulated time)"
        raise ValueError(f"{what}; known{when}: {', '.join(known)}")
    return names


def _row_at(run: ScoredRun, at: float | None) -> dict[str, Any]:
    """``run.row()``; with ``at``, its curves' values at the last tick at or before ``at``
    simulated seconds (ValueError outside the ticks). A run kept in no storage has no
    table or oracle labels: its spec's names stand for them."""
    row = run.row()
    spec = run.spec
    assert spec is not None
    row["method"] = spec.label
    row["table_id"] = row["table_id"] or f"table:{spec.table}"
    row["table_label"] = row["table_label"] or str(spec.table)
    row["oracle_label"] = row["oracle_label"] or f"{spec.oracle} ({spec.device})"
    if at is None:
        return row
    clock = np.asarray(run.curves["clock"], dtype=np.float64)
    k = int(np.searchsorted(clock, at, side="right")) - 1
    if not (0 <= k and at <= clock[-1]):
        raise ValueError(
            f"at={at!r} s is outside the ticks of run {spec.label!r} seed {run.seed}: "
            f"choose simulated seconds in [{clock[0]:g}, {clock[-1]:g}]"
        )
    for name, curve in run.curves.items():
        row[name] = float(curve[k])
    return row


def summarize(
    runs: Sequence[ScoredRun],
    metrics: Sequence[str] = DEFAULT_SUMMARY,
    at: float | None = None,
) -> Any:
    """A pandas DataFrame with one row per method and comparison, mean ± standard error
    over seeds (needs the pandas extra).

    ``runs``: scored runs (:func:`~nasfilter.runs.experiment.run_experiment`,
    :func:`~nasfilter.runs.results.load_results`), grouped as ``nasfilter compare`` groups them
    (:func:`~nasfilter.runs.results.group_rows`: searcher, filter, dataset, budget, K, table,
    oracle, ...), each seed once. ``metrics``: of :data:`SUMMARY_METRICS` (final values;
    seconds are simulated). ``at``: simulated seconds; the curves' values at the last tick
    at or before it instead (``clock`` is then that tick).

    Columns: ``method`` (the spec's label), the group fields, ``accuracy`` (what
    ``best_acc`` and ``selected_acc`` are: real or not, split, epochs, seed), ``at``, ``n_seeds``,
    ``n_empty`` (runs that evaluated nothing), then per metric ``{metric}_mean``,
    ``{metric}_se`` (sample standard deviation / sqrt(n); NaN for one seed) and
    ``{metric}_n`` (the seeds with a value), from :func:`~nasfilter.runs.meanse.mean_se`."""
    names = _check_summary_args(runs, metrics, at)
    require("pandas", "nasfilter.summarize")
    import pandas as pd

    words: dict[tuple[str | None, str], str] = {}
    entries = group_rows([_row_at(r, at) for r in runs], names, ("method", *GROUP_FIELDS))
    out = []
    for run, e in zip(_first_of_each(runs, entries), entries, strict=True):
        row = {k: e[k] for k in ("method", *GROUP_FIELDS)}
        row |= {"accuracy": _accuracy(run, words), "at": at}
        row |= {"n_seeds": e["n_seeds"], "n_empty": e["n_empty"]}
        for m in names:
            row |= {f"{m}_mean": e[m].mean, f"{m}_se": e[m].se, f"{m}_n": e[m].n}
        out.append(row)
    return pd.DataFrame(out)


def _accuracy(run: ScoredRun, known: dict[tuple[str | None, str], str]) -> str:
    """What ``run``'s scored accuracy is (split, epochs, seed: the table's
    :attr:`~nasfilter.bench.table.BenchmarkTable.score_label`, as a run's front names it), from
    its spec's table (loaded once per process); ``known`` caches it."""
    spec = run.spec
    assert spec is not None
    key = (spec.table, spec.dataset)
    if key not in known:
        known[key] = spec_table(spec).score_label
    return known[key]


def _first_of_each(runs: Sequence[ScoredRun], entries: Sequence[dict[str, Any]]) -> list[ScoredRun]:
    """The first run of each group of ``entries`` (in their order)."""
    first: dict[tuple[Any, ...], ScoredRun] = {}
    by = ("method", *GROUP_FIELDS)
    for run in runs:
        row = _row_at(run, None)
        first.setdefault(tuple(row.get(k) for k in by), run)
    return [first[tuple(e[k] for k in by)] for e in entries]
