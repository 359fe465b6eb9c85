"""FoldedCNNs (Kosaian et al., ICML 2021): fold ``f`` images into one input, widen by sqrt(f).

``fold(model, f)`` returns a real torch module: a batch of N images with C channels becomes
N/f inputs of C·f channels (image ``j`` of a group in channels ``j·C .. (j+1)·C``); every inner
width grows by sqrt(f) (so ``f`` must be a perfect square); depthwise convolutions keep one
group per channel (their groups grow by sqrt(f)); the classifier emits classes·f logits (f
blocks of ``classes``). Per original image the MACs of the dense layers stay the same (each
folded layer does f times the work for f images) while the activations moved per image fall by
sqrt(f): arithmetic intensity grows by about sqrt(f) (docs/facts.md §4).

The widening is generic: every ``Conv2d``, ``Linear``, batch norm, group norm and layer norm
(subclasses included, timm's ``BatchNormAct2d``, ``Conv2dSame``, ``ScaledStdConv2d`` ...) gets
new, uninitialised parameters of the widened shape, on the model's device (the meta device
costs nothing). A module that holds other channel-shaped parameters, or a forward that
hard-codes a width (a fixed channel split), cannot be widened this way: :func:`fold` raises
:class:`FoldError` for the first, and the widened model fails its forward for the second;
the survey reports both per model, with the reason.
"""

from __future__ import annotations

import math
from typing import Any

from nasfilter.survey.meta_rules import FastMeta

# Changes whenever the widening rules change (the survey caches folded tables under it).
FOLD_RULES = 2
# The largest fold factor: f images make one input, and 1024 is the largest batch timm's
# benchmark runs (a larger f leaves no batch to fold; widths grow by sqrt(f) = 32 already).
MAX_FOLD = 1024


class FoldError(ValueError):
    """A model that cannot be folded generically (the message says which module and why)."""


def check_fold(f: object) -> int:
    """``f`` as an int if it is a perfect square >= 1, else ValueError naming it."""
    if isinstance(f, bool) or not isinstance(f, int) or f < 1:
        raise ValueError(f"fold factor must be a perfect square >= 1, got {f!r}")
    if f > MAX_FOLD:
        raise ValueError(
            f"fold factor must be at most {MAX_FOLD} (f images make one input; 1024 is the "
            f"largest batch timm measures), got {f}"
        )
    root = math.isqrt(f)
    if root * root != f:
        raise ValueError(
            f"fold factor must be a perfect square (widths grow by sqrt(f)), got {f}; "
            f"try {root * root} or {(root + 1) ** 2}"
        )
    return f


def _execution_order(model: Any, input_shape: tuple[int, int, int]) -> tuple[list[str], Any]:
    """Names of the conv and linear modules in the order a meta forward calls them, and the
    output (a meta tensor)."""
    import copy

    import torch

    meta = model if _on_meta(model) else copy.deepcopy(model).to(torch.device("meta"))
    names = {id(m): n for n, m in meta.named_modules()}
    order: list[str] = []
    handles = []
    for module in meta.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
            handles.append(module.register_forward_hook(lambda m, a, o: order.append(names[id(m)])))
    try:
        with torch.no_grad(), FastMeta():
            out = meta.eval()(torch.empty((1, *input_shape), device="meta"))
    finally:
        for h in handles:
            h.remove()
    return order, out


def _on_meta(model: Any) -> bool:
    return all(t.is_meta for t in [*model.parameters(), *model.buffers()])


def fold(model: Any, f: int, input_shape: tuple[int, int, int] = (3, 224, 224)) -> Any:
    """A folded copy of ``model`` for fold factor ``f`` (a perfect square).

    ``input_shape`` (C, H, W) is the original image shape: one meta forward finds the first
    convolution (the one that reads the image) and the classifier (the last linear layer or
    convolution, whose output is the model's output). The copy maps (N/f, C·f, H, W) to
    (N/f, classes·f). Raises FoldError naming a module that cannot be widened.
    """
    import copy

    f = check_fold(f)
    input_shape = _check_shape(input_shape)
    s = math.isqrt(f)
    first, last = _ends(model, input_shape)
    folded = copy.deepcopy(model)
    modules = dict(folded.named_modules())
    _check_stem(modules[first], first, input_shape[0])
    for module, key, dim in _per_channel_parameters(modules):
        _widen_parameter(module, key, dim, s)
    for name, module in modules.items():
        _widen_module(module, name == first, name == last, f, s)
    # timm heads and blocks that record widths for reshapes
    for attr in ("num_features", "head_hidden_size"):
        if isinstance(getattr(folded, attr, None), int):
            setattr(folded, attr, getattr(folded, attr) * s)
    if hasattr(folded, "num_classes") and isinstance(folded.num_classes, int):
        folded.num_classes *= f
    return folded


def _ends(model: Any, input_shape: tuple[int, int, int]) -> tuple[str, str]:
    """Names of the first and the last conv or linear module a forward calls (FoldError
    when the model does not run on the meta device or does not output logits)."""
    import torch

    try:
        order, out = _execution_order(model, input_shape)
    except Exception as exc:
        raise FoldError(f"the model does not run on the meta device: {exc}") from exc
    if not order:
        raise FoldError("the model has no convolution or linear layer to fold")
    if not isinstance(out, torch.Tensor) or out.dim() != 2:
        raise FoldError(
            f"the model must output (N, classes) logits, got {getattr(out, 'shape', out)}"
        )
    return order[0], order[-1]


def _check_stem(stem: Any, name: str, channels: int) -> None:
    """The first layer must be a convolution reading the image (or a multiple of its
    channels: a space-to-depth stem, TResNet's)."""
    from torch import nn

    if not isinstance(stem, nn.Conv2d) or stem.in_channels % channels:
        raise FoldError(f"the first layer {name!r} is not a convolution reading the image")


def _handled() -> tuple[type, ...]:
    from torch import nn

    return (nn.Conv2d, nn.Linear, nn.modules.batchnorm._NormBase, nn.GroupNorm, nn.LayerNorm)


def _per_channel_parameters(modules: dict[str, Any]) -> list[tuple[Any, str, int]]:
    """(module, parameter name, channel dim) of the per-channel parameters of modules that
    :func:`_widen_module` does not handle (LayerScale, GRN, gamma); FoldError naming one of
    another shape."""
    handled = _handled()
    per_channel: list[tuple[Any, str, int]] = []
    for name, module in modules.items():
        if isinstance(module, handled) or _channel_free_conv(module):
            continue
        for key, param in module.named_parameters(recurse=False):
            dims = [d for d, n in enumerate(param.shape) if n > 1]
            if param.numel() == 1:
                continue  # a scalar (StarReLU, learnable affine): width-free
            if len(dims) == 1:
                per_channel.append((module, key, dims[0]))
                continue
            raise FoldError(
                f"module {name!r} ({type(module).__name__}) holds parameter {key!r} of shape "
                f"{tuple(param.shape)} that a generic fold cannot widen"
            )
    return per_channel


def _widen_parameter(module: Any, key: str, dim: int, s: int) -> None:
    """Widen one per-channel parameter by ``s`` along ``dim`` (ones or zeros off meta)."""
    import torch

    old = module._parameters[key]
    shape = list(old.shape)
    shape[dim] *= s
    new = torch.empty(shape, dtype=old.dtype, device=old.device)
    if not old.is_meta:
        new.fill_(1.0 if key in ("gamma", "weight", "scale") else 0.0)
    module._parameters[key] = torch.nn.Parameter(new, requires_grad=old.requires_grad)


def _widen_module(module: Any, first: bool, last: bool, f: int, s: int) -> None:
    """Widen a conv, linear layer or norm (others are left as they are)."""
    from torch import nn

    if isinstance(module, nn.Conv2d):
        _widen_conv(module, first, last, f, s)
    elif isinstance(module, nn.Linear):
        _widen_linear(module, last, f, s)
    elif isinstance(module, nn.modules.batchnorm._NormBase):
        module.num_features *= s
        _resize(module, ("weight", "bias", "running_mean", "running_var"), (module.num_features,))
    elif isinstance(module, nn.GroupNorm):
        module.num_channels *= s
        _resize(module, ("weight", "bias"), (module.num_channels,))
    elif isinstance(module, nn.LayerNorm):
        module.normalized_shape = (*module.normalized_shape[:-1], module.normalized_shape[-1] * s)
        _resize(module, ("weight", "bias"), module.normalized_shape)
    if not _on_meta_module(module) and hasattr(module, "reset_parameters"):
        module.reset_parameters()  # fresh, properly scaled values on a real device


def _check_shape(shape: object) -> tuple[int, int, int]:
    """``shape`` as (C, H, W) of positive ints, else ValueError naming it."""
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else ()
    if len(dims) != 3 or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims
    ):
        raise ValueError(
            f"input_shape must be (C, H, W) of positive integers (one image), got {shape!r}"
        )
    return (dims[0], dims[1], dims[2])


def _channel_free_conv(module: Any) -> bool:
    """A 1-D convolution with one input and one output channel (ECA's kernel slides over the
    channels): its weights do not depend on the width."""
    from torch import nn

    return isinstance(module, nn.Conv1d) and module.in_channels == module.out_channels == 1


def _on_meta_module(module: Any) -> bool:
    return any(
        t.is_meta for t in [*module.parameters(recurse=False), *module.buffers(recurse=False)]
    )


def _resize(module: Any, names: tuple[str, ...], shape: tuple[int, ...]) -> None:
    import torch

    for key in names:
        old = getattr(module, key, None)
        if old is None:
            continue
        new = torch.empty(shape, dtype=old.dtype, device=old.device)
        if key in module._parameters:
            module._parameters[key] = torch.nn.Parameter(new, requires_grad=old.requires_grad)
        else:
            module._buffers[key] = new


def _widen_conv(conv: Any, first: bool, last: bool, f: int, s: int) -> None:
    import torch

    depthwise = conv.groups > 1 and conv.groups == conv.in_channels == conv.out_channels
    conv.in_channels = conv.in_channels * (f if first else s)
    conv.out_channels = conv.out_channels * (f if last else s)
    if depthwise and not first:
        conv.groups *= s
    if conv.in_channels % conv.groups or conv.out_channels % conv.groups:
        raise FoldError(
            f"conv with {conv.groups} groups cannot take {conv.in_channels} -> "
            f"{conv.out_channels} channels"
        )
    w = conv.weight
    shape = (conv.out_channels, conv.in_channels // conv.groups, *w.shape[2:])
    conv.weight = torch.nn.Parameter(torch.empty(shape, dtype=w.dtype, device=w.device))
    if conv.bias is not None:
        b = conv.bias
        conv.bias = torch.nn.Parameter(
            torch.empty((conv.out_channels,), dtype=b.dtype, device=b.device)
        )


def _widen_linear(linear: Any, last: bool, f: int, s: int) -> None:
    import torch

    linear.in_features *= s
    linear.out_features *= f if last else s
    w = linear.weight
    linear.weight = torch.nn.Parameter(
        torch.empty((linear.out_features, linear.in_features), dtype=w.dtype, device=w.device)
    )
    if linear.bias is not None:
        b = linear.bias
        linear.bias = torch.nn.Parameter(
            torch.empty((linear.out_features,), dtype=b.dtype, device=b.device)
        )
