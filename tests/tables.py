"""Small hand-made tables and proxies for unit tests (independent of the surrogate)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.spaces.sss import N_ARCHS
from nasfilter.bench.table import BenchmarkTable, Provenance


def random_table(
    seed: int = 0, present: np.ndarray | None = None, dataset: str = "cifar10"
) -> BenchmarkTable:
    """A table of random but plausible numbers; rows outside ``present`` are NaN."""
    rng = np.random.default_rng(seed)
    mask = np.ones(N_ARCHS, dtype=bool) if present is None else present

    def col(low: float, high: float, shape: tuple[int, ...] = (N_ARCHS,)) -> np.ndarray:
        arr = rng.uniform(low, high, size=shape)
        arr[~mask] = np.nan
        return arr

    return BenchmarkTable(
        dataset=get_dataset(dataset),
        seeds=(777, 888, 999),
        valid_acc=col(60, 85, (N_ARCHS, 3)),
        test_acc=col(80, 94),
        train_time=col(2.5, 6.5),
        valid_time=col(1.0, 1.6),
        latency=col(0.012, 0.02),
        params=col(0.01, 0.7),
        macs=col(4, 275),
        present=mask.copy(),
        provenance=Provenance(synthetic=True, source="tests.tables.random_table"),
    )


def random_proxy(seed: int = 0) -> ProxyTable:
    rng = np.random.default_rng(seed)
    return ProxyTable(
        utilization=rng.uniform(0.01, 0.6, N_ARCHS),
        throughput=rng.uniform(1e4, 5e5, N_ARCHS),
        label="tests.tables.random_proxy",
    )


def ship_scores(
    directory: Path,
    monkeypatch: pytest.MonkeyPatch,
    space: str,
    dataset: str,
    proxies: dict[str, tuple[np.ndarray, np.ndarray, float]],
) -> None:
    """Make a hand-made score file the only one nasfilter ships, for this test: ``proxies``
    maps a proxy name to (scores float32 (size,), computed bool (size,), CPU seconds of each
    computed score). The pin table and package folder are patched; the load cache is cleared
    (call ``scorefile.packaged_scores.cache_clear()`` again after the test)."""
    from nasfilter.bench.spaces import get_space
    from nasfilter.zerocost import scorefile
    from nasfilter.zerocost.compute import Scores

    scores = Scores(get_space(space), get_dataset(dataset), 0)
    for name, (values, computed, seconds) in proxies.items():
        scores.values[name] = values.astype(np.float32)
        scores.computed[name] = computed.astype(bool)
        scores.seconds[name] = np.where(computed, seconds, np.nan).astype(np.float32)
    path = scorefile.save_scores(scores, directory / f"{space}-{dataset}.npz")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setattr(scorefile, "DATA_DIR", path.parent)
    monkeypatch.setattr(scorefile, "SHA256", {path.name: digest})
    scorefile.packaged_scores.cache_clear()


def ship_sss_synflow_and_partial_snip(
    directory: Path,
    monkeypatch: pytest.MonkeyPatch,
    dataset: str,
    synflow: np.ndarray,
    snip_computed: np.ndarray,
) -> None:
    """:func:`ship_scores` of one sss file for ``dataset``: ``synflow`` (32768,) computed for
    every network (NaN where undefined), ``snip`` (1.0) computed only where ``snip_computed``
    (bool (32768,)); each score charged 0.5 CPU s."""
    proxies = {
        "synflow": (synflow, np.ones(synflow.size, dtype=bool), 0.5),
        "snip": (np.where(snip_computed, 1.0, np.nan), snip_computed, 0.5),
    }
    ship_scores(directory, monkeypatch, "sss", dataset, proxies)
