"""The text of a reproduction, from its typed summary (:class:`StudySummary`): the metrics
table as cells, Markdown and CSV, the workers table, the figures' captions, and
``report.html`` (:func:`nasfilter.render.html_page.write_report`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from nasfilter.files import atomic_write
from nasfilter.oracle.compare import comparison_rows
from nasfilter.render.drawing import FigureFiles
from nasfilter.render.html_page import ReportFigure, ReportTable, write_report
from nasfilter.runs.metrics import accuracy_words
from nasfilter.runs.results import empty_run_warning, format_mean_se, reach_text
from nasfilter.study.ceilings import CeilingRow, ceiling_cells
from nasfilter.study.methods import MULTI_FIDELITY_METHODS
from nasfilter.study.metrics_table import KEYS, cells, headers
from nasfilter.study.signal_report import cheap_signal_tables, ranking_table
from nasfilter.study.summary import StudySummary


def table_cells(s: StudySummary) -> tuple[list[str], list[list[str]]]:
    """The final metrics table as formatted text: (header, rows)."""
    header = ["method", "runs", *headers(accuracy_words(s.scored))]  # the seed: s.accuracy_label
    rows = [[r.method, str(r.runs), *cells({k: r.stat(k) for k in KEYS})] for r in s.metrics_table]
    return header, rows


def workers_cells(s: StudySummary) -> tuple[list[str], list[list[str]]]:
    """The K comparison as formatted text: (header, rows), one row per method and K."""
    wc, budget = s.workers_comparison, s.parameters.budget_seconds
    header = [
        "method",
        "K",
        *(f"HV ratio at {f * budget:,.0f} s" for f in wc.fractions),
        "wall-clock s at the end",
    ]
    rows = []
    for label, per_k in wc.methods.items():
        for k, entry in per_k.items():
            points = [format_mean_se(c.mean, c.se, 3) for c in entry.at_fractions]
            wall = format_mean_se(entry.wall_clock.mean, entry.wall_clock.se, 0)
            rows.append([label, str(k), *points, wall])
    return header, rows


def metrics_markdown(s: StudySummary) -> str:
    """The final metrics table as Markdown, with its provenance line."""
    header, rows = table_cells(s)
    p = s.parameters
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
        f"Mean ± standard error over {len(p.seeds)} seeds, {p.budget_seconds:g} simulated "
        f"seconds per run. Table: {s.table_label}. Oracle: {s.oracle_label}. "
        f"Accuracy (the true front and every metric): {s.accuracy_label}.",
    ]
    return "\n".join(lines) + "\n"


def metrics_csv(s: StudySummary) -> str:
    """The final metrics table as CSV: mean and standard error columns per metric."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    stats = [f"{k}_{part}" for k in KEYS for part in ("mean", "se")]
    writer.writerow(["method", "searcher", "filter", "runs", *stats])
    for r in s.metrics_table:
        values = [v for k in KEYS for v in r.stat(k).to_json().values()]
        writer.writerow([r.method, r.searcher, r.filter, r.runs, *values])
    return buffer.getvalue()


def write_tables(out: Path, s: StudySummary) -> None:
    """``metrics.csv`` and ``metrics.md`` under ``out``, each whole or not at all."""
    for name, text in (("metrics.csv", metrics_csv(s)), ("metrics.md", metrics_markdown(s))):
        with atomic_write(out / name, "w") as fh:  # never half a file (a full disk)
            fh.write(text)


def empty_run_notes(s: StudySummary) -> list[str]:
    """A warning per method with runs that evaluated nothing (their metrics are no result),
    worded by :func:`nasfilter.runs.results.empty_run_warning`."""
    budget = s.parameters.budget_seconds
    return [
        empty_run_warning(r.method, r.empty_runs, r.runs, budget)
        for r in s.metrics_table
        if r.empty_runs
    ]


def captions(s: StudySummary) -> dict[str, str]:
    """Each figure's caption, by stem."""
    fig3, fig5, comp, p = s.fig3, s.fig5, s.comparison, s.parameters
    reaches = "; ".join(
        f"{label}: {reach_text(t, comp.reach_level)}" for label, t in comp.first_reaches.items()
    )
    return {
        "fig3": f"Throughput–utilization Pareto set: {fig3.pareto_size} of "
        f"{fig3.n_architectures} architectures (the study: 144 of 32767 on a V100 with "
        f"TensorRT). Spearman correlation of utilization with the {s.accuracy_label}: "
        f"{fig3.spearman_utilization_accuracy:.3f}.",
        "fig5": f"Approximate filtering (seed {fig5.seed}) evaluated {fig5.evaluated.size} "
        f"architectures; its front holds {fig5.front.size}, the true front "
        f"{s.true_front.indices.size}.",
        "fig6": "REINFORCE with the MnasNet reward acc × (throughput / 175000)^0.07, one panel "
        "per seed.",
        "comparison": "Hypervolume ratio of each run's front to the true front, on "
        f"({s.accuracy_label}, log10 throughput), mean ± standard error over seeds.",
        "hv_reach": "Hypervolume ratio over simulated time for every method, mean ± standard "
        f"error over seeds; a dot marks where the mean first reaches {comp.reach_level:g}. "
        f"{reaches}.",
        "metrics": "The final metrics, also in metrics.csv and metrics.md.",
        "workers": f"Each method with K = {', '.join(str(k) for k in p.workers)} simulated "
        "parallel workers (asynchronous: a worker asks for the next trial as soon as it is "
        f"free), the same {p.budget_seconds:g} worker-seconds per run; hypervolume ratio over "
        "simulated wall-clock time. Proxy scans run on one device and do not parallelize. "
        f"{workers_note(s)}",
    }


def workers_note(s: StudySummary) -> str:
    """Which methods the K figure shows at the first K only, and whether the
    multi-fidelity searchers are in it (they need a table with learning curves)."""
    wc = s.workers_comparison
    first_only = [label for label, per_k in wc.methods.items() if len(per_k) < len(wc.workers)]
    note = (
        f"At K = {wc.workers[0]} only: {', '.join(first_only)} (the synchronous Hyperband "
        "and BOHB wait for their rungs; the peers run at every K with --peers-every-k; the "
        "other cheap-signal methods are for the goal table). "
        if first_only and len(wc.workers) > 1 else ""
    )
    if not any(m.label in wc.methods for m in MULTI_FIDELITY_METHODS):
        note += (
            "The multi-fidelity searchers (ASHA, MO-ASHA, Hyperband, BOHB) are left out: "
            "this table has no learning curves (--table synthetic has them)."
        )
    return note.strip()


def banner(s: StudySummary) -> str:
    """The line above the report that says what is real and what is modelled."""
    if s.synthetic_table:
        return (
            "SYNTHETIC table: these numbers come from nasfilter's surrogate model, not from "
            "NATS-Bench. Omit --table for the real accuracies, or convert the real archive "
            "(docs/real-archive.md) for hp-12 searches and test accuracies."
        )
    if s.table_modelled:
        return (
            f"Real: the accuracies ({s.table_real}); searches observe them and, as no real "
            "test accuracy ships, they also score every run and the true front. "
            f"Modelled: {s.table_modelled} (the surrogate's time model)."
        )
    return ""


def _oracles_table(s: StudySummary) -> ReportTable:
    header, rows = comparison_rows(s.oracles["oracles"])
    left_out = "".join(f" Left out: {n} ({why})." for n, why in s.oracles["skipped"].items())
    return ReportTable(
        "Oracles side by side",
        tuple(header),
        tuple(tuple(r) for r in rows),
        caption="Each oracle's utilization over all architectures, its throughput–utilization "
        "Pareto front (the study: 144 on a V100 with TensorRT) and the front's overlap with "
        "the first row's (this run's oracle), and the Spearman correlations with the "
        f"{s.accuracy_label}. The calibrated GPU model names the measurements it was fitted "
        f"on.{left_out}",
    )


def report_tables(s: StudySummary) -> list[ReportTable]:
    """The oracles, the final metrics and the workers tables of the report, then the
    section "Which cheap signal pays"."""
    p = s.parameters
    header, rows = table_cells(s)
    k_header, k_rows = workers_cells(s)
    metrics = ReportTable(
        "Final metrics",
        tuple(header),
        tuple(tuple(r) for r in rows),
        caption=f"Mean ± standard error over {len(p.seeds)} seeds of {p.budget_seconds:g} "
        f"simulated seconds, K = {p.workers[0]} simulated worker(s). Selected acc: the "
        "architecture the searcher returns (its recommendation; otherwise the highest "
        "validation accuracy).",
    )
    workers = ReportTable(
        "Simulated parallel workers",
        tuple(k_header),
        tuple(tuple(r) for r in k_rows),
        caption="Hypervolume ratio reached by each simulated wall-clock time, and the wall "
        f"clock at the end of the run, with K workers sharing {p.budget_seconds:g} "
        f"worker-seconds; mean ± standard error over {len(p.seeds)} seeds.",
    )
    signals = cheap_signal_tables(s.cheap_signals, s.synthetic_table, s.table_label)
    if s.signal_ranking is not None:  # None: a summary written before the table
        signals.append(ranking_table(s.signal_ranking, s.accuracy_label, s.synthetic_table))
    if s.ceiling is not None:  # None: a summary written before the table
        signals.append(ceiling_report_table(CeilingRow.from_json(s.ceiling), s.accuracy_label))
    return [_oracles_table(s), metrics, workers, *signals]


def ceiling_report_table(row: CeilingRow, accuracy_label: str) -> ReportTable:
    """The clairvoyant ceiling of the study's table and oracle (:mod:`nasfilter.study.ceilings`)."""
    header, body = ceiling_cells([row], "the observed accuracy")
    return ReportTable(
        "How high could any run go? The clairvoyant ceiling",
        header,
        body,
        caption="The highest HV ratio of any set of architectures whose evaluation costs sum "
        f"to at most each budget, knowing every scored accuracy ({accuracy_label}); the "
        "seconds of evaluations any set needs for the target; and the HV ratio of the best "
        "set by the accuracy a search observes, known for every architecture. A run is "
        "scored on what it evaluated, so none beats the ceiling at a time (`nasfilter "
        "ceiling`; final metrics, which count a last evaluation ending past the budget: "
        "`nasfilter ceiling --last-may-overrun`).",
    )


def provenance(s: StudySummary) -> dict[str, str]:
    """The report's provenance list: inputs, seeds, budget, when."""
    p = s.parameters
    return {
        "table": s.table_label,
        "accuracy": s.accuracy_label,
        "oracle": s.oracle_label,
        "dataset": p.dataset,
        "seeds": ", ".join(str(seed) for seed in p.seeds),
        "budget": f"{p.budget_seconds:g} simulated seconds per run",
        "proxy query cost": f"{p.proxy_cost_seconds:g} simulated seconds",
        "created": s.created,
    }


def write_study_report(
    out: Path,
    s: StudySummary,
    figures: Sequence[FigureFiles],
    extra_figures: Sequence[ReportFigure] = (),
    extra_tables: Sequence[ReportTable] = (),
) -> None:
    """``report.html`` under ``out``: the figures with their captions, then ``extra_*``
    (the CNN survey's), the tables, the provenance and the warnings."""
    text = captions(s)
    write_report(
        out / "report.html",
        "nasfilter: the study's NAS analysis reproduced",
        [*(ReportFigure(f, text.get(f.stem, "")) for f in figures), *extra_figures],
        tables=[*extra_tables, *report_tables(s)],
        provenance=provenance(s),
        banner=banner(s),
        notes=empty_run_notes(s),
        footer="Generated by `nasfilter reproduce`; every number is in summary.json.",
    )
