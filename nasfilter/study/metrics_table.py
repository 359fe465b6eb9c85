"""The metrics table, defined once: its columns (header and decimals per metric) and the
mean ± standard error table over seeds that ``nasfilter compare``, ``nasfilter demo``,
``reproduce`` and the examples print.

Every number comes from :mod:`nasfilter.runs.results` (:func:`~nasfilter.runs.results.group_rows`
groups the runs, :func:`~nasfilter.runs.results.format_mean_se` writes a cell).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nasfilter.runs.results import NOTHING_EVALUATED, empty_run_warning, format_mean_se, group_rows
from nasfilter.study.methods import method_label


@dataclass(frozen=True)
class Column:
    """One metric of the table: its key (a field of a results row, or a key of a run's
    metrics or summary), its header (``{acc}``: what the scored accuracy is,
    :func:`~nasfilter.runs.metrics.accuracy_words`) and the decimals of its cells."""

    key: str
    header: str
    decimals: int


# The one metrics table, in order.
COLUMNS: tuple[Column, ...] = (
    Column("hv_ratio", "HV ratio", 3),
    Column("igd_plus", "IGD+", 4),
    Column("epsilon", "additive ε", 4),
    Column("recall", "recall of true front", 3),
    Column("best_acc", "best {acc} (%)", 2),
    Column("selected_acc", "selected {acc} (%)", 2),
    Column("n_evaluations", "evaluations", 0),
    Column("evaluation_seconds", "evaluation s", 0),
    Column("proxy_seconds", "proxy s", 0),
    Column("clock", "wall-clock s", 0),
)
KEYS = tuple(c.key for c in COLUMNS)
# Costs, shown even for a method that evaluated nothing (its other metrics are no result).
COST_KEYS = ("n_evaluations", "evaluation_seconds", "proxy_seconds", "clock")


def headers(accuracy: str = "acc") -> list[str]:
    """The column headers, the accuracies named by ``accuracy``: what scores the runs, as
    :func:`~nasfilter.runs.metrics.accuracy_words` writes it (``"hp-90 validation acc, seed
    777"`` on the real table); the default names no split."""
    return [c.header.format(acc=accuracy) for c in COLUMNS]


def cells(stats: dict[str, Any], empty: bool = False) -> list[str]:
    """The formatted cells of one method: ``stats`` maps each key to an object with
    ``mean`` and ``se`` (a :class:`~nasfilter.runs.results.MeanSE`); ``empty``: none of its runs
    evaluated anything, so only the costs are shown."""
    return [
        (NOTHING_EVALUATED if c.key == "hv_ratio" else "-")
        if empty and c.key not in COST_KEYS
        else format_mean_se(stats[c.key].mean, stats[c.key].se, c.decimals)
        for c in COLUMNS
    ]


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per method (searcher, filter, dataset, budget, K, table, oracle), with a
    :class:`~nasfilter.runs.results.MeanSE` per column of :data:`COLUMNS`."""
    return group_rows(rows, KEYS)


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


def _label(e: dict[str, Any]) -> str:
    return method_label(e["searcher"], e["filter"], e["workers"])


def empty_run_warnings(summary: Sequence[dict[str, Any]]) -> list[str]:
    """One warning per method with runs that evaluated no architecture at all."""
    return [
        empty_run_warning(_label(e), e["n_empty"], e["n_seeds"], e["budget"])
        for e in summary
        if e.get("n_empty")
    ]


def text_table(header: Sequence[str], lines: Sequence[Sequence[str]]) -> list[str]:
    """A plain-text table: the first column left-aligned, the others right-aligned, a rule
    under the header."""
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]

    def fmt_row(row: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )

    return [fmt_row(header), "-" * len(fmt_row(header)), *(fmt_row(r) for r in lines)]


def format_summary(summary: Sequence[dict[str, Any]], accuracy: str = "acc") -> str:
    """A plain-text table of :func:`summarize`'s output, one line per method; ``accuracy``
    names the scored accuracy in the headers (:func:`headers`).

    A method none of whose runs evaluated anything shows NOTHING EVALUATED instead of its
    metrics; warning lines after the table name every method with such runs.

    When the rows mix datasets, budgets, tables or oracles, a column per varying field
    tells them apart (tables and oracles as ``[k]``, the k-th line of
    :func:`describe_inputs`)."""
    varying = _varying(summary)
    legend = {f: list(dict.fromkeys(e[f] for e in summary)) for f in ("table_id", "oracle_id")}

    def show(field: str, value: Any) -> str:
        if field in legend:
            return f"[{legend[field].index(value) + 1}]"
        return f"{value:g}" if isinstance(value, float) else str(value)

    header = ["method", *(h for _, h in varying), "seeds", *headers(accuracy)]
    lines = [
        [
            _label(e),
            *(show(f, e[f]) for f, _ in varying),
            str(e["n_seeds"]),
            *cells(e, empty=e.get("n_empty") == e["n_seeds"]),
        ]
        for e in summary
    ]
    repeated = [
        f"note: {_label(e)}: {e['n_repeated']} run(s) repeat a seed with the same inputs "
        "(read from another path); each seed counts once"
        for e in summary
        if e.get("n_repeated")
    ]
    return "\n".join(text_table(header, lines) + empty_run_warnings(summary) + repeated)


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
