"""Finding a table: by name (``real``, the default; ``synthetic``) or by the path of a file.

``real`` is NATS-Bench's measured hp-90 validation accuracies with modelled times
(:mod:`nasfilter.real_table`); ``synthetic`` the embedded surrogate
(:mod:`nasfilter.surrogate`); anything else is the path of a table converted with
``nasfilter convert``. A file literally named like a table is reached as ``./real``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from nasfilter.datasets import Dataset, get_dataset
from nasfilter.real_table import real_table
from nasfilter.surrogate import embedded_table
from nasfilter.table import BenchmarkTable

DEFAULT_TABLE = "real"

# Name -> (builder for a dataset, one line of help).
NAMED_TABLES: dict[str, tuple[Callable[[str], BenchmarkTable], str]] = {
    "real": (
        real_table,
        "NATS-Bench's real hp-90 validation accuracies (seed 777) with modelled times",
    ),
    "synthetic": (embedded_table, "the embedded SYNTHETIC surrogate (hp-12 seeds, test@90)"),
}


def table_name(value: str | os.PathLike[str] | None) -> str | None:
    """The canonical name if ``value`` names a table (None = the default), else None."""
    if value is None:
        return DEFAULT_TABLE
    if isinstance(value, str) and value.strip().lower() in NAMED_TABLES:
        return value.strip().lower()
    return None


def load_table(
    path: str | os.PathLike[str] | None, dataset: str | Dataset = "cifar10"
) -> BenchmarkTable:
    """The table named ``path`` (None: the real table), or the converted table file there.

    When a file is given, ``dataset`` must match the file's dataset.
    """
    ds = get_dataset(dataset)
    name = table_name(path)
    if name is not None:
        return NAMED_TABLES[name][0](ds.name)
    assert path is not None  # None is a name: the default table, returned above
    table = BenchmarkTable.load(path)
    if table.dataset != ds:
        raise ValueError(
            f"table {str(path)!r} holds dataset {table.dataset.name!r}, not {ds.name!r}; "
            "convert the archive for that dataset or pass the matching --dataset"
        )
    return table
