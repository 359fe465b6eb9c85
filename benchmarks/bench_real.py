"""Search quality on the real table (NATS-Bench's real hp-90 validation accuracies, seed 777,
with modelled times), all three datasets, and how fast the real table loads.

Mean hypervolume ratio over nine seeds (0-8) at 20000 and 55000 simulated seconds, default
proxy cost, the default oracle (calibrated V100), for every method below. Methods that do
not depend on the budget run once for 55000 s and are read at both times; those whose scan
follows the budget run once per budget. ``optuna-tpe`` is left out (minutes per run here).

Goals, per dataset: model-based >= 0.99 at 20000 s, and above every peer at 20000 and
55000 s (the peers: every method below but ``model-based-hw``, the same searcher with the
hardware signal as features, reported as the ablation). Reported beside them, what the
searcher's model class allows at best: the ridge model of the free features fitted to *every*
architecture's real accuracy (what no search can know), its predicted non-dominated layers
evaluated in order, with evaluation seconds alone charged (no proxy query, no initial
design), read at the same times, with that fit's residual sd over the top tenth of the
architectures by accuracy (what the class cannot predict near the front). Loading: building
the real table of a dataset afresh (checksum, file, modelled times) takes milliseconds, as a
ratio against loading the same table from a saved ``.npz``.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import median_seconds, result
from nasfilter.bench.datasets import DATASETS
from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.table import BenchmarkTable
from nasfilter.pareto import nondominated_mask
from nasfilter.runs.experiment import RunSpec, run_experiment
from nasfilter.runs.inputs import inputs
from nasfilter.runs.metrics import FrontReference, front_of
from nasfilter.searchers.features import RidgeModel, base_features

SEEDS = range(9)
TIMES = (20_000.0, 55_000.0)
GOAL_HV = 0.99
GOAL_LOAD_SECONDS = 0.1
OURS, ABLATION = "model-based", "model-based-hw"
ANYTIME = (OURS, ABLATION, "optuna-nsga2", "optuna-random", "random", "evolution",
           "reinforce-mnas")  # fmt: skip
BUDGETED = (
    ("utilization-pareto", "none"),
    ("utilization-layers", "none"),
    ("random", "successive-frontiers"),
    ("reinforce-mnas", "proxy-threshold"),
)


def _hv_at(curves: dict[str, np.ndarray], t: float) -> float:
    clock = np.asarray(curves["clock"])
    k = int(np.searchsorted(clock, t - 1e-6))
    return float(curves["hv_ratio"][k])


def dataset_results(dataset: str) -> dict[str, dict[float, list[float]]]:
    """Method label -> time -> nine hypervolume ratios on the real table of ``dataset``."""
    out: dict[str, dict[float, list[float]]] = {}
    specs = [RunSpec(s, dataset=dataset, budget=TIMES[-1], table="real", n_ticks=12)
             for s in ANYTIME]  # fmt: skip
    for record in run_experiment(specs, SEEDS, jobs=2):
        per = out.setdefault(record.spec.label, {t: [] for t in TIMES})
        for t in TIMES:
            per[t].append(_hv_at(record.curves, t))
    for t in TIMES:
        specs = [RunSpec(s, f, dataset=dataset, budget=t, table="real", n_ticks=1)
                 for s, f in BUDGETED]  # fmt: skip
        for record in run_experiment(specs, SEEDS, jobs=2):
            per = out.setdefault(record.spec.label, {tt: [] for tt in TIMES})
            per[t].append(float(record.curves["hv_ratio"][-1]))
    return out


def run() -> Iterator[dict[str, Any]]:
    yield from _loading()
    for dataset in DATASETS:
        yield from _search(dataset)


def _search(dataset: str) -> Iterator[dict[str, Any]]:
    hv = dataset_results(dataset)
    mean = {m: {t: statistics.fmean(v) for t, v in per.items()} for m, per in hv.items()}
    for method, per in mean.items():
        yield result(f"real_{dataset}_hv_{method}", per[20_000.0], "hv ratio at 20000 s",
                     "(table)", True, dataset=dataset,
                     **{f"hv_{int(t)}": round(v, 4) for t, v in per.items()})  # fmt: skip
    ours = mean[OURS]
    yield result(
        f"real_{dataset}_model_based_20000",
        ours[20_000.0],
        "hv ratio",
        f"mean >= {GOAL_HV} at 20000 s over 9 seeds",
        ours[20_000.0] >= GOAL_HV,
        dataset=dataset,
    )
    peers = {m: per for m, per in mean.items() if m not in (OURS, ABLATION)}
    best = {t: max(peers, key=lambda m, t=t: peers[m][t]) for t in TIMES}
    yield result(
        f"real_{dataset}_model_based_beats_every_peer",
        min(ours[t] - peers[best[t]][t] for t in TIMES),
        "smallest hv ratio lead over the best peer (20000 and 55000 s)",
        "above every peer at 20000 and 55000 s",
        all(ours[t] > peers[best[t]][t] for t in TIMES),
        dataset=dataset,
        best_peer={int(t): [best[t], round(peers[best[t]][t], 4)] for t in TIMES},
        ours={int(t): round(v, 4) for t, v in ours.items()},
    )
    table, proxy, ref = inputs(RunSpec(OURS, dataset=dataset, table="real"))
    bound = model_class_bound(table, proxy, ref, TIMES)
    yield result(
        f"real_{dataset}_model_class_bound",
        bound[20_000.0],
        "hv ratio at 20000 s of evaluations",
        "(report: what the model class allows at best)",
        True,
        dataset=dataset,
        **{f"hv_{int(t)}": round(v, 4) for t, v in bound.items()},
        model_based={int(t): round(v, 4) for t, v in ours.items()},
        top_tenth_residual_sd=round(top_tenth_residual(table), 3),
    )
    hw = mean[ABLATION]
    yield result(
        f"real_{dataset}_ablation_hardware_features",
        hw[20_000.0] - ours[20_000.0],
        "hv ratio difference at 20000 s (with - without)",
        "(report)",
        True,
        dataset=dataset,
        without={int(t): round(v, 4) for t, v in ours.items()},
        with_hardware={int(t): round(v, 4) for t, v in hw.items()},
    )


def model_class_bound(
    table: BenchmarkTable, proxy: ProxyTable, ref: FrontReference, times: tuple[float, ...]
) -> dict[float, float]:
    """Time (s) -> HV ratio, at each of ``times``, of the run that knows the best model of
    model-based search's class: the ridge model of the free features fitted to the validation
    accuracy of all 32768 architectures of ``table``, whose predicted non-dominated layers
    (predicted accuracy, ``proxy`` throughput) are evaluated in order, each charged its
    evaluation seconds, nothing else."""
    predicted, _ = full_data_fit(table)
    points = np.stack([predicted, np.log(proxy.throughput)], axis=1)
    spent, left, order = 0.0, np.ones(len(points), dtype=bool), []
    while spent < max(times) and left.any():
        free = np.flatnonzero(left)
        layer = free[nondominated_mask(points[free])]
        left[layer] = False
        order.extend(layer.tolist())
        spent += float(table.eval_cost[layer].sum())
    done = np.cumsum(table.eval_cost[order])  # when each evaluation ends, s
    evaluated = {t: np.asarray(order[: int(np.searchsorted(done, t, side="right"))]) for t in times}
    return {t: ref.indicators(front_of(ref, indices))[0] for t, indices in evaluated.items()}


def full_data_fit(table: BenchmarkTable) -> tuple[np.ndarray, np.ndarray]:
    """Model-based search's ridge model of the free features fitted to the validation
    accuracy of all 32768 architectures of ``table``: its predictions and the accuracy it was
    fitted to, (32768,) each, percent."""
    x = base_features()
    accuracy = np.nanmean(table.valid_acc, axis=1)
    return RidgeModel.fit(x, accuracy).mean(x), accuracy


def top_tenth_residual(table: BenchmarkTable) -> float:
    """Residual sd (percent) of :func:`full_data_fit` over the tenth of the architectures
    with the highest accuracy: what no model of the class predicts near the front."""
    predicted, accuracy = full_data_fit(table)
    top = accuracy >= np.quantile(accuracy, 0.9)
    return float(np.std(accuracy[top] - predicted[top]))


def _loading() -> Iterator[dict[str, Any]]:
    from nasfilter.bench.sss_real import build_real_table

    with tempfile.TemporaryDirectory(prefix="bench-real-") as tmp:
        for dataset in DATASETS:
            saved = build_real_table(dataset).save(Path(tmp) / f"{dataset}.npz")
            fresh = median_seconds(lambda d=dataset: build_real_table(d), repeat=5)
            npz = median_seconds(lambda p=saved: BenchmarkTable.load(p), repeat=5)
            yield result(
                f"real_table_load_{dataset}",
                fresh,
                "s",
                f"< {GOAL_LOAD_SECONDS} s (checksum + file + modelled times)",
                fresh < GOAL_LOAD_SECONDS,
                ratio=fresh / npz,
                reference="BenchmarkTable.load of the same table saved as .npz",
            )
