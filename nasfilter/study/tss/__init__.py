"""The study on the NATS topology space (tss) with real data: every method compared on the
real tss tables under the measured oracle, the cheap-signal ablation and Fig. 3.

What is real and what is not (docs/tss.md): the accuracy a search observes (hp-12 validation,
seed mean, on ``tss-real``; hp-200 validation of one training seed drawn from the run's
generator, on ``tss-real-hp200``), the training time it is charged (measured), the hardware
signal (latency measured by HELP on the GPU at batch 256; throughput = batch / latency;
utilization = throughput x 2 x MACs / the FP32 data-sheet peak, an assumption). Modelled: one
validation pass per evaluation, and the proxy query's cost (``DEFAULT_PROXY_COST`` = 2
simulated seconds, as on sss). Runs are scored with the hp-200 validation accuracy, seed mean,
against the true accuracy–throughput front of the device.

``nasfilter reproduce --space tss --out DIR`` runs it (:mod:`nasfilter.study.tss.run`, called by
:func:`nasfilter.study.reproduce.reproduce` with ``space="tss"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.table import BenchmarkTable
from nasfilter.bench.tss_real import tss_table
from nasfilter.filters import make_filter
from nasfilter.oracle.measured import DEFAULT_BATCH, measured_proxy
from nasfilter.pareto import nondominated_mask
from nasfilter.registry import format_spec, parse_spec
from nasfilter.runs.meanse import mean_se
from nasfilter.runs.metrics import FrontReference
from nasfilter.runs.results import score_events
from nasfilter.runs.run_summary import completed_evaluations
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers import make_searcher
from nasfilter.stats import spearman

DATASETS = ("cifar10", "cifar100", "ImageNet16-120")
DEVICES = ("2080ti", "titanxp")
TIMES = (20_000.0, 55_000.0)  # worker-seconds at which runs are compared
SEEDS = tuple(range(9))
HP12, HP200 = "tss-real", "tss-real-hp200"


@dataclass(frozen=True)
class TssMethod:
    """One compared method: label, searcher and filter specs, the table it observes, and its
    cheap-signal condition (``fidelity``: hp-12 rung or hp-200 only; ``hardware``: reads the
    measured utilization)."""

    label: str
    searcher: str
    filter: str = "none"
    table: str = HP12
    hardware: bool = False
    two_fidelities: bool = False  # promotes between hp 12 and hp 200 in one run

    @property
    def condition(self) -> str:
        if self.two_fidelities:
            rung = "hp-12 + hp-200"
        else:
            rung = "hp-12 rung" if self.table == HP12 else "hp-200 only"
        return f"{rung} + measured hardware" if self.hardware else rung


FILTERING = TssMethod(
    "approximate filtering", "utilization-pareto[scan_share=None]", hardware=True
)
REINFORCE_MNAS = TssMethod("REINFORCE (MnasNet reward)", "reinforce-mnas")
COMPARED: tuple[TssMethod, ...] = (
    FILTERING,
    TssMethod("approximate filtering (scan share 0.6)", "utilization-pareto", hardware=True),
    REINFORCE_MNAS,
    TssMethod("REINFORCE (accuracy reward)", "reinforce"),
    TssMethod("random search", "random"),
    TssMethod("regularized evolution", "evolution"),
    TssMethod("successive frontiers", "utilization-layers", hardware=True),
    TssMethod("random + successive-frontiers filter", "random", "successive-frontiers",
              hardware=True),
    TssMethod("REINFORCE (MnasNet) + proxy-threshold filter", "reinforce-mnas",
              "proxy-threshold", hardware=True),
    TssMethod("model-based search", "model-based"),
    TssMethod("model-based + utilization features", "model-based-hw", hardware=True),
    # A smaller initial design (5 evaluations, batches of 4), chosen AFTER seeing the default
    # design's ImageNet16-120 result at 20,000 s (its 20 initial evaluations there cost
    # ~13,000 s): tuned on the scored data, not a held-out result.
    TssMethod("model-based, small design", "model-based[init=5,batch=4]"),
    TssMethod("model-based + utilization features, small design",
              "model-based-hw[init=5,batch=4]", hardware=True),
    TssMethod("Optuna NSGA-II", "optuna-nsga2"),
    TssMethod("Optuna random", "optuna-random"),
    # The attempt at HV >= 0.99 at 20,000 s, designed on cifar10 ONLY (scripts/tss_design.py:
    # budgets of
    # 3,300 and 10,000 s, which buy the hp-12 evaluations that 20,000 s buys on ImageNet16-120
    # and cifar100; seeds 100-114, disjoint from the scored 0-8), then run unchanged on
    # cifar100 and ImageNet16-120: a held-out result there.
    TssMethod("model-based, layers (designed on cifar10)",
              "model-based[init=8,batch=8,acquisition=layers]"),
    # The third round of the same protocol (scripts/tss_design.py --paths): the path encoding
    # of the cell as accuracy features; the rule chose the variant with utilization features.
    # Its twin without them is compared too, so that the ablation shows what the measured
    # hardware adds to the same method.
    TssMethod("model-based + utilization features, paths (designed on cifar10)",
              "model-based-hw[init=8,batch=8,acquisition=layers,encoding=paths]", hardware=True),
    TssMethod("model-based, paths (the twin without utilization features)",
              "model-based[init=8,batch=8,acquisition=layers,encoding=paths]"),
)
# The ablation's hp-200-only arm: the same searchers observing hp-200 (one seed) instead.
HP200_ONLY: tuple[TssMethod, ...] = tuple(
    TssMethod(f"{m.label} [hp-200 only]", m.searcher, m.filter, HP200, m.hardware)
    for m in COMPARED
    if m.searcher in ("random", "evolution", "reinforce", "model-based", "model-based-hw",
                      "utilization-layers", "optuna-nsga2", "model-based[init=5,batch=4]",
                      "model-based-hw[init=5,batch=4]")
)  # fmt: skip


# Two real fidelities in one run (schedule 12 -> 200 epochs, eta 16: 16 at hp 12, 1 at hp
# 200 per bracket). On tss-real-hp200 the hp-12 rung screens and hp-200 evaluations make the
# front; on tss-real the hp-12 evaluations make the front and hp 200 only ranks survivors.
_MF = "[min_epochs=12,max_epochs=200,eta=16]"
TWO_FIDELITY: tuple[TssMethod, ...] = tuple(
    TssMethod(f"{label} [{where}]", f"{searcher}{_MF}", flt, table, flt != "none", True)
    for label, searcher, flt in (
        ("successive halving", "successive-halving", "none"),
        ("Hyperband", "hyperband", "none"),
        ("ASHA", "asha", "none"),
        ("BOHB", "bohb", "none"),
        ("MO-ASHA", "mo-asha", "none"),
        ("MO-ASHA + online proxy-threshold filter", "mo-asha", "proxy-threshold[scan=False]"),
    )
    for table, where in ((HP200, "hp-12 screens, hp-200 front"),
                         (HP12, "hp-12 front, hp-200 promotions"))
)  # fmt: skip


def mnas_target(proxy: ProxyTable) -> float:
    """The MnasNet reward's target throughput on tss: the device's median measured
    throughput (images/s); sss's 175000 images/s lies above every tss cell."""
    return float(np.nanmedian(proxy.throughput))


def searcher_spec(method: TssMethod, proxy: ProxyTable) -> str:
    """The searcher spec ``method`` runs under ``proxy``: its own, with REINFORCE (MnasNet)'s
    target written in (:func:`mnas_target`, unless the spec sets one), so that ``nasfilter
    run --space tss --searchers SPEC`` runs the study's method."""
    name, params = parse_spec(method.searcher)
    if name != "reinforce-mnas" or "target_throughput" in params:
        return method.searcher
    return format_spec(name, params | {"target_throughput": mnas_target(proxy)})


def run_method(
    method: TssMethod, dataset: str, proxy: ProxyTable, seed: int, budget: float
) -> dict[str, np.ndarray]:
    """The events of one run of ``method`` on ``dataset`` under ``proxy``."""
    table = tss_table(dataset, method.table)
    searcher = make_searcher(searcher_spec(method, proxy))
    problem = make_problem(table, budget, seed, proxy=proxy)
    record = run_search(searcher, problem, filter=make_filter(method.filter))
    return record.require_events()


def hv_ratios(
    method: TssMethod, dataset: str, device: str, seeds: Sequence[int],
    times: Sequence[float] = TIMES, batch: int = DEFAULT_BATCH,
) -> np.ndarray:
    """float64 (len(seeds), len(times)): the HV ratio of the run with each seed and a budget
    of each of ``times`` worker-seconds, at its end (one run per budget: the scans and initial
    designs of several methods are planned from the budget), under the latency measured on
    ``device`` at ``batch``."""
    return scored_runs(method, dataset, device, seeds, times, batch)[0]


def scored_runs(
    method: TssMethod, dataset: str, device: str, seeds: Sequence[int],
    times: Sequence[float] = TIMES, batch: int = DEFAULT_BATCH,
) -> tuple[np.ndarray, list[list[np.ndarray]]]:
    """``(hv, cells)``: ``hv`` as :func:`hv_ratios`; ``cells[i][j]`` the distinct cells (int64,
    sorted) that the run with ``seeds[i]`` and a budget of ``times[j]`` evaluated by its
    budget: the set its HV ratio is computed over, which
    :mod:`nasfilter.study.tss.rescore` scores on other accuracies."""
    proxy = measured_proxy(device, batch)
    reference = FrontReference.build(tss_table(dataset, HP12), proxy)
    table = tss_table(dataset, method.table)
    at = np.asarray(times, dtype=np.float64)
    hv = np.empty((len(seeds), len(at)))
    cells: list[list[np.ndarray]] = []
    for i, seed in enumerate(seeds):
        cells.append([])
        for j, budget in enumerate(at.tolist()):
            events = run_method(method, dataset, proxy, seed, budget)
            hv[i, j] = score_events(reference, table, events, at[j : j + 1])[1]["hv_ratio"][0]
            idx, _, end = completed_evaluations(events)  # in completion order
            done = np.searchsorted(end, budget, side="right")  # as score_events counts them
            cells[i].append(np.unique(idx[:done]).astype(np.int64))
    return hv, cells


@dataclass(frozen=True)
class Fig3Numbers:
    """Fig. 3's numbers on one dataset and device: the throughput–utilization Pareto set
    (indices), Spearman of measured utilization with the hp-200 validation accuracy (seed
    mean), and the accuracy–throughput true front's size."""

    pareto_set: np.ndarray
    spearman_util_acc: float
    true_front_size: int


def fig3_numbers(dataset: str, device: str, batch: int = DEFAULT_BATCH) -> Fig3Numbers:
    """:class:`Fig3Numbers` of ``dataset`` on ``device`` at ``batch``."""
    table: BenchmarkTable = tss_table(dataset, HP12)
    proxy = measured_proxy(device, batch)
    points = np.stack([proxy.throughput, proxy.utilization], axis=1)
    pareto = np.flatnonzero(nondominated_mask(points))
    rho = spearman(proxy.utilization, table.test_acc)
    front = FrontReference.build(table, proxy).true_front
    return Fig3Numbers(pareto, float(rho), len(front))


def mean_and_se(values: np.ndarray) -> tuple[float, float]:
    """(mean, standard error) over axis 0 of a (runs,) array; SE NaN for one run."""
    stat = mean_se(values)
    return float(stat.mean), float(stat.se) if stat.se is not None else math.nan
