"""The network behind every architecture of the size space, layer by layer.

Every architecture is xautodl's ``DynamicShapeTinyNet`` (docs/facts.md §1) with the channel counts
``c0:c1:c2:c3:c4`` and an input of ``H x H`` pixels (``H = dataset.input_size``):

==========  =====================================================  ============
module      what it is                                              output
==========  =====================================================  ============
stem        conv 3x3, 3 -> c0, + BN                                 c0 x H
cells.0     cell, c0 -> c0                                          c0 x H
cells.1     ResNet basic block, stride 2, c0 -> c1                  c1 x H/2
cells.2     cell, c1 -> c2                                          c2 x H/2
cells.3     ResNet basic block, stride 2, c2 -> c3                  c3 x H/4
cells.4     cell, c3 -> c4                                          c4 x H/4
lastact     BN + ReLU                                               c4 x H/4
pooling     global average pooling                                  c4
classifier  linear, c4 -> num_classes, with bias                    num_classes
==========  =====================================================  ============

A *cell* (``InferCell`` with the fixed genotype) of ``cin -> cout`` has four nodes ``x0`` (its
input), ``x1 = A(x0)``, ``x2 = B(x0) + C(x1)``, ``x3 = skip(x0) + D(x1) + E(x2)``, where A..E are
ReLU -> conv 3x3 -> BN (A, B: ``cin -> cout``; C, D, E: ``cout -> cout``) and ``skip`` is the
identity when ``cin == cout``, else conv 1x1 -> BN (xautodl's ``FactorizedReduce``, stride 1).
A *ResNet basic block* (``cin -> cout``, stride 2) is ``conv_b(conv_a(x)) + shortcut(x)`` with
``conv_a`` = ReLU -> conv 3x3 stride 2 -> BN, ``conv_b`` = ReLU -> conv 3x3 -> BN and
``shortcut`` = average pooling 2x2 stride 2 -> conv 1x1 (no BN, no bias).

:func:`layer_costs` lists the layers an inference engine executes after fusion, with the
per-image costs an analytic roofline model needs; :func:`build_network` builds the real torch
module (needs the ``torch`` extra and xautodl).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.layer_table import LayerTable
from nasfilter.bench.spaces.sss import ArchLike, all_channels, as_arch

if TYPE_CHECKING:  # pragma: no cover
    import torch

# The genotype shared by every architecture of the size space (docs/facts.md §1).
GENOTYPE = (
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|"
    "+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
)
XAUTODL_NAME = "infer.shape.tiny"

_INSTALL_HINT = (
    "install the torch extra and xautodl: `pip install nasfilter[torch]` and then "
    "`pip install --no-deps xautodl==1.0.0` (xautodl 1.0.0 pins an old numpy; --no-deps "
    "installs it next to a current one)"
)


class MissingDependencyError(ImportError):
    """An optional dependency (torch, xautodl) needed by this function is not installed."""


def feature_sizes(dataset: str | Dataset) -> tuple[int, int, int]:
    """Side lengths in pixels of the feature maps of the three stages: ``(H, H/2, H/4)``.

    Raises ValueError unless the input size is a positive multiple of 4: otherwise the two
    paths of a stride-2 ResNet block (conv with padding 1, 2x2 pooling) disagree in shape.
    """
    ds = get_dataset(dataset)
    size = ds.input_size
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0 or size % 4:
        raise ValueError(
            f"dataset {ds.name!r} has input size {size!r}; the network needs a positive "
            "multiple of 4 pixels per side (32 for CIFAR, 16 for ImageNet16-120)"
        )
    return size, size // 2, size // 4


def input_shape(dataset: str | Dataset, batch: int = 1) -> tuple[int, int, int, int]:
    """The NCHW input shape ``(batch, 3, H, H)`` of the networks for ``dataset``."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    size = feature_sizes(dataset)[0]
    return batch, 3, size, size


def xautodl_config(arch: ArchLike, dataset: str | Dataset) -> dict[str, Any]:
    """The config dict for xautodl's ``get_cell_based_tiny_net`` (docs/facts.md §1)."""
    return {
        "name": XAUTODL_NAME,
        "channels": str(as_arch(arch)),
        "genotype": GENOTYPE,
        "num_classes": get_dataset(dataset).num_classes,
    }


def build_network(arch: ArchLike, dataset: str | Dataset) -> torch.nn.Module:
    """The real xautodl network of ``arch`` for ``dataset``, in eval mode, on the CPU.

    Its forward maps an input of :func:`input_shape` to ``(features, logits)`` of shapes
    ``(N, c4)`` and ``(N, num_classes)``. Weights are xautodl's random initialisation, drawn
    inside ``torch.random.fork_rng`` so that building leaves torch's global generator as it
    was. Raises :class:`MissingDependencyError` if torch or xautodl is missing.
    """
    config = xautodl_config(arch, dataset)
    try:
        import torch
        from xautodl.models import get_cell_based_tiny_net
    except ImportError as exc:
        raise MissingDependencyError(
            f"build_network needs torch and xautodl ({exc}); {_INSTALL_HINT}"
        ) from exc
    with torch.random.fork_rng(devices=[]):
        net = get_cell_based_tiny_net(config)
    return net.eval()


# ---- the fused layer table ------------------------------------------------------------------

KINDS = ("conv", "pool", "fc")


@dataclass(frozen=True, eq=False)
class LayerCosts:
    """Per-image costs of the L layers an inference engine executes, for every architecture.

    Fusion model: every BatchNorm after a conv is folded into it (its scale into the weights,
    its shift into a bias of ``cout`` elements); every ReLU is fused (into the producing conv
    where all consumers take the rectified tensor, else applied by the consuming conv as it
    reads), so it costs no pass over memory; every ``+`` is fused into the conv that produces
    its last operand, which then also reads the other operand (``residual``). The final
    BN + ReLU is applied by the global pooling as it reads (its 2 x c4 scale and shift are
    that layer's weights). Layers run in this order; ``names`` are the torch module paths, in
    the network of :func:`build_network`, of each layer's conv, pooling or linear module.

    Relation to :func:`nasfilter.bench.costs.network_costs` (tested exactly for all 32768):

    - ``macs`` of the conv and fc layers sum to ``network_costs(...).macs * 1e6``: like
      xautodl's ``get_model_infos`` they count ``k*k*cin*cout`` per output pixel of a conv and
      ``c4*K + K`` for the classifier (its bias counted as one MAC per output). xautodl leaves
      pooling, BN, ReLU and additions out; here each pooling layer counts one MAC per input
      element (2x2 average: 4 per output, as xautodl's own unsummed pool counter does), and
      folded biases and fused adds count nothing.
    - ``weight_elems`` sum to ``params * 1e6`` minus the channels of every BN folded into a
      conv (each such BN's 2*C parameters become C bias elements).

    Attributes:
        dataset: the dataset (input size, number of classes) these costs are for.
        names: the L layer names, in execution order.
        kinds: per layer ``"conv"``, ``"pool"`` or ``"fc"``.
        residual: per layer, whether it fuses an addition (reads a second input of its output's
            shape).
        macs: multiply-accumulates per image, float64 (32768, L), exact integers.
        weight_elems: weight and bias elements after folding, float64 (32768, L).
        input_elems: activation elements read per image, a fused residual included,
            float64 (32768, L).
        output_elems: activation elements written per image, float64 (32768, L).
        present: bool (32768, L): whether the architecture executes the layer; only the 1x1
            skip convs of cells 2 and 4 are ever absent (the skip is the identity when the
            cell's input and output widths match), and their costs are then 0.
        gemm_m: implicit-GEMM rows per image (output pixels; 1 for the classifier, 0 for
            pooling and absent layers), float64 (32768, L).
        gemm_n: implicit-GEMM columns (output channels), float64 (32768, L).
        gemm_k: implicit-GEMM reduction length (``cin x k x k``), float64 (32768, L).
        in_channels: input channels ``cin`` of the conv and fc layers (0 for pooling),
            float64 (32768, L).
    """

    dataset: Dataset
    names: tuple[str, ...]
    kinds: tuple[str, ...]
    residual: tuple[bool, ...]
    macs: np.ndarray
    weight_elems: np.ndarray
    input_elems: np.ndarray
    output_elems: np.ndarray
    present: np.ndarray
    gemm_m: np.ndarray
    gemm_n: np.ndarray
    gemm_k: np.ndarray
    in_channels: np.ndarray

    def index(self, name: str) -> int:
        """Column of the layer called ``name``; raises ValueError listing the names."""
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(f"no layer named {name!r}; layers: {', '.join(self.names)}") from None

    @property
    def n_layers(self) -> int:
        """L, the number of layers."""
        return len(self.names)

    def table(self) -> LayerTable:
        """These layers as the shared :class:`~nasfilter.bench.layer_table.LayerTable` (dense,
        groups 1)."""
        return LayerTable(
            names=self.names,
            kinds=tuple(_TABLE_KINDS[k] for k in self.kinds),
            gemm_m=self.gemm_m,
            gemm_n=self.gemm_n,
            gemm_k=self.gemm_k,
            groups=np.ones_like(self.macs),
            macs=self.macs,
            weight_elems=self.weight_elems,
            input_elems=self.input_elems,
            output_elems=self.output_elems,
            present=self.present,
            in_channels=self.in_channels,
        )


@dataclass(frozen=True)
class _Layer:
    name: str
    kind: str
    residual: bool
    macs: np.ndarray
    weights: np.ndarray
    inputs: np.ndarray
    outputs: np.ndarray
    present: np.ndarray
    gemm: tuple[np.ndarray, np.ndarray, np.ndarray]  # (M per image, N, K); zeros if none
    cin: np.ndarray  # input channels (0 for pooling)


class _Builder:
    """Collects the layers of the table as columns over all architectures."""

    def __init__(self, n: int) -> None:
        self.layers: list[_Layer] = []
        self._all = np.ones(n, dtype=bool)

    def conv(
        self,
        name: str,
        cin: np.ndarray,
        cout: np.ndarray,
        kernel: int,
        area_in: int,
        area_out: int,
        *,
        folded_bn: bool = True,
        residual: bool = False,
        present: np.ndarray | None = None,
    ) -> None:
        mask = self._all if present is None else present
        out = cout * area_out
        self.layers.append(
            _Layer(
                name,
                "conv",
                residual,
                macs=np.where(mask, kernel * kernel * cin * cout * area_out, 0.0),
                weights=np.where(mask, kernel * kernel * cin * cout + folded_bn * cout, 0.0),
                inputs=np.where(mask, cin * area_in + residual * out, 0.0),
                outputs=np.where(mask, out, 0.0),
                present=mask,
                gemm=(
                    np.where(mask, float(area_out), 0.0),
                    np.where(mask, cout, 0.0),
                    np.where(mask, kernel * kernel * cin, 0.0),
                ),
                cin=np.where(mask, cin, 0.0),
            )
        )

    def pool(
        self, name: str, channels: np.ndarray, area_in: int, area_out: int, weights: np.ndarray
    ) -> None:
        zero = np.zeros(channels.shape)
        self.layers.append(
            _Layer(
                name,
                "pool",
                False,
                macs=channels * area_in,
                weights=weights,
                inputs=channels * area_in,
                outputs=channels * area_out,
                present=self._all,
                gemm=(zero, zero, zero),
                cin=zero,
            )
        )

    def fc(self, name: str, cin: np.ndarray, cout: int) -> None:
        self.layers.append(
            _Layer(
                name,
                "fc",
                False,
                macs=cin * cout + cout,
                weights=cin * cout + cout,
                inputs=cin * 1.0,
                outputs=np.full(cin.shape, float(cout)),
                present=self._all,
                gemm=(np.ones(cin.shape), np.full(cin.shape, float(cout)), cin * 1.0),
                cin=cin * 1.0,
            )
        )

    def cell(
        self, prefix: str, cin: np.ndarray, cout: np.ndarray, area: int, *, skip: bool = True
    ) -> None:
        """An InferCell of the fixed genotype; ``layers.i`` is xautodl's edge order.

        ``skip=False`` leaves out the skip conv's column, for a cell whose input and output
        widths always match.
        """
        self.conv(f"{prefix}.layers.0.op.1", cin, cout, 3, area, area)  # x1 = A(x0)
        self.conv(f"{prefix}.layers.1.op.1", cin, cout, 3, area, area)  # t = B(x0)
        self.conv(f"{prefix}.layers.2.op.1", cout, cout, 3, area, area, residual=True)  # x2
        # s = skip(x0): a conv 1x1 where the widths differ, else the identity (no layer)
        if skip:
            self.conv(f"{prefix}.layers.3.conv", cin, cout, 1, area, area, present=cin != cout)
        self.conv(f"{prefix}.layers.4.op.1", cout, cout, 3, area, area, residual=True)  # s + D
        self.conv(f"{prefix}.layers.5.op.1", cout, cout, 3, area, area, residual=True)  # x3

    def resnet(
        self, prefix: str, cin: np.ndarray, cout: np.ndarray, area_in: int, area_out: int
    ) -> None:
        """A stride-2 ResNet basic block."""
        self.conv(f"{prefix}.conv_a.op.1", cin, cout, 3, area_in, area_out)
        self.pool(f"{prefix}.downsample.0", cin, area_in, area_out, np.zeros(cin.shape))
        self.conv(f"{prefix}.downsample.1", cin, cout, 1, area_out, area_out, folded_bn=False)
        self.conv(f"{prefix}.conv_b.op.1", cout, cout, 3, area_out, area_out, residual=True)


def compute_layer_costs(dataset: Dataset) -> LayerCosts:
    """Uncached :func:`layer_costs` (for benchmarks); ``dataset`` must be a Dataset."""
    s0, s1, s2 = feature_sizes(dataset)
    a0, a1, a2 = s0 * s0, s1 * s1, s2 * s2
    ch = all_channels().astype(np.float64)
    c0, c1, c2, c3, c4 = ch.T
    b = _Builder(len(ch))
    b.conv("stem.0", np.full(c0.shape, 3.0), c0, 3, a0, a0)
    b.cell("cells.0", c0, c0, a0, skip=False)  # c0 -> c0: its skip is always the identity
    b.resnet("cells.1", c0, c1, a0, a1)
    b.cell("cells.2", c1, c2, a1)
    b.resnet("cells.3", c2, c3, a1, a2)
    b.cell("cells.4", c3, c4, a2)
    b.pool("global_pooling", c4, a2, 1, 2.0 * c4)  # with lastact (BN + ReLU) on the way in
    b.fc("classifier", c4, dataset.num_classes)

    def stack(values: list[np.ndarray], dtype: type = np.float64) -> np.ndarray:
        out: np.ndarray = np.stack(values, axis=1).astype(dtype, copy=False)
        out.setflags(write=False)
        return out

    layers = b.layers
    gemm = [stack([layer.gemm[i] for layer in layers]) for i in range(3)]
    return LayerCosts(
        dataset=dataset,
        names=tuple(layer.name for layer in layers),
        kinds=tuple(layer.kind for layer in layers),
        residual=tuple(layer.residual for layer in layers),
        macs=stack([layer.macs for layer in layers]),
        weight_elems=stack([layer.weights for layer in layers]),
        input_elems=stack([layer.inputs for layer in layers]),
        output_elems=stack([layer.outputs for layer in layers]),
        present=stack([layer.present for layer in layers], dtype=np.bool_),
        gemm_m=gemm[0],
        gemm_n=gemm[1],
        gemm_k=gemm[2],
        in_channels=stack([layer.cin for layer in layers]),
    )


@functools.cache
def _layer_costs(dataset: Dataset) -> LayerCosts:
    return compute_layer_costs(dataset)


def layer_costs(dataset: str | Dataset) -> LayerCosts:
    """The fused layer table of every architecture for ``dataset`` (cached, read-only)."""
    return _layer_costs(get_dataset(dataset))


_TABLE_KINDS = {"conv": "conv", "pool": "memory", "fc": "linear"}


@functools.cache
def _layer_table(dataset: Dataset) -> LayerTable:
    return layer_costs(dataset).table()


def layer_table(dataset: str | Dataset) -> LayerTable:
    """All 32768 networks as the shared :class:`~nasfilter.bench.layer_table.LayerTable` (cached).

    The same layers, order and costs as :func:`layer_costs`; pooling layers are kind
    ``"memory"`` (they keep their one MAC per input element), the classifier ``"linear"``.
    """
    return _layer_table(get_dataset(dataset))
