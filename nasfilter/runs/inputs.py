"""A run spec's inputs, loaded once per process: the table, the proxy and the front
reference (:func:`inputs`), and what identifies them (:func:`provenance`).

The per-process caches key on a file's identity (resolved path, size, mtime), so a table
rewritten in place is loaded afresh. Every path through here checks that the table and the
proxy are of one dataset and space (:func:`nasfilter.sim.inputs_check.check_proxy_suits`,
the check a :class:`~nasfilter.sim.problem.Problem` is built with).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from nasfilter.bench.fullbench.layout import INDEX_FILE
from nasfilter.bench.lookup import gone, load_table, table_name
from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.table import ARRAY_COLUMNS, BenchmarkTable
from nasfilter.oracle import proxy_table
from nasfilter.runs.metrics import FrontReference
from nasfilter.runs.records import RunSpec
from nasfilter.sim.inputs_check import check_proxy_suits

FileIdentity = tuple[str, int, int] | None  # (resolved path, size, mtime in ns), or None


def file_identity(path: str | os.PathLike[str] | None) -> FileIdentity:
    """(resolved path, size in bytes, mtime in ns) of a file, or None for no path; of a
    full-fidelity benchmark folder, the folder with its index file's size and mtime.

    The per-process caches key on this, so a table rewritten in place is loaded afresh."""
    if path is None:
        return None
    resolved = Path(path).resolve()
    index = resolved / INDEX_FILE
    try:
        st = index.stat() if resolved.is_dir() and index.is_file() else resolved.stat()
    except OSError:
        return (str(resolved), -1, -1)  # the loader reports the missing file
    return (str(resolved), st.st_size, st.st_mtime_ns)


def table_identity(table: str | os.PathLike[str] | None) -> FileIdentity:
    """:func:`file_identity` of a table file; a table's name (None: the default) is its own
    identity, ``(name, 0, 0)``."""
    named = table_name(table)
    return (named, 0, 0) if named is not None else file_identity(table)


@functools.lru_cache(maxsize=16)
def _table_at(identity: FileIdentity, dataset: str) -> BenchmarkTable:
    return load_table(None if identity is None else identity[0], dataset)


@functools.lru_cache(maxsize=16)
def _proxy_at(oracle: str, device: str | None, dataset: str, cache: FileIdentity) -> ProxyTable:
    return proxy_table(oracle, device, dataset, None if cache is None else cache[0])


@functools.lru_cache(maxsize=16)
def _reference_at(
    table: FileIdentity, dataset: str, oracle: str, device: str | None, cache: FileIdentity
) -> FrontReference:
    return FrontReference.build(
        _table_at(table, dataset), _proxy_at(oracle, device, dataset, cache)
    )


def _check_table(table: BenchmarkTable) -> None:
    """ValueError for a partial table (a search may propose any architecture) and for one
    without test accuracy for every architecture (the metrics need the true front)."""
    if not table.is_complete:
        raise ValueError(
            f"table {table.label!r} holds {table.n_present} of 32768 architectures; a search "
            "may propose any of them, so it needs a complete table (convert the full archive)"
        )
    missing_test = int(np.count_nonzero(~np.isfinite(table.test_acc)))
    if missing_test:
        raise ValueError(
            f"table {table.label!r} lacks column 'test_acc' (test accuracy after 90 epochs) "
            f"for {missing_test} of 32768 architectures; the metrics need it for the true "
            "front. Convert the full NATS-Bench archive with `nasfilter convert` "
            "(docs/real-archive.md), or omit --table to use the real table"
        )


class RunInputs(NamedTuple):
    """What a :class:`~nasfilter.runs.records.RunSpec` resolves into: the one value that
    both runs it (the table and proxy of its problem) and scores it (the table's test
    accuracies and the front reference)."""

    table: BenchmarkTable
    proxy: ProxyTable
    reference: FrontReference


INPUT_PARTS = ("table", "oracle")  # what an error of inputs() is marked with (input_part)


@contextmanager
def _resolving(part: str) -> Iterator[None]:
    """Mark an exception raised inside with the input it is about (``part``, one of
    :data:`INPUT_PARTS`), unless a nested block marked it already; it is re-raised as is."""
    try:
        yield
    except Exception as exc:
        if input_part(exc) is None:
            exc.input_part = part  # type: ignore[attr-defined]
        raise


def input_part(exc: BaseException) -> str | None:
    """Which input of a spec an exception of :func:`inputs` is about: ``"table"`` (the
    table, or the table and the proxy disagreeing), ``"oracle"`` (the proxy), or None for
    an exception raised elsewhere. A command line maps it to its flag."""
    return getattr(exc, "input_part", None)


def inputs(spec: RunSpec) -> RunInputs:
    """The table, proxy and front reference of ``spec`` (loaded once per process): the one
    place a spec is resolved, for the runs, their scoring and the command line alike.

    Raises ValueError for a partial table, for one without test accuracy for every
    architecture, and for a proxy of another dataset or search space than the table's
    (naming both). Every exception is marked with the input it is about
    (:func:`input_part`).
    """
    table_id, cache_id = table_identity(spec.table), file_identity(spec.oracle_cache)
    table, proxy = spec_table(spec), spec_proxy(spec)
    with _resolving("table"):
        _check_table(table)
    with _resolving("table"):  # the table must suit the proxy: a --table error, as before
        space = table.space.name
        check_proxy_suits(
            table, proxy, who=f"the proxy of oracle {spec.oracle!r}",
            remedy=f"use an oracle of the {space} space (docs/tss.md: oracle='measured', "
            f"device='2080ti' on tss, as --space tss does; 'calibrated' or 'roofline' on sss)",
        )  # fmt: skip
        ref = _reference_at(table_id, spec.dataset, spec.oracle, spec.device, cache_id)
    return RunInputs(table, proxy, ref)


def spec_table(spec: RunSpec) -> BenchmarkTable:
    """The table of ``spec`` alone, loaded once per process (:func:`nasfilter.load_table`,
    the one public face to load a table), without its proxy or :func:`inputs`' checks: for
    what needs only the table (its labels, its columns). Errors are marked ``"table"``."""
    with _resolving("table"):
        return _table_at(table_identity(spec.table), spec.dataset)


def spec_proxy(spec: RunSpec) -> ProxyTable:
    """The proxy of ``spec``'s oracle alone, loaded once per process
    (:func:`nasfilter.proxy_table`, the one public face to name a proxy). Errors are marked
    ``"oracle"``."""
    with _resolving("oracle"):
        return _proxy_at(spec.oracle, spec.device, spec.dataset, file_identity(spec.oracle_cache))


def input_key(spec: RunSpec) -> tuple[Any, ...]:
    """What identifies ``spec``'s inputs (its table's and oracle cache's file identities,
    dataset, oracle and device): specs of one key resolve into one :class:`RunInputs`."""
    return (
        table_identity(spec.table),
        spec.dataset,
        spec.oracle,
        spec.device,
        file_identity(spec.oracle_cache),
    )


def clear_caches() -> None:
    """Empty this process's caches of tables, proxies and front references (tests)."""
    for cached in (_table_at, _proxy_at, _reference_at):
        cached.cache_clear()


def __getattr__(name: str) -> Any:
    raise gone(__name__, name)


def content_digest(*arrays: np.ndarray) -> str:
    """SHA-256 (hex) of ``arrays``' shapes, dtypes and bytes: what identifies a table's or
    an oracle's numbers, wherever they were read from."""
    digest = hashlib.sha256()
    for arr in arrays:
        a = np.ascontiguousarray(arr)
        digest.update(f"{a.dtype.str}{a.shape};".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


def provenance(spec: RunSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """(table provenance, oracle provenance) of ``spec``, JSON-serialisable, each with the
    ``sha256`` of its numbers (:func:`content_digest`)."""
    table, proxy, _ = inputs(spec)
    table_prov = asdict(table.provenance) | {
        "label": table.provenance.label,
        "dataset": table.dataset.name,
        "path": spec.table,
        "sha256": content_digest(
            np.asarray(table.seeds), *(getattr(table, c) for c in ARRAY_COLUMNS)
        ),
    }
    oracle_prov = {
        "label": proxy.label,
        **proxy.provenance,
        "sha256": content_digest(proxy.utilization, proxy.throughput),
    }
    return table_prov, json.loads(json.dumps(oracle_prov, default=str))
