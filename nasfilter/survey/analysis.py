"""Layer analysis of any torch model: the fused per-layer
:class:`~nasfilter.bench.layer_table.LayerTable`.

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
  1x1 convolution, kind ``"conv"`` (see :mod:`nasfilter.bench.layer_table`): it counts as
  convolution MACs for the CNN rule.
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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nasfilter.bench.layer_table import CNN_MAC_FRACTION, LayerTable, conv_mac_fraction
from nasfilter.survey.recorder import AnalysisError, Recorder


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
        """Share of the MACs in convolutions (dense, grouped, depthwise), 0..1
        (:func:`nasfilter.bench.layer_table.conv_mac_fraction`)."""
        return conv_mac_fraction(self.table)

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
    recorder = Recorder(model, modules, tensors)
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
