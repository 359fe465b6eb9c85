"""``nasfilter compare``: summarize a results database, mean ± standard error over seeds.

Every number comes from :mod:`nasfilter.results`, which scores the stored events; with
``--recompute`` the scores are computed afresh from the events and the database's cache is
rewritten (after a metric changed).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nasfilter.cli.args import add_force

# (field of a results row, header, decimals) of the summary table, in order.
COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("hv_ratio", "HV ratio", 3),
    ("igd_plus", "IGD+", 4),
    ("epsilon", "eps+", 3),
    ("recall", "recall", 3),
    ("best_test_acc", "best test %", 2),
    ("selected_test_acc", "selected test %", 2),
    ("n_evaluations", "evaluations", 0),
    ("proxy_seconds", "proxy s", 0),
    ("evaluation_seconds", "accuracy s", 0),
    ("clock", "wall-clock s", 0),
)
_COST_COLUMNS = ("n_evaluations", "proxy_seconds", "evaluation_seconds")
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
    "best_test_acc",
    "selected_test_acc",
    "front_size",
    "n_evaluations",
    "n_proxy",
    "proxy_seconds",
    "evaluation_seconds",
    "clock",
    "worker_seconds",
    "best_index",
    "recommended",
    "table_label",
    "oracle_label",
)


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per method (searcher, filter, dataset, budget, K, table, oracle), with a
    :class:`~nasfilter.results.MeanSE` per column of :data:`COLUMNS`."""
    from nasfilter.results import group_rows

    return group_rows(rows, [c for c, _, _ in COLUMNS])


def method_label(searcher: str, filter: str, workers: int = 1) -> str:
    label = searcher if filter == "none" else f"{searcher} | {filter}"
    return label if workers == 1 else f"{label} (K={workers})"


# Group fields that tell rows apart when a database mixes them: (field, header). Tables
# and oracles count by their content (table_id, oracle_id), shown as [k].
_DISTINGUISH = (
    ("dataset", "dataset"),
    ("budget", "budget s"),
    ("budget_clock", "budget clock"),
    ("proxy_cost", "proxy cost s"),
    ("max_idle", "max idle"),
    ("n_ticks", "ticks"),
    ("device", "device"),
    ("oracle", "oracle spec"),
    ("table_id", "table"),
    ("oracle_id", "oracle"),
)


def _varying(summary: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """The group fields that take more than one value across ``summary``."""
    return [(f, h) for f, h in _DISTINGUISH if len({e[f] for e in summary}) > 1]


def _inputs_key(e: dict[str, Any]) -> tuple[str, str, str, float, str]:
    return (e["table_id"], e["dataset"], e["oracle_id"], e["budget"], e["budget_clock"])


def _legend(summary: Sequence[dict[str, Any]], kind: str) -> list[tuple[str, str]]:
    """(content id, label) of every distinct table or oracle (``kind``), first seen first."""
    return list(dict.fromkeys((e[f"{kind}_id"], e[f"{kind}_label"]) for e in summary))


def _named(item: tuple[str, str], legend: list[tuple[str, str]]) -> str:
    """A label, with the start of its content id where two contents share that label."""
    content, label = item
    if sum(1 for _, other in legend if other == label) < 2:
        return label
    return f"{label} (content {content.removeprefix('provenance:')[:12]})"


def empty_run_warnings(summary: Sequence[dict[str, Any]]) -> list[str]:
    """One warning per method with runs that evaluated no architecture at all."""
    from nasfilter.results import empty_run_warning

    return [
        empty_run_warning(
            method_label(e["searcher"], e["filter"], e["workers"]),
            e["n_empty"],
            e["n_seeds"],
            e["budget"],
        )
        for e in summary
        if e.get("n_empty")
    ]


def format_summary(summary: Sequence[dict[str, Any]]) -> str:
    """A plain-text table of :func:`summarize`'s output, one line per method.

    A method none of whose runs evaluated anything shows NOTHING EVALUATED instead of its
    metrics; warning lines after the table name every method with such runs.

    When the rows mix datasets, budgets, tables or oracles, a column per varying field
    tells them apart (tables and oracles as ``[k]``, the k-th line of
    :func:`describe_inputs`)."""
    from nasfilter.results import NOTHING_EVALUATED, format_mean_se

    varying = _varying(summary)
    legend = {f: list(dict.fromkeys(e[f] for e in summary)) for f in ("table_id", "oracle_id")}

    def show(field: str, value: Any) -> str:
        if field in legend:
            return f"[{legend[field].index(value) + 1}]"
        return f"{value:g}" if isinstance(value, float) else str(value)

    headers = ["method", *(h for _, h in varying), "seeds", *(h for _, h, _ in COLUMNS)]
    lines = [
        [
            method_label(e["searcher"], e["filter"], e["workers"]),
            *(show(f, e[f]) for f, _ in varying),
            str(e["n_seeds"]),
            *(
                (NOTHING_EVALUATED if c == "hv_ratio" else "-")
                if e.get("n_empty") == e["n_seeds"] and c not in _COST_COLUMNS
                else format_mean_se(e[c].mean, e[c].se, d)
                for c, _, d in COLUMNS
            ),
        ]
        for e in summary
    ]
    widths = [max(len(r[i]) for r in [headers, *lines]) for i in range(len(headers))]

    def fmt_row(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    rule = "-" * len(fmt_row(headers))
    table = [fmt_row(headers), rule, *(fmt_row(r) for r in lines)]
    repeated = [
        f"note: {method_label(e['searcher'], e['filter'], e['workers'])}: {e['n_repeated']} "
        "run(s) repeat a seed with the same inputs (read from another path); each seed "
        "counts once"
        for e in summary
        if e.get("n_repeated")
    ]
    return "\n".join(table + empty_run_warnings(summary) + repeated)


def describe_inputs(summary: Sequence[dict[str, Any]]) -> str:
    """Lines naming every table and oracle the summary covers; numbered ``[k]`` (as in
    :func:`format_summary`'s columns) when there is more than one of either."""
    seen = list(dict.fromkeys(_inputs_key(e) for e in summary))
    if len(seen) == 1:
        e = summary[0]
        return (
            f"table: {e['table_label']} ({e['dataset']}); oracle: {e['oracle_label']}; budget "
            f"{e['budget']:g} simulated {e['budget_clock']}-seconds per run"
        )
    tables, oracles = _legend(summary, "table"), _legend(summary, "oracle")
    out = ["this database mixes inputs; the columns below tell its rows apart:"]
    out += [f"table [{k}]: {_named(t, tables)}" for k, t in enumerate(tables, 1)]
    out += [f"oracle [{k}]: {_named(o, oracles)}" for k, o in enumerate(oracles, 1)]
    return "\n".join(out)


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
    p.add_argument("--csv", metavar="PATH", help="also export the runs as CSV to PATH (a new file)")
    p.add_argument(
        "--trust-plugins",
        action="store_true",
        help="let scoring a run import the oracle plugin its database names (only for a "
        "database you trust: without it, such a run without cached scores is refused)",
    )
    add_force(p, "--csv file")
    p.add_argument(
        "--recompute",
        action="store_true",
        help="recompute every metric from the stored events and rewrite the database's "
        "cached scores (after a metric changed; needs write permission). Without it a "
        "database is only read: scores it lacks are computed in memory",
    )
    p.set_defaults(func=run)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def keep_scores(db: Path, results: Sequence[Any]) -> None:
    """Cache in ``db`` the scores computed now (a migrated database has none), where this
    user may write it, so that the next compare need not compute them again; a database
    that cannot be written (read-only, locked, a full disk) is left as it was."""
    import os

    from nasfilter.results import METRICS_VERSION
    from nasfilter.store import Store, StoreError

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


def run(args: argparse.Namespace) -> int:
    import sys

    from nasfilter.cli.args import check_input_file, check_output_file
    from nasfilter.files import write_csv
    from nasfilter.results import load_results
    from nasfilter.store import Store

    db = check_input_file(args.db, "--db", "results database")
    csv = None
    if args.csv is not None:
        csv = check_output_file(
            args.csv, "--csv", force=args.force, inputs={"--db": args.db}, databases=("--db",)
        )
    # Read-only unless --recompute rewrites the scores cache: never sets up or alters a file
    with Store(args.db, create=False, readonly=not args.recompute) as store:
        results = load_results(store, recompute=args.recompute, trust_plugins=args.trust_plugins)
    if not args.recompute:
        keep_scores(db, results)
    rows = [r.row() for r in results]
    if csv is not None:
        if rows:
            write_csv(csv, rows)
        else:
            print(
                f"nasfilter compare: {args.db} holds no runs yet, so no CSV was written "
                f"to {str(csv)!r}",
                file=sys.stderr,
            )
    if args.json:
        print(json.dumps([{k: _json_value(r[k]) for k in JSON_FIELDS} for r in rows], indent=1))
        return 0
    if not rows:
        print(f"{args.db}: no runs yet")
        return 0
    summary = summarize(rows)
    print(describe_inputs(summary))
    print(format_summary(summary))
    if args.recompute:
        print(f"recomputed the metrics of {len(rows)} runs from their stored events")
    return 0
