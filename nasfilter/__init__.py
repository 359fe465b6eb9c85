"""nasfilter: simulated NAS on the NATS-Bench size space, with a GPU-utilization oracle.

The entry points, from ``import nasfilter``::

    table = nasfilter.load_table(None, "cifar10")          # or "synthetic", or a path
    proxy = nasfilter.proxy_table("calibrated", "v100", "cifar10")  # the one way to a proxy
    run = nasfilter.search("reinforce-mnas", table, 110_000.0, seed=0, proxy=proxy)
    run.metrics["hv_ratio"], run.front.rows()               # scored, with its front

    specs = nasfilter.grid(["random", "reinforce-mnas"], ["none"], budget=20_000.0)
    with nasfilter.get_storage("results.db") as storage:  # None: in memory
        nasfilter.run_experiment(specs, range(3), store=storage)
        scored = nasfilter.load_results(storage)            # with_events=True: + events
        table = nasfilter.summarize(scored)                 # pandas: mean ± SE per method
        fronts = nasfilter.load_fronts(storage)             # [(run, its RunFront)]
        nasfilter.write_runs_report(storage, "report")      # figures + report.html

The search spaces are values: ``nasfilter.SSS`` (the size space: ``SSS.size`` 32768
architectures, ``SSS.choices`` the channel counts 8..64) and ``nasfilter.TSS`` (the topology
space, 15625 cells); ``table.space`` is the one a table indexes.

Importing the package is cheap: the space, dataset and table types load with it; every other
entry point (and nats_bench, torch, onnxruntime, TensorRT, matplotlib) is imported on first
use.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from nasfilter.bench.datasets import DATASETS, Dataset, get_dataset
from nasfilter.bench.lookup import gone, load_table
from nasfilter.bench.spaces import SSS, TSS, Space, get_space
from nasfilter.bench.spaces.sss import Arch, as_arch
from nasfilter.bench.table import BenchmarkTable, MissingArchitectureError, Provenance
from nasfilter.version import __version__

# The layers, bottom first (docs/architecture.md): a module imports only from its own layer and
# the layers before it. The top-level modules (checks, files, pareto, registry, stats, ...) are
# the leaves below them all; this ``__init__`` and ``__main__`` are the entry points above them.
# tests/test_import_graph.py reads this order and fails on any import against it.
LAYERS: tuple[str, ...] = (
    "bench",  # search spaces, datasets, tables, learning curves, networks, proxies, nats_api
    "oracle",  # the GPU-utilization models and measurements
    "zerocost",  # zero-cost proxies of untrained networks, their score files
    "sim",  # the metered problem: clock, meter, trace, fidelities, events, trials, plugins
    "filters",
    "searchers",
    "runs",  # specs, records, runner, inputs, storage, results, fronts, experiments
    "render",  # the drawing helpers and the HTML page
    "survey",  # the CNN survey
    "study",  # reproduce: summaries, numbers, figures, reports (of any results database too)
    "testing",  # the contract and storage suites, fixtures for tests
    "cli",
)

# Entry points loaded on first access (name -> module): the problem, one search, an
# experiment and its results, the registries, storages and proxies.
_LAZY = {
    "Budget": "nasfilter.sim.problem",
    "Problem": "nasfilter.sim.problem",
    "make_problem": "nasfilter.runs.runner",
    "run_search": "nasfilter.runs.runner",
    "RunResult": "nasfilter.runs.runner",
    "RunRecord": "nasfilter.runs.records",
    "ScoredRun": "nasfilter.runs.records",
    "RunSpec": "nasfilter.runs.records",
    "search": "nasfilter.runs.experiment",
    "grid": "nasfilter.runs.experiment",
    "run_experiment": "nasfilter.runs.experiment",
    "load_results": "nasfilter.runs.results",
    "summarize": "nasfilter.runs.export",
    "load_fronts": "nasfilter.runs.fronts",
    "run_front": "nasfilter.runs.fronts",
    "RunFront": "nasfilter.runs.fronts",
    "Rescoring": "nasfilter.runs.rescore",
    "read_accuracies": "nasfilter.runs.rescore",
    "write_runs_report": "nasfilter.study.runs_report",
    "SEARCHERS": "nasfilter.searchers",
    "Searcher": "nasfilter.searchers",
    "make_searcher": "nasfilter.searchers",
    "FILTERS": "nasfilter.filters",
    "Filter": "nasfilter.filters",
    "make_filter": "nasfilter.filters",
    "get_storage": "nasfilter.runs.storage.factory",
    "Storage": "nasfilter.runs.storage.base",
    "InMemoryStorage": "nasfilter.runs.storage.base",
    "Store": "nasfilter.runs.storage.sqlite_store",
    "ProxyTable": "nasfilter.bench.proxy",
    "proxy_table": "nasfilter.oracle",
}


# Names that were module constants of the size space, now read from its value (a
# DeprecationWarning on access): ``nasfilter.N_ARCHS`` is ``nasfilter.SSS.size``.
_MOVED = {"N_ARCHS": ("SSS.size", SSS.size), "CHANNEL_CHOICES": ("SSS.choices", SSS.choices)}

def __getattr__(name: str) -> Any:
    """Import a lazy entry point (:data:`_LAZY`) on first access."""
    if name in _MOVED:
        path, value = _MOVED[name]
        warnings.warn(
            f"nasfilter.{name} is deprecated: the search space is a value, use "
            f"nasfilter.{path} (or table.space for the space a table indexes)",
            DeprecationWarning,
            stacklevel=2,
        )
        return value
    module = _LAZY.get(name)
    if module is None:
        raise gone(__name__, name)  # a spelling that went names its replacement
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "DATASETS",
    "FILTERS",
    "SEARCHERS",
    "SSS",
    "TSS",
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
    "Rescoring",
    "RunFront",
    "RunRecord",
    "RunResult",
    "RunSpec",
    "ScoredRun",
    "Searcher",
    "Space",
    "Storage",
    "Store",
    "__version__",
    "as_arch",
    "get_dataset",
    "get_space",
    "get_storage",
    "grid",
    "load_fronts",
    "load_results",
    "load_table",
    "make_filter",
    "make_problem",
    "make_searcher",
    "proxy_table",
    "read_accuracies",
    "run_experiment",
    "run_front",
    "run_search",
    "search",
    "summarize",
    "write_runs_report",
]
