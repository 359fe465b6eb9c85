"""``nasfilter compare``: summarize a results database, mean ± standard error over seeds."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from typing import Any

from nasfilter.cli.args import add_force

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
        for col, _, _ in COLUMNS:
            mean, se, _ = mean_se([m[col] for m in members])
            entry[col] = (mean, se)
        out.append(entry)
    return out


def _cell(mean: float, se: float, fmt: str) -> str:
    if math.isnan(mean):
        return "-"
    if math.isfinite(mean) and abs(mean) >= 1e9:  # a huge budget's seconds: not 300 digits
        fmt = "{:.4g}"
    text = fmt.format(mean)
    return text if math.isnan(se) else f"{text} ± {fmt.format(se)}"


def method_label(searcher: str, filter: str) -> str:
    return searcher if filter == "none" else f"{searcher} | {filter}"


# Group fields that tell rows apart when a database mixes them: (field, header).
_DISTINGUISH = (
    ("dataset", "dataset"),
    ("budget", "budget s"),
    ("table_label", "table"),
    ("oracle_label", "oracle"),
)


def _varying(summary: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """The group fields that take more than one value across ``summary``."""
    return [(f, h) for f, h in _DISTINGUISH if len({e[f] for e in summary}) > 1]


def _inputs_key(e: dict[str, Any]) -> tuple[str, str, str, float]:
    return (e["table_label"], e["dataset"], e["oracle_label"], e["budget"])


def format_summary(summary: Sequence[dict[str, Any]]) -> str:
    """A plain-text table of :func:`summarize`'s output, one line per method.

    When the rows mix datasets, budgets, tables or oracles, a column per varying field
    tells them apart (tables and oracles as ``[k]``, the k-th line of
    :func:`describe_inputs`)."""
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
            method_label(e["searcher"], e["filter"]),
            *(show(f, e[f]) for f, _ in varying),
            str(e["n_seeds"]),
            *(_cell(e[c][0], e[c][1], fmt) for c, _, fmt in COLUMNS),
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
    return "\n".join([fmt_row(headers), rule, *(fmt_row(r) for r in lines)])


def describe_inputs(summary: Sequence[dict[str, Any]]) -> str:
    """Lines naming every table and oracle the summary covers; numbered ``[k]`` (as in
    :func:`format_summary`'s columns) when there is more than one of either."""
    seen = list(dict.fromkeys(_inputs_key(e) for e in summary))
    if len(seen) == 1:
        t, d, o, b = seen[0]
        return f"table: {t} ({d}); oracle: {o}; budget {b:g} simulated s per run"
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
        description="Print each method's metrics, mean ± standard error over seeds, from a "
        "database written by `nasfilter run`; --json prints one row per run instead.",
    )
    p.add_argument("--db", required=True, help="the SQLite results database")
    p.add_argument("--json", action="store_true", help="print one JSON list, one object per run")
    p.add_argument("--csv", metavar="PATH", help="also export the runs as CSV to PATH (a new file)")
    add_force(p, "--csv file")
    p.set_defaults(func=run)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def run(args: argparse.Namespace) -> int:
    import sys

    from nasfilter.cli.args import check_input_file, check_output_file
    from nasfilter.store import Store

    check_input_file(args.db, "--db", "results database")
    csv = None
    if args.csv:
        csv = check_output_file(
            args.csv, "--csv", force=args.force, inputs={"--db": args.db}, databases=("--db",)
        )
    with Store(args.db, create=False) as store:  # read-only: never sets up or alters a file
        rows = store.runs()
        if csv is not None:
            if rows:
                store.export_csv(csv, "runs")
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
    return 0
