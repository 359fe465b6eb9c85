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
from typing import Any

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


def format_summary(summary: Sequence[dict[str, Any]]) -> str:
    """A plain-text table of :func:`summarize`'s output, one line per method."""
    from nasfilter.results import format_mean_se

    headers = ["method", "seeds", *(h for _, h, _ in COLUMNS)]
    lines = [
        [
            method_label(e["searcher"], e["filter"], e["workers"]),
            str(e["n_seeds"]),
            *(format_mean_se(e[c].mean, e[c].se, d) for c, _, d in COLUMNS),
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
    """Lines naming every table and oracle the summary covers."""
    seen: dict[tuple[str, str, str, float, str], None] = {}
    for e in summary:
        key = (e["table_label"], e["dataset"], e["oracle_label"], e["budget"], e["budget_clock"])
        seen[key] = None
    return "\n".join(
        f"table: {t} ({d}); oracle: {o}; budget {b:g} simulated {c}-seconds per run"
        for t, d, o, b, c in seen
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
    p.add_argument("--csv", metavar="PATH", help="also export the runs as CSV to PATH")
    p.add_argument(
        "--recompute",
        action="store_true",
        help="recompute every metric from the stored events and rewrite the database's "
        "cached scores (after a metric changed)",
    )
    p.set_defaults(func=run)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _write_csv(path: str, rows: list[dict[str, Any]]) -> None:
    import csv
    from pathlib import Path

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="") as fh:
        if rows:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from nasfilter.results import load_results
    from nasfilter.store import Store

    if not Path(args.db).is_file():
        raise FileNotFoundError(f"results database {args.db!r} does not exist")
    with Store(args.db, create=False) as store:  # never sets up or alters a foreign file
        results = load_results(store, recompute=args.recompute)
    rows = [r.row() for r in results]
    if args.csv:
        _write_csv(args.csv, rows)
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
