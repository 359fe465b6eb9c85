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
  provenance (:class:`~nasfilter.study.summary.StudySummary`); on a table with learning
  curves also "which cheap signal pays" (:mod:`nasfilter.study.cheap_signals`: each method's
  condition and hypervolume ratio at 20000, 55000 and 110000 s, the goal verdict, the
  ablation of low-fidelity accuracy), a section of the report too;
- ``report.html``: all of it in one self-contained page.

This module is the orchestrator: it checks the arguments, runs, and hands on to the method
catalogue (:mod:`nasfilter.study.methods`), the numbers (:mod:`nasfilter.study.numbers`), the
figures (:mod:`nasfilter.study.figures`) and the text (:mod:`nasfilter.study.report`). The
runs go through :func:`nasfilter.runs.experiment.run_experiment`, so each (method, seed) is a
pure function of the two and the results do not depend on ``jobs``.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.fidelity import NoCurvesError, curves_for
from nasfilter.bench.proxy import DEFAULT_ORACLE, ProxyTable
from nasfilter.bench.table import BenchmarkTable
from nasfilter.bench.timm_data import read_benchmark, shipped_benchmark
from nasfilter.defaults import DEFAULT_BUDGET, DEFAULT_SEEDS, DEFAULT_TICKS
from nasfilter.extras import require
from nasfilter.files import atomic_write, check_path_text, new_entries_removed_on_error, same_file
from nasfilter.oracle.devices import get_device
from nasfilter.oracle.registry import backend_name
from nasfilter.render.html_page import ReportFigure, ReportTable
from nasfilter.runs.experiment import (
    RunSpec,
    check_seeds,
    inputs,
    provenance,
    run_experiment,
)
from nasfilter.runs.inputs import spec_proxy, spec_table
from nasfilter.runs.metrics import FrontReference
from nasfilter.runs.rescore import Accuracies
from nasfilter.runs.results import load_results
from nasfilter.runs.runner import check_workers
from nasfilter.runs.storage.factory import get_storage
from nasfilter.sim.problem import DEFAULT_PROXY_COST, Budget
from nasfilter.study.figures import FIGURE_STEMS, draw_figures
from nasfilter.study.methods import (
    FILTERING,
    METHODS,
    PEER_METHODS,
    REINFORCE_MNAS,
    Method,
    peers_at_every_k,
    study_methods,
)
from nasfilter.study.numbers import (
    WORKERS_FRACTIONS,
    StudyRuns,
    methods_at,
    oracle_comparison,
    study_summary,
)
from nasfilter.study.report import write_study_report, write_tables
from nasfilter.study.summary import Parameters, StudySummary
from nasfilter.study.tss.run import refuse_sss_only, refuse_tss_only, reproduce_tss_spec
from nasfilter.survey.output import report_section, survey_figures, write_survey
from nasfilter.survey.survey import SurveySettings, run_survey
from nasfilter.survey.timm_import import import_timm

__all__ = [
    "DEFAULT_BUDGET", "DEFAULT_SEEDS", "DEFAULT_WORKERS", "FIGURE_STEMS", "FILTERING",
    "METHODS", "OUTPUT_FILES", "PEER_METHODS", "REINFORCE_MNAS", "REPORT_SURVEY_MODELS",
    "WORKERS_FRACTIONS", "Method", "MissingColumnError", "check_out_dir", "has_curves",
    "reproduce", "require_columns", "require_proxy",
]  # fmt: skip

DEFAULT_WORKERS = (1, 4, 16)  # simulated parallel workers compared
N_TICKS = DEFAULT_TICKS  # points of each curve over simulated time

# Files reproduce writes; with force=True only these are replaced in a non-empty folder.
OUTPUT_FILES = (
    *(f"{stem}.{ext}" for stem in FIGURE_STEMS for ext in ("png", "svg")),
    "summary.json",
    "metrics.csv",
    "metrics.md",
    "report.html",
    "survey",  # the CNN survey's folder, when the survey extra is installed
)

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


class MissingColumnError(ValueError):
    """A table or proxy lacks a column (or rows of it) that a figure needs."""


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
        size = table.space.size
        missing = size - int(ok.sum())
        if missing:
            raise MissingColumnError(
                f"table {table.label!r} lacks column {name!r} for {missing} of {size} "
                f"architectures; reproduce needs it for the whole space ({purpose}). {how}"
            )


def require_proxy(proxy: ProxyTable, backend: str) -> None:
    """Raise MissingColumnError unless ``proxy`` covers every architecture."""
    size = proxy.space.size
    missing = size - int(proxy.measured.sum())
    if missing:
        raise MissingColumnError(
            f"oracle {proxy.label!r} lacks columns 'utilization' and 'throughput' for {missing} "
            f"of {size} architectures; Fig. 3 and approximate filtering need the whole space. "
            f"Measure it: `nasfilter measure --backend {backend} --archs all --cache CACHE.db`, "
            "then pass --oracle-cache CACHE.db, or use an analytic backend (calibrated, roofline)."
        )


def has_curves(table: BenchmarkTable) -> bool:
    """Whether ``table`` comes with learning curves (the multi-fidelity searchers need
    them): the embedded surrogate does; a compact table keeps the last epoch only."""
    try:
        curves_for(table)
    except NoCurvesError:
        return False
    return True


def _methods(
    methods: Sequence[Method] | None, fields: dict[str, Any], peers_every_k: bool
) -> tuple[Method, ...]:
    """``methods``, else the study's for the table (the multi-fidelity searchers only with
    learning curves); with ``peers_every_k`` the peers at every K."""
    if methods is None:
        methods = study_methods(has_curves(spec_table(RunSpec("random", **fields))))
    return peers_at_every_k(tuple(methods)) if peers_every_k else tuple(methods)


# ------------------------------------------------------------------ the plan
@dataclass(frozen=True)
class _Plan:
    """The checked arguments of one reproduction."""

    out: Path
    seeds: list[int]
    budget: float
    workers: tuple[int, ...]
    methods: tuple[Method, ...]
    specs: dict[int, list[RunSpec]]  # K -> one RunSpec per method run at K
    db: str | None  # the results database the runs are kept in (None: in memory)


def _check_workers(workers: Iterable[int]) -> tuple[int, ...]:
    out = tuple(dict.fromkeys(check_workers(k) for k in workers))
    if not out:
        raise ValueError("workers must name at least one K, e.g. (1, 4, 16)")
    return out


def _check_methods(methods: Sequence[Method]) -> tuple[Method, ...]:
    labels = [m.label for m in methods]
    if len(set(labels)) != len(labels):
        raise ValueError(f"method labels must be distinct, got {labels}")
    for needed in (FILTERING, REINFORCE_MNAS):
        if needed not in methods:
            raise ValueError(f"methods must include {needed} (it is drawn in Fig. 5 or 6)")
    return tuple(methods)


def _plan(
    out_dir: str | os.PathLike[str],
    force: bool,
    seeds: Iterable[int],
    budget: float,
    jobs: int,
    methods: Sequence[Method],
    workers: Iterable[int],
    fields: dict[str, Any],
    db: str | os.PathLike[str] | None = None,
) -> _Plan:
    """Every argument checked and every run spec built; ValueError before anything runs."""
    require("matplotlib", "reproduce (its figures)")  # before the runs, not after them
    named = {f"--{k.replace('_', '-')}": fields[k] for k in ("table", "oracle_cache")}
    named["--db"] = db  # written to: never inside --out, which --force overwrites
    out = check_out_dir(out_dir, force, named)
    seed_list = check_seeds(seeds)
    budget = _check_budget(budget)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    backend_name(fields["oracle"])  # an unknown name lists the known ones
    chosen = _check_methods(methods)
    ks = _check_workers(workers)
    specs = {
        k: [
            RunSpec(
                searcher=m.searcher,
                filter=m.filter,
                budget=Budget(budget),
                n_ticks=N_TICKS,
                workers=k,
                **fields,
            )
            for m in methods_at(chosen, ks, k)
        ]
        for k in ks
    }
    for spec in specs[ks[0]]:
        spec.validate()
    if db is not None:
        check_path_text(db, "--db")
        with get_storage(db):  # a file that is no results database is refused here
            pass
    return _Plan(out, seed_list, budget, ks, chosen, specs, None if db is None else str(db))


@dataclass(frozen=True)
class _Inputs:
    """The loaded inputs of a reproduction and their provenance records."""

    table: BenchmarkTable
    proxy: ProxyTable
    reference: FrontReference
    table_provenance: dict[str, Any]
    oracle_provenance: dict[str, Any]


def _load_inputs(plan: _Plan, fields: dict[str, Any]) -> _Inputs:
    """The inputs, after naming any column the table or the proxy lacks and how to get it."""
    first = plan.specs[plan.workers[0]][0]
    require_columns(spec_table(first))  # each loaded once, then served to inputs() below
    require_proxy(spec_proxy(first), fields["oracle"])
    return _Inputs(*inputs(first), *provenance(first))


def _run(plan: _Plan, jobs: int, quiet: bool) -> StudyRuns:
    """Every (method, K, seed) run, scored, with its events; kept in ``plan.db`` (the runs
    it holds already are not run again)."""
    every = [spec for k in plan.workers for spec in plan.specs[k]]
    ours = {(spec.key(), seed) for spec in every for seed in plan.seeds}
    with get_storage(plan.db) as storage:
        run_experiment(every, plan.seeds, store=storage, jobs=jobs, progress=not quiet)
        results = load_results(storage, select=ours, with_events=True, trust_plugins=True)
    method_of = {
        spec.key(): m
        for k in plan.workers
        for m, spec in zip(methods_at(plan.methods, plan.workers, k), plan.specs[k], strict=True)
    }
    return StudyRuns(plan.methods, plan.workers, tuple(results), method_of)


# ------------------------------------------------------------------ the study
def _spec_fields(
    dataset: str | Sequence[str] | None,
    proxy_cost: float,
    table: str | os.PathLike[str] | None,
    backend: str | None,
    device: str | Sequence[str] | None,
    oracle_cache: str | os.PathLike[str] | None,
) -> dict[str, Any]:
    """The run-spec fields every method of the study shares (None: cifar10, the default
    oracle, v100); ValueError for several datasets or devices (they are for tss)."""
    if not isinstance(dataset, (str, type(None))) or not isinstance(device, (str, type(None))):
        raise ValueError(f"several datasets or devices are for space='tss': {dataset}, {device}")
    return {
        "dataset": dataset or "cifar10",
        "proxy_cost": proxy_cost,
        "table": None if table is None else str(table),
        "oracle": backend or DEFAULT_ORACLE,
        "device": "v100" if device is None else device,
        "oracle_cache": None if oracle_cache is None else str(oracle_cache),
    }


# fmt: off
def reproduce(
    out_dir: str | os.PathLike[str], table: str | os.PathLike[str] | None = None,
    backend: str | None = None, device: str | Sequence[str] | None = None,
    dataset: str | Sequence[str] | None = None, seeds: Iterable[int] = DEFAULT_SEEDS,
    budget: float = DEFAULT_BUDGET, force: bool = False, quiet: bool = False, jobs: int = 1,
    oracle_cache: str | os.PathLike[str] | None = None, proxy_cost: float = DEFAULT_PROXY_COST,
    methods: Sequence[Method] | None = None, workers: Iterable[int] = DEFAULT_WORKERS,
    peers_every_k: bool = False, survey: bool | None = None,
    survey_models: Sequence[str] = REPORT_SURVEY_MODELS, space: str = "sss", resume: bool = False,
    score_with: Mapping[str, Accuracies] | None = None, db: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Run the study's NAS analysis and write figures, ``summary.json`` and ``report.html``
    (``space="tss"``: the study on the NATS topology space, :mod:`nasfilter.study.tss.run`).

    Args:
        out_dir: the output folder; refused if it exists and is not empty, unless ``force``.
        table: a table's name (``"real"``, also None, the default; ``"synthetic"``) or a table
            converted with ``nasfilter convert`` (.npz). It must hold every architecture.
        backend, device, oracle_cache: the oracle (``nasfilter.oracle.proxy_table``); the
            default (None) is ``DEFAULT_ORACLE`` (the calibrated GPU model) on a V100;
            dataset: D (None: cifar10).
        seeds: the run seeds (integers >= 0), nine by default; budget: worker-seconds per run
        (the study: 110000), the same for every K; quiet: no progress bars; jobs: worker
        processes (results do not depend on it); proxy_cost: simulated s per proxy query.
        methods: the compared methods; must include approximate filtering and REINFORCE
            with the MnasNet reward (Figs. 5 and 6). None: :data:`METHODS`, and the
            multi-fidelity searchers when the table has learning curves
            (:func:`~nasfilter.study.methods.study_methods`).
        workers: the numbers K of simulated parallel workers compared (the first is the one
            of the metrics table and Figs. 5 and 6); default 1, 4 and 16.
        peers_every_k: run the peers (model-based, Optuna) at every K (minutes more).
        survey: add the CNN survey (§3) of ``survey_models`` on the RTX 4090 against its
            shipped NCHW measurements (``survey/``); None: when timm is installed.
        db: a results database that keeps every run (sss; runs it holds are not rerun); space:
            sss or tss; resume, score_with: tss only (:func:`~.tss.run.reproduce_tss`).

    Returns the contents of ``summary.json`` (:meth:`StudySummary.to_json`). Raises ValueError
    (MissingColumnError, FileExistsError; ExtraMissing without matplotlib) on bad input.
    """
    # fmt: on
    if space != "sss":  # the tss study (nasfilter.study.tss.run); a run cut short keeps its blocks
        refuse_sss_only(space, {"table": table, "oracle_cache": oracle_cache, "methods": methods,
            "survey": survey or None, "peers_every_k": peers_every_k or None, "budget": budget
            != DEFAULT_BUDGET or None, "proxy_cost": proxy_cost != DEFAULT_PROXY_COST or None,
            "workers": tuple(workers) != DEFAULT_WORKERS or None, "db": db})  # fmt: skip
        return reproduce_tss_spec(check_out_dir(out_dir, force or resume), backend, device,
            dataset, check_seeds(seeds), quiet, resume, score_with)  # fmt: skip
    refuse_tss_only(resume, score_with)
    started = time.perf_counter()
    fields = _spec_fields(dataset, proxy_cost, table, backend, device, oracle_cache)
    chosen = _methods(methods, fields, peers_every_k)
    plan = _plan(out_dir, force, seeds, budget, jobs, chosen, workers, fields, db)
    loaded = _load_inputs(plan, fields)
    t_inputs = time.perf_counter()
    runs = _run(plan, jobs, quiet)
    t_runs = time.perf_counter()
    summary = _summary(plan, runs, loaded, fields)
    timings = {"inputs": t_inputs - started, "runs": t_runs - t_inputs, "started": started}
    with new_entries_removed_on_error(plan.out):  # a full disk leaves no partial output
        return _write_outputs(plan.out, summary, loaded, quiet, (survey, survey_models), timings)


def _summary(plan: _Plan, runs: StudyRuns, loaded: _Inputs, fields: dict[str, Any]) -> StudySummary:
    """The typed summary of the runs, with the inputs' provenance and the oracles compared."""
    bench, proxy = loaded.table, loaded.proxy
    parameters = Parameters(
        bench.dataset.name, tuple(plan.seeds), plan.budget, plan.workers, fields["proxy_cost"],
        fields["oracle"], fields["device"], fields["oracle_cache"], fields["table"], N_TICKS,
    )  # fmt: skip
    return replace(
        study_summary(runs, bench, proxy, loaded.reference, parameters),
        table=loaded.table_provenance,
        oracle=loaded.oracle_provenance,
        oracles=oracle_comparison(fields["oracle"], fields["device"], bench, proxy),
    )


def _write_outputs(
    out: Path,
    summary: StudySummary,
    loaded: _Inputs,
    quiet: bool,
    survey: tuple[bool | None, Sequence[str]],
    timings: dict[str, float],
) -> dict[str, Any]:
    """Figures, the CNN survey (``survey``: enabled, models), the tables, the report and
    ``summary.json`` under ``out``; what ``summary.json`` holds. ``timings``: the seconds of
    the phases so far and when the reproduction ``started`` (``time.perf_counter``)."""
    started = timings.pop("started")
    t_figures = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    figures = draw_figures(out, summary, loaded.table, loaded.proxy, quiet)
    survey_summary, extra_figures, extra_tables = _survey_section(out, *survey)
    timings["figures"] = time.perf_counter() - t_figures
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    summary = replace(summary, survey=survey_summary, timings_seconds=timings, created=created)
    write_tables(out, summary)
    write_study_report(out, summary, figures, extra_figures, extra_tables)
    timings["total"] = time.perf_counter() - started
    return _write_summary(out, summary)


def _write_summary(out: Path, summary: StudySummary) -> dict[str, Any]:
    """Write ``summary.json`` (strict JSON, whole or not at all); return what it holds."""
    text = json.dumps(summary.to_json(), indent=1, allow_nan=False)
    with atomic_write(out / "summary.json", "w") as fh:
        fh.write(text + "\n")
    result: dict[str, Any] = json.loads(text)
    return result


def _survey_section(
    out: Path, enabled: bool | None, models: Sequence[str]
) -> tuple[dict[str, Any] | None, list[ReportFigure], list[ReportTable]]:
    """Run the CNN survey into ``out/survey`` when enabled (None: when timm imports):
    (its summary, or None when not run; its report figures; its report tables)."""
    if enabled is False:
        return None, [], []
    # The survey extra (timm, torch) is optional and heavy: imported only when asked for.

    try:
        import_timm()
    except ImportError as exc:
        if enabled:
            raise
        return {"skipped": f"the survey extra is not installed ({exc})"}, [], []

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
    figures, tables = report_section(result, survey_figures(result, folder))
    return result.summary, figures, tables
