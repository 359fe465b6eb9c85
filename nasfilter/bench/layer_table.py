"""The one per-layer table: what an inference engine executes, layer by layer, per image.

Both the NATS size-space networks (closed form, :mod:`nasfilter.bench.network`, all 32768 at once)
and any torch model (the survey's layer analysis) produce a :class:`LayerTable`. Device
models (roofline, calibrated) read only this table.

Shapes: every array is (B, L): B networks that share one list of L layers (B = 32768 for the
NATS space, 1 for a single torch model). Counts are **per image** and in **elements**, not
bytes, so the same table serves FP16 and FP32: bytes = elements x bytes per element.

A layer is one of :data:`KINDS`:

- ``"conv"``: a dense convolution (groups = 1), fused with its BN and activation;
- ``"grouped_conv"``: a grouped or depthwise convolution (groups > 1);
- ``"linear"``: a fully connected layer (a 1x1 conv on a 1x1 map);
- ``"memory"``: a memory-only operation (pooling, an unfused residual add, a transpose):
  it moves data and does (almost) no arithmetic.

Its implicit-GEMM shape, per image, for a batch of N images: ``M = N x gemm_m`` (output
pixels), ``gemm_n = C_out``, ``gemm_k = C_in / groups x kh x kw``; a grouped conv runs
``groups`` GEMMs of ``N/groups`` columns each. Memory-only layers have gemm sizes 0.
``in_channels`` is C_in (so a conv has ``gemm_k x groups / in_channels`` filter taps), and
``kernel_layout`` says which memory layout the layer's kernel works in (:data:`KERNEL_LAYOUTS`):
a device model charges the transposes where it differs from the layout the network runs in.

A ``Linear`` applied to every pixel of a spatial map (ConvNeXt's pointwise layers, over a
channels-last ``(N, H, W, C)`` map) *is* a 1x1 convolution, in arithmetic and in the kernels
that run it: such a layer is kind ``"conv"`` (K = C_in, one tap), layout ``"any"`` (its rows
are already channels-last; the permute before it is charged where it copies). A ``Linear`` on
a flattened vector or a token sequence stays ``"linear"``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KINDS = ("conv", "grouped_conv", "linear", "memory")

# The CNN rule (the survey, the calibration and the figures): a network is a CNN when at
# least this share of its MACs is in convolutions (dense, grouped, depthwise; a ``Linear``
# on every pixel of a map is a 1x1 conv, see above).
CNN_MAC_FRACTION = 0.9

# Codes of ``kernel_layout``: the memory layout a layer's kernel works in.
KERNEL_LAYOUTS = {
    "any": 0.0,  # layout-agnostic (element-wise, pooling, linear, grouped convs: both exist)
    "nhwc": 1.0,  # channels-last: cuDNN's tensor-core convs; a norm over the channels
    "nchw": 2.0,  # channels-first: PyTorch's CUDA group norm (copies channels-last input)
}

# The per-layer array fields of a LayerTable, in order (each (B, L), float64).
ARRAY_FIELDS = (
    "gemm_m",
    "gemm_n",
    "gemm_k",
    "groups",
    "macs",
    "weight_elems",
    "input_elems",
    "output_elems",
    "in_channels",
    "kernel_layout",
)


@dataclass(frozen=True, eq=False)
class LayerTable:
    """Per-image costs and GEMM shapes of L layers for B networks.

    Attributes:
        names: the L layer names in execution order (torch module paths where there are).
        kinds: per layer, one of :data:`KINDS`.
        gemm_m: output pixels per image, H_out x W_out (1 for linear), float64 (B, L).
        gemm_n: output channels C_out, float64 (B, L).
        gemm_k: reduction length C_in / groups x kh x kw, float64 (B, L).
        groups: convolution groups (1 for dense layers), float64 (B, L).
        macs: multiply-accumulates per image, float64 (B, L).
        weight_elems: weight and bias elements (after BN folding), float64 (B, L).
        input_elems: activation elements read per image, a fused residual included,
            float64 (B, L).
        output_elems: activation elements written per image, float64 (B, L).
        present: bool (B, L): whether network b executes layer l (absent layers cost 0).
        in_channels: input channels C_in, float64 (B, L); default ``gemm_k x groups`` (a
            1x1 kernel, what a table without channel counts implies).
        kernel_layout: a :data:`KERNEL_LAYOUTS` code per layer, float64 (B, L); default
            ``"nhwc"`` for dense convs (cuDNN's tensor-core kernels), ``"any"`` otherwise.
    """

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    gemm_m: np.ndarray
    gemm_n: np.ndarray
    gemm_k: np.ndarray
    groups: np.ndarray
    macs: np.ndarray
    weight_elems: np.ndarray
    input_elems: np.ndarray
    output_elems: np.ndarray
    present: np.ndarray
    in_channels: np.ndarray = None  # type: ignore[assignment]  # filled in __post_init__
    kernel_layout: np.ndarray = None  # type: ignore[assignment]  # filled in __post_init__

    def __post_init__(self) -> None:
        n_layers = len(self.names)
        if len(self.kinds) != n_layers:
            raise ValueError(f"{len(self.kinds)} kinds for {n_layers} layer names")
        bad = set(self.kinds).difference(KINDS)
        if bad:
            raise ValueError(f"unknown layer kind(s) {sorted(bad)}; expected one of {KINDS}")
        shape = np.shape(self.present)
        if len(shape) != 2 or shape[1] != n_layers:
            raise ValueError(f"present must have shape (B, {n_layers}), got {shape}")
        self._fill_defaults()
        values = [getattr(self, name) for name in ARRAY_FIELDS]
        for name, value in zip(ARRAY_FIELDS, values, strict=True):
            if np.shape(value) != shape:
                raise ValueError(f"{name} must have shape {shape}, got {np.shape(value)}")
        if not _finite_non_negative(np.concatenate(values, axis=None, dtype=np.float64)):
            name = next(
                n
                for n, v in zip(ARRAY_FIELDS, values, strict=True)
                if not _finite_non_negative(np.asarray(v, dtype=np.float64))
            )
            raise ValueError(f"{name} must be finite and >= 0")
        layout = np.asarray(self.kernel_layout)
        known = np.zeros(layout.shape, dtype=bool)
        for code in set(KERNEL_LAYOUTS.values()):  # 3 comparisons: cheaper than np.isin
            known |= layout == code
        if not known.all():
            raise ValueError(f"kernel_layout must hold codes {KERNEL_LAYOUTS}")

    def _fill_defaults(self) -> None:
        if self.in_channels is None:
            object.__setattr__(self, "in_channels", np.asarray(self.gemm_k * self.groups))
        if self.kernel_layout is None:
            dense = np.array([k == "conv" for k in self.kinds], dtype=bool)
            codes = np.where(dense, KERNEL_LAYOUTS["nhwc"], KERNEL_LAYOUTS["any"])
            object.__setattr__(
                self, "kernel_layout", np.broadcast_to(codes, np.shape(self.present)).copy()
            )

    @property
    def n_networks(self) -> int:
        """B, the number of networks."""
        return int(self.present.shape[0])

    @property
    def n_layers(self) -> int:
        """L, the number of layers."""
        return len(self.names)

    def flops(self, batch: int = 1) -> np.ndarray:
        """FLOPs (2 x MACs) per layer for a batch, float64 (B, L); 0 where absent."""
        return np.where(self.present, 2.0 * batch * self.macs, 0.0)

    def bytes(self, batch: int = 1, bytes_per_element: int = 2) -> np.ndarray:
        """Bytes moved per layer for a batch (activations in and out, weights once), (B, L)."""
        moved = batch * (self.input_elems + self.output_elems) + self.weight_elems
        return np.where(self.present, bytes_per_element * moved, 0.0)

    def intensity(self, batch: int = 1, bytes_per_element: int = 2) -> np.ndarray:
        """Arithmetic intensity per layer, FLOP/byte, (B, L); NaN where absent."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(
                self.present,
                self.flops(batch) / self.bytes(batch, bytes_per_element),
                np.nan,
            )

    def network_intensity(self, batch: int = 1, bytes_per_element: int = 2) -> np.ndarray:
        """Whole-network intensity (sum of FLOPs / sum of bytes, as the study defines it), (B,)."""
        return self.flops(batch).sum(axis=1) / self.bytes(batch, bytes_per_element).sum(axis=1)


def _finite_non_negative(values: np.ndarray) -> bool:
    """Whether every value is finite and >= 0 (NaN fails: min and max propagate it)."""
    return values.size == 0 or bool(values.min() >= 0 and values.max() < np.inf)


def conv_mac_fraction(table: LayerTable) -> float:
    """Share of a one-network table's MACs in (dense, grouped) convolutions, 0..1."""
    kinds = np.array(table.kinds)
    macs = np.where(table.present, table.macs, 0.0)[0]
    total = macs.sum()
    conv = macs[(kinds == "conv") | (kinds == "grouped_conv")].sum()
    return float(conv / total) if total > 0 else 0.0
