"""The untrained networks that zero-cost proxies score, and the stand-in data they read.

Every architecture of both spaces is built with xautodl, as NATS-Bench trains it:

- sss: ``DynamicShapeTinyNet`` (:func:`nasfilter.bench.network.build_network`);
- tss: ``TinyNetwork`` with C = 16, N = 5 (the NAS-Bench-201 macro skeleton).

Weights follow xautodl's initialisation, which is PyTorch's default (the constructors call no
init of their own): Conv2d and Linear weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))
(``kaiming_uniform_(a=sqrt(5))`` and the default bias bound; fan_in = in_channels/groups * k * k,
or in_features), BatchNorm weight 1, bias 0, running mean 0, running variance 1. The network is
constructed on torch's ``meta`` device (no storage, no random draw), then materialised on the
CPU and every parameter and buffer is set by :func:`init_weights` from a local
``torch.Generator`` seeded with ``seed``: a network is a pure function of (space,
architecture, dataset, seed), and torch's global generator is never read nor written.

**Stand-in data.** No CIFAR or ImageNet16-120 images ship here. Proxies that need data read a
batch of i.i.d. standard Gaussian images, NCHW ``(B, 3, H, H)``, and uniform random labels in
``[0, num_classes)``, both drawn from ``numpy.random.default_rng(seed)``
(:func:`stand_in_batch`). Scores computed on it are labelled ``stand-in: gaussian``.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.network import MissingDependencyError, input_shape, xautodl_config
from nasfilter.bench.spaces import Space, get_space

if TYPE_CHECKING:  # pragma: no cover
    import torch

STAND_IN = "gaussian"  # the data stand-in: N(0, 1) pixels, uniform labels
STAND_IN_TEXT = (
    "stand-in data: i.i.d. N(0, 1) images and uniform random labels from "
    "numpy.random.default_rng(seed), not dataset images"
)
TSS_C, TSS_N = 16, 5  # NAS-Bench-201's TinyNetwork: 16 channels, 5 cells per stage


def _torch() -> Any:
    try:
        import torch
        import xautodl  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"zero-cost proxies need torch and xautodl ({exc}): `pip install nasfilter[torch]` "
            "and `pip install --no-deps xautodl==1.0.0`"
        ) from exc
    return torch


def _tss_network(cell_text: str, num_classes: int) -> torch.nn.Module:
    from xautodl.models import get_cell_based_tiny_net
    from xautodl.models.cell_searchs.genotypes import Structure

    config = {
        "name": "infer.tiny",
        "C": TSS_C,
        "N": TSS_N,
        "genotype": Structure.str2structure(cell_text),
        "num_classes": num_classes,
    }
    net: torch.nn.Module = get_cell_based_tiny_net(SimpleNamespace(**config))
    return net


def build(space: str | Space, arch: object, dataset: str | Dataset, seed: int) -> torch.nn.Module:
    """The xautodl network of ``arch`` in ``space`` for ``dataset``, weights drawn from ``seed``.

    Returned in train mode (the proxies' papers score a network in train mode, BN reading the
    batch's statistics), float32, on the CPU. Its forward maps ``(N, 3, H, H)`` to
    ``(features (N, C), logits (N, num_classes))``.
    """
    torch = _torch()
    sp, ds = get_space(space), get_dataset(dataset)
    parsed = sp.parse(arch)
    seed = check_seed(seed)
    with torch.device("meta"):  # shapes only: the constructors' default inits draw nothing
        if sp.name == "tss":
            net = _tss_network(str(parsed), ds.num_classes)
        else:
            from xautodl.models import get_cell_based_tiny_net

            net = get_cell_based_tiny_net(xautodl_config(parsed, ds))
    net = net.to_empty(device="cpu")
    init_weights(net, torch.Generator().manual_seed(seed))
    return net.train()


def init_weights(net: torch.nn.Module, gen: torch.Generator) -> None:
    """Set every parameter and buffer of ``net`` in place, PyTorch's default init drawn from
    ``gen`` in module order: Conv2d/Linear weight, then bias, ~ U(-b, b), b = 1/sqrt(fan_in);
    BatchNorm2d weight 1, bias 0, running mean 0, running variance 1, batches tracked 0.
    ValueError naming a module of any other type that holds parameters or buffers."""
    torch = _torch()
    with torch.no_grad():
        for name, mod in net.named_modules():
            if isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)):
                bound = 1.0 / math.sqrt(mod.weight[0].numel())
                mod.weight.uniform_(-bound, bound, generator=gen)
                if mod.bias is not None:
                    mod.bias.uniform_(-bound, bound, generator=gen)
            elif isinstance(mod, torch.nn.BatchNorm2d):
                if mod.weight is not None:
                    mod.weight.fill_(1.0)
                    mod.bias.zero_()
                if mod.running_mean is not None:
                    mod.running_mean.zero_()
                    mod.running_var.fill_(1.0)
                    mod.num_batches_tracked.zero_()
            elif any(True for _ in mod.parameters(recurse=False)) or any(
                True for _ in mod.buffers(recurse=False)
            ):
                raise ValueError(
                    f"module {name!r} ({type(mod).__name__}) holds weights that init_weights "
                    "does not know how to initialise"
                )


def check_seed(seed: object) -> int:
    """``seed`` as an int in ``[0, 2**63)``; ValueError naming it otherwise."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer in [0, 2**63), got {seed!r}")
    if not 0 <= int(seed) < 2**63:
        raise ValueError(f"seed must be an integer in [0, 2**63), got {seed!r}")
    return int(seed)


def stand_in_batch(
    dataset: str | Dataset, batch: int, seed: int, stream: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The stand-in batch: float32 images ``(batch, 3, H, H)`` ~ N(0, 1) and int64 labels
    ``(batch,)`` uniform in ``[0, num_classes)``, from ``default_rng([seed, stream])``."""
    torch = _torch()
    ds = get_dataset(dataset)
    rng = np.random.default_rng([check_seed(seed), stream])
    images = rng.standard_normal(input_shape(ds, batch)).astype(np.float32)
    labels = rng.integers(0, ds.num_classes, size=batch, dtype=np.int64)
    return torch.from_numpy(images), torch.from_numpy(labels)


def is_connected(space: str | Space, arch: object) -> bool:
    """False for a tss cell with no path of non-``none`` edges from its input to its output
    (its output is identically zero); True for every sss network."""
    sp = get_space(space)
    if sp.name != "tss":
        return True
    ops = sp.parse(arch).ops
    edges = ((1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2))
    reach = {0}
    for (dst, src), op in zip(edges, ops, strict=True):
        if op != "none" and src in reach:
            reach.add(dst)
    return 3 in reach


__all__ = [
    "STAND_IN",
    "STAND_IN_TEXT",
    "build",
    "check_seed",
    "init_weights",
    "is_connected",
    "stand_in_batch",
]
