"""The built-in zero-cost proxies, each from its paper with the defaults of its reference code.

Sums run over the Conv2d and Linear weights (``prunable_layers``), as in zero-cost-nas
(github SamsungLabs/zero-cost-nas, Abdelfattah et al. 2021). Data-needing proxies read the
stand-in batch (:data:`~nasfilter.zerocost.nets.STAND_IN_TEXT`). On a *disconnected* tss cell
(no input-to-output path: the network's features are identically 0 whatever the input):

============  ====  ===================================================================
proxy         data  disconnected tss cell
============  ====  ===================================================================
synflow       no    NaN (ln of S = 0: no signal reaches the classifier)
snip          yes   0 (every weight gradient is 0)
grasp         yes   0
grad_norm     yes   0
fisher        yes   the classifier's term only (its output is its bias, still finite)
jacob_cov     yes   NaN (the input Jacobian is 0: its correlation matrix is undefined)
naswot        yes   finite where a ReLU of the cell reads its input (codes differ); else NaN
                    (K singular: every code after the stem is constant)
zen           no    NaN (log of a zero feature-map difference)
params        no    exact count
flops         no    exact count
============  ====  ===================================================================
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from nasfilter.zerocost.base import ZeroCostProxy, register_proxy
from nasfilter.zerocost.nets import _torch
from nasfilter.zerocost.probe import GRAD_BATCH, Probe, prunable_layers


class Synflow(ZeroCostProxy):
    """Synaptic flow (Tanaka et al. 2020), as zero-cost-nas scores it (Abdelfattah et al.
    2021): batch-norm removed (their ``bn=False``), every parameter replaced by its absolute
    value, the network in double precision, one all-ones input; S = sum |W * dR/dW| over
    conv/linear weights, R = sum of the logits. Data-free. Reported as ln S (S reaches 1e36
    on tss, near float32's limit; the log keeps every rank); NaN where S = 0 (a disconnected
    cell: no signal reaches the classifier)."""

    name = "synflow"
    needs_data = False
    reference = "Tanaka et al. 2020; Abdelfattah et al. 2021 (zero-cost-nas synflow, bn=False)"

    def score(self, probe: Probe) -> float:
        torch = _torch()
        net = _without_batchnorm(probe.network()).double()
        with torch.no_grad():
            for p in net.parameters():
                p.abs_()
        ones = torch.ones((1, 3, probe.dataset.input_size, probe.dataset.input_size))
        torch.sum(net(ones.double())[1]).backward()
        total = 0.0
        with torch.no_grad():
            for layer in prunable_layers(net):
                if layer.weight.grad is not None:
                    total += float((layer.weight * layer.weight.grad).abs().sum())
        return math.log(total) if total > 0 else math.nan


def _without_batchnorm(net: Any) -> Any:
    """``net`` with every BatchNorm2d module replaced by the identity (in place)."""
    torch = _torch()
    for parent in list(net.modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.BatchNorm2d):
                setattr(parent, child_name, torch.nn.Identity())
    return net


class Snip(ZeroCostProxy):
    """SNIP connection sensitivity (Lee et al. 2019): sum |W * dL/dW|, L the cross-entropy
    of one batch of 64 (zero-cost-nas on NAS-Bench-201), network in train mode."""

    name = "snip"
    reference = "Lee et al. 2019; zero-cost-nas snip"

    def score(self, probe: Probe) -> float:
        g = probe.gradients
        return float(
            sum(float((w * d).abs().sum()) for w, d in zip(g.weights, g.grads, strict=True))
        )


class Grasp(ZeroCostProxy):
    """GraSP (Wang et al. 2020) as zero-cost-nas scores it: sum of -W * Hg, Hg the Hessian of
    the loss times its gradient (temperature 1, one batch of 64)."""

    name = "grasp"
    reference = "Wang et al. 2020; zero-cost-nas grasp (T=1, one iteration)"

    def score(self, probe: Probe) -> float:
        g = probe.gradients
        return float(
            sum(float((-w * h).sum()) for w, h in zip(g.weights, g.hess_grads, strict=True))
        )


class GradNorm(ZeroCostProxy):
    """Gradient norm (Abdelfattah et al. 2021): sum over layers of ||dL/dW||_2."""

    name = "grad_norm"
    reference = "Abdelfattah et al. 2021; zero-cost-nas grad_norm"

    def score(self, probe: Probe) -> float:
        return float(sum(float(d.norm()) for d in probe.gradients.grads))


class Fisher(ZeroCostProxy):
    """Fisher (Theis et al. 2018; Turner et al. 2020) as zero-cost-nas scores it: per layer
    output channel 0.5 * mean over the batch of (sum over pixels of a * dL/da)^2, summed."""

    name = "fisher"
    reference = "Turner et al. 2020; zero-cost-nas fisher"

    def score(self, probe: Probe) -> float:
        return float(sum(probe.gradients.fisher))


class JacobCov(ZeroCostProxy):
    """Jacobian covariance (Mellor et al. 2021 v1), as zero-cost-nas scores it: J = d(sum of
    logits)/dx per image of a batch of 64; C = corrcoef(J); score = -sum(log(v + k) + 1/(v + k))
    over C's eigenvalues v, k = 1e-5. NaN where J has a constant row (a disconnected cell)."""

    name = "jacob_cov"
    reference = "Mellor et al. 2021 (v1); zero-cost-nas jacob_cov"

    def score(self, probe: Probe) -> float:
        net = probe.network()
        x, _ = probe.batch(GRAD_BATCH)
        x.requires_grad_(True)
        logits = net(x)[1]
        # the input's gradient only: the weights' gradients, which backward() would also
        # compute, are never read
        (grad,) = _torch().autograd.grad(logits, x, _torch().ones_like(logits))
        jac = grad.detach().reshape(x.shape[0], -1).double().numpy()
        if (jac.std(axis=1) == 0).any():
            return math.nan
        eig = np.linalg.eigvalsh(np.corrcoef(jac))
        k = 1e-5
        return float(-np.sum(np.log(eig + k) + 1.0 / (eig + k)))


class Naswot(ZeroCostProxy):
    """NASWOT (Mellor et al. 2021 v2): binary ReLU activation codes c of a batch of 128;
    K = c c^T + (1 - c)(1 - c)^T summed over every ReLU; score = log |det K| (slogdet). NaN
    where K is singular (a tss cell whose every path is cut before any ReLU)."""

    name = "naswot"
    batch: ClassVar[int] = 128
    reference = "Mellor et al. 2021 (ICML, v2), github BayesWatch/nas-without-training"

    def score(self, probe: Probe) -> float:
        torch = _torch()
        net = probe.network()
        x, _ = probe.batch(self.batch)
        kernel = torch.zeros((x.shape[0], x.shape[0]), dtype=torch.float64)

        def on_relu(_mod: Any, inp: Any, _out: Any) -> None:
            kernel.add_(_hamming_kernel(inp[0].detach().reshape(inp[0].shape[0], -1) > 0))

        handles = [
            m.register_forward_hook(on_relu) for m in net.modules() if isinstance(m, torch.nn.ReLU)
        ]
        with torch.no_grad():
            net(x)
        for handle in handles:
            handle.remove()
        sign, logdet = np.linalg.slogdet(kernel.numpy())
        return float(logdet) if sign != 0 else math.nan


def _hamming_kernel(codes: Any) -> Any:
    """c c^T + (1 - c)(1 - c)^T of binary codes ``(N, F)``: the number of units on which two
    images agree, ``(N, N)`` float64. Computed as F - r_i - r_j + 2 c c^T (r = each row's
    count of ones): one product, not two. Every partial sum is an integer of at most F, so
    the float32 product is exact while F < 2**24 (float64 beyond), and the result equals
    the two-product form bit for bit."""
    torch = _torch()
    n_features = codes.shape[1]
    c = codes.to(torch.float32 if n_features < 2**24 else torch.float64)
    ones = c.sum(dim=1, dtype=torch.float64)
    both = (c @ c.t()).double()
    return 2.0 * both - ones[:, None] - ones[None, :] + float(n_features)


class Zen(ZeroCostProxy):
    """Zen-score (Lin et al. 2021): weights re-drawn N(0, 1) (BN scale 1, shift 0), train mode;
    x ~ N(0, 1) and x' = x + 0.01 eps, batch 16; score = log mean_n sum |f(x) - f(x')| +
    sum over BN layers of log sqrt(mean running_var), f = the pre-pooling feature map
    (``lastact`` output). One repeat (the paper averages 32: here 1, for cost). Data-free
    (Gaussian by design). NaN where f is constant (a disconnected cell)."""

    name = "zen"
    needs_data = False
    batch: ClassVar[int] = 16
    mixup_gamma: ClassVar[float] = 1e-2
    reference = "Lin et al. 2021 (ICCV), github idstcv/ZenNAS compute_zen_score"

    def score(self, probe: Probe) -> float:
        torch = _torch()
        net = probe.network()
        gen = probe.generator(stream=7)
        with torch.no_grad():
            for m in net.modules():
                if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                    m.weight.normal_(generator=gen)
                    if m.bias is not None:
                        m.bias.zero_()
                elif isinstance(m, torch.nn.BatchNorm2d):
                    m.weight.fill_(1.0)
                    m.bias.zero_()
            size = probe.dataset.input_size
            x = torch.randn((self.batch, 3, size, size), generator=gen)
            x2 = x + self.mixup_gamma * torch.randn(x.shape, generator=gen)
            feats: list[Any] = []
            lastact: Any = net.lastact
            handle = lastact.register_forward_hook(lambda _m, _i, out: feats.append(out))
            net(x)
            net(x2)
            handle.remove()
            diff = float(torch.abs(feats[0] - feats[1]).sum(dim=(1, 2, 3)).mean())
            log_bn = sum(
                math.log(math.sqrt(float(m.running_var.mean())))
                for m in net.modules()
                if isinstance(m, torch.nn.BatchNorm2d)
            )
        return math.log(diff) + log_bn if diff > 0 else math.nan


class Params(ZeroCostProxy):
    """The parameter count of the network in millions (every nn.Parameter, BN affine too)."""

    name = "params"
    needs_data = False
    reference = "counted on the xautodl network"

    def score(self, probe: Probe) -> float:
        return sum(p.numel() for p in probe.network().parameters()) / 1e6


class Flops(ZeroCostProxy):
    """FLOPs per image in millions as NATS-Bench counts them (xautodl's ``get_model_infos``):
    conv k*k*(Cin/groups)*Cout per output pixel, linear in*out + out; pooling, BN, ReLU and
    additions not counted. Counted with forward hooks on one image."""

    name = "flops"
    needs_data = False
    reference = "NATS-Bench / xautodl get_model_infos counting"

    def score(self, probe: Probe) -> float:
        torch = _torch()
        net = probe.network()
        total = [0.0]

        def on_forward(mod: Any, _inp: Any, out: Any) -> None:
            if isinstance(mod, torch.nn.Conv2d):
                per_pixel = mod.kernel_size[0] * mod.kernel_size[1] * mod.in_channels
                total[0] += per_pixel // mod.groups * mod.out_channels * out[0, 0].numel()
            else:
                total[0] += mod.in_features * mod.out_features + mod.out_features

        handles = [m.register_forward_hook(on_forward) for m in prunable_layers(net)]
        size = probe.dataset.input_size
        with torch.no_grad():
            net.eval()(torch.zeros((1, 3, size, size)))
        for handle in handles:
            handle.remove()
        return total[0] / 1e6


BUILTIN = (Synflow, Snip, Grasp, GradNorm, Fisher, JacobCov, Naswot, Zen, Params, Flops)
for _cls in BUILTIN:
    register_proxy(_cls)

__all__ = [
    "BUILTIN",
    "Fisher",
    "Flops",
    "GradNorm",
    "Grasp",
    "JacobCov",
    "Naswot",
    "Params",
    "Snip",
    "Synflow",
    "Zen",
]
