"""Closed-form costs of all 32768 networks vs building them and counting with xautodl."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from benchmarks import median_seconds, result
from nasfilter.bench.costs import compute_network_costs
from nasfilter.bench.datasets import DATASETS
from nasfilter.bench.network import build_network, compute_layer_costs, input_shape
from nasfilter.bench.spaces.sss import N_ARCHS, sample_indices

N_REFERENCE = 20  # xautodl networks built and counted per dataset


def _reference_seconds_per_arch(dataset: str, rng: np.random.Generator) -> float:
    """Wall seconds to build one xautodl network and run get_model_infos on it."""
    import torch
    from xautodl.utils.flop_benchmark import get_model_infos

    indices = sample_indices(rng, N_REFERENCE)
    shape = input_shape(dataset)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread, like the numpy side (and faster on a busy machine)
    try:
        with torch.random.fork_rng(devices=[]):  # get_model_infos draws from torch.rand
            get_model_infos(build_network(0, dataset), shape)  # warm-up
            start = time.perf_counter()
            for index in indices:
                get_model_infos(build_network(int(index), dataset), shape)
            elapsed = time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)
    return elapsed / N_REFERENCE


def run() -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(2212_07936)
    for name, ds in DATASETS.items():

        def cold(ds: Any = ds) -> None:
            compute_network_costs(ds)
            compute_layer_costs(ds)

        ours = median_seconds(cold, repeat=5)
        per_arch = _reference_seconds_per_arch(name, rng)
        reference = per_arch * N_ARCHS
        yield result(
            f"costs.all_archs.{name}",
            ours,
            "s",
            "< 1 s for network_costs + layer_costs of all 32768 (cold)",
            ours < 1.0,
            ratio=reference / ours,
            reference="xautodl build + get_model_infos, extrapolated from "
            f"{N_REFERENCE} random nets",
            reference_s_per_arch=per_arch,
            reference_s_all=reference,
        )
