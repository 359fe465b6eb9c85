"""Layer analysis of any torch model: the fused per-layer :class:`~nasfilter.layers.LayerTable`.

The model runs once on the **meta** device (shapes only: no weights, no arithmetic, no
download) for one image, and every ATen operator it calls is recorded with the shapes of its
tensors. The records are then fused as an inference engine (TensorRT) fuses them:

- **Compute layers.** Every convolution (``aten.convolution``) is a layer: ``"conv"`` when
  groups = 1, ``"grouped_conv"`` otherwise (depthwise included). Every matrix product with a
  parameter operand (``addmm``/``mm``/``bmm``/``matmul`` of a weight, i.e. ``nn.Linear``) is a
  ``"linear"`` layer; a product of two activations (attention) is a ``"linear"`` layer
  without weights. MACs = output elements x reduction length (C_in / groups x kh x kw for a
  convolution), per image. A ``Linear`` applied to every pixel of a spatial map (its input a
  view of an ``(N, H, W, C)`` activation with H x W > 1: ConvNeXt's pointwise layers) is a
  1x1 convolution, kind ``"conv"`` (see :mod:`nasfilter.layers`): it counts as convolution
  MACs for the CNN rule.
- **Fused into the producer, free:** batch norm in eval mode (folded into the conv's weights
  and a bias), element-wise activations and any other element-wise operation whose other
  operands are parameters, constants or scalars (bias adds, scaling, clamps, dropout). Such an
  operation is free when its input is the output of a recorded layer (its producer).
- **Free aliases:** views, reshapes, permutes, transposes, ``contiguous`` copies, slicing,
  ``expand`` and zero padding (an engine folds padding into the following conv).
- **Memory-only layers** (kind ``"memory"``, MACs 0): every other operation on activations:
  residual adds and other element-wise operations of two computed tensors (an SE gate's
  multiply), pooling, global means, concatenation, normalisations that are not batch norm
  (layer norm, group norm: their statistics need a pass over the data), softmax. Each reads
  its activation inputs and writes its output once: this is the memory traffic they add.
- **Kernel layouts** (``kernel_layout``): dense convs work channels-last (cuDNN's tensor-core
  kernels); a layer norm over the channels of a spatial map (a permuted ``(N, H, W, C)``
  view, timm's ``LayerNorm2d``) needs channels-last data; a group norm needs channels-first
  data (PyTorch's CUDA kernel copies a channels-last input to NCHW and returns NCHW);
  everything else runs in either layout.

Weights: a conv's or linear layer's weight and bias elements, plus ``C_out`` bias elements
where a following batch norm is folded into a layer that had no bias. ``params`` counts the
model's own parameters (what timm's ``param_count`` counts).

The conventions of the published ``infer_gmacs`` (fvcore's counter, which timm's benchmark
uses) differ only by small terms, kept separately in :attr:`ModelProfile.fvcore_macs`: fvcore
also counts 2 per element of an affine batch norm (1 without affine), 5 per element of a layer
or group norm, 1 per input element of an adaptive average pooling, and 4 (bilinear) or 1
(nearest) per output element of an upsampling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nasfilter.layers import CNN_MAC_FRACTION, KERNEL_LAYOUTS, LayerTable


class AnalysisError(ValueError):
    """A model that cannot be run on the meta device (the message names it and why)."""


@dataclass(frozen=True, eq=False)
class ModelProfile:
    """One model's layer analysis at one input size.

    Attributes:
        name: the model's name (timm's architecture name, or the class name).
        input_shape: (C, H, W) of one image.
        table: the fused layers, B = 1, per image.
        params: the model's parameter elements (every ``nn.Parameter``), as timm counts.
        fvcore_macs: MACs per image in fvcore's convention (see the module docstring).
    """

    name: str
    input_shape: tuple[int, int, int]
    table: LayerTable
    params: float
    fvcore_macs: float

    @property
    def macs(self) -> float:
        """Multiply-accumulates per image of all conv and linear layers."""
        return float(self.table.macs.sum())

    @property
    def conv_mac_fraction(self) -> float:
        """Share of the MACs in convolutions (dense, grouped, depthwise), 0..1."""
        is_conv = np.array([k in ("conv", "grouped_conv") for k in self.table.kinds], dtype=bool)
        total = self.macs
        return float(self.table.macs[0, is_conv].sum() / total) if total > 0 else 0.0

    @property
    def is_cnn(self) -> bool:
        """Whether at least :data:`CNN_MAC_FRACTION` of the MACs are in convolutions."""
        return self.conv_mac_fraction >= CNN_MAC_FRACTION


def analyze_model(model: Any, input_shape: Sequence[int]) -> LayerTable:
    """The fused per-image :class:`LayerTable` (B = 1) of ``model`` for ``input_shape``.

    ``model`` is any ``torch.nn.Module`` (its parameters may live on any device; the analysis
    runs on the meta device); ``input_shape`` is (C, H, W), or (1, C, H, W).
    """
    return profile_model(model, input_shape).table


def profile_model(model: Any, input_shape: Sequence[int], name: str | None = None) -> ModelProfile:
    """The full :class:`ModelProfile` of ``model`` (see :func:`analyze_model`)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    shape = _image_shape(input_shape)
    label = name or type(model).__name__
    modules = dict(model.named_modules())
    weights = _tensors_of(modules.values(), "_parameters")
    params = float(sum(p.numel() for p in weights))
    tensors = weights + _tensors_of(modules.values(), "_buffers")
    if not all(t.is_meta for t in tensors):
        import copy

        model = copy.deepcopy(model).to(torch.device("meta"))
        modules = dict(model.named_modules())
        tensors = _tensors_of(modules.values(), "_parameters", "_buffers")
    model.eval()
    recorder = _Recorder(model, modules, tensors)
    try:
        recorder.run(torch.empty((1, *shape), device="meta"))
    except AnalysisError:
        raise
    except Exception as exc:
        raise AnalysisError(
            f"model {label!r} cannot be traced on the meta device for input {shape}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    table = recorder.table()
    return ModelProfile(label, shape, table, params, recorder.fvcore_macs)


def _image_shape(input_shape: Sequence[int]) -> tuple[int, int, int]:
    dims = tuple(input_shape)
    if len(dims) == 4 and dims[0] == 1:
        dims = dims[1:]
    if len(dims) != 3 or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise ValueError(
            f"input_shape must be (C, H, W) or (1, C, H, W) integers, got {input_shape!r}"
        )
    if min(dims) < 1:
        raise ValueError(f"input_shape entries must be >= 1, got {input_shape!r}")
    return (dims[0], dims[1], dims[2])


def _tensors_of(modules: Any, *kinds: str) -> list[Any]:
    """The distinct parameters (``"_parameters"``) or buffers (``"_buffers"``) of ``modules``,
    in the order ``model.parameters()`` and ``model.buffers()`` give them (one walk)."""
    seen: set[int] = set()
    out = []
    for module in modules:
        for kind in kinds:
            for t in getattr(module, kind).values():
                if t is not None and id(t) not in seen:
                    seen.add(id(t))
                    out.append(t)
    return out


def _fvcore_batch_norm(op: str, args: Any, x: Any) -> float:
    """fvcore's count of a batch norm: per element 1 (2 with affine) in eval mode, 4 (5 with
    affine) in training mode (weight standardization runs one on the weights)."""
    affine = len(args) > 1 and args[1] is not None
    training = op != "_native_batch_norm_legit_no_training" and len(args) > 5 and args[5] is True
    per_element = (5.0 if affine else 4.0) if training else (2.0 if affine else 1.0)
    return per_element * float(x.numel())


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


def _shortcut(func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    """The meta output of a batch norm or a point-wise op without its (slow, Python) kernel.

    The meta kernels of these ops are Python reference implementations that cost most of the
    analysis time; their outputs are fully determined by broadcasting. None for other ops.
    """
    import torch

    name = func._schema.name
    if name in (
        "aten::_native_batch_norm_legit_no_training",
        "aten::native_batch_norm",
        "aten::_native_batch_norm_legit",
    ):
        x = args[0]
        return (_empty(x, x.shape), _empty(x, (0,)), _empty(x, (0,)))
    if name == "aten::convolution" and not args[6]:  # not transposed
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
    if name in _SHAPE_RULES:
        return _SHAPE_RULES[name](args, kwargs)
    op = name.split("::")[-1]
    if op.endswith("_") and not kwargs and _pointwise_in_place(func):
        return args[0] if args and isinstance(args[0], torch.Tensor) else None
    if kwargs or torch.Tag.pointwise not in func.tags:
        return None
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if not tensors:
        return None
    if op.endswith("_"):  # in place: the first argument is the result
        return args[0] if isinstance(args[0], torch.Tensor) else None
    shape = _broadcast([t.shape for t in tensors])
    if shape is None:
        return None  # not broadcastable: the meta kernel raises its own error
    if op in _BOOL_RESULT:
        dtype = torch.bool
    else:
        dtype = tensors[0].dtype
        for t in tensors[1:]:
            if t.dtype != torch.bool:
                dtype = t.dtype if dtype == torch.bool else torch.promote_types(dtype, t.dtype)
    return _empty(tensors[0], shape, dtype)


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
_SHAPE_RULES: dict[str, Any] = {
    "aten::mm": _mm,
    "aten::addmm": _mm,
    "aten::bmm": _bmm,
    "aten::cat": _cat,
    "aten::native_layer_norm": _layer_norm,
    "aten::mean": _mean,
}


class FastMeta:
    """A dispatch mode that skips the slow Python meta kernels of batch norms and point-wise
    ops (:func:`_shortcut`) for a meta forward whose ops need not be recorded."""

    def __enter__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                out = _shortcut(func, args, kwargs or {})
                return func(*args, **(kwargs or {})) if out is None else out

        self._mode = Mode()
        self._mode.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._mode.__exit__(*exc)


def _pixel_rows(src: Any, outs: list[Any]) -> bool:
    """Whether a view turns an (N, H, W, C) activation into (N x H x W, C) rows, one a pixel."""
    if src.dim() != 4 or len(outs) != 1 or outs[0].dim() != 2:
        return False
    n, h, w, c = (int(d) for d in src.shape)
    return h * w > 1 and tuple(int(d) for d in outs[0].shape) == (n * h * w, c)


def _norm_layout(op: str, x: Any) -> str:
    """The layout a normalisation's kernel needs (see the module docstring)."""
    if "group_norm" in op:
        return "nchw"
    spatial_map = x.dim() == 4 and int(x.shape[1]) * int(x.shape[2]) > 1
    return "nhwc" if spatial_map and not x.is_contiguous() else "any"


# ---- the recorder ----------------------------------------------------------------------------

_VIEW_OPS = frozenset(
    {
        "view",
        "_unsafe_view",
        "reshape",
        "permute",
        "transpose",
        "t",
        "expand",
        "unsqueeze",
        "squeeze",
        "flatten",
        "alias",
        "detach",
        "clone",
        "contiguous",
        "slice",
        "select",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "narrow",
        "as_strided",
        "unfold",
        "constant_pad_nd",
        "pad",
        "_to_copy",
        "to",
        "lift_fresh",
        "numpy_T",
        "movedim",
        "pixel_shuffle",
        "pixel_unshuffle",
        "channel_shuffle",
        "native_channel_shuffle",
        "roll",
        "flip",
        "repeat",
        "index_select",
        "_reshape_alias",
        "view_as",
        "expand_as",
        "copy_",
        "zero_",
        "fill_",
        "empty_like",
        "zeros_like",
        "ones_like",
        "new_empty",
        "new_zeros",
        "new_ones",
        "detach_",
        "squeeze_",
        "unsqueeze_",
        "transpose_",
    }
)
_BATCH_NORM_OPS = frozenset(
    {
        "_native_batch_norm_legit_no_training",
        "native_batch_norm",
        "batch_norm",
        "_native_batch_norm_legit",
        "cudnn_batch_norm",
        "_batch_norm_impl_index",
    }
)
_NORM_OPS = frozenset({"native_layer_norm", "native_group_norm", "layer_norm", "group_norm"})
_POOL_ADAPTIVE = frozenset({"_adaptive_avg_pool2d", "adaptive_avg_pool2d", "_adaptive_avg_pool3d"})
_UPSAMPLE = {"upsample_bilinear2d": 4.0, "upsample_nearest2d": 1.0, "upsample_bicubic2d": 4.0}
_MATMUL_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul"})


@dataclass
class _Layer:
    name: str
    kind: str
    gemm_m: float = 0.0
    gemm_n: float = 0.0
    gemm_k: float = 0.0
    groups: float = 1.0
    macs: float = 0.0
    weights: float = 0.0
    inputs: float = 0.0
    outputs: float = 0.0
    has_bias: bool = True
    folded_bias: bool = False
    in_channels: float = 0.0
    layout: str = "any"


class _Recorder:
    """Runs a meta model under a dispatch mode and turns the ATen calls into fused layers."""

    def __init__(self, model: Any, modules: dict[str, Any], weights: list[Any]) -> None:
        """``modules``: ``dict(model.named_modules())``; ``weights``: its parameters and
        buffers."""
        self.model = model
        self.modules = modules
        self.layers: list[_Layer] = []
        self.fvcore_macs = 0.0
        self._params: set[int] = {id(t) for t in weights}
        # Tensor identity -> producing layer index (-1: the input or a constant).
        self._producer: dict[int, int] = {}
        # Every tensor whose id is remembered stays alive, so that no id is reused: a forward
        # may replace a buffer (ConViT's rel_indices), freeing the old one.
        self._alive: list[Any] = weights
        self._stack: list[str] = []
        self._types: list[str] = []
        # Parameter tensors seen through views (weight.t() for linear layers).
        self._param_views: set[int] = set()
        # 2-D views of an (N, H, W, C) map, one row per pixel: a Linear on them is a 1x1 conv.
        self._pixel_rows: set[int] = set()

    # -- module names through hooks --
    def run(self, x: Any) -> None:
        import torch
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_forward_pre_hook,
        )
        from torch.utils._python_dispatch import TorchDispatchMode

        recorder = self
        # One global pair of hooks (not one per module: registering thousands costs more than
        # the forward), acting only on this model's modules.
        names = {id(module): name for name, module in self.modules.items()}

        def push(module: Any, args: Any) -> None:
            name = names.get(id(module))
            if name is not None:
                self._stack.append(name)
                self._types.append(type(module).__name__)

        def pop(module: Any, args: Any, output: Any) -> None:
            if id(module) in names and self._stack:
                self._stack.pop()
                self._types.pop()

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                out = _shortcut(func, args, kwargs or {})
                if out is None:
                    out = func(*args, **(kwargs or {}))
                recorder.record(func, args, kwargs or {}, out)
                return out

        self._producer[id(x)] = -1
        self._alive.append(x)
        handles = [register_module_forward_pre_hook(push), register_module_forward_hook(pop)]
        try:
            with torch.no_grad(), Mode():
                self.model(x)
        finally:
            for h in handles:
                h.remove()

    def _scope(self) -> str:
        return self._stack[-1] if self._stack and self._stack[-1] else "model"

    # -- helpers --
    def _is_param(self, t: Any) -> bool:
        return id(t) in self._params or id(t) in self._param_views

    def _tensors(self, args: Any, kwargs: dict[str, Any]) -> list[Any]:
        import torch

        found: list[Any] = []

        def walk(obj: Any) -> None:
            if isinstance(obj, torch.Tensor):
                found.append(obj)
            elif isinstance(obj, (list, tuple)):
                for item in obj:
                    walk(item)

        walk(args)
        walk(list(kwargs.values()))
        return found

    def _outputs(self, out: Any) -> list[Any]:
        import torch

        if isinstance(out, torch.Tensor):
            return [out]
        if isinstance(out, (list, tuple)):
            return [o for o in out if isinstance(o, torch.Tensor)]
        return []

    def _mark(self, out: Any, producer: int, param_view: bool = False) -> None:
        for t in self._outputs(out):
            self._producer[id(t)] = producer
            self._alive.append(t)
            if param_view:
                self._param_views.add(id(t))

    def _activations(self, tensors: list[Any]) -> list[Any]:
        """Inputs that are computed activations (not parameters, buffers or scalar-like)."""
        return [t for t in tensors if not self._is_param(t) and t.numel() > 1]

    def _add_layer(self, layer: _Layer, out: Any) -> None:
        self.layers.append(layer)
        self._mark(out, len(self.layers) - 1)

    # -- the op rules --
    def record(self, func: Any, args: Any, kwargs: dict[str, Any], out: Any) -> None:
        op = func._schema.name.split("::")[-1]
        tensors = self._tensors(args, kwargs)
        if tensors and all(self._is_param(t) for t in tensors):
            # Weight preprocessing (weight standardization, reparametrisations): done once
            # per model, not per image; its output is a weight. fvcore counts its norms.
            if op in _BATCH_NORM_OPS:
                self.fvcore_macs += _fvcore_batch_norm(op, args, tensors[0])
            self._mark(out, -1, param_view=True)
            return
        if op in _VIEW_OPS:
            src = tensors[0] if tensors else None
            if src is not None and self._is_param(src):
                self._mark(out, -1, param_view=True)
            else:
                self._mark(out, self._producer.get(id(src), -1) if src is not None else -1)
                if src is not None and _pixel_rows(src, self._outputs(out)):
                    self._pixel_rows.add(id(self._outputs(out)[0]))
            return
        if op == "convolution":
            self._conv(args, out)
            return
        if op in _MATMUL_OPS:
            self._matmul(op, args, out)
            return
        if op in _BATCH_NORM_OPS:
            x = tensors[0]
            self.fvcore_macs += _fvcore_batch_norm(op, args, x)
            producer = self._producer.get(id(x), -1)
            if producer >= 0:
                layer = self.layers[producer]
                if layer.kind != "memory" and not layer.has_bias and not layer.folded_bias:
                    layer.weights += layer.gemm_n
                    layer.folded_bias = True
                self._mark(out, producer)
            else:
                self._memory(op, [x], out)
            return
        if op in _NORM_OPS:
            x = tensors[0]
            self.fvcore_macs += 5.0 * x.numel()
            self._memory(op, [x], out, layout=_norm_layout(op, x))
            return
        if op in _POOL_ADAPTIVE or (
            op == "mean" and self._types and self._types[-1].startswith("AdaptiveAvgPool")
        ):
            # fvcore counts an adaptive average pooling (traced as such, even when torch
            # lowers a 1x1 output to a mean) as one MAC per input element.
            self.fvcore_macs += float(tensors[0].numel())
        if op in _UPSAMPLE:
            self.fvcore_macs += _UPSAMPLE[op] * float(self._outputs(out)[0].numel())
        outs = self._outputs(out)
        if not outs:
            return
        acts = self._activations(tensors)
        if not acts:  # constants, parameters only: not part of the data path
            self._mark(out, -1)
            return
        out_numel = outs[0].numel()
        big = [t for t in acts if t.numel() >= out_numel]
        small = [t for t in acts if t.numel() < out_numel]
        elementwise = len(big) == 1 and big[0].numel() == out_numel and len(outs) == 1
        if elementwise and not small:
            # An activation or another element-wise op of one computed tensor: fused.
            producer = self._producer.get(id(big[0]), -1)
            if producer >= 0:
                self._mark(out, producer)
                return
        self._memory(op, acts, out)

    def _conv(self, args: Any, out: Any) -> None:
        x, weight, bias = args[0], args[1], args[2]
        transposed = bool(args[6]) if len(args) > 6 else False
        groups = int(args[8]) if len(args) > 8 else 1
        y = self._outputs(out)[0]
        c_out = int(y.shape[1])
        kernel = math.prod(int(d) for d in weight.shape[2:])
        if transposed:  # weight (C_in, C_out / groups, k...): each input pixel scatters
            k = int(weight.shape[1]) * kernel
            macs = float(x.numel()) * k
            gemm_m = float(x.numel() // max(int(x.shape[1]), 1))
            gemm_k = float(int(x.shape[1]) // groups)
        else:
            k = int(weight.shape[1]) * kernel
            macs = float(y.numel()) * k
            gemm_m = float(y.numel() // max(c_out, 1))
            gemm_k = float(k)
        self.fvcore_macs += macs
        weights = float(weight.numel()) + (float(bias.numel()) if bias is not None else 0.0)
        acts = [t for t in (x,) if not self._is_param(t)]
        layer = _Layer(
            name=self._scope(),
            kind="conv" if groups == 1 else "grouped_conv",
            gemm_m=gemm_m,
            gemm_n=float(c_out),
            gemm_k=gemm_k,
            groups=float(groups),
            macs=macs,
            weights=weights,
            inputs=float(sum(t.numel() for t in acts)),
            outputs=float(y.numel()),
            has_bias=bias is not None,
            in_channels=float(x.shape[1]),
            layout="nhwc" if groups == 1 else "any",
        )
        self._add_layer(layer, out)

    def _matmul(self, op: str, args: Any, out: Any) -> None:
        if op in ("addmm", "baddbmm"):
            bias, a, b = args[0], args[1], args[2]
        else:
            bias, a, b = None, args[0], args[1]
        y = self._outputs(out)[0]
        k = int(a.shape[-1])
        n = int(y.shape[-1])
        rows = y.numel() // max(n, 1)
        macs = float(y.numel()) * k
        self.fvcore_macs += macs
        operands = [a, b] + ([bias] if bias is not None else [])
        weights = float(sum(t.numel() for t in operands if self._is_param(t)))
        acts = [t for t in (a, b) if not self._is_param(t)]
        bias_is_act = bias is not None and not self._is_param(bias) and bias.numel() > 1
        if bias_is_act:
            acts.append(bias)
        per_pixel = id(a) in self._pixel_rows and self._is_param(b)
        layer = _Layer(
            name=self._scope(),
            kind="conv" if per_pixel else "linear",
            gemm_m=float(rows),
            gemm_n=float(n),
            gemm_k=float(k),
            groups=1.0,
            macs=macs,
            weights=weights,
            inputs=float(sum(t.numel() for t in acts)),
            outputs=float(y.numel()),
            has_bias=bias is not None,
            in_channels=float(k),
        )
        self._add_layer(layer, out)

    def _memory(self, op: str, acts: list[Any], out: Any, layout: str = "any") -> None:
        outs = self._outputs(out)
        # Pooling with indices returns (values, indices): only the values are written.
        written = float(outs[0].numel()) if outs else 0.0
        layer = _Layer(
            name=f"{self._scope()}:{op}",
            kind="memory",
            inputs=float(sum(t.numel() for t in acts)),
            outputs=written,
            layout=layout,
        )
        self._add_layer(layer, out)

    def table(self) -> LayerTable:
        if not self.layers:
            raise AnalysisError("the model ran no layer: nothing to analyse")

        def col(attr: str) -> np.ndarray:
            return np.array([[getattr(layer, attr) for layer in self.layers]], dtype=np.float64)

        return LayerTable(
            names=tuple(layer.name for layer in self.layers),
            kinds=tuple(layer.kind for layer in self.layers),
            gemm_m=col("gemm_m"),
            gemm_n=col("gemm_n"),
            gemm_k=col("gemm_k"),
            groups=col("groups"),
            macs=col("macs"),
            weight_elems=col("weights"),
            input_elems=col("inputs"),
            output_elems=col("outputs"),
            present=np.ones((1, len(self.layers)), dtype=bool),
            in_channels=col("in_channels"),
            kernel_layout=np.array([[KERNEL_LAYOUTS[layer.layout] for layer in self.layers]]),
        )
