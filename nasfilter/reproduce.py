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

from nasfilter.files import atomic_write, check_path_text, same_file
from nasfilter.problem import DEFAULT_PROXY_COST
from nasfilter.proxy import DEFAULT_ORACLE, ProxyTable
from nasfilter.searchers.optuna_adapter import optuna_available
from nasfilter.space import N_ARCHS
from nasfilter.table import BenchmarkTable
from nasfilter.tables import load_table

DEFAULT_BUDGET = 110_000.0
DEFAULT_SEEDS = tuple(range(9))
DEFAULT_WORKERS = (1, 4, 16)  # simulated parallel workers compared
WORKERS_FRACTIONS = (1 / 16, 1 / 4, 1.0)  # of the budget: wall-clock times of the K table
N_TICKS = 100  # points of each curve over simulated time

# Files reproduce writes; with force=True only these are replaced in a non-empty folder.
FIGURE_STEMS = ("fig3", "fig5", "fig6", "comparison", "hv_reach", "workers", "metrics")
OUTPUT_FILES = (
    *(f"{stem}.{ext}" for stem in FIGURE_STEMS for ext in ("png", "svg")),
    "summary.json",
    "metrics.csv",
    "metrics.md",
    "report.html",
    "survey",  # the CNN survey's folder, when the survey extra is installed
)


class MissingColumnError(ValueError):
    """A table or proxy lacks a column (or rows of it) that a figure needs."""


@dataclass(frozen=True)
class Method:
    """One compared method: a label for figures and a searcher and filter spec."""

    label: str
    searcher: str
    filter: str = "none"
    # Run at every K of the workers comparison (False: only at the first K, to keep the
    # default reproduction fast; the method still appears in every other output).
    every_k: bool = True


# The study's setting: the full proxy scan whatever it costs (below 65536 s it evaluates
# nothing, and the report says so; see docs/searchers.md, small budgets).
FILTERING = Method("approximate filtering", "utilization-pareto[scan_share=None]")
REINFORCE_MNAS = Method("REINFORCE (MnasNet reward)", "reinforce-mnas")
# The model-based searcher, with and without the hardware signal as features, and
# established multi-objective optimizers as peers (these only when Optuna is installed).
PEER_METHODS: tuple[Method, ...] = (
    Method("model-based search", "model-based", every_k=False),
    Method("model-based + utilization features", "model-based-hw", every_k=False),
    *(
        (
            Method("Optuna NSGA-II", "optuna-nsga2", every_k=False),
            Method("Optuna random", "optuna-random", every_k=False),
        )
        if optuna_available()
        else ()
    ),
)
# Every built-in searcher, and every built-in filter wrapping a searcher, and the peers.
METHODS: tuple[Method, ...] = (
    FILTERING,
    REINFORCE_MNAS,
    Method("REINFORCE (accuracy reward)", "reinforce"),
    Method("random search", "random"),
    Method("regularized evolution", "evolution"),
    Method("successive frontiers", "utilization-layers"),
    Method("random + successive-frontiers filter", "random", "successive-frontiers"),
    Method("REINFORCE (MnasNet) + proxy-threshold filter", "reinforce-mnas", "proxy-threshold"),
    *PEER_METHODS,
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
def check_out_dir(
    out_dir: str | os.PathLike[str], force: bool, inputs: dict[str, Any] | None = None
) -> Path:
    """``out_dir`` as a Path; FileExistsError if it is a non-empty folder and not ``force``;
    ValueError for an empty name, and for an input (``inputs``: name -> path or None) that
    lies inside it, where reproduce writes its files, whatever ``force`` says."""
    check_path_text(out_dir, "--out")
    path = Path(out_dir)
    for name, value in (inputs or {}).items():
        if value is None:
            continue
        inside = Path(os.path.abspath(value))
        if inside.is_relative_to(os.path.abspath(path)) or same_file(inside, path):
            raise ValueError(
                f"{name} {str(value)!r} lies inside the output folder --out {str(path)!r}, "
                "where reproduce writes its files; refusing to write over an input, even "
                "with --force: move it out of that folder, or choose another --out"
            )
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
        "--table to use the real table."
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
            "then pass --oracle-cache CACHE.db, or use an analytic backend (calibrated, roofline)."
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


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    from scipy import stats

    return float(stats.spearmanr(x, y).statistic)


# ------------------------------------------------------------------ the study
# The CNN survey's part of the report: one model or more of each family the study names.
REPORT_SURVEY_MODELS = (
    "resnet50",
    "resnext50_32x4d",
    "regnety_040",
    "efficientnet_b0",
    "mobilenetv2_100",
    "mobilenetv3_large_100",
    "densenet121",
    "tresnet_m",
)


@dataclass(frozen=True)
class _Plan:
    """The checked arguments of one reproduction."""

    out: Path
    seeds: list[int]
    budget: float
    workers: tuple[int, ...]
    specs: dict[int, list[Any]]  # K -> one RunSpec per method


def _check_workers(workers: Iterable[int]) -> tuple[int, ...]:
    from nasfilter.runner import check_workers

    out = tuple(dict.fromkeys(check_workers(k) for k in workers))
    if not out:
        raise ValueError("workers must name at least one K, e.g. (1, 4, 16)")
    return out


def _methods_at(methods: Sequence[Method], ks: Sequence[int], k: int) -> list[Method]:
    """The methods run with ``k`` workers: all at the first K, the ``every_k`` ones after."""
    return [m for m in methods if k == ks[0] or m.every_k]


def _plan(
    out_dir: str | os.PathLike[str],
    force: bool,
    seeds: Iterable[int],
    budget: float,
    jobs: int,
    backend: str,
    methods: Sequence[Method],
    workers: Iterable[int],
    spec_fields: dict[str, Any],
) -> _Plan:
    """Every argument checked and every run spec built; ValueError before anything runs."""
    from nasfilter.experiment import RunSpec, check_seeds
    from nasfilter.oracle.registry import backend_name

    inputs = {f"--{k.replace('_', '-')}": spec_fields[k] for k in ("table", "oracle_cache")}
    out = check_out_dir(out_dir, force, inputs)
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
    ks = _check_workers(workers)
    specs = {
        k: [
            RunSpec(
                searcher=m.searcher,
                filter=m.filter,
                budget=budget,
                n_ticks=N_TICKS,
                workers=k,
                **spec_fields,
            )
            for m in _methods_at(methods, ks, k)
        ]
        for k in ks
    }
    for spec in specs[ks[0]]:
        spec.validate()
    return _Plan(out, seed_list, budget, ks, specs)


def reproduce(
    out_dir: str | os.PathLike[str],
    table: str | os.PathLike[str] | None = None,
    backend: str = DEFAULT_ORACLE,
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
    workers: Iterable[int] = DEFAULT_WORKERS,
    survey: bool | None = None,
    survey_models: Sequence[str] = REPORT_SURVEY_MODELS,
) -> dict[str, Any]:
    """Run the study's NAS analysis and write figures, ``summary.json`` and ``report.html``.

    Args:
        out_dir: the output folder; refused if it exists and is not empty, unless ``force``.
        table: a table's name (``"real"``, also None, the default; ``"synthetic"``) or a table
            converted with ``nasfilter convert`` (.npz). It must hold every architecture.
        backend, device, oracle_cache: the oracle (``nasfilter.oracle.proxy_table``); the
            default is ``DEFAULT_ORACLE`` (the calibrated GPU model) on a V100.
        dataset: the dataset.
        seeds: the run seeds (integers >= 0), nine by default as in the study.
        budget: worker-seconds per run (the study: 110000), the same for every K.
        quiet: no progress bars.
        jobs: worker processes for the runs (results do not depend on it).
        proxy_cost: simulated seconds per proxy query.
        methods: the compared methods; must include approximate filtering and REINFORCE
            with the MnasNet reward (Figs. 5 and 6).
        workers: the numbers K of simulated parallel workers compared (the first is the one
            of the metrics table and Figs. 5 and 6); default 1, 4 and 16.
        survey: add the CNN survey (§3, ``nasfilter survey``) of ``survey_models`` on the
            RTX 4090 against its shipped NCHW measurements, in ``survey/`` and the report;
            None: when the survey extra (timm) is installed.

    Returns the summary (the contents of ``summary.json``). Raises ValueError (or
    MissingColumnError, FileExistsError) before running anything on bad input.
    """
    from nasfilter.experiment import inputs, load_proxy, provenance, run_experiment
    from nasfilter.results import load_results
    from nasfilter.storage import InMemoryStorage

    started = time.perf_counter()
    fields = {
        "dataset": dataset,
        "proxy_cost": proxy_cost,
        "table": None if table is None else str(table),
        "oracle": backend,
        "device": device,
        "oracle_cache": None if oracle_cache is None else str(oracle_cache),
    }
    plan = _plan(out_dir, force, seeds, budget, jobs, backend, methods, workers, fields)
    main = plan.specs[plan.workers[0]]
    # Check the inputs here first, to name the missing column and how to get it.
    require_columns(load_table(table, dataset))
    require_proxy(load_proxy(backend, device, dataset, main[0].oracle_cache), backend)
    bench, proxy, reference = inputs(main[0])
    table_prov, oracle_prov = provenance(main[0])
    t_inputs = time.perf_counter()

    every = [spec for k in plan.workers for spec in plan.specs[k]]
    with InMemoryStorage() as storage:
        run_experiment(every, plan.seeds, store=storage, jobs=jobs, progress=not quiet)
        results = load_results(storage, with_events=True, trust_plugins=True)  # ours
    t_runs = time.perf_counter()

    summary = _summarize(methods, plan, results, bench, proxy, reference)
    summary["table"], summary["oracle"] = table_prov, oracle_prov
    summary["oracles"] = oracle_comparison(backend, device, bench, proxy)
    summary["parameters"] = {
        "dataset": bench.dataset.name,
        "seeds": plan.seeds,
        "budget_seconds": plan.budget,
        "budget_clock": "worker",
        "workers": list(plan.workers),
        "proxy_cost_seconds": proxy_cost,
        "backend": backend,
        "device": device,
        "oracle_cache": fields["oracle_cache"],
        "table": fields["table"],
        "n_ticks": N_TICKS,
    }
    plan.out.mkdir(parents=True, exist_ok=True)
    figures = _draw(plan.out, summary, bench, proxy, quiet)
    extra_figures, extra_tables = _survey_section(plan.out, summary, survey, survey_models)
    t_figures = time.perf_counter()
    summary["timings_seconds"] = {
        "inputs": t_inputs - started,
        "runs": t_runs - t_inputs,
        "figures": t_figures - t_runs,
    }
    summary["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    _write_tables(plan.out, summary)
    _write_report(plan.out, summary, figures, extra_figures, extra_tables)
    summary["timings_seconds"]["total"] = time.perf_counter() - started
    text = json.dumps(_json_safe(summary), indent=1, allow_nan=False)
    with atomic_write(plan.out / "summary.json", "w") as fh:
        fh.write(text + "\n")
    result: dict[str, Any] = json.loads(text)
    return result


def _summarize(
    methods: Sequence[Method],
    plan: _Plan,
    results: Sequence[Any],
    table: BenchmarkTable,
    proxy: ProxyTable,
    reference: Any,
) -> dict[str, Any]:
    """Every number of the outputs, from the scored runs (:mod:`nasfilter.results`)."""
    main_k = plan.workers[0]
    by_key = {
        (spec.key()): m
        for k in plan.workers
        for m, spec in zip(_methods_at(methods, plan.workers, k), plan.specs[k], strict=True)
    }
    main = [r for r in results if r.spec.workers == main_k]
    runs = [_run_entry(by_key[r.spec.key()], r, reference) for r in main]
    fig5, fig6 = _fronts_of(FILTERING, runs), _fronts_of(REINFORCE_MNAS, runs)
    first = str(plan.seeds[0])
    first_filtering = next(
        (r for r in main if by_key[r.spec.key()] == FILTERING and r.seed == plan.seeds[0]), None
    )
    return {
        "study": "arXiv 2212.07936: GPU utilization as a filter for NAS",
        "table_label": table.label,
        "oracle_label": proxy.label,
        "synthetic_table": table.synthetic,
        "accuracy_label": table.score_label,
        "scored": table.provenance.scored,
        "table_real": table.provenance.real,
        "table_modelled": table.provenance.modelled,
        "fig3": _fig3_numbers(table, proxy),
        "true_front": {
            "indices": reference.true_front.tolist(),
            "test_acc": table.test_acc[reference.true_front].tolist(),
            "throughput": proxy.throughput[reference.true_front].tolist(),
        },
        "fig5": {
            "method": FILTERING.label,
            "seed": plan.seeds[0],
            "front": fig5["fronts"].get(first, []),
            "evaluated": [] if first_filtering is None else _evaluated(first_filtering),
            "hv_ratio": fig5["hv_ratio"].get(first),
        },
        "fig6": fig6,
        "comparison": _comparison(methods, main, by_key),
        "metrics_table": _metrics_table(methods, runs),
        "workers_comparison": _workers_comparison(methods, plan, results, by_key),
        "runs": runs,
    }


def _evaluated(run: Any) -> list[int]:
    from nasfilter.results import completed_evaluations

    assert run.events is not None
    return np.unique(completed_evaluations(run.events)[0]).tolist()


def _run_entry(method: Method, run: Any, reference: Any) -> dict[str, Any]:
    from nasfilter.metrics import front_of
    from nasfilter.results import completed_evaluations

    assert run.events is not None
    front = front_of(reference, completed_evaluations(run.events)[0])
    return {
        "method": method.label,
        "searcher": run.spec.searcher,
        "filter": run.spec.filter,
        "workers": run.spec.workers,
        "seed": run.seed,
        "status": run.status,
        "metrics": dict(run.metrics),
        "summary": dict(run.summary),
        "front": front.tolist(),
        "hv_ratio_curve": np.asarray(run.curves["hv_ratio"]).tolist(),
    }


def _fig3_numbers(table: BenchmarkTable, proxy: ProxyTable) -> dict[str, Any]:
    from nasfilter.pareto import nondominated_mask

    util, thr, acc = proxy.utilization, proxy.throughput, table.test_acc
    pareto_set = np.flatnonzero(nondominated_mask(np.stack([thr, util], axis=1)))
    return {
        "n_architectures": int(np.isfinite(util).sum()),
        "pareto_throughput_utilization": int(pareto_set.size),
        "pareto_set": pareto_set.tolist(),
        "spearman_utilization_accuracy": _spearman(util, acc),
        "spearman_throughput_accuracy": _spearman(thr, acc),
        "spearman_macs_accuracy": _spearman(table.macs, acc),
        "spearman_params_accuracy": _spearman(table.params, acc),
    }


def _fronts_of(method: Method, runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    mine = [r for r in runs if r["method"] == method.label]
    return {
        "method": method.label,
        "fronts": {str(r["seed"]): r["front"] for r in mine},
        "hv_ratio": {str(r["seed"]): r["metrics"]["hv_ratio"] for r in mine},
    }


def _metrics_table(
    methods: Sequence[Method], runs: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    from nasfilter.results import evaluated_nothing, mean_se

    table_rows = []
    for m in methods:
        mine = [r for r in runs if r["method"] == m.label]
        row: dict[str, Any] = {"method": m.label, "searcher": m.searcher, "filter": m.filter}
        row["runs"] = len(mine)
        row["empty_runs"] = sum(1 for r in mine if evaluated_nothing(r["summary"]))
        for key, _, _ in TABLE_COLUMNS:
            stat = mean_se([r["metrics"].get(key, r["summary"].get(key)) for r in mine])
            row[key] = {"mean": stat.mean, "se": stat.se}
        table_rows.append(row)
    return table_rows


def _comparison(
    methods: Sequence[Method], runs: Sequence[Any], by_key: dict[str, Method]
) -> dict[str, Any]:
    from nasfilter.results import REACH_LEVEL, first_reaching

    curves = {m.label: [r for r in runs if by_key[r.spec.key()] == m] for m in methods}
    times = np.asarray(runs[0].curves["clock"]).tolist() if runs else []
    bands = {label: _band(rs) for label, rs in curves.items()}
    return {
        "metric": "hv_ratio",
        "times_seconds": times,
        "curves": bands,
        # Simulated seconds at which each method's mean first reaches the level; None: never.
        "reach_level": REACH_LEVEL,
        "first_reaches": {
            label: first_reaching(times, b["mean"]) if b["mean"] else None
            for label, b in bands.items()
        },
    }


def oracle_comparison(
    backend: str, device: str | None, table: BenchmarkTable, proxy: ProxyTable
) -> dict[str, Any]:
    """The run's oracle beside the analytic ones on the same device (:mod:`.oracle.compare`).

    The plain roofline and the calibrated model are added unless the run uses them already;
    an analytic oracle the device cannot feed (a user spec without an SM count, a CUDA
    device name) is left out, with the reason in ``skipped``.
    """
    from nasfilter.oracle.calibrated import calibrated
    from nasfilter.oracle.compare import oracle_figures
    from nasfilter.oracle.roofline import roofline

    proxies, skipped = [proxy], {}
    for name, make in (("roofline", roofline), ("calibrated", calibrated)):
        if name == backend:
            continue
        try:
            proxies.append(make(device, table.dataset).proxy_table())
        except ValueError as exc:  # unknown or incomplete device spec
            skipped[name] = str(exc)
    return {"oracles": oracle_figures(proxies, table.test_acc), "skipped": skipped}


def _band(runs: Sequence[Any]) -> dict[str, list[float]]:
    """Mean and standard error over runs of the hv_ratio curves, as plotted."""
    from nasfilter.results import curve_band

    if not runs:
        return {"mean": [], "se": []}
    band = curve_band(runs, "hv_ratio")
    return {"mean": band.mean.tolist(), "se": band.se.tolist()}


def _workers_comparison(
    methods: Sequence[Method], plan: _Plan, results: Sequence[Any], by_key: dict[str, Method]
) -> dict[str, Any]:
    """Per method and K: the hv_ratio band over simulated wall-clock time and its value at
    :data:`WORKERS_FRACTIONS` of the budget (the time axis is shared by every K)."""
    from nasfilter.results import mean_se

    times = np.asarray(results[0].curves["clock"]) if results else np.zeros(0)
    at = [int(np.searchsorted(times, f * plan.budget - 1e-9)) for f in WORKERS_FRACTIONS]
    out: dict[str, Any] = {}
    for m in methods:
        per_k: dict[str, Any] = {}
        for k in plan.workers if m.every_k else plan.workers[:1]:
            mine = [r for r in results if by_key[r.spec.key()] == m and r.spec.workers == k]
            band = _band(mine)
            hv = np.stack([np.asarray(r.curves["hv_ratio"]) for r in mine]) if mine else None
            points = []
            for i in at:
                stat = mean_se(hv[:, i]) if hv is not None else None
                points.append(
                    {"mean": stat.mean, "se": stat.se} if stat else {"mean": None, "se": None}
                )
            wall = mean_se([r.summary["clock"] for r in mine])
            per_k[str(k)] = {
                "band": band,
                "at_fractions": points,
                "wall_clock_seconds": {"mean": wall.mean, "se": wall.se},
                "runs": len(mine),
            }
        out[m.label] = per_k
    return {
        "workers": list(plan.workers),
        "metric": "hv_ratio",
        "times_seconds": times.tolist(),
        "fractions": list(WORKERS_FRACTIONS),
        "methods": out,
    }


# ------------------------------------------------------------------ outputs
def table_cells(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The final metrics table as formatted text: (header, rows)."""
    from nasfilter.results import format_mean_se

    scored = summary.get("scored", "test@90")
    titles = [t if scored == "test@90" else t.replace("test acc", f"{scored} acc")
              for _, t, _ in TABLE_COLUMNS]  # fmt: skip
    header = ["method", "runs", *titles]
    rows = []
    for row in summary["metrics_table"]:
        cells = [row["method"], str(row["runs"])]
        for key, _, decimals in TABLE_COLUMNS:
            cell = row[key]
            cells.append(format_mean_se(cell["mean"], cell["se"], decimals))
        rows.append(cells)
    return header, rows


def workers_cells(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The K comparison as formatted text: (header, rows), one row per method and K."""
    from nasfilter.results import format_mean_se

    wc = summary["workers_comparison"]
    budget = summary["parameters"]["budget_seconds"]
    header = [
        "method",
        "K",
        *(f"HV ratio at {f * budget:,.0f} s" for f in wc["fractions"]),
        "wall-clock s at the end",
    ]
    rows = []
    for label, per_k in wc["methods"].items():
        for k, entry in per_k.items():
            cells = [label, str(k)]
            cells += [format_mean_se(c["mean"], c["se"], 3) for c in entry["at_fractions"]]
            wall = entry["wall_clock_seconds"]
            cells.append(format_mean_se(wall["mean"], wall["se"], 0))
            rows.append(cells)
    return header, rows


def accuracy_words(summary: dict[str, Any]) -> str:
    """What the accuracies of ``summary`` are, in words (a summary from before the real
    table has no ``accuracy_label``: test accuracy)."""
    return str(summary.get("accuracy_label", "test accuracy after 90 epochs"))


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
        f"seconds per run. Table: {summary['table_label']}. Oracle: {summary['oracle_label']}. "
        f"Accuracy (the true front and every metric): {accuracy_words(summary)}."
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
    for name, text in (
        ("metrics.csv", buffer.getvalue()),
        ("metrics.md", metrics_markdown(summary)),
    ):
        with atomic_write(out / name, "w") as fh:  # never half a file (a full disk)
            fh.write(text)


def _draw(
    out: Path, summary: dict[str, Any], table: BenchmarkTable, proxy: ProxyTable, quiet: bool
) -> list[Any]:
    from tqdm import tqdm

    from nasfilter import plots

    ctx = plots.FigureContext(
        summary["table_label"], summary["oracle_label"], f"{accuracy_words(summary)} (%)"
    )
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

    def draw_reach() -> Any:
        bands = {
            label: (band["mean"], band["se"])
            for label, band in comp["curves"].items()
            if band["mean"]
        }
        return plots.reach_curves(
            np.asarray(comp["times_seconds"]), bands, ctx, level=comp["reach_level"]
        )

    def draw_workers() -> Any:
        wc = summary["workers_comparison"]
        bands = {
            label: {
                int(k): (v["band"]["mean"], v["band"]["se"])
                for k, v in per_k.items()
                if v["band"]["mean"]
            }
            for label, per_k in wc["methods"].items()
        }
        return plots.workers_curves(np.asarray(wc["times_seconds"]), bands, ctx)

    def draw_metrics() -> Any:
        header, rows = table_cells(summary)
        return plots.metrics_table_figure(header, rows, ctx)

    steps = (
        ("fig3", draw_fig3),
        ("fig5", draw_fig5),
        ("fig6", draw_fig6),
        ("comparison", draw_comparison),
        ("hv_reach", draw_reach),
        ("workers", draw_workers),
        ("metrics", draw_metrics),
    )
    saved = []
    for stem, draw in tqdm(steps, desc="figures", unit="fig", disable=quiet, leave=False):
        saved.append(plots.save_figure(draw(), out, stem))
    return saved


def empty_run_notes(summary: dict[str, Any]) -> list[str]:
    """A warning per method with runs that evaluated nothing (their metrics are no result),
    worded by :func:`nasfilter.results.empty_run_warning`."""
    from nasfilter.results import empty_run_warning

    budget = summary["parameters"]["budget_seconds"]
    return [
        empty_run_warning(row["method"], row["empty_runs"], row["runs"], budget)
        for row in summary["metrics_table"]
        if row.get("empty_runs")
    ]


def _survey_section(
    out: Path, summary: dict[str, Any], enabled: bool | None, models: Sequence[str]
) -> tuple[list[Any], list[Any]]:
    """Run the CNN survey into ``out/survey`` when enabled (None: when timm imports)."""
    if enabled is False:
        summary["survey"] = None
        return [], []
    try:
        from nasfilter.survey.timm_import import import_timm

        import_timm()
    except ImportError as exc:
        if enabled:
            raise
        summary["survey"] = {"skipped": f"the survey extra is not installed ({exc})"}
        return [], []
    from nasfilter.oracle.devices import get_device
    from nasfilter.survey.output import report_section, survey_figures, write_survey
    from nasfilter.survey.survey import SurveySettings, run_survey
    from nasfilter.timm_data import read_benchmark, shipped_benchmark

    source = shipped_benchmark("rtx4090", "nchw")
    settings = SurveySettings(
        device=get_device("rtx4090"),
        measured=read_benchmark(source),
        measured_label=source.name,
        models=[(m, None) for m in models],
    )
    result = run_survey(settings)
    folder = out / "survey"
    folder.mkdir(exist_ok=True)
    write_survey(result, folder, figures=False)
    files = survey_figures(result, folder)
    summary["survey"] = result.summary
    return report_section(result, files)


def _write_report(
    out: Path,
    summary: dict[str, Any],
    figures: Sequence[Any],
    extra_figures: Sequence[Any] = (),
    extra_tables: Sequence[Any] = (),
) -> None:
    from nasfilter.report import ReportFigure, ReportTable, write_report
    from nasfilter.results import reach_text

    fig3, fig5, comp = summary["fig3"], summary["fig5"], summary["comparison"]
    p = summary["parameters"]
    acc_words = accuracy_words(summary)
    captions = {
        "fig3": (
            f"Throughput–utilization Pareto set: {fig3['pareto_throughput_utilization']} of "
            f"{fig3['n_architectures']} architectures (the study: 144 of 32767 on a V100 with "
            f"TensorRT). Spearman correlation of utilization with the {acc_words}: "
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
        f"({acc_words}, log10 throughput), mean ± standard error over seeds.",
        "hv_reach": (
            "Hypervolume ratio over simulated time for every method, mean ± standard error "
            f"over seeds; a dot marks where the mean first reaches {comp['reach_level']:g}. "
            + "; ".join(
                f"{label}: {reach_text(t, comp['reach_level'])}"
                for label, t in comp["first_reaches"].items()
            )
            + "."
        ),
        "metrics": "The final metrics, also in metrics.csv and metrics.md.",
        "workers": (
            f"Each method with K = {', '.join(str(k) for k in p['workers'])} simulated parallel "
            "workers (asynchronous: a worker asks for the next trial as soon as it is free), the "
            f"same {p['budget_seconds']:g} worker-seconds per run; hypervolume ratio over "
            "simulated wall-clock time. Proxy scans run on one device and do not parallelize."
        ),
    }
    header, rows = table_cells(summary)
    banner = ""
    if summary["synthetic_table"]:
        banner = (
            "SYNTHETIC table: these numbers come from nasfilter's surrogate model, not from "
            "NATS-Bench. Omit --table for the real accuracies, or convert the real archive "
            "(docs/real-archive.md) for hp-12 searches and test accuracies."
        )
    elif summary.get("table_modelled"):
        banner = (
            f"Real: the accuracies ({summary['table_real']}); searches observe them and, as no "
            "real test accuracy ships, they also score every run and the true front. "
            f"Modelled: {summary['table_modelled']} (the surrogate's time model)."
        )
    from nasfilter.oracle.compare import comparison_rows

    o_header, o_rows = comparison_rows(summary["oracles"]["oracles"])
    k_header, k_rows = workers_cells(summary)
    write_report(
        out / "report.html",
        "nasfilter: the study's NAS analysis reproduced",
        [*(ReportFigure(f, captions.get(f.stem, "")) for f in figures), *extra_figures],
        tables=[
            *extra_tables,
            ReportTable(
                "Oracles side by side",
                tuple(o_header),
                tuple(tuple(r) for r in o_rows),
                caption=(
                    "Each oracle's utilization over all architectures, its throughput–"
                    "utilization Pareto front (the study: 144 on a V100 with TensorRT) and the "
                    "front's overlap with the first row's (this run's oracle), and the "
                    f"Spearman correlations with the {acc_words}. The calibrated GPU model names "
                    "the measurements it was fitted on."
                    + "".join(
                        f" Left out: {name} ({why})."
                        for name, why in summary["oracles"]["skipped"].items()
                    )
                ),
            ),
            ReportTable(
                "Final metrics",
                tuple(header),
                tuple(tuple(r) for r in rows),
                caption=(
                    f"Mean ± standard error over {len(p['seeds'])} seeds of "
                    f"{p['budget_seconds']:g} simulated seconds, K = {p['workers'][0]} "
                    "simulated worker(s). Selected acc: the architecture the searcher "
                    "returns (its recommendation; otherwise the highest validation accuracy)."
                ),
            ),
            ReportTable(
                "Simulated parallel workers",
                tuple(k_header),
                tuple(tuple(r) for r in k_rows),
                caption=(
                    "Hypervolume ratio reached by each simulated wall-clock time, and the wall "
                    f"clock at the end of the run, with K workers sharing {p['budget_seconds']:g}"
                    f" worker-seconds; mean ± standard error over {len(p['seeds'])} seeds."
                ),
            ),
        ],
        provenance={
            "table": summary["table_label"],
            "accuracy": acc_words,
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
