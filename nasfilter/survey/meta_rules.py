"""Output shapes of ATen operators on the meta device, without their slow meta kernels.

The meta kernels of batch norm, group norm, the point-wise ops, softmax and a few others
are Python reference implementations (``torch._refs``) that cost most of an analysis; their
outputs are fully determined by the shapes of their inputs. :func:`shortcut` gives such an
op's output (new meta tensors of the right shape and dtype) or None, and then the op's own
meta kernel runs: for every other op, an unusual signature, or inputs whose shapes do not
fit (so the meta kernel raises its own error). What kind of rule an operator needs is
decided once per operator (:func:`_rule_of`).

:class:`FastMeta` is a dispatch mode that applies the shortcuts to a meta forward whose
operators need not be recorded (the fold's first pass).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Rule = Callable[[Any, dict[str, Any]], Any]

_BOOL_RESULT = frozenset(
    {
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "isnan",
        "isinf",
        "isfinite",
        "signbit",
    }
)


def _empty(like: Any, shape: Any, dtype: Any = None) -> Any:
    """A new tensor of ``shape`` on ``like``'s device (``torch.empty``: no Python kernel)."""
    import torch

    return torch.empty(shape, dtype=like.dtype if dtype is None else dtype, device=like.device)


def _broadcast(shapes: list[Any]) -> tuple[int, ...] | None:
    """The broadcast of ``shapes`` (numpy's rule), or None when they do not broadcast."""
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, d in enumerate(shape):
            size = int(d)
            if size != 1:
                if out[offset + i] not in (1, size):
                    return None
                out[offset + i] = size
    return tuple(out)


_IN_PLACE: dict[Any, bool] = {}
# Element-wise ops whose ATen schema lacks the point-wise tag (torch 2.x).
_UNTAGGED_POINTWISE = frozenset({"hardswish"})


def _pointwise_in_place(func: Any) -> bool:
    """Whether ``func`` is the in-place form of a point-wise op (``hardswish_``: its result is
    its first argument, shape unchanged), looked up once per op."""
    if func not in _IN_PLACE:
        import torch

        base = func._schema.name.split("::")[-1][:-1]
        packet = getattr(torch.ops.aten, base, None)
        default = getattr(packet, "default", None) if packet is not None else None
        tagged = default is not None and torch.Tag.pointwise in default.tags
        _IN_PLACE[func] = tagged or base in _UNTAGGED_POINTWISE
    return _IN_PLACE[func]


def _mm(args: Any, kwargs: dict[str, Any]) -> Any:
    a, b = (args[1], args[2]) if len(args) > 2 else (args[0], args[1])  # addmm: bias first
    if kwargs or a.dim() != 2 or b.dim() != 2 or int(a.shape[1]) != int(b.shape[0]):
        return None
    return _empty(a, (int(a.shape[0]), int(b.shape[1])))


def _bmm(args: Any, kwargs: dict[str, Any]) -> Any:
    a, b = args[0], args[1]
    if (
        kwargs
        or a.dim() != 3
        or b.dim() != 3
        or a.shape[0] != b.shape[0]
        or a.shape[2] != b.shape[1]
    ):
        return None
    return _empty(a, (int(a.shape[0]), int(a.shape[1]), int(b.shape[2])))


def _cat(args: Any, kwargs: dict[str, Any]) -> Any:
    tensors = [t for t in args[0] if not (t.dim() == 1 and int(t.shape[0]) == 0)]
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    if not tensors or len({t.dtype for t in tensors}) != 1 or len({t.dim() for t in tensors}) != 1:
        return None
    dim = int(dim) % tensors[0].dim()
    shapes = [[int(d) for d in t.shape] for t in tensors]
    if any(s[:dim] + s[dim + 1 :] != shapes[0][:dim] + shapes[0][dim + 1 :] for s in shapes):
        return None
    out = shapes[0]
    out[dim] = sum(s[dim] for s in shapes)
    return _empty(tensors[0], tuple(out))


def _layer_norm(args: Any, kwargs: dict[str, Any]) -> Any:
    x, normalized = args[0], [int(d) for d in args[1]]
    if kwargs or [int(d) for d in x.shape[x.dim() - len(normalized) :]] != normalized:
        return None
    stats = (*(int(d) for d in x.shape[: x.dim() - len(normalized)]), *([1] * len(normalized)))
    return (_empty(x, x.shape), _empty(x, stats), _empty(x, stats))


def _mean(args: Any, kwargs: dict[str, Any]) -> Any:
    x = args[0]
    dims = args[1] if len(args) > 1 else None
    keep = bool(args[2]) if len(args) > 2 else False
    if kwargs or not x.dtype.is_floating_point or not isinstance(dims, (list, tuple)) or not dims:
        return None
    n = x.dim()
    reduced = {int(d) % n for d in dims}
    shape = [
        1 if k in reduced else int(s) for k, s in enumerate(x.shape) if keep or k not in reduced
    ]
    return _empty(x, tuple(shape))


# Output shapes of common non-point-wise ops whose meta kernels are Python references.
def _group_norm(args: Any, kwargs: dict[str, Any]) -> Any:
    """``native_group_norm(x, weight, bias, N, C, HxW, group, eps)``: x's shape, and the mean
    and reciprocal deviation per (sample, group)."""
    if kwargs or len(args) < 7:
        return None
    x, n, c, hw, group = args[0], int(args[3]), int(args[4]), int(args[5]), int(args[6])
    if x.dim() < 2 or int(x.shape[0]) != n or int(x.shape[1]) != c or n * c * hw != x.numel():
        return None
    if group < 1 or c % group:
        return None
    return (_empty(x, x.shape), _empty(x, (n, group)), _empty(x, (n, group)))


def _softmax(args: Any, kwargs: dict[str, Any]) -> Any:
    """``_softmax(x, dim, half_to_float)`` and ``_safe_softmax(x, dim, dtype=None)``: x's shape
    and dtype (None where the dtype changes)."""
    x, dim = args[0], int(args[1])
    if kwargs or (len(args) > 2 and args[2] not in (None, False)):
        return None
    if not -max(x.dim(), 1) <= dim < max(x.dim(), 1) or not x.dtype.is_floating_point:
        return None
    return _empty(x, x.shape)


def _batch_norm(args: Any, kwargs: dict[str, Any]) -> Any:
    """A batch norm's output (x's shape) and its two empty saved statistics."""
    x = args[0]
    return (_empty(x, x.shape), _empty(x, (0,)), _empty(x, (0,)))


def _convolution(args: Any, kwargs: dict[str, Any]) -> Any:
    """A (not transposed) convolution's output: (N, C_out, spatial...)."""
    if args[6]:  # transposed: the meta kernel decides
        return None
    x, w, _, stride, padding, dilation = args[:6]
    try:
        spatial = [
            (int(size) + 2 * int(p) - int(d) * (int(k) - 1) - 1) // int(st) + 1
            for size, k, st, p, d in zip(
                x.shape[2:], w.shape[2:], stride, padding, dilation, strict=True
            )
        ]
    except (TypeError, ValueError):
        return None  # an unusual signature: let the meta kernel decide
    if int(x.shape[1]) != int(w.shape[1]) * int(args[8]) or min(spatial, default=1) < 1:
        return None  # a shape error: the meta kernel raises it
    return _empty(x, (int(x.shape[0]), int(w.shape[0]), *spatial))


def _in_place(args: Any, kwargs: dict[str, Any]) -> Any:
    """An in-place point-wise op: its result is its first argument, shape unchanged."""
    import torch

    if kwargs or not args or not isinstance(args[0], torch.Tensor):
        return None
    return args[0]


# Keyword arguments of point-wise ops that change neither the shape nor the dtype.
_SHAPE_FREE_KWARGS = frozenset({"approximate", "alpha"})


def _pointwise(args: Any, kwargs: dict[str, Any], to_bool: bool) -> Any:
    """A point-wise op's output: the broadcast of its tensor operands, their promoted dtype
    (bool for comparisons)."""
    import torch

    if kwargs and not _SHAPE_FREE_KWARGS.issuperset(kwargs):
        return None
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if not tensors:
        return None
    shape = _broadcast([t.shape for t in tensors])
    if shape is None:
        return None  # not broadcastable: the meta kernel raises its own error
    if to_bool:
        return _empty(tensors[0], shape, torch.bool)
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype != torch.bool:
            dtype = t.dtype if dtype == torch.bool else torch.promote_types(dtype, t.dtype)
    return _empty(tensors[0], shape, dtype)


def _pointwise_value(args: Any, kwargs: dict[str, Any]) -> Any:
    return _pointwise(args, kwargs, to_bool=False)


def _pointwise_bool(args: Any, kwargs: dict[str, Any]) -> Any:
    return _pointwise(args, kwargs, to_bool=True)


_BATCH_NORMS = (
    "aten::_native_batch_norm_legit_no_training",
    "aten::native_batch_norm",
    "aten::_native_batch_norm_legit",
)
# Output shapes of common non-point-wise ops whose meta kernels are Python references.
_SHAPE_RULES: dict[str, Rule] = {
    **dict.fromkeys(_BATCH_NORMS, _batch_norm),
    "aten::convolution": _convolution,
    "aten::mm": _mm,
    "aten::addmm": _mm,
    "aten::bmm": _bmm,
    "aten::cat": _cat,
    "aten::native_layer_norm": _layer_norm,
    "aten::native_group_norm": _group_norm,
    "aten::_softmax": _softmax,
    "aten::_safe_softmax": _softmax,
    "aten::mean": _mean,
}
# Per operator: its rule, or None (its meta kernel runs).
_RULES: dict[Any, Rule | None] = {}


def _rule_of(func: Any) -> Rule | None:
    """The shape rule of an ATen operator, or None when its own meta kernel must run."""
    import torch

    name = func._schema.name
    if name in _SHAPE_RULES:
        return _SHAPE_RULES[name]
    op = name.split("::")[-1]
    tagged = torch.Tag.pointwise in func.tags
    if op.endswith("_"):
        return _in_place if tagged or _pointwise_in_place(func) else None
    if not tagged:
        return None
    return _pointwise_bool if op in _BOOL_RESULT else _pointwise_value


def shortcut(func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    """The meta output of ``func(*args, **kwargs)`` without its slow meta kernel, or None
    when its own kernel must run (see the module docstring)."""
    try:
        rule = _RULES[func]
    except KeyError:
        rule = _RULES[func] = _rule_of(func)
    return None if rule is None else rule(args, kwargs)


class FastMeta:
    """A dispatch mode that skips the slow Python meta kernels of batch norms and point-wise
    ops (:func:`shortcut`) for a meta forward whose ops need not be recorded."""

    def __enter__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                out = shortcut(func, args, kwargs or {})
                return func(*args, **(kwargs or {})) if out is None else out

        self._mode = Mode()
        self._mode.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._mode.__exit__(*exc)
