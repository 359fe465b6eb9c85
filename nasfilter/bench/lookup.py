"""Finding a table: by name (``real``, the default; ``synthetic``) or by the path of a file.

``real`` is NATS-Bench's measured hp-90 validation accuracies with modelled times
(:mod:`nasfilter.bench.sss_real`); ``synthetic`` the embedded surrogate
(:mod:`nasfilter.bench.surrogate`); anything else is the path of a table converted with
``nasfilter convert``: a compact ``.npz`` (``--dataset``) or a full-fidelity benchmark
folder (no ``--dataset``), whose per-dataset table is derived with nats_bench's semantics
(:func:`nasfilter.bench.nats_api.derive.compact_table`) and whose learning curves come with it
(:func:`nasfilter.bench.fidelity.curves_for`). A file literally named like a table is reached as
``./real``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

from nasfilter.bench.archive_names import ARCHIVE_DIR_NAME, META_FILE_NAME
from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.fullbench.bench import NotFullBenchmarkError, open_benchmark
from nasfilter.bench.fullbench.layout import INDEX_FILE
from nasfilter.bench.nats_api.derive import compact_table
from nasfilter.bench.sss_real import real_table
from nasfilter.bench.surrogate import embedded_table
from nasfilter.bench.table import BenchmarkTable
from nasfilter.bench.tss_real import tss_table

DEFAULT_TABLE = "real"

# Name -> (builder for a dataset, one line of help).
NAMED_TABLES: dict[str, tuple[Callable[[str], BenchmarkTable], str]] = {
    "real": (
        real_table,
        "NATS-Bench's real hp-90 validation accuracies (seed 777) with modelled times",
    ),
    "synthetic": (embedded_table, "the embedded SYNTHETIC surrogate (hp-12 seeds, test@90)"),
    "tss-real": (
        tss_table,
        "tss (NAS-Bench-201): real hp-12 validation accuracy (seed mean), measured epochs",
    ),
    "tss-real-hp200": (
        functools.partial(tss_table, name="tss-real-hp200"),
        "tss (NAS-Bench-201): real hp-200 validation accuracy of one random seed",
    ),
}
# The table a space uses when none is named.
SPACE_DEFAULT_TABLE = {"sss": DEFAULT_TABLE, "tss": "tss-real"}


def check_table_argument(value: object) -> None:
    """ValueError for an empty table argument (``--table ''``), which a path would read as
    the current folder: name a table or give a path."""
    if isinstance(value, (str, os.PathLike)) and not str(os.fspath(value)).strip():
        raise ValueError(
            f"the table {str(os.fspath(value))!r} is empty: name a table "
            f"({', '.join(repr(n) for n in NAMED_TABLES)}; omit it for {DEFAULT_TABLE!r}) or "
            "give the path of a converted table (a .npz, or a benchmark folder)"
        )


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
    """The table named ``path`` (None: the real table), the converted table file there, or
    ``dataset``'s table of the full-fidelity benchmark folder there (:func:`full_table`).

    When a file is given, ``dataset`` must match the file's dataset.
    """
    ds = get_dataset(dataset)
    check_table_argument(path)
    name = table_name(path)
    if name is not None:
        return NAMED_TABLES[name][0](ds.name)
    assert path is not None  # None is a name: the default table, returned above
    if isinstance(path, (str, os.PathLike)) and Path(path).is_dir():
        return full_table(path, ds.name)
    table = BenchmarkTable.load(path)
    if table.dataset != ds:
        raise ValueError(
            f"table {str(path)!r} holds dataset {table.dataset.name!r}, not {ds.name!r}; "
            "convert the archive for that dataset or pass the matching --dataset"
        )
    return table


def full_table(folder: str | os.PathLike[str], dataset: str) -> BenchmarkTable:
    """``dataset``'s table of a full-fidelity benchmark folder (``nasfilter convert ARCHIVE
    -o FOLDER``): hp-12 validation accuracy per seed, hp-90 test accuracy, per-epoch times
    and costs, as nats_bench answers them; its provenance names the folder, so the
    benchmark's learning curves come with it. ValueError for a folder that is not one,
    naming what is missing and the conversion that writes it."""
    root = Path(folder).expanduser().resolve()  # the table names it: curves found from anywhere
    try:
        bench = open_benchmark(root)
    except NotFullBenchmarkError as exc:
        if root.name == ARCHIVE_DIR_NAME or (root / META_FILE_NAME).is_file():
            raise ValueError(
                f"table {str(root)!r} is a NATS-Bench archive, not a converted benchmark: "
                f"convert it first, with full fidelity (learning curves): nasfilter convert "
                f"{str(root)!r} -o FOLDER, or for one dataset: nasfilter convert "
                f"{str(root)!r} --dataset {dataset} -o TABLE.npz"
            ) from None
        raise ValueError(
            f"table {str(root)!r} is a folder but not a full-fidelity benchmark: "
            f"{INDEX_FILE} is missing or unreadable ({exc})"
        ) from None
    ds = get_dataset(dataset)
    for hp, record in (("12", ds.search_record), ("90", ds.final_record)):
        if hp not in bench.hp_order or record not in bench.records(hp):
            raise ValueError(
                f"benchmark {str(root)!r} has no hp-{hp} record {record!r}, which a "
                f"{ds.name} table needs (settings: {bench.hp_order}); convert an archive "
                "that holds it"
            )
    return compact_table(bench, ds.name)


# The spellings that went when a table got one face to load it and a proxy one to name it,
# each with the face that replaces it; nasfilter, runs.inputs and runs.experiment name them.
GONE = {
    "embedded_table": "nasfilter.load_table('synthetic', dataset)",
    "cached_table": "nasfilter.load_table(name_or_path, dataset)",
    "load_proxy": "nasfilter.proxy_table(oracle, device, dataset, cache)",
    "cached_proxy": "nasfilter.proxy_table(oracle, device, dataset, cache)",
}


def gone(module: str, name: str) -> AttributeError:
    """The AttributeError for ``module.name``: a spelling that went (:data:`GONE`), naming
    its replacement; any other name, the usual error."""
    if name not in GONE:
        return AttributeError(f"module {module!r} has no attribute {name!r}")
    return AttributeError(
        f"{module}.{name} is gone: load a table with nasfilter.load_table and name a proxy "
        f"with nasfilter.proxy_table; here: {GONE[name]}"
    )
