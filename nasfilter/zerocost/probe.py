"""One architecture's untrained network, as every proxy of it reads it, built once.

A :class:`Probe` holds the architecture, dataset and seed. It builds the network on first use
and hands each proxy a fresh copy (:meth:`Probe.network`: proxies that rewrite weights, such as
synflow and Zen-score, do not disturb the others). The gradient pass that snip, grasp,
grad_norm and fisher share (one batch, one cross-entropy loss, as in the zero-cost-nas
reference implementation) runs once per probe (:attr:`Probe.gradients`).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.spaces import Space, get_space
from nasfilter.zerocost.nets import _torch, build, check_seed, is_connected, stand_in_batch

if TYPE_CHECKING:  # pragma: no cover
    import torch

GRAD_BATCH = 64  # zero-cost-nas's batch on NAS-Bench-201 (snip, grasp, grad_norm, fisher, jacob)
DATA_STREAM = 1  # the stand-in stream every data-needing proxy reads (one shared batch)


def prunable_layers(net: torch.nn.Module) -> list[Any]:
    """The Conv2d and Linear modules of ``net``, in module order (the layers whose weights the
    zero-cost-nas proxies score)."""
    torch = _torch()
    return [m for m in net.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]


@dataclass(frozen=True)
class Gradients:
    """The shared gradient pass, per prunable layer (lists of equal length, module order).

    Attributes:
        weights: each layer's weight (detached).
        grads: dL/dW of the cross-entropy loss on the stand-in batch (zeros where unused).
        hess_grads: H g, the Hessian of L times g = dL/dW (GraSP's second pass).
        fisher: each layer's per-channel Fisher sum, 0.5 * mean_n (sum_hw a * dL/da)^2 summed
            over channels, a = the layer's output activation (0 where no gradient reaches it).
    """

    weights: list[torch.Tensor]
    grads: list[torch.Tensor]
    hess_grads: list[torch.Tensor]
    fisher: list[float]


class Probe:
    """The network of ``arch`` in ``space`` for ``dataset`` at ``seed``, and its shared passes."""

    def __init__(self, space: str | Space, arch: object, dataset: str | Dataset, seed: int) -> None:
        self.space = get_space(space)
        self.arch = self.space.parse(arch)
        self.index = self.space.index_of(self.arch)
        self.dataset = get_dataset(dataset)
        self.seed = check_seed(seed)

    @property
    def connected(self) -> bool:
        """False for a tss cell with no input-to-output path (its output is identically 0)."""
        return is_connected(self.space, self.arch)

    @functools.cached_property
    def _pristine(self) -> torch.nn.Module:
        return build(self.space, self.arch, self.dataset, self.seed)

    def network(self) -> torch.nn.Module:
        """A fresh copy of the network (train mode, float32, xautodl's init from ``seed``)."""
        return copy.deepcopy(self._pristine)

    def batch(self, size: int = GRAD_BATCH) -> tuple[torch.Tensor, torch.Tensor]:
        """The stand-in batch of ``size`` images and labels (:func:`stand_in_batch`)."""
        return stand_in_batch(self.dataset, size, self.seed, DATA_STREAM)

    def generator(self, stream: int) -> torch.Generator:
        """A torch generator seeded from (seed, stream), for a proxy's own random draws."""
        torch = _torch()
        return torch.Generator().manual_seed((self.seed * 1_000_003 + stream) % 2**63)

    @functools.cached_property
    def gradients(self) -> Gradients:
        """The shared pass: one forward of :data:`GRAD_BATCH` stand-in images, the loss's
        gradient with its graph kept, then GraSP's Hessian-gradient product."""
        return _gradient_pass(self.network(), *self.batch())


def _gradient_pass(net: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> Gradients:
    torch = _torch()
    layers = prunable_layers(net)
    fisher = [0.0] * len(layers)
    state = {"open": True}
    handles = []

    def hook_for(i: int) -> Any:
        def on_forward(_mod: Any, _inp: Any, out: Any) -> None:
            a = out.detach()  # the hook holds this view, not ``out``: no reference cycle

            def on_grad(grad: Any) -> None:
                if state["open"]:  # the first backward only, not GraSP's second
                    g_nk = (a * grad.detach()).sum(dim=tuple(range(2, a.dim())))
                    fisher[i] += float(g_nk.pow(2).mean(0).mul(0.5).sum())

            out.register_hook(on_grad)

        return on_forward

    for i, layer in enumerate(layers):
        handles.append(layer.register_forward_hook(hook_for(i)))
    weights = [m.weight for m in layers]
    loss = torch.nn.functional.cross_entropy(net(x)[1], y)
    raw = torch.autograd.grad(loss, weights, create_graph=True, allow_unused=True)
    state["open"] = False
    for handle in handles:
        handle.remove()
    grads = [
        torch.zeros_like(w) if g is None else g.detach() for w, g in zip(weights, raw, strict=True)
    ]
    z = sum((g * g.detach()).sum() for g in raw if g is not None and g.requires_grad)
    hess = [torch.zeros_like(w) for w in weights]
    if isinstance(z, torch.Tensor):
        got = torch.autograd.grad(z, weights, allow_unused=True)
        hess = [h if g is None else g.detach() for h, g in zip(hess, got, strict=True)]
    return Gradients([w.detach() for w in weights], grads, hess, fisher)


__all__ = ["GRAD_BATCH", "Gradients", "Probe", "prunable_layers"]
