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


# Group fields that tell rows apart when a database mixes them: (field, header).
_DISTINGUISH = (
    ("dataset", "dataset"),
    ("budget", "budget s"),
    ("budget_clock", "budget clock"),
    ("table_label", "table"),
    ("oracle_label", "oracle"),
)


def _varying(summary: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """The group fields that take more than one value across ``summary``."""
    return [(f, h) for f, h in _DISTINGUISH if len({e[f] for e in summary}) > 1]


def _inputs_key(e: dict[str, Any]) -> tuple[str, str, str, float, str]:
    return (e["table_label"], e["dataset"], e["oracle_label"], e["budget"], e["budget_clock"])


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
    legend = {
        f: list(dict.fromkeys(e[f] for e in summary)) for f in ("table_label", "oracle_label")
    }

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
    return "\n".join(table + empty_run_warnings(summary))


def describe_inputs(summary: Sequence[dict[str, Any]]) -> str:
    """Lines naming every table and oracle the summary covers; numbered ``[k]`` (as in
    :func:`format_summary`'s columns) when there is more than one of either."""
    seen = list(dict.fromkeys(_inputs_key(e) for e in summary))
    if len(seen) == 1:
        t, d, o, b, c = seen[0]
        return f"table: {t} ({d}); oracle: {o}; budget {b:g} simulated {c}-seconds per run"
    tables = list(dict.fromkeys(e["table_label"] for e in summary))
    oracles = list(dict.fromkeys(e["oracle_label"] for e in summary))
    out = ["this database mixes inputs; the columns below tell its rows apart:"]
    out += [f"table [{k}]: {t}" for k, t in enumerate(tables, 1)]
    out += [f"oracle [{k}]: {o}" for k, o in enumerate(oracles, 1)]
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


def _write_csv(target: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` (at least one) to ``target`` whole or not at all."""
    import csv

    from nasfilter.files import atomic_write

    with atomic_write(target, "w") as fh:  # never half a file, nor a clobbered one
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def run(args: argparse.Namespace) -> int:
    import sys

    from nasfilter.cli.args import check_input_file, check_output_file
    from nasfilter.results import load_results
    from nasfilter.store import Store

    check_input_file(args.db, "--db", "results database")
    csv = None
    if args.csv:
        csv = check_output_file(
            args.csv, "--csv", force=args.force, inputs={"--db": args.db}, databases=("--db",)
        )
    # Read-only unless --recompute rewrites the scores cache: never sets up or alters a file
    with Store(args.db, create=False, readonly=not args.recompute) as store:
        results = load_results(store, recompute=args.recompute)
    rows = [r.row() for r in results]
    if csv is not None:
        if rows:
            _write_csv(csv, rows)
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
