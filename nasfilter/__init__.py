"""nasfilter: simulated NAS on the NATS-Bench size space, with a GPU-utilization oracle.

Importing the package is cheap: heavy pieces (nats_bench, torch, onnxruntime, TensorRT,
matplotlib) are imported only by the functions that use them.
"""

from nasfilter.datasets import DATASETS, Dataset, get_dataset
from nasfilter.space import CHANNEL_CHOICES, N_ARCHS, Arch, as_arch
from nasfilter.table import BenchmarkTable, MissingArchitectureError, Provenance
from nasfilter.tables import load_table


def _version() -> str:
    """The installed distribution's version (setup.cfg is its one source)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nasfilter")
    except PackageNotFoundError:  # a source tree on sys.path, never installed
        return "0+unknown (not installed; pip install -e .)"


__version__ = _version()

__all__ = [
    "CHANNEL_CHOICES",
    "DATASETS",
    "N_ARCHS",
    "Arch",
    "BenchmarkTable",
    "Dataset",
    "MissingArchitectureError",
    "Provenance",
    "__version__",
    "as_arch",
    "get_dataset",
    "load_table",
]
