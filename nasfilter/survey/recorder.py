"""The recorder of a layer analysis: ATen calls of a meta forward -> fused layers.

:class:`Recorder` runs a model on the meta device under a dispatch mode, sees every ATen
operator with its tensors, and turns the calls into fused layers by the rules of
:mod:`nasfilter.survey.analysis` (its docstring lists them); :meth:`Recorder.table` gives
the :class:`~nasfilter.bench.layer_table.LayerTable`. Operators' outputs come from
:func:`nasfilter.survey.meta_rules.shortcut` where it has a rule.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from nasfilter.bench.layer_table import KERNEL_LAYOUTS, LayerTable
from nasfilter.survey.meta_rules import shortcut


class AnalysisError(ValueError):
    """A model that cannot be run on the meta device (the message names it and why)."""


def _fvcore_batch_norm(op: str, args: Any, x: Any) -> float:
    """fvcore's count of a batch norm: per element 1 (2 with affine) in eval mode, 4 (5 with
    affine) in training mode (weight standardization runs one on the weights)."""
    affine = len(args) > 1 and args[1] is not None
    training = op != "_native_batch_norm_legit_no_training" and len(args) > 5 and args[5] is True
    per_element = (5.0 if affine else 4.0) if training else (2.0 if affine else 1.0)
    return per_element * float(x.numel())


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


# Per ATen operator: its name without the namespace ("convolution").
_OP_NAMES: dict[Any, str] = {}


def _op_name(func: Any) -> str:
    try:
        return _OP_NAMES[func]
    except KeyError:
        name = _OP_NAMES[func] = func._schema.name.split("::")[-1]
        return name


def _tensor_class() -> Any:
    """``torch.Tensor``, imported once (this module is imported without torch)."""
    global _TENSOR
    if _TENSOR is None:
        from torch import Tensor

        _TENSOR = Tensor
    return _TENSOR


_TENSOR: Any = None


def _tensors(args: Any, kwargs: dict[str, Any]) -> list[Any]:
    """The tensors among an op's arguments, lists and tuples searched, in order."""
    Tensor = _TENSOR or _tensor_class()
    found: list[Any] = []
    stack = [kwargs.values(), args] if kwargs else [args]
    while stack:
        for obj in stack.pop():
            if isinstance(obj, Tensor):
                found.append(obj)
            elif isinstance(obj, (list, tuple)):
                found.extend(_tensors(obj, {}))
    return found


def _outputs(out: Any) -> list[Any]:
    """The tensors an op returned."""
    Tensor = _TENSOR or _tensor_class()
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [o for o in out if isinstance(o, Tensor)]
    return []


@functools.lru_cache(maxsize=1)
def _mode_class() -> Any:
    """The dispatch mode that records every ATen call into a :class:`Recorder`.

    Defined once per process (not per model), and outside torch's dynamo guard: torch wraps a
    mode's ``__torch_dispatch__`` in ``torch._disable_dynamo`` unless the mode says it need
    not (``_should_skip_dynamo``); nothing here is compiled, and the wrapper cost about as
    much per call as the recording."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class RecordMode(TorchDispatchMode):
        def __init__(self, recorder: Recorder) -> None:
            super().__init__()
            self.recorder = recorder

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            out = shortcut(func, args, kwargs)
            if out is None:
                out = func(*args, **kwargs)
            self.recorder.record(func, args, kwargs, out)
            return out

    return RecordMode


class Recorder:
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

        self._producer[id(x)] = -1
        self._alive.append(x)
        handles = [register_module_forward_pre_hook(push), register_module_forward_hook(pop)]
        try:
            with torch.no_grad(), _mode_class()(self):
                self.model(x)
        finally:
            for h in handles:
                h.remove()

    def _scope(self) -> str:
        return self._stack[-1] if self._stack and self._stack[-1] else "model"

    # -- helpers --
    def _is_param(self, t: Any) -> bool:
        return id(t) in self._params or id(t) in self._param_views

    def _mark(self, out: Any, producer: int, param_view: bool = False) -> None:
        for t in _outputs(out):
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
        """Turn one ATen call (its arguments and output) into layers, fusions or aliases."""
        op = _op_name(func)
        tensors = _tensors(args, kwargs)
        if tensors and all(self._is_param(t) for t in tensors):
            # Weight preprocessing (weight standardization, reparametrisations): done once
            # per model, not per image; its output is a weight. fvcore counts its norms.
            if op in _BATCH_NORM_OPS:
                self.fvcore_macs += _fvcore_batch_norm(op, args, tensors[0])
            self._mark(out, -1, param_view=True)
        elif op in _VIEW_OPS:
            self._view(tensors[0] if tensors else None, out)
        elif op == "convolution":
            self._conv(args, out)
        elif op in _MATMUL_OPS:
            self._matmul(op, args, out)
        elif op in _BATCH_NORM_OPS:
            self._batch_norm(op, args, tensors[0], out)
        elif op in _NORM_OPS:
            x = tensors[0]
            self.fvcore_macs += 5.0 * x.numel()
            self._memory(op, [x], out, layout=_norm_layout(op, x))
        else:
            self._other(op, tensors, out)

    def _view(self, src: Any, out: Any) -> None:
        """A free alias: its output has its source's producer (or is a parameter view)."""
        if src is not None and self._is_param(src):
            self._mark(out, -1, param_view=True)
            return
        self._mark(out, self._producer.get(id(src), -1) if src is not None else -1)
        if src is not None and _pixel_rows(src, _outputs(out)):
            self._pixel_rows.add(id(_outputs(out)[0]))

    def _batch_norm(self, op: str, args: Any, x: Any, out: Any) -> None:
        """Folded into its producing layer (a bias of C_out elements), else a memory layer."""
        self.fvcore_macs += _fvcore_batch_norm(op, args, x)
        producer = self._producer.get(id(x), -1)
        if producer < 0:
            self._memory(op, [x], out)
            return
        layer = self.layers[producer]
        if layer.kind != "memory" and not layer.has_bias and not layer.folded_bias:
            layer.weights += layer.gemm_n
            layer.folded_bias = True
        self._mark(out, producer)

    def _other(self, op: str, tensors: list[Any], out: Any) -> None:
        """Every other op: fused into its producer when element-wise on one computed tensor,
        part of no data path on constants, else a memory layer."""
        if op in _POOL_ADAPTIVE or (
            op == "mean" and self._types and self._types[-1].startswith("AdaptiveAvgPool")
        ):
            # fvcore counts an adaptive average pooling (traced as such, even when torch
            # lowers a 1x1 output to a mean) as one MAC per input element.
            self.fvcore_macs += float(tensors[0].numel())
        if op in _UPSAMPLE:
            self.fvcore_macs += _UPSAMPLE[op] * float(_outputs(out)[0].numel())
        outs = _outputs(out)
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
        y = _outputs(out)[0]
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
        y = _outputs(out)[0]
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
        outs = _outputs(out)
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
