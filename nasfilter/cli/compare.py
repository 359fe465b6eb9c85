"""``nasfilter compare``: summarize a results database, mean ± standard error over seeds.

Every number comes from :mod:`nasfilter.runs.results`, which scores the stored events, and the
table is the library's (:mod:`nasfilter.study.metrics_table`); with
``--recompute`` the scores are computed afresh from the events and the database's cache is
rewritten (after a metric changed); with ``--ceiling`` each table, oracle and budget's
clairvoyant ceiling of the final metrics (:func:`ceiling_lines`); with ``--score-with`` the
runs scored on the user's own accuracies (:mod:`nasfilter.runs.rescore`).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.tss_real import TSS_TABLES
from nasfilter.cli.args import add_force, check_input_file, check_output_file
from nasfilter.cli.score_with import add_score_with, score_with_files
from nasfilter.files import write_csv
from nasfilter.runs.ceiling import clairvoyant_ceiling
from nasfilter.runs.fronts import front_from_events, run_front
from nasfilter.runs.inputs import RunInputs, inputs
from nasfilter.runs.metrics import accuracy_words
from nasfilter.runs.records import RunSpec
from nasfilter.runs.rescore import Rescoring
from nasfilter.runs.results import (
    METRICS_VERSION,
    UntrustedPluginError,
    load_results,
    oracle_plugin,
)
from nasfilter.runs.run_summary import UNNAMED_PROXY, completed_evaluations, zerocost_by_proxy
from nasfilter.runs.storage.base import input_id
from nasfilter.runs.storage.sqlite_store import Store, StoreError
from nasfilter.study.metrics_table import describe_inputs, format_summary, summarize

JSON_FIELDS = (
    "searcher",
    "filter",
    "seed",
    "dataset",
    "budget",
    "budget_clock",
    "workers",
    "status",
    "hv_ratio",
    "igd_plus",
    "epsilon",
    "recall",
    "best_acc",
    "selected_acc",
    "accuracy",
    "front_size",
    "n_evaluations",
    "n_proxy",
    "proxy_seconds",
    "n_zerocost",
    "zerocost_seconds",
    "evaluation_seconds",
    "clock",
    "worker_seconds",
    "best_index",
    "recommended",
    "table_label",
    "oracle_label",
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="summarize a results database",
        description="Print each method's metrics, mean ± standard error over seeds (a single "
        "run shows its value alone), computed from the events stored by `nasfilter run`; "
        "--json prints one row per run instead.",
    )
    p.add_argument("--db", required=True, help="the SQLite results database")
    p.add_argument("--json", action="store_true", help="print one JSON list, one object per run")
    p.add_argument(
        "--space",
        choices=("sss", "tss"),
        default=None,
        help="only the runs on tables of this search space (default: every run)",
    )
    p.add_argument("--csv", metavar="PATH", help="also export the runs as CSV to PATH (a new file)")
    p.add_argument(
        "--trust-plugins",
        action="store_true",
        help="let scoring a run import the oracle plugin its database names (only for a "
        "database you trust: without it, such a run without cached scores is refused)",
    )
    p.add_argument(
        "--ceiling",
        action="store_true",
        help="also print, for each table, oracle and budget, the clairvoyant ceiling of the "
        "final metrics: the best HV ratio of any set of architectures whose evaluation costs, "
        "less the largest, fit the budget (a few seconds each; `nasfilter ceiling`)",
    )
    add_score_with(p)
    add_force(p, "--csv file")
    p.add_argument(
        "--recompute",
        action="store_true",
        help="recompute every metric from the stored events and rewrite the database's "
        "cached scores (after a metric changed; needs write permission). Without it a "
        "database is only read: scores it lacks are computed in memory",
    )
    p.set_defaults(func=run)


_ZC = ("n_zerocost", "zerocost_seconds")  # absent from scores cached before they existed


def zerocost_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per method (searcher, filter) whose runs queried zero-cost proxies: their
    mean count and charged seconds per run (the ``proxy s`` column is hardware only), per
    proxy where the rows carry ``zerocost_proxies`` (:func:`proxy_counts`)."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        by.setdefault((str(row["searcher"]), str(row["filter"])), []).append(row)
    out = []
    for (searcher, filt), group in by.items():
        seconds = [float(r.get("zerocost_seconds", 0.0)) for r in group]
        if not any(seconds):
            continue
        split: dict[str, list[float]] = {}
        for r in group:
            for name, c in (r.get("zerocost_proxies") or {}).items():
                total = split.setdefault(name, [0.0, 0.0])
                total[0] += c["n"] / len(group)
                total[1] += c["seconds"] / len(group)
        if not split:  # rows without the split: one total
            n = sum(int(r.get("n_zerocost", 0)) for r in group) / len(group)
            split[""] = [n, sum(seconds) / len(group)]
        parts = [
            f"{name + ' ' if name else ''}{n:.0f} a run, {sec:.1f} s charged a run"
            for name, (n, sec) in split.items()
        ]
        out.append(
            f"zero-cost queries  {searcher} + {filt}: {'; '.join(parts)} (modelled; not in proxy s)"
        )
    return out


def proxy_counts(result: Any, store: Store) -> dict[str, dict[str, float]]:
    """``{proxy: {"n", "seconds"}}`` of one scored run's zero-cost queries
    (:func:`~nasfilter.runs.run_summary.zerocost_by_proxy`), read from its events, or from
    its summary when it names one proxy (or none: a run stored before the proxy column)."""
    n = int(result.summary.get("n_zerocost", 0))
    if not n:
        return {}
    names = list(result.info.get("zerocost_proxies") or [])
    if len(names) > 1 or result.events:
        events = result.events or store.events(result.run_id)
        return zerocost_by_proxy(events, names)
    name = names[0] if names else UNNAMED_PROXY
    return {name: {"n": n, "seconds": float(result.summary.get("zerocost_seconds", 0.0))}}


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def accuracy_by_table(provenance: Sequence[dict[str, Any]]) -> dict[str, str]:
    """{table content id: what its scored accuracy is} (:func:`~nasfilter.runs.metrics.
    accuracy_words`; the stored provenance names the column, ``test@90`` when it predates
    that)."""

    return {
        input_id(p["data"]): accuracy_words(str(p["data"].get("scored", "test@90")))
        for p in provenance
        if p.get("kind") == "table" and isinstance(p.get("data"), dict)
    }


def keep_scores(db: Path, results: Sequence[Any]) -> None:
    """Cache in ``db`` the scores computed now (a migrated database has none), where this
    user may write it, so that the next compare need not compute them again; a database
    that cannot be written (read-only, locked, a full disk) is left as it was."""
    import os

    fresh = [r for r in results if r.computed]
    folder = db.parent if str(db.parent) else Path(".")
    if not fresh or not (os.access(db, os.W_OK) and os.access(folder, os.W_OK | os.X_OK)):
        return
    try:
        with Store(db, create=False, readonly=False, timeout=1.0) as store:
            for r in fresh:
                store.put_scores(r.run_id, METRICS_VERSION, r.summary, r.metrics, r.curves)
    except (StoreError, OSError):
        pass  # only a cache: the numbers printed are computed anyway


def _json_rows(
    results: Sequence[Any],
    rows: Sequence[dict[str, Any]],
    trust_plugins: bool,
    rescoring: Rescoring | None = None,
) -> list[dict[str, Any]]:
    """One object per run: :data:`JSON_FIELDS`, ``zerocost_proxies`` (its zero-cost queries
    and charged seconds per proxy, :func:`proxy_counts`), then ``evaluated`` (the architecture
    indices it evaluated at full fidelity, in completion order) and ``front`` (its front's
    indices, ascending: :func:`nasfilter.runs.fronts.run_front`; null for a run whose oracle
    is an untrusted plugin, whose throughput would import it), on ``rescoring``'s accuracies
    when given."""

    out = []
    for result, row in zip(results, rows, strict=True):
        entry = {k: _json_value(row.get(k, 0) if k in _ZC else row[k]) for k in JSON_FIELDS}
        entry["zerocost_proxies"] = row["zerocost_proxies"]
        entry["evaluated"] = completed_evaluations(result.events)[0].tolist()
        try:
            front = run_front(result, trust_plugins) if rescoring is None else \
                front_from_events(result.events, *rescoring.inputs(result.spec))
            entry["front"] = front.indices.tolist()
        except UntrustedPluginError:
            entry["front"] = None
        out.append(entry)
    return out


#: The grid of ``--ceiling``: at most this many steps per budget (1 s up to 20,000 s).
CEILING_STEPS = 20_000


def ceiling_lines(
    results: Sequence[Any],
    trust_plugins: bool,
    resolve: Callable[[RunSpec], RunInputs] = inputs,
) -> list[str]:
    """One line per (table, dataset, oracle, budget) of ``results``: the clairvoyant ceiling
    of the final metrics (:func:`~nasfilter.runs.ceiling.clairvoyant_ceiling` with
    ``last_may_overrun``: a run starts no evaluation once its worker-seconds are spent, so
    those it started, less the last, fit the budget) beside the best method's mean HV ratio
    there, on the inputs ``resolve`` gives a spec (:func:`~nasfilter.runs.inputs.inputs`,
    or a :class:`~nasfilter.runs.rescore.Rescoring`'s). A wall-clock budget with several
    workers bounds no sum, and an untrusted oracle plugin is not imported: their lines say
    so."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for r in results:
        spec = r.spec
        if spec is None:  # a record of a bare Problem: no table or oracle to resolve
            continue
        key = (spec.table, spec.dataset, spec.oracle, spec.device, spec.oracle_cache,
               float(spec.budget), spec.budget.clock if spec.workers > 1 else "worker")  # fmt: skip
        groups.setdefault(key, []).append(r)
    out = []
    for key, group in groups.items():
        spec, budget = group[0].spec, key[5]
        means: dict[tuple[str, str], list[float]] = {}
        for r in group:
            means.setdefault((r.spec.searcher, r.spec.filter), []).append(r.metrics["hv_ratio"])
        best = max(sum(v) / len(v) for v in means.values())
        where = f"{spec.table} {spec.dataset}, {spec.oracle} {spec.device}, {budget:,.0f} s"
        if key[6] != "worker":
            out.append(f"ceiling  {where}: none (a wall-clock budget with several workers)")
            continue
        if oracle_plugin(spec) is not None and not trust_plugins:
            out.append(f"ceiling  {where}: not computed (an oracle plugin; --trust-plugins)")
            continue
        table, _, reference = resolve(spec)
        ceiling = clairvoyant_ceiling(
            reference, table.eval_cost, [budget], max(1.0, budget / CEILING_STEPS),
            last_may_overrun=True,
        )  # fmt: skip
        low, high = f"{ceiling.lower[0]:.4f}", f"{ceiling.upper[0]:.4f}"
        out.append(
            f"ceiling  {where}: {low if low == high else low + '-' + high} (any set whose "
            f"costs less the largest fit), best method's mean here {best:.4f}"
        )
    return out


def of_space(results: Sequence[Any], space: str) -> list[Any]:
    """The results whose table is of ``space`` (the tss tables are named ``tss-real*``)."""

    return [
        r for r in results if (getattr(r.spec, "table", None) in TSS_TABLES) == (space == "tss")
    ]


def _rescored(
    args: argparse.Namespace, results: list[Any], accuracy: dict[str, str]
) -> tuple[Rescoring | None, list[Any], dict[str, str]]:
    """With ``--score-with``: its rescoring, ``results`` scored by it and the accuracy words
    of their tables; else None and both as they are."""
    if not args.score_with or not results:
        return None, results, accuracy
    datasets = {get_dataset(r.spec.dataset).name for r in results}
    rescoring = score_with_files(args.score_with, datasets, args.trust_plugins)
    results = [rescoring.score(r) for r in results]
    words = {r.table_id: accuracy_words(rescoring.inputs(r.spec).table.provenance.scored)
             for r in results}  # fmt: skip
    return rescoring, results, words


def _print_text(
    args: argparse.Namespace,
    results: list[Any],
    rows: list[dict[str, Any]],
    per_proxy: list[dict[str, dict[str, float]]],
    accuracy: dict[str, str],
    rescoring: Rescoring | None,
) -> None:
    """The metrics table (and the ceiling lines) of ``rows``, as text."""
    summary = summarize(rows)
    print(describe_inputs(summary))
    for dataset, acc in (rescoring.accuracies if rescoring else {}).items():
        unknown = f"; {acc.missing} architectures it holds none for are left out" \
            if acc.missing else ""
        print(f"scored on: {acc.words} for {dataset} (--score-with), in place of the table's "
              f"scored accuracy; the true front and every metric are recomputed on it{unknown}")
    named = {accuracy.get(e["table_id"], "acc") for e in summary}
    print(format_summary(summary, named.pop() if len(named) == 1 else "acc (see each table)"))
    split = [row | {"zerocost_proxies": p} for row, p in zip(rows, per_proxy, strict=True)]
    for line in zerocost_lines(split):
        print(line)
    if args.ceiling:
        resolve = inputs if rescoring is None else rescoring.inputs
        for line in ceiling_lines(results, args.trust_plugins, resolve):
            print(line)


def run(args: argparse.Namespace) -> int:
    import sys

    db = check_input_file(args.db, "--db", "results database")
    if args.score_with and args.recompute:
        raise ValueError("--recompute rewrites the database's scores on its tables' accuracies; "
                         "--score-with scores on yours and writes nothing: give one of them")
    csv = None
    if args.csv is not None:
        csv = check_output_file(
            args.csv, "--csv", force=args.force, inputs={"--db": args.db}, databases=("--db",)
        )
    # Read-only unless --recompute rewrites the scores cache: never sets up or alters a file
    with Store(args.db, create=False, readonly=not args.recompute) as store:
        results = load_results(
            store,
            recompute=args.recompute,
            trust_plugins=args.trust_plugins,
            with_events=args.json or bool(args.score_with),  # the rows' evaluated and front
        )
        accuracy = accuracy_by_table(store.provenance())
        per_proxy = [proxy_counts(r, store) for r in results]
    if not args.recompute:
        keep_scores(db, results)
    if args.space is not None:
        kept = {id(r) for r in of_space(results, args.space)}
        per_proxy = [p for r, p in zip(results, per_proxy, strict=True) if id(r) in kept]
        results = [r for r in results if id(r) in kept]
    rescoring, results, accuracy = _rescored(args, results, accuracy)
    rows = [r.row() | {"accuracy": accuracy.get(r.table_id, "acc")} for r in results]
    if csv is not None and rows:
        write_csv(csv, rows)
    elif csv is not None:
        print(f"nasfilter compare: {args.db} holds no runs yet, so no CSV was written to "
              f"{str(csv)!r}", file=sys.stderr)  # fmt: skip
    if args.json:
        rows = [row | {"zerocost_proxies": p} for row, p in zip(rows, per_proxy, strict=True)]
        print(json.dumps(_json_rows(results, rows, args.trust_plugins, rescoring), indent=1))
    elif not rows:
        print(f"{args.db}: no runs{f' on {args.space} tables' if args.space else ' yet'}")
    else:
        _print_text(args, results, rows, per_proxy, accuracy, rescoring)
        if args.recompute:
            print(f"recomputed the metrics of {len(rows)} runs from their stored events")
    return 0
