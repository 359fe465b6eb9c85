"""A drop-in for ``nats_bench``'s size-space API: ``from nasfilter.nats_api import create``.

``create(path, 'sss')`` opens a benchmark converted by ``nasfilter convert`` (a full-fidelity
folder, or a compact ``.npz`` table that answers what a hp-12 search needs) and returns a
:class:`NATSsize` with nats_bench 1.8's members and semantics, including its draws from
Python's global ``random`` (see :mod:`nasfilter.nats_api.api`). ``create(None, 'sss')`` opens
``$NASFILTER_NATS_BENCHMARK``, else ``~/.nasfilter/NATS-sss-full``; ``create('synthetic',
'sss')`` the embedded SYNTHETIC surrogate, whose SYNTHETIC learning curves answer ``iepoch``
and hp 01 / 12 / 90 searches (:mod:`nasfilter.nats_api.synthetic`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nasfilter.nats_api.api import NATSsize
from nasfilter.nats_api.compact import NeedsFullBenchmarkError, compact_records
from nasfilter.nats_api.records import FullRecords
from nasfilter.nats_api.synthetic import synthetic_records

ENV_VAR = "NASFILTER_NATS_BENCHMARK"
DEFAULT_FOLDER = Path("~/.nasfilter/NATS-sss-full")
SYNTHETIC = "synthetic"
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


def _open(path: Path, fast_mode: bool, verbose: bool) -> NATSsize:
    from nasfilter.fullbench import FullBenchmark
    from nasfilter.table import BenchmarkTable

    if path.is_dir():
        bench = FullBenchmark.open(path)
        label = SYNTHETIC_LABEL if bench.synthetic else None
        return NATSsize(FullRecords(bench), path.name, fast_mode, verbose, label)
    if path.is_file():
        table = BenchmarkTable.load(path)
        label = SYNTHETIC_LABEL if table.provenance.synthetic else None
        return NATSsize(compact_records([table]), path.name, fast_mode, verbose, label)
    raise ValueError(f"{str(path)!r} does not exist; " + _HOW.format(target=path))


def create(
    file_path_or_dict: Any, search_space: str, fast_mode: bool = False, verbose: bool = True
) -> NATSsize:
    """nats_bench's ``create``: the size-space API over a converted benchmark.

    Args:
        file_path_or_dict: a folder converted by ``nasfilter convert ARCHIVE -o OUT``, a
            compact ``.npz`` table, ``'synthetic'`` for the embedded SYNTHETIC surrogate, or
            None for :func:`default_path`. nats_bench's archives and dicts are refused with
            the conversion to run.
        search_space: ``'sss'`` or ``'size'``.
        fast_mode: as nats_bench: True loads architectures on first use (so
            ``evaluated_indexes`` grows), False has every architecture loaded.
        verbose: print the creation line.
    """
    if search_space in TSS_NAMES:
        raise ValueError(
            f"search space {search_space!r}: nasfilter.nats_api serves the size search space "
            "('sss'/'size') only; use nats_bench itself for the topology space"
        )
    if search_space not in SSS_NAMES:
        raise ValueError(f"invalid search space : {search_space}")
    if isinstance(file_path_or_dict, dict):
        raise ValueError(
            "nasfilter.nats_api reads converted benchmarks, not nats_bench dicts; "
            + _HOW.format(target="NATS-full")
        )
    if isinstance(file_path_or_dict, str) and file_path_or_dict == SYNTHETIC:
        from nasfilter.surrogate import embedded_table

        tables = [embedded_table(name) for name in ("cifar10", "cifar100", "ImageNet16-120")]
        return NATSsize(synthetic_records(tables), SYNTHETIC, fast_mode, verbose, SYNTHETIC_LABEL)
    path = default_path() if file_path_or_dict is None else Path(file_path_or_dict).expanduser()
    if path.name.endswith((".pickle.pbz2", "-simple")):
        raise ValueError(
            f"{str(path)!r} is a NATS-Bench archive; " + _HOW.format(target="NATS-full")
            + ", then create('NATS-full', 'sss')"
        )
    return _open(path, fast_mode, verbose)


__all__ = [
    "SYNTHETIC",
    "SYNTHETIC_LABEL",
    "NATSsize",
    "NeedsFullBenchmarkError",
    "create",
    "default_path",
]
