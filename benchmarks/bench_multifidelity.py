"""The study's answer: which cheap signal makes architecture search cheaper, at one budget.

Mean hypervolume ratio (± standard error) over nine seeds (0-8) at 20000, 55000 and 110000
simulated seconds, default proxy cost (2 s), V100 roofline oracle, one worker, for the
library's best methods in four conditions:

- **none**: no cheap signal (``model-based``: single-fidelity, learned accuracy model on
  measured throughput; ``random`` for scale);
- **hardware**: the utilization signal (``utilization-layers``, the study's filtering;
  ``model-based-hw``, utilization as a feature);
- **low fidelity**: accuracy after fewer epochs (``hyperband`` and ``asha`` on random
  architectures, ``bohb``, ``mo-asha``, and the peer ``optuna-tpe-hyperband``: Optuna's TPE
  with its HyperbandPruner);
- **low fidelity**, model-based: ``model-based-mf``, model-based search that screens a
  candidate at 1 or 4 epochs when a partial evaluation pays per simulated second;
- **both**: ``model-based-mf[hardware=True]`` (screens, and utilization as an accuracy
  feature); ``mo-asha`` behind the online ``proxy-threshold[scan=False]`` utilization
  filter (a candidate passes when it is within 5 % of the front of the proxy readings seen
  so far; it is stateless, so MO-ASHA's promotions pass too, which the once-only
  ``successive-frontiers`` would drop: with it no architecture reached 12 epochs).

Tables (every one SYNTHETIC, NOT NATS-Bench data, each with learning curves):

- ``surrogate``: the embedded surrogate with its SYNTHETIC curves
  (:mod:`nasfilter.bench.surrogate_curves`);
- ``structured``: :mod:`nasfilter.testing.structured_table` with the curves of
  :mod:`nasfilter.testing.structured_curves` (another curve model).

- ``archive``: a full real-format archive of all 32768 architectures written by
  :func:`nasfilter.testing.nats_full_archive.search_benchmark` (varied copies of one real
  record, every hp-12 seed; only the records a CIFAR-10 search and its scoring read), converted
  with ``convert_full`` and loaded as ``--table FOLDER`` is
  (:func:`nasfilter.bench.lookup.load_table`),
  with the benchmark's own curves; written once (minutes) into a content-addressed folder under
  ``$NASFILTER_CACHE_DIR`` (else the system's temporary folder), never in the repository.

The ablation: Spearman correlation, over all 32768 architectures, of the validation accuracy
after 1, 3 and 9 epochs (seed 777) with the final one (seed 888) and with the test accuracy
the front is scored on: how far low-fidelity accuracy can rank; and, beyond the free
features (``features_r2_final``: the share of the final accuracy's variance a ridge model
on them explains), the share of what is left that the partial accuracy explains
(``epoch*_beyond_features``): what a partial evaluation can add to a model-based search.

The K part: the asynchronous methods (``asha``, ``mo-asha``; Hyperband and BOHB are
synchronous, a worker waits for its rung) with K = 1, 4 and 16 simulated workers sharing
110000 worker-seconds, scored after 20000, 55000 and 110000 worker-seconds (wall clock
``t / K``): what asynchrony costs per unit of compute, with the wall clock at the end.

Goal rows: the best method >= 0.99 at 20000 s on each table, above ``model-based`` and
``optuna-tpe-hyperband`` there; each new searcher's real time per 110000-s run < 2 s.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import result
from nasfilter.bench.fidelity import LearningCurves, SyntheticCurves, curves_for
from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.table import BenchmarkTable
from nasfilter.filters import make_filter
from nasfilter.runs.experiment import RunSpec, inputs
from nasfilter.runs.metrics import FrontReference
from nasfilter.runs.results import mean_se, score_events
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import make_searcher
from nasfilter.sim.problem import DEFAULT_PROXY_COST, Budget
from nasfilter.study.cheap_signals import ABLATION_EPOCHS, GOAL_LEVEL, GOAL_TIMES, condition, goal
from nasfilter.study.cheap_signals import ablation as cheap_ablation
from nasfilter.study.json_values import Stat
from nasfilter.study.signal_summary import SignalRow
from nasfilter.testing.nats_full_archive import search_benchmark

SEEDS = range(9)
TIMES = GOAL_TIMES  # 20000, 55000 and 110000 s
GOAL_HV, GOAL_SECONDS = GOAL_LEVEL, 2.0
WORKERS = (1, 4, 16)  # simulated workers of the K part
ASYNCHRONOUS = ("asha", "mo-asha")  # the methods that never wait for a rung
NEW_SEARCHERS = (
    "hyperband", "asha", "bohb", "mo-asha", "optuna-tpe-hyperband", "model-based-mf"
)
ARCHIVE_TEMPLATE = (Path(__file__).resolve().parent.parent / "tests" / "data" / "nats-sss"
                    / "NATS-sss-v1_0-50262-simple" / "000284.pickle.pbz2")


@dataclass(frozen=True)
class Method:
    """One row of the grid: a searcher spec and a filter spec."""

    searcher: str
    filter: str | None
    anytime: bool = True  # False: its plan follows the budget, so it runs once per budget
    only: float | None = None  # run at this budget only (a slow peer), read there

    @property
    def label(self) -> str:
        return self.searcher if self.filter is None else f"{self.searcher} + {self.filter}"

    @property
    def condition(self) -> str:
        """The cheap signal it stands for (:func:`nasfilter.study.cheap_signals.condition`)."""
        return condition(self.searcher, self.filter)


METHODS = (
    Method("random", None),
    Method("model-based", None),
    Method("utilization-layers", None, anytime=False),
    Method("model-based-hw", None),
    Method("hyperband", None),
    Method("asha", None),
    Method("bohb", None),
    Method("mo-asha", None),
    Method("optuna-tpe-hyperband", None, only=TIMES[0]),
    Method("mo-asha", "proxy-threshold[scan=False]"),
    Method("model-based-mf", None),
    Method("model-based-mf[hardware=True]", None),
)


@dataclass(frozen=True)
class Setting:
    """A table with its curves, the proxy and the front reference runs are scored on."""

    name: str
    table: BenchmarkTable
    curves: LearningCurves
    proxy: ProxyTable
    reference: FrontReference


def archive_folder() -> Path:
    """The converted full benchmark of the ``archive`` table (written on first use)."""
    cache = os.environ.get("NASFILTER_CACHE_DIR") or Path(tempfile.gettempdir()) / "nasfilter"
    return search_benchmark(cache, ARCHIVE_TEMPLATE)


def settings() -> list[Setting]:
    """The three tables of the module docstring (the structured one built directly)."""
    from nasfilter.testing.structured_curves import StructuredCurves

    table, proxy, ref = inputs(RunSpec("random", table="synthetic"))
    structured = StructuredCurves()
    archive, _, archive_ref = inputs(RunSpec("random", table=str(archive_folder())))
    return [
        Setting("surrogate", table, SyntheticCurves(table.dataset.name), proxy, ref),
        Setting("structured", structured.table, structured, proxy,
                FrontReference.build(structured.table, proxy)),
        Setting("archive", archive, curves_for(archive), proxy, archive_ref),
    ]


def _timed(fn: Callable[..., Any], spent: list[float]) -> Callable[..., Any]:
    def timed(*args: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args)
        finally:
            spent[0] += time.perf_counter() - start

    return timed


def one_run(
    setting: Setting, method: Method, seed: int, budget: float, workers: int = 1
) -> tuple[Any, float]:
    """(RunResult, real seconds inside the searcher's propose and observe) of one run with
    ``workers`` simulated workers, in this process (the seconds include the proxy queries
    the searcher makes)."""
    problem = make_problem(setting.table, Budget(budget), seed, proxy=setting.proxy,
                           proxy_cost=DEFAULT_PROXY_COST, curves=setting.curves)
    flt = None if method.filter is None else make_filter(method.filter)
    searcher, spent = make_searcher(method.searcher), [0.0]
    searcher.propose = _timed(searcher.propose, spent)  # type: ignore[method-assign]
    searcher.observe = _timed(searcher.observe, spent)  # type: ignore[method-assign]
    out = run_search(searcher, problem, filter=flt, workers=workers)
    return out, spent[0]


def grid(setting: Setting, methods: tuple[Method, ...] = METHODS) -> dict[str, Any]:
    """Label -> {"hv": time -> 9 ratios, "seconds": 9 real seconds at 110000 s or None}."""
    out: dict[str, Any] = {}
    for method in methods:
        hv: dict[float, list[float]] = {t: [] for t in TIMES}
        walls: list[float] = []
        for seed in SEEDS:
            if method.only is not None:
                run, _ = one_run(setting, method, seed, method.only)
                _, curves = score_events(setting.reference, setting.table, run.events,
                                         np.asarray([method.only]))
                for t in TIMES:
                    hv[t].append(float(curves["hv_ratio"][-1]) if t == method.only else np.nan)
                continue
            if method.anytime:
                run, wall = one_run(setting, method, seed, TIMES[-1])
                _, curves = score_events(setting.reference, setting.table, run.events,
                                         np.asarray(TIMES))
                for t, v in zip(TIMES, curves["hv_ratio"].tolist(), strict=True):
                    hv[t].append(v)
                walls.append(wall)
                continue
            for t in TIMES:
                run, _ = one_run(setting, method, seed, t)
                _, curves = score_events(setting.reference, setting.table, run.events,
                                         np.asarray([t]))
                hv[t].append(float(curves["hv_ratio"][-1]))
        out[method.label] = {"method": method, "hv": hv, "seconds": walls or None}
    return out


def ablation(setting: Setting, epochs: tuple[int, ...] = ABLATION_EPOCHS) -> dict[str, float]:
    """Spearman of accuracy after ``epochs`` (seed 777) with the final one (seed 888) and
    with the test accuracy, over every architecture
    (:func:`nasfilter.study.cheap_signals.ablation`),
    rounded to three decimals."""
    a = cheap_ablation(setting.table, setting.curves, epochs)
    out = {"features_r2_final": round(a.features_r2_final, 3)}
    for e, final, test, beyond in zip(a.epochs, a.vs_final, a.vs_test, a.beyond_features,
                                      strict=True):
        out[f"epoch{e}_vs_final"] = round(final, 3)
        out[f"epoch{e}_vs_test"] = round(test, 3)
        out[f"epoch{e}_beyond_features"] = round(float(beyond), 3)
    return out


def workers_grid(setting: Setting, method: Method, k: int) -> dict[str, Any]:
    """``method`` with ``k`` simulated workers over nine seeds: {"hv": time -> 9 ratios at
    ``time`` worker-seconds (wall clock ``time / k``), "wall": 9 wall clocks at the end}."""
    hv: dict[float, list[float]] = {t: [] for t in TIMES}
    walls = []
    for seed in SEEDS:
        run, _ = one_run(setting, method, seed, TIMES[-1], workers=k)
        _, curves = score_events(setting.reference, setting.table, run.events,
                                 np.asarray(TIMES) / k)
        for t, v in zip(TIMES, curves["hv_ratio"].tolist(), strict=True):
            hv[t].append(v)
        walls.append(float(run.clock))
    return {"hv": hv, "wall": walls}


def _workers_rows(setting: Setting) -> Iterator[dict[str, Any]]:
    """The asynchronous methods at K = 1, 4 and 16 (module docstring, the K part)."""
    for method in (m for m in METHODS if m.searcher in ASYNCHRONOUS and m.filter is None):
        for k in WORKERS:
            entry = workers_grid(setting, method, k)
            stats = {t: mean_se(v) for t, v in entry["hv"].items()}
            yield result(
                f"workers_{setting.name}_{method.label}_K{k}", stats[TIMES[0]].mean,
                "hv ratio at 20000 worker-seconds", "(table)", True, table=setting.name,
                workers=k, wall_clock=round(statistics.mean(entry["wall"]), 1),
                **{f"hv_{int(t)}": round(s.mean, 4) for t, s in stats.items()},
                **{f"se_{int(t)}": round(s.se, 4) for t, s in stats.items()},
            )


def run() -> Iterator[dict[str, Any]]:
    for setting in settings():
        yield from _rows(setting, grid(setting))
        yield from _workers_rows(setting)


def _rows(setting: Setting, res: dict[str, Any]) -> Iterator[dict[str, Any]]:
    name = setting.name
    means = {}
    for label, entry in res.items():
        stats = {t: mean_se(v) for t, v in entry["hv"].items() if not np.isnan(v).any()}
        means[label] = {t: s.mean for t, s in stats.items()}
        yield result(
            f"hv_{name}_{label}", stats[TIMES[0]].mean, "hv ratio at 20000 s", "(table)", True,
            table=name, condition=entry["method"].condition,
            **{f"hv_{int(t)}": round(s.mean, 4) for t, s in stats.items()},
            **{f"se_{int(t)}": round(s.se, 4) for t, s in stats.items()},
        )
    yield result(f"load_{name}", os.getloadavg()[0], "load average (1 min)", "(report)", True)
    verdict = goal([_signal_row(label, entry["method"], means[label][TIMES[0]])
                    for label, entry in res.items()], TIMES[0], GOAL_HV)
    yield result(
        f"best_{name}_20000", verdict.best_mean, "hv ratio", f"best >= {GOAL_HV} at 20000 s, "
        "above model-based and optuna-tpe-hyperband, reading a cheap signal",
        verdict.met, table=name,
        best=verdict.best, condition=verdict.best_condition,
    )
    yield result(f"ablation_{name}", 0.0, "Spearman", "(report)", True, table=name,
                 **ablation(setting))
    for label in NEW_SEARCHERS:
        walls = res.get(label, {}).get("seconds")
        if walls:
            wall = statistics.median(walls)
            ours = label != "optuna-tpe-hyperband"  # the peer's time is Optuna's sampler
            yield result(
                f"seconds_{name}_{label}", wall,
                "s in propose/observe per 110000-s run (median of 9)",
                f"< {GOAL_SECONDS} s" if ours else "(report: Optuna's own sampler)",
                wall < GOAL_SECONDS or not ours, table=name,
            )


def _signal_row(label: str, method: Method, hv: float) -> SignalRow:
    """One method's mean hypervolume ratio at 20000 s as the goal verdict reads it."""
    return SignalRow(label, method.searcher, method.filter or "none", method.condition,
                     len(SEEDS), (Stat(hv, math.nan),))


def figure(path: str, rows: list[dict[str, Any]]) -> None:
    """Mean hypervolume ratio against the budget, one panel per table (matplotlib, lazily):
    a colour per method, a marker per condition, one legend below the panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hv = [r for r in rows if r["name"].startswith("hv_")]
    tables = sorted({r["table"] for r in hv})
    labels = list(dict.fromkeys(r["name"][len(f"hv_{r['table']}_"):] for r in hv))
    colours = plt.get_cmap("tab20")(np.linspace(0.0, 1.0, 20))[: len(labels)]
    markers = {"none": "o", "hardware": "s", "low fidelity": "^", "both": "D"}
    fig, axes = plt.subplots(1, len(tables), figsize=(5.2 * len(tables), 4.4), sharey=True)
    for ax, table in zip(np.atleast_1d(axes), tables, strict=True):
        for r in (r for r in hv if r["table"] == table):
            label = r["name"][len(f"hv_{table}_"):]
            ts = [t for t in TIMES if f"hv_{int(t)}" in r]
            ax.errorbar(np.asarray(ts) / 1000, [r[f"hv_{int(t)}"] for t in ts],
                        yerr=[r[f"se_{int(t)}"] for t in ts], color=colours[labels.index(label)],
                        marker=markers.get(r["condition"], "o"), ms=4, capsize=2,
                        label=f"{label} ({r['condition']})")
        ax.set_title(f"{table} (SYNTHETIC)")
        ax.set_xlabel("budget (thousand simulated seconds)")
        ax.axhline(GOAL_HV, color="grey", lw=0.6, ls="--")
    np.atleast_1d(axes)[0].set_ylabel("mean hypervolume ratio (9 seeds)")
    handles, names = np.atleast_1d(axes)[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=4, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0.0, 0.16, 1.0, 1.0))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str], emit: Callable[[str], None] = print) -> None:
    """``python -m benchmarks.bench_multifidelity [FIGURE.png]``: the rows as JSON lines,
    and the figure when a path is given."""
    import json

    rows = []
    for row in run():
        emit(json.dumps(row))
        rows.append(row)
    if argv:
        figure(argv[0], rows)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
