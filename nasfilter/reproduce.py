"""Regenerate the study's NAS analysis (arXiv 2212.07936) for a table and an oracle.

:func:`reproduce` writes into ``out_dir``:

- ``fig3.png/.svg``: throughput against utilization over the whole space, coloured by test
  accuracy, with the throughput–utilization Pareto set (its size) and the Spearman
  correlation of utilization with accuracy;
- ``fig5.png/.svg``: the front approximate filtering returns against the true
  accuracy–throughput front (the first seed's run);
- ``fig6.png/.svg``: the REINFORCE (MnasNet reward) front of every seed against the true front;
- ``comparison.png/.svg``: the hypervolume ratio over simulated time of every built-in
  searcher and filter, mean ± standard error over seeds; ``metrics.png/.svg`` the final
  metrics table, also as ``metrics.csv`` and ``metrics.md``;
- ``summary.json``: every number shown (and the fronts), with the table's and the oracle's
  provenance;
- ``report.html``: all of it in one self-contained page.

The runs go through :func:`nasfilter.experiment.run_experiment`, so each (method, seed) is a
pure function of the two and the results do not depend on ``jobs``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.plots import mean_and_stderr
from nasfilter.problem import DEFAULT_PROXY_COST
from nasfilter.proxy import ProxyTable
from nasfilter.space import N_ARCHS
from nasfilter.table import BenchmarkTable, load_table

DEFAULT_BUDGET = 110_000.0
DEFAULT_SEEDS = tuple(range(9))
N_TICKS = 100  # points of each curve over simulated time

# Files reproduce writes; with force=True only these are replaced in a non-empty folder.
FIGURE_STEMS = ("fig3", "fig5", "fig6", "comparison", "metrics")
OUTPUT_FILES = (
    *(f"{stem}.{ext}" for stem in FIGURE_STEMS for ext in ("png", "svg")),
    "summary.json",
    "metrics.csv",
    "metrics.md",
    "report.html",
)


class MissingColumnError(ValueError):
    """A table or proxy lacks a column (or rows of it) that a figure needs."""


@dataclass(frozen=True)
class Method:
    """One compared method: a label for figures and a searcher and filter spec."""

    label: str
    searcher: str
    filter: str = "none"


# The study's setting: the full proxy scan whatever it costs (below 65536 s it evaluates
# nothing, and the report says so; see docs/searchers.md, small budgets).
FILTERING = Method("approximate filtering", "utilization-pareto[scan_share=None]")
REINFORCE_MNAS = Method("REINFORCE (MnasNet reward)", "reinforce-mnas")
# Every built-in searcher, and every built-in filter wrapping a searcher.
METHODS: tuple[Method, ...] = (
    FILTERING,
    REINFORCE_MNAS,
    Method("REINFORCE (accuracy reward)", "reinforce"),
    Method("random search", "random"),
    Method("regularized evolution", "evolution"),
    Method("successive frontiers", "utilization-layers"),
    Method("random + successive-frontiers filter", "random", "successive-frontiers"),
    Method("REINFORCE (MnasNet) + proxy-threshold filter", "reinforce-mnas", "proxy-threshold"),
)

# (key in RunRecord.metrics or .summary, column header, decimals)
TABLE_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("hv_ratio", "HV ratio", 3),
    ("igd_plus", "IGD+", 4),
    ("epsilon", "additive ε", 4),
    ("recall", "recall of true front", 3),
    ("best_test_acc", "best test acc (%)", 2),
    ("selected_test_acc", "selected test acc (%)", 2),
    ("n_evaluations", "evaluations", 0),
    ("evaluation_seconds", "evaluation s", 0),
    ("proxy_seconds", "proxy s", 0),
)


# ------------------------------------------------------------------ checks
def check_out_dir(out_dir: str | os.PathLike[str], force: bool) -> Path:
    """``out_dir`` as a Path; FileExistsError if it is a non-empty folder and not ``force``."""
    path = Path(out_dir)
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"--out {str(path)!r} exists and is not a folder")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise FileExistsError(
            f"the output folder {str(path)!r} exists and is not empty; choose a new folder "
            "or pass --force (force=True) to overwrite the files reproduce writes there"
        )
    return path


def _check_budget(budget: float) -> float:
    if isinstance(budget, bool) or not isinstance(budget, (int, float)):
        raise ValueError(f"budget must be a number of simulated seconds, got {budget!r}")
    if not (math.isfinite(budget) and budget > 0):
        raise ValueError(f"budget must be finite simulated seconds > 0, got {budget!r}")
    return float(budget)


def require_columns(table: BenchmarkTable) -> None:
    """Raise MissingColumnError unless ``table`` has what every figure needs, for all rows."""
    how = (
        "Convert the full NATS-Bench archive: `nasfilter convert NATS-sss-v1_0-50262-simple "
        f"--dataset {table.dataset.name} -o TABLE.npz` (see docs/real-archive.md), or omit "
        "--table to use the embedded synthetic surrogate."
    )
    needs = (
        ("test_acc", table.test_acc, "Fig. 3's colours, the true front and every metric"),
        ("valid_acc", table.valid_acc, "the searches' accuracy queries"),
        ("train_time", table.train_time, "the cost of an accuracy query"),
        ("valid_time", table.valid_time, "the cost of an accuracy query"),
    )
    for name, column, purpose in needs:
        ok = np.isfinite(column) if column.ndim == 1 else np.isfinite(column).any(axis=1)
        ok &= table.present
        missing = N_ARCHS - int(ok.sum())
        if missing:
            raise MissingColumnError(
                f"table {table.label!r} lacks column {name!r} for {missing} of {N_ARCHS} "
                f"architectures; reproduce needs it for the whole space ({purpose}). {how}"
            )


def require_proxy(proxy: ProxyTable, backend: str) -> None:
    """Raise MissingColumnError unless ``proxy`` covers every architecture."""
    missing = N_ARCHS - int(proxy.measured.sum())
    if missing:
        raise MissingColumnError(
            f"oracle {proxy.label!r} lacks columns 'utilization' and 'throughput' for {missing} "
            f"of {N_ARCHS} architectures; Fig. 3 and approximate filtering need the whole space. "
            f"Measure it: `nasfilter measure --backend {backend} --archs all --cache CACHE.db`, "
            "then pass --oracle-cache CACHE.db, or use --backend roofline."
        )


# ------------------------------------------------------------------ numbers
def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _json_safe(value: Any) -> Any:
    """``value`` with numpy types converted and NaN/inf written as None (strict JSON)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return _json_safe(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _finite(float(value))
    return value


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error (std with ddof 1 over sqrt(n); 0 for one value)."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return math.nan, math.nan
    if not np.all(np.isfinite(arr)):
        finite_mean = float(np.mean(arr)) if not np.any(np.isnan(arr)) else math.nan
        return finite_mean, math.nan
    if arr.size == 1:
        return float(arr[0]), 0.0
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(arr.size))


def format_mean_se(mean: float, se: float, decimals: int) -> str:
    if not math.isfinite(mean):
        return "inf" if mean == math.inf else "n/a"
    text = f"{mean:,.{decimals}f}" if decimals == 0 else f"{mean:.{decimals}f}"
    if math.isfinite(se) and se > 0:
        text += f" ± {se:,.{decimals}f}" if decimals == 0 else f" ± {se:.{decimals}f}"
    return text


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    from scipy import stats

    return float(stats.spearmanr(x, y).statistic)


# ------------------------------------------------------------------ the study
def reproduce(
    out_dir: str | os.PathLike[str],
    table: str | os.PathLike[str] | None = None,
    backend: str = "roofline",
    device: str | None = "v100",
    dataset: str = "cifar10",
    seeds: Iterable[int] = DEFAULT_SEEDS,
    budget: float = DEFAULT_BUDGET,
    force: bool = False,
    quiet: bool = False,
    jobs: int = 1,
    oracle_cache: str | os.PathLike[str] | None = None,
    proxy_cost: float = DEFAULT_PROXY_COST,
    methods: Sequence[Method] = METHODS,
) -> dict[str, Any]:
    """Run the study's NAS analysis and write figures, ``summary.json`` and ``report.html``.

    Args:
        out_dir: the output folder; refused if it exists and is not empty, unless ``force``.
        table: a table converted with ``nasfilter convert`` (.npz), or None for the embedded
            synthetic surrogate. It must hold every architecture.
        backend, device, oracle_cache: the oracle (``nasfilter.oracle.proxy_table``); the
            default is the roofline on a V100.
        dataset: the dataset.
        seeds: the run seeds (integers >= 0), nine by default as in the study.
        budget: simulated seconds per run (the study: 110000).
        quiet: no progress bars.
        jobs: worker processes for the runs (results do not depend on it).
        proxy_cost: simulated seconds per proxy query.
        methods: the compared methods; must include approximate filtering and REINFORCE
            with the MnasNet reward (Figs. 5 and 6).

    Returns the summary (the contents of ``summary.json``). Raises ValueError (or
    MissingColumnError, FileExistsError) before running anything on bad input.
    """
    from nasfilter.experiment import (
        RunSpec,
        check_seeds,
        inputs,
        load_proxy,
        provenance,
        run_experiment,
    )
    from nasfilter.oracle.registry import backend_name

    started = time.perf_counter()
    out = check_out_dir(out_dir, force)
    seed_list = check_seeds(seeds)
    budget = _check_budget(budget)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    backend_name(backend)  # an unknown name lists the known ones
    labels = [m.label for m in methods]
    if len(set(labels)) != len(labels):
        raise ValueError(f"method labels must be distinct, got {labels}")
    for needed in (FILTERING, REINFORCE_MNAS):
        if needed not in methods:
            raise ValueError(f"methods must include {needed} (it is drawn in Fig. 5 or 6)")
    specs = [
        RunSpec(
            searcher=m.searcher,
            filter=m.filter,
            dataset=dataset,
            budget=budget,
            proxy_cost=proxy_cost,
            table=None if table is None else str(table),
            oracle=backend,
            device=device,
            oracle_cache=None if oracle_cache is None else str(oracle_cache),
            n_ticks=N_TICKS,
        )
        for m in methods
    ]
    for spec in specs:
        spec.validate()
    # Check the inputs here first, to name the missing column and how to get it.
    require_columns(load_table(table, dataset))
    require_proxy(load_proxy(backend, device, dataset, specs[0].oracle_cache), backend)
    bench, proxy, reference = inputs(specs[0])
    table_prov, oracle_prov = provenance(specs[0])
    t_inputs = time.perf_counter()

    records = run_experiment(specs, seed_list, jobs=jobs, progress=not quiet)
    t_runs = time.perf_counter()

    summary = _summarize(
        methods, specs, seed_list, records, bench, proxy, reference, table_prov, oracle_prov
    )
    summary["parameters"] = {
        "dataset": bench.dataset.name,
        "seeds": seed_list,
        "budget_seconds": budget,
        "proxy_cost_seconds": proxy_cost,
        "backend": backend,
        "device": device,
        "oracle_cache": None if oracle_cache is None else str(oracle_cache),
        "table": None if table is None else str(table),
        "n_ticks": N_TICKS,
    }
    out.mkdir(parents=True, exist_ok=True)
    figures = _draw(out, summary, bench, proxy, quiet)
    t_figures = time.perf_counter()
    summary["timings_seconds"] = {
        "inputs": t_inputs - started,
        "runs": t_runs - t_inputs,
        "figures": t_figures - t_runs,
    }
    summary["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    _write_tables(out, summary)
    _write_report(out, summary, figures)
    summary["timings_seconds"]["total"] = time.perf_counter() - started
    text = json.dumps(_json_safe(summary), indent=1, allow_nan=False)
    (out / "summary.json").write_text(text + "\n", encoding="utf-8")
    result: dict[str, Any] = json.loads(text)
    return result


def _summarize(
    methods: Sequence[Method],
    specs: Sequence[Any],
    seeds: list[int],
    records: Sequence[Any],
    table: BenchmarkTable,
    proxy: ProxyTable,
    reference: Any,
    table_prov: dict[str, Any],
    oracle_prov: dict[str, Any],
) -> dict[str, Any]:
    from nasfilter.metrics import front_of
    from nasfilter.pareto import nondominated_mask
    from nasfilter.problem import EVALUATE

    by_key = {spec.key(): m for m, spec in zip(methods, specs, strict=True)}
    util, thr, acc = proxy.utilization, proxy.throughput, table.test_acc
    on_front = nondominated_mask(np.stack([thr, util], axis=1))
    pareto_set = np.flatnonzero(on_front)
    runs: list[dict[str, Any]] = []
    first_evaluated: list[int] = []
    curves: dict[str, list[list[float]]] = {m.label: [] for m in methods}
    times: list[float] = []
    for record in records:
        method = by_key[record.spec.key()]
        events = record.events
        evaluated = events["index"][events["kind"] == EVALUATE]
        front = front_of(reference, evaluated)
        runs.append(
            {
                "method": method.label,
                "searcher": record.spec.searcher,
                "filter": record.spec.filter,
                "seed": record.seed,
                "metrics": dict(record.metrics),
                "summary": {k: v for k, v in record.summary.items() if k != "wall_seconds"},
                "front": front.tolist(),
                "hv_ratio_curve": np.asarray(record.curves["hv_ratio"]).tolist(),
            }
        )
        curves[method.label].append(np.asarray(record.curves["hv_ratio"]).tolist())
        if method == FILTERING and record.seed == seeds[0]:
            first_evaluated = np.unique(evaluated).tolist()
        times = np.asarray(record.curves["clock"]).tolist()

    table_rows = []
    for m in methods:
        mine = [r for r in runs if r["method"] == m.label]
        row: dict[str, Any] = {"method": m.label, "searcher": m.searcher, "filter": m.filter}
        row["runs"] = len(mine)
        row["empty_runs"] = sum(1 for r in mine if not r["summary"]["n_evaluations"])
        for key, _, _ in TABLE_COLUMNS:
            values = [r["metrics"].get(key, r["summary"].get(key)) for r in mine]
            mean, se = mean_se([math.nan if v is None else float(v) for v in values])
            row[key] = {"mean": mean, "se": se}
        table_rows.append(row)

    def fronts_of(method: Method) -> dict[str, Any]:
        mine = [r for r in runs if r["method"] == method.label]
        return {
            "method": method.label,
            "fronts": {str(r["seed"]): r["front"] for r in mine},
            "hv_ratio": {str(r["seed"]): r["metrics"]["hv_ratio"] for r in mine},
        }

    fig5 = fronts_of(FILTERING)
    first = str(seeds[0])
    return {
        "study": "arXiv 2212.07936: GPU utilization as a filter for NAS",
        "table": table_prov,
        "oracle": oracle_prov,
        "table_label": table.label,
        "oracle_label": proxy.label,
        "synthetic_table": table.synthetic,
        "fig3": {
            "n_architectures": int(np.isfinite(util).sum()),
            "pareto_throughput_utilization": int(pareto_set.size),
            "pareto_set": pareto_set.tolist(),
            "spearman_utilization_accuracy": _spearman(util, acc),
            "spearman_throughput_accuracy": _spearman(thr, acc),
        },
        "true_front": {
            "indices": reference.true_front.tolist(),
            "test_acc": acc[reference.true_front].tolist(),
            "throughput": thr[reference.true_front].tolist(),
        },
        "fig5": {
            "method": FILTERING.label,
            "seed": seeds[0],
            "front": fig5["fronts"].get(first, []),
            "evaluated": first_evaluated,
            "hv_ratio": fig5["hv_ratio"].get(first),
        },
        "fig6": fronts_of(REINFORCE_MNAS),
        "comparison": {
            "metric": "hv_ratio",
            "times_seconds": times,
            "curves": {label: _band(c) for label, c in curves.items()},
        },
        "metrics_table": table_rows,
        "runs": runs,
    }


def _band(curves: list[list[float]]) -> dict[str, list[float]]:
    """Mean and standard error over runs of curves (runs, ticks), as plotted."""
    if not curves:
        return {"mean": [], "se": []}
    mean, se = mean_and_stderr(curves)
    return {"mean": mean.tolist(), "se": se.tolist()}


# ------------------------------------------------------------------ outputs
def table_cells(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The final metrics table as formatted text: (header, rows)."""
    header = ["method", "runs", *(title for _, title, _ in TABLE_COLUMNS)]
    rows = []
    for row in summary["metrics_table"]:
        cells = [row["method"], str(row["runs"])]
        for key, _, decimals in TABLE_COLUMNS:
            cell = row[key]
            cells.append(format_mean_se(cell["mean"], cell["se"], decimals))
        rows.append(cells)
    return header, rows


def metrics_markdown(summary: dict[str, Any]) -> str:
    """The final metrics table as Markdown, with its provenance line."""
    header, rows = table_cells(summary)
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]
    p = summary["parameters"]
    lines.append("")
    lines.append(
        f"Mean ± standard error over {len(p['seeds'])} seeds, {p['budget_seconds']:g} simulated "
        f"seconds per run. Table: {summary['table_label']}. Oracle: {summary['oracle_label']}."
    )
    return "\n".join(lines) + "\n"


def _write_tables(out: Path, summary: dict[str, Any]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    keys = [key for key, _, _ in TABLE_COLUMNS]
    writer.writerow(
        ["method", "searcher", "filter", "runs"]
        + [f"{k}_{s}" for k in keys for s in ("mean", "se")]
    )
    for row in summary["metrics_table"]:
        values = [row[k][s] for k in keys for s in ("mean", "se")]
        writer.writerow([row["method"], row["searcher"], row["filter"], row["runs"], *values])
    (out / "metrics.csv").write_text(buffer.getvalue(), encoding="utf-8")
    (out / "metrics.md").write_text(metrics_markdown(summary), encoding="utf-8")


def _draw(
    out: Path, summary: dict[str, Any], table: BenchmarkTable, proxy: ProxyTable, quiet: bool
) -> list[Any]:
    from tqdm import tqdm

    from nasfilter import plots

    ctx = plots.FigureContext(summary["table_label"], summary["oracle_label"])
    acc, thr, util = table.test_acc, proxy.throughput, proxy.utilization
    true_front = np.asarray(summary["true_front"]["indices"], dtype=np.int64)
    fig3 = summary["fig3"]
    on_front = np.zeros(N_ARCHS, dtype=bool)
    on_front[fig3["pareto_set"]] = True
    fig5, fig6, comp = summary["fig5"], summary["fig6"], summary["comparison"]

    def draw_fig3() -> Any:
        return plots.fig3_utilization_space(
            util, thr, acc, on_front, fig3["spearman_utilization_accuracy"], ctx
        )

    def draw_fig5() -> Any:
        return plots.fig5_filtering_front(
            acc,
            thr,
            true_front,
            np.asarray(fig5["front"], dtype=np.int64),
            ctx,
            evaluated=np.asarray(fig5["evaluated"], dtype=np.int64),
            method_label=f"{fig5['method']} (seed {fig5['seed']})",
            hv_ratio=fig5["hv_ratio"],
        )

    def draw_fig6() -> Any:
        fronts = {int(s): np.asarray(f, dtype=np.int64) for s, f in fig6["fronts"].items()}
        ratios = {int(s): float(v) for s, v in fig6["hv_ratio"].items()}
        return plots.fig6_seed_fronts(
            acc, thr, true_front, fronts, ctx, ratios, method_label=fig6["method"]
        )

    def draw_comparison() -> Any:
        curves = {
            label: np.asarray(
                [r["hv_ratio_curve"] for r in summary["runs"] if r["method"] == label],
                dtype=np.float64,
            )
            for label in comp["curves"]
        }
        return plots.comparison_curves(np.asarray(comp["times_seconds"]), curves, ctx)

    def draw_metrics() -> Any:
        header, rows = table_cells(summary)
        return plots.metrics_table_figure(header, rows, ctx)

    steps = (
        ("fig3", draw_fig3),
        ("fig5", draw_fig5),
        ("fig6", draw_fig6),
        ("comparison", draw_comparison),
        ("metrics", draw_metrics),
    )
    saved = []
    for stem, draw in tqdm(steps, desc="figures", unit="fig", disable=quiet, leave=False):
        saved.append(plots.save_figure(draw(), out, stem))
    return saved


def empty_run_notes(summary: dict[str, Any]) -> list[str]:
    """A warning per method with runs that evaluated nothing (their metrics are no result)."""
    return [
        f"Warning: {row['method']} evaluated nothing in {row['empty_runs']} of {row['runs']} "
        "runs: the budget went to proxy queries, so its metrics there are not a result."
        for row in summary["metrics_table"]
        if row.get("empty_runs")
    ]


def _write_report(out: Path, summary: dict[str, Any], figures: Sequence[Any]) -> None:
    from nasfilter.report import ReportFigure, ReportTable, write_report

    fig3, fig5 = summary["fig3"], summary["fig5"]
    p = summary["parameters"]
    captions = {
        "fig3": (
            f"Throughput–utilization Pareto set: {fig3['pareto_throughput_utilization']} of "
            f"{fig3['n_architectures']} architectures (the study: 144 of 32767 on a V100 with "
            f"TensorRT). Spearman correlation of utilization with test accuracy: "
            f"{fig3['spearman_utilization_accuracy']:.3f}."
        ),
        "fig5": (
            f"Approximate filtering (seed {fig5['seed']}) evaluated {len(fig5['evaluated'])} "
            f"architectures; its front holds {len(fig5['front'])}, the true front "
            f"{len(summary['true_front']['indices'])}."
        ),
        "fig6": "REINFORCE with the MnasNet reward acc × (throughput / 175000)^0.07, one panel "
        "per seed.",
        "comparison": "Hypervolume ratio of each run's front to the true front, on "
        "(test accuracy, log10 throughput), mean ± standard error over seeds.",
        "metrics": "The final metrics, also in metrics.csv and metrics.md.",
    }
    header, rows = table_cells(summary)
    banner = ""
    if summary["synthetic_table"]:
        banner = (
            "SYNTHETIC table: these numbers come from nasfilter's surrogate model, not from "
            "NATS-Bench. Convert the real archive (docs/real-archive.md) for research results."
        )
    write_report(
        out / "report.html",
        "nasfilter: the study's NAS analysis reproduced",
        [ReportFigure(f, captions.get(f.stem, "")) for f in figures],
        tables=[
            ReportTable(
                "Final metrics",
                tuple(header),
                tuple(tuple(r) for r in rows),
                caption=(
                    f"Mean ± standard error over {len(p['seeds'])} seeds of "
                    f"{p['budget_seconds']:g} simulated seconds."
                ),
            )
        ],
        provenance={
            "table": summary["table_label"],
            "oracle": summary["oracle_label"],
            "dataset": p["dataset"],
            "seeds": ", ".join(str(s) for s in p["seeds"]),
            "budget": f"{p['budget_seconds']:g} simulated seconds per run",
            "proxy query cost": f"{p['proxy_cost_seconds']:g} simulated seconds",
            "created": summary["created"],
        },
        banner=banner,
        notes=empty_run_notes(summary),
        footer="Generated by `nasfilter reproduce`; every number is in summary.json.",
    )
