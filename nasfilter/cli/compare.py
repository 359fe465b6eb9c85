"""``nasfilter compare``: summarize a results database, mean ± standard error over seeds."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from typing import Any

# (column in the database, header, format) of the summary table, in order.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("hv_ratio", "HV ratio", "{:.3f}"),
    ("igd_plus", "IGD+", "{:.4f}"),
    ("epsilon", "eps+", "{:.3f}"),
    ("recall", "recall", "{:.3f}"),
    ("best_test_acc", "best test %", "{:.2f}"),
    ("selected_test_acc", "selected test %", "{:.2f}"),
    ("n_evaluations", "evaluations", "{:.0f}"),
    ("proxy_seconds", "proxy s", "{:.0f}"),
    ("evaluation_seconds", "accuracy s", "{:.0f}"),
)
_COST_COLUMNS = ("n_evaluations", "proxy_seconds", "evaluation_seconds")
JSON_FIELDS = (
    "searcher",
    "filter",
    "seed",
    "dataset",
    "budget",
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
    "best_index",
    "table_label",
    "oracle_label",
)
_GROUP = ("searcher", "filter", "dataset", "budget", "table_label", "oracle_label")


def mean_se(values: Sequence[float | None]) -> tuple[float, float, int]:
    """Mean, standard error (sample std / sqrt(n); NaN for n < 2) and n of the non-None
    values."""
    xs = [float(v) for v in values if v is not None]
    n = len(xs)
    if n == 0:
        return math.nan, math.nan, 0
    mean = math.fsum(xs) / n
    if n < 2 or not all(math.isfinite(x) for x in xs):
        return mean, math.nan, n
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    return mean, math.sqrt(var / n), n


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One dict per (searcher, filter, dataset, budget, table, oracle), in first-seen order:
    the group's fields, ``n_seeds``, ``statuses`` and ``(mean, se)`` per column."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in _GROUP), []).append(row)
    out = []
    for key, members in groups.items():
        entry: dict[str, Any] = dict(zip(_GROUP, key, strict=True))
        entry["n_seeds"] = len(members)
        entry["statuses"] = sorted({m["status"] for m in members})
        entry["n_empty"] = sum(1 for m in members if not m["n_evaluations"])
        for col, _, _ in COLUMNS:
            mean, se, _ = mean_se([m[col] for m in members])
            entry[col] = (mean, se)
        out.append(entry)
    return out


def _cell(mean: float, se: float, fmt: str) -> str:
    if math.isnan(mean):
        return "-"
    text = fmt.format(mean)
    return text if math.isnan(se) else f"{text} ± {fmt.format(se)}"


def method_label(searcher: str, filter: str) -> str:
    return searcher if filter == "none" else f"{searcher} | {filter}"


NOTHING_EVALUATED = "NOTHING EVALUATED"


def empty_run_warnings(summary: Sequence[dict[str, Any]]) -> list[str]:
    """One warning per method with runs that evaluated no architecture at all."""
    return [
        f"warning: {method_label(e['searcher'], e['filter'])} evaluated nothing in "
        f"{e['n_empty']} of {e['n_seeds']} runs at {e['budget']:g} s: its metrics there are "
        "not a result (the budget went to proxy queries; see docs/searchers.md, smallest "
        "budgets)"
        for e in summary
        if e.get("n_empty")
    ]


def format_summary(summary: Sequence[dict[str, Any]]) -> str:
    """A plain-text table of :func:`summarize`'s output, one line per method.

    A method none of whose runs evaluated anything shows NOTHING EVALUATED instead of its
    metrics; warning lines after the table name every method with such runs.
    """
    headers = ["method", "seeds", *(h for _, h, _ in COLUMNS)]
    lines = [
        [
            method_label(e["searcher"], e["filter"]),
            str(e["n_seeds"]),
            *(
                (NOTHING_EVALUATED if c == "hv_ratio" else "-")
                if e.get("n_empty") == e["n_seeds"] and c not in _COST_COLUMNS
                else _cell(e[c][0], e[c][1], fmt)
                for c, _, fmt in COLUMNS
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
    """Lines naming every table and oracle the summary covers."""
    seen: dict[tuple[str, str, str, float], None] = {}
    for e in summary:
        seen[(e["table_label"], e["dataset"], e["oracle_label"], e["budget"])] = None
    return "\n".join(
        f"table: {t} ({d}); oracle: {o}; budget {b:g} simulated s per run" for t, d, o, b in seen
    )


def register(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="summarize a results database",
        description="Print each method's metrics, mean ± standard error over seeds, from a "
        "database written by `nasfilter run`; --json prints one row per run instead.",
    )
    p.add_argument("--db", required=True, help="the SQLite results database")
    p.add_argument("--json", action="store_true", help="print one JSON list, one object per run")
    p.add_argument("--csv", metavar="PATH", help="also export the runs as CSV to PATH")
    p.set_defaults(func=run)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from nasfilter.store import Store

    if not Path(args.db).is_file():
        raise FileNotFoundError(f"results database {args.db!r} does not exist")
    with Store(args.db, create=False) as store:  # never sets up or alters a foreign file
        rows = store.runs()
        if args.csv:
            store.export_csv(args.csv, "runs")
    if args.json:
        print(json.dumps([{k: _json_value(r[k]) for k in JSON_FIELDS} for r in rows], indent=1))
        return 0
    if not rows:
        print(f"{args.db}: no runs yet")
        return 0
    summary = summarize(rows)
    print(describe_inputs(summary))
    print(format_summary(summary))
    return 0
