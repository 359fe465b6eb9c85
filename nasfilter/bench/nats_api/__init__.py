"""A drop-in for ``nats_bench``'s size-space API: ``from nasfilter.bench.nats_api import create``.

``create(path, 'sss')`` opens a benchmark converted by ``nasfilter convert`` (a full-fidelity
folder, or a compact ``.npz`` table that answers only the runs it holds) and returns a
:class:`NATSsize` with nats_bench 1.8's members and semantics, including its draws from
Python's global ``random`` (see :mod:`nasfilter.bench.nats_api.api`). ``create(None, 'sss')`` keeps
nats_bench's meaning, the full benchmark at the default place: the conversion at
``$NASFILTER_NATS_BENCHMARK``, else ``~/.nasfilter/NATS-sss-full`` (converted from
nats_bench's default archive, ``$TORCH_HOME/NATS-sss-v1_0-50262-simple``); its error names
both ways forward. ``create('real', 'sss')`` opens the shipped real table (NATS-Bench's hp-90
validation accuracies, seed 777, of every architecture on the three search records, with
modelled times; every other run is refused by name), ``create('synthetic', 'sss')`` the
embedded SYNTHETIC surrogate, whose SYNTHETIC learning curves answer ``iepoch`` and hp 01 /
12 / 90 searches (:mod:`nasfilter.bench.nats_api.synthetic`).

``create('real', 'tss')`` opens the shipped real topology-space data as a
:class:`NATStopology` (:mod:`nasfilter.bench.nats_api.topology`: real hp-200 x-valid accuracies per
seed, hp-12 seed means, measured training times; test accuracies refused by name).
``create(None, 'tss')`` keeps nats_bench's meaning, the full archive at the default place,
which nasfilter does not convert: its error names ``create('real', 'tss')``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nasfilter.bench.nats_api.api import NATSsize
from nasfilter.bench.nats_api.compact import (
    MissingRecordError,
    NeedsFullBenchmarkError,
    compact_records,
)
from nasfilter.bench.nats_api.records import FullRecords
from nasfilter.bench.nats_api.synthetic import synthetic_records
from nasfilter.bench.nats_api.topology import NATStopology

ENV_VAR = "NASFILTER_NATS_BENCHMARK"
DEFAULT_FOLDER = Path("~/.nasfilter/NATS-sss-full")
SYNTHETIC = "synthetic"
REAL = "real"
DATASETS = ("cifar10", "cifar100", "ImageNet16-120")
ARCHIVE_NAME = "NATS-sss-v1_0-50262-simple"  # nats_bench's default archive (fast_mode)
TSS_ARCHIVE_NAME = "NATS-tss-v1_0-3ffb9-simple"
TSS_ENV_VAR = "NASFILTER_NATS_TSS_BENCHMARK"
TSS_DEFAULT_FOLDER = Path("~/.nasfilter/NATS-tss-full")
SYNTHETIC_LABEL = "SYNTHETIC surrogate (not NATS-Bench data)"
SSS_NAMES = ("sss", "size")
TSS_NAMES = ("tss", "topology")
_HOW = (
    "convert a NATS-Bench sss archive once with: nasfilter convert "
    "path/to/NATS-sss-v1_0-50262-simple -o {target}"
)


def default_path() -> Path:
    """Where ``create(None, 'sss')`` looks: ``$NASFILTER_NATS_BENCHMARK``, else
    ``~/.nasfilter/NATS-sss-full``."""
    value = os.environ.get(ENV_VAR)
    return Path(value).expanduser() if value else DEFAULT_FOLDER.expanduser()


def torch_home() -> Path:
    """nats_bench's ``get_torch_home()``: ``$TORCH_HOME``, else ``~/.torch``."""
    value = os.environ.get("TORCH_HOME")
    return Path(value).expanduser() if value else Path("~/.torch").expanduser()


def _no_default(path: Path) -> ValueError:
    """The error of ``create(None, 'sss')`` without a converted benchmark: both ways on."""
    archive = torch_home() / ARCHIVE_NAME
    found = "is there" if archive.is_dir() else "is not there either"
    return ValueError(
        f"create(None, 'sss') opens the full benchmark at the default place, {str(path)!r} "
        f"(${ENV_VAR}, else {DEFAULT_FOLDER}), and it does not exist; nats_bench's default "
        f"archive {str(archive)!r} {found}. Either convert the archive once: nasfilter "
        f"convert {archive} -o {path}, or open the shipped real table (hp-90 validation "
        f"accuracies only): create('{REAL}', 'sss')"
    )


def _label(provenance: Any) -> str | None:
    """The label a table's API carries: SYNTHETIC, or what is real and what modelled."""
    if provenance.synthetic:
        return SYNTHETIC_LABEL
    return str(provenance.label) if provenance.real or provenance.modelled else None


def _open(path: Path, fast_mode: bool, verbose: bool) -> NATSsize:
    from nasfilter.bench.fullbench import FullBenchmark
    from nasfilter.bench.table import BenchmarkTable

    if path.is_dir():
        bench = FullBenchmark.open(path)
        if bench.space != "sss":
            raise ValueError(f"{str(path)!r} is a converted {bench.space} benchmark, not an sss "
                             f"one: open it with create({str(path)!r}, '{bench.space}')")
        label = SYNTHETIC_LABEL if bench.synthetic else None
        return NATSsize(FullRecords(bench), path.name, fast_mode, verbose, label)
    if path.is_file():
        table = BenchmarkTable.load(path)
        label = _label(table.provenance)
        return NATSsize(compact_records([table]), path.name, fast_mode, verbose, label)
    raise ValueError(f"{str(path)!r} does not exist; " + _HOW.format(target=path))


def _create_tss(source: Any, fast_mode: bool, verbose: bool) -> Any:
    """``create(source, 'tss')``: 'real' opens the shipped real tss data; a folder converted
    from a tss archive opens in full; None is nats_bench's default (a conversion at
    ``$NASFILTER_NATS_TSS_BENCHMARK``, else ``~/.nasfilter/NATS-tss-full``)."""
    if isinstance(source, str) and source == REAL:
        return NATStopology(fast_mode, verbose)
    if isinstance(source, str) and source == SYNTHETIC:
        raise ValueError(
            f"create('{SYNTHETIC}', 'tss'): the SYNTHETIC surrogate covers the size search space "
            f"('sss') only; the topology space has real data: create('{REAL}', 'tss')"
        )
    if source is not None and not isinstance(source, (str, os.PathLike)):
        raise ValueError(
            f"create({type(source).__name__}, 'tss'): give '{REAL}', the folder of a converted "
            f"tss archive (nasfilter convert {TSS_ARCHIVE_NAME} -o OUT), or None"
        )
    value = os.environ.get(TSS_ENV_VAR)
    default = Path(value).expanduser() if value else TSS_DEFAULT_FOLDER.expanduser()
    path = default if source is None else Path(source).expanduser()
    how = (f"convert the archive once: nasfilter convert {torch_home() / TSS_ARCHIVE_NAME} "
           f"-o {path}, or open the shipped real tss data (hp-200 x-valid accuracy per seed, "
           f"hp-12 seed mean, measured training times; no test accuracies): "
           f"create('{REAL}', 'tss')")
    if path.name.startswith("NATS-tss-v1_0"):
        raise ValueError(f"{str(path)!r} is a NATS-Bench tss archive; {how}")
    if source is None and not path.is_dir():
        archive = torch_home() / TSS_ARCHIVE_NAME
        found = "is there" if archive.is_dir() else "is not there either"
        raise ValueError(
            f"create(None, 'tss') opens the full benchmark at the default place, {str(path)!r} "
            f"(${TSS_ENV_VAR}, else {TSS_DEFAULT_FOLDER}), and it does not exist; nats_bench's "
            f"default archive {str(archive)!r} {found}. Either {how}"
        )
    if not (path / "index.json").is_file():
        raise ValueError(f"{str(path)!r} is not a converted tss benchmark folder (no "
                         f"index.json); {how}")
    return _open_tss(path, fast_mode, verbose)


def _open_tss(path: Path, fast_mode: bool, verbose: bool) -> Any:
    from nasfilter.bench.fullbench import FullBenchmark
    from nasfilter.bench.nats_api.topology_full import NATStopologyFull

    bench = FullBenchmark.open(path)
    if bench.space != "tss":
        raise ValueError(f"{str(path)!r} is a converted {bench.space} benchmark, not a tss one: "
                         f"open it with create({str(path)!r}, '{bench.space}')")
    label = SYNTHETIC_LABEL if bench.synthetic else None
    return NATStopologyFull(FullRecords(bench), path.name, fast_mode, verbose, label)


def create(
    file_path_or_dict: Any, search_space: str, fast_mode: bool = False, verbose: bool = True
) -> Any:
    """nats_bench's ``create``: the size-space API over a converted benchmark, or the
    topology-space API over the shipped real tss data.

    Args:
        file_path_or_dict: a folder converted by ``nasfilter convert ARCHIVE -o OUT``, a
            compact ``.npz`` table, ``'real'`` for the shipped real table, ``'synthetic'``
            for the embedded SYNTHETIC surrogate (a file named so is ``./real``), or None
            for :func:`default_path`. nats_bench's archives and dicts are refused with the
            conversion to run; anything else (a number, an empty path) with ValueError.
        search_space: ``'sss'`` or ``'size'``; ``'tss'`` or ``'topology'`` with ``'real'``
            for the shipped real tss data (:class:`NATStopology`).
        fast_mode: as nats_bench: True loads architectures on first use (so
            ``evaluated_indexes`` grows), False has every architecture loaded.
        verbose: print the creation line.
    """
    if search_space in TSS_NAMES:
        return _create_tss(file_path_or_dict, fast_mode, verbose)
    if search_space not in SSS_NAMES:
        raise ValueError(f"invalid search space : {search_space}")
    if isinstance(file_path_or_dict, dict):
        raise ValueError(
            "nasfilter.bench.nats_api reads converted benchmarks, not nats_bench dicts; "
            + _HOW.format(target="NATS-full")
        )
    if file_path_or_dict is not None and not isinstance(file_path_or_dict, (str, os.PathLike)):
        raise ValueError(
            f"file_path_or_dict={file_path_or_dict!r} ({type(file_path_or_dict).__name__}): "
            f"give the path of a converted benchmark, '{REAL}', '{SYNTHETIC}', or None"
        )
    if isinstance(file_path_or_dict, str) and not file_path_or_dict.strip():
        raise ValueError(
            f"file_path_or_dict={file_path_or_dict!r} is an empty path: give the path of a "
            f"converted benchmark, '{REAL}', '{SYNTHETIC}', or None for the default"
        )
    if isinstance(file_path_or_dict, str) and file_path_or_dict == SYNTHETIC:
        from nasfilter.bench.surrogate import embedded_table

        tables = [embedded_table(name) for name in DATASETS]
        return NATSsize(synthetic_records(tables), SYNTHETIC, fast_mode, verbose, SYNTHETIC_LABEL)
    if isinstance(file_path_or_dict, str) and file_path_or_dict == REAL:
        from nasfilter.bench.sss_real import real_table

        tables = [real_table(name) for name in DATASETS]
        label = _label(tables[0].provenance)
        return NATSsize(compact_records(tables), REAL, fast_mode, verbose, label)
    path = default_path() if file_path_or_dict is None else Path(file_path_or_dict).expanduser()
    if file_path_or_dict is None and not path.exists():
        raise _no_default(path)
    if path.name.endswith((".pickle.pbz2", "-simple")):
        raise ValueError(
            f"{str(path)!r} is a NATS-Bench archive; " + _HOW.format(target="NATS-full")
            + ", then create('NATS-full', 'sss')"
        )
    return _open(path, fast_mode, verbose)


__all__ = [
    "REAL",
    "SYNTHETIC",
    "SYNTHETIC_LABEL",
    "MissingRecordError",
    "NATSsize",
    "NATStopology",
    "NeedsFullBenchmarkError",
    "create",
    "default_path",
    "torch_home",
]
