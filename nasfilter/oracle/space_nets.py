"""The network and the FLOPs a measuring backend (onnxruntime, torch-cuda, tensorrt) runs for
an architecture of either space.

- sss: xautodl's ``DynamicShapeTinyNet`` (:func:`nasfilter.bench.network.build_network`), FLOPs
  :func:`nasfilter.bench.costs.flops`;
- tss: xautodl's ``TinyNetwork`` with C = 16, N = 5 (the NAS-Bench-201 / NATS tss network,
  ``get_cell_based_tiny_net`` with ``name='infer.tiny'``, as NATS-Bench trains it), FLOPs
  2 x NATS's MACs of the dataset's network (the shipped ``flops_M``).

Both networks map an NCHW input ``(N, 3, H, H)`` (:func:`nasfilter.bench.network.input_shape`)
to ``(features (N, C), logits (N, num_classes))``. Weights are xautodl's random initialisation,
drawn inside ``torch.random.fork_rng`` (torch's global generator is left as it was).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from nasfilter.bench.costs import flops
from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.network import MissingDependencyError, build_network
from nasfilter.bench.spaces import TSS, get_space
from nasfilter.bench.tss_data import load_tss_arrays

if TYPE_CHECKING:  # pragma: no cover
    import torch

TSS_C, TSS_N = 16, 5  # NAS-Bench-201's TinyNetwork: 16 channels, 5 cells per stage


def check_space(space: object) -> str:
    """``space`` as ``'sss'`` or ``'tss'``; ValueError naming it otherwise."""
    if not isinstance(space, str):
        raise ValueError(f"space must be 'sss' or 'tss', got {space!r}")
    return get_space(space).name


def build(space: str, arch: int, dataset: str | Dataset) -> torch.nn.Module:
    """The real xautodl network of architecture ``arch`` of ``space`` for ``dataset``, float32,
    eval mode, on the CPU. Raises MissingDependencyError without torch or xautodl."""
    if check_space(space) == "sss":
        return build_network(arch, dataset)
    cell = str(TSS.arch(arch))  # checks the index, 0..15624
    try:
        import torch
        from xautodl.models import get_cell_based_tiny_net
        from xautodl.models.cell_searchs.genotypes import Structure
    except ImportError as exc:
        raise MissingDependencyError(
            f"building a tss network needs torch and xautodl ({exc}): `pip install "
            "nasfilter[torch]` and `pip install --no-deps xautodl==1.0.0`"
        ) from exc
    config = SimpleNamespace(name="infer.tiny", C=TSS_C, N=TSS_N,
                             genotype=Structure.str2structure(cell),
                             num_classes=get_dataset(dataset).num_classes)
    with torch.random.fork_rng(devices=[]):
        net: torch.nn.Module = get_cell_based_tiny_net(config)
    return net.eval()


def flops_per_image(space: str, dataset: str | Dataset) -> np.ndarray:
    """FLOPs per image (2 x MACs) of every architecture of ``space`` on ``dataset``, float64:
    (32768,) for sss, (15625,) for tss."""
    if check_space(space) == "sss":
        return flops(dataset)
    out: np.ndarray = load_tss_arrays(get_dataset(dataset).name).flops_M.astype(np.float64) * 2e6
    return out


def space_config(space: str) -> dict[str, str]:
    """What a backend adds to its config for ``space``: nothing for sss (its cache groups stay
    as they were), ``{"space": "tss", "label": "measured"}`` for tss."""
    return {} if check_space(space) == "sss" else {"space": "tss", "label": "measured"}


__all__ = ["build", "check_space", "flops_per_image", "space_config"]
