"""nasfilter: simulated NAS on the NATS-Bench size space, with a GPU-utilization oracle.

The entry points, from ``import nasfilter``::

    table = nasfilter.load_table(None, "cifar10")          # or embedded_table("cifar10")
    proxy = nasfilter.proxy_table("calibrated", "v100", "cifar10")
    run = nasfilter.search("reinforce-mnas", table, 110_000.0, seed=0, proxy=proxy)
    run.metrics["hv_ratio"], run.front.rows()               # scored, with its front

    specs = nasfilter.grid(["random", "reinforce-mnas"], ["none"], budget=20_000.0)
    with nasfilter.get_storage("results.db") as storage:  # None: in memory
        nasfilter.run_experiment(specs, range(3), store=storage)
        scored = nasfilter.load_results(storage)            # with_events=True: + events
        table = nasfilter.summarize(scored)                 # pandas: mean ± SE per method
        fronts = nasfilter.load_fronts(storage)             # [(run, its RunFront)]
        nasfilter.write_runs_report(storage, "report")      # figures + report.html

Importing the package is cheap: the space, dataset and table types load with it; every other
entry point (and nats_bench, torch, onnxruntime, TensorRT, matplotlib) is imported on first
use.
"""

from __future__ import annotations

import importlib
from typing import Any

from nasfilter.datasets import DATASETS, Dataset, get_dataset
from nasfilter.space import CHANNEL_CHOICES, N_ARCHS, Arch, as_arch
from nasfilter.surrogate import embedded_table  # light (numpy): load_table needs it anyway
from nasfilter.table import BenchmarkTable, MissingArchitectureError, Provenance
from nasfilter.tables import load_table
from nasfilter.version import __version__

# Entry points loaded on first access (name -> module): the problem, one search, an
# experiment and its results, the registries, storages and proxies.
_LAZY = {
    "Budget": "nasfilter.problem",
    "Problem": "nasfilter.problem",
    "make_problem": "nasfilter.runner",
    "run_search": "nasfilter.runner",
    "RunResult": "nasfilter.runner",
    "RunRecord": "nasfilter.records",
    "ScoredRun": "nasfilter.records",
    "RunSpec": "nasfilter.records",
    "search": "nasfilter.experiment",
    "grid": "nasfilter.experiment",
    "run_experiment": "nasfilter.experiment",
    "load_results": "nasfilter.results",
    "summarize": "nasfilter.export",
    "load_fronts": "nasfilter.fronts",
    "run_front": "nasfilter.fronts",
    "RunFront": "nasfilter.fronts",
    "write_runs_report": "nasfilter.runs_report",
    "SEARCHERS": "nasfilter.searchers",
    "Searcher": "nasfilter.searchers",
    "make_searcher": "nasfilter.searchers",
    "FILTERS": "nasfilter.filters",
    "Filter": "nasfilter.filters",
    "make_filter": "nasfilter.filters",
    "get_storage": "nasfilter.storages",
    "Storage": "nasfilter.storage",
    "InMemoryStorage": "nasfilter.storage",
    "Store": "nasfilter.store",
    "ProxyTable": "nasfilter.proxy",
    "proxy_table": "nasfilter.oracle",
}


def __getattr__(name: str) -> Any:
    """Import a lazy entry point (:data:`_LAZY`) on first access."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nasfilter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CHANNEL_CHOICES",
    "DATASETS",
    "FILTERS",
    "N_ARCHS",
    "SEARCHERS",
    "Arch",
    "BenchmarkTable",
    "Budget",
    "Dataset",
    "Filter",
    "InMemoryStorage",
    "MissingArchitectureError",
    "Problem",
    "Provenance",
    "ProxyTable",
    "RunFront",
    "RunRecord",
    "RunResult",
    "RunSpec",
    "ScoredRun",
    "Searcher",
    "Storage",
    "Store",
    "__version__",
    "as_arch",
    "embedded_table",
    "get_dataset",
    "get_storage",
    "grid",
    "load_fronts",
    "load_results",
    "load_table",
    "make_filter",
    "make_problem",
    "make_searcher",
    "proxy_table",
    "run_experiment",
    "run_front",
    "run_search",
    "search",
    "summarize",
    "write_runs_report",
]
