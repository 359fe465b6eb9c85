"""The layers of a NATS topology-space (tss, = NAS-Bench-201) network, as the GPU model reads them.

The network is xautodl's ``TinyNetwork`` (C = 16, N = 5; docs/facts.md §13), run by PyTorch
eager, op by op:

- stem: a 3x3 conv (3 -> 16 channels, no bias) and its BN;
- three stages of five cells at 16, 32 and 64 channels on maps of ``s``, ``s/2`` and ``s/4``
  pixels a side (``s`` = 32 for CIFAR, 16 for ImageNet16-120), with a ResNet basic block between
  stages (a stride-2 3x3 conv, a 3x3 conv, and a shortcut of a 2x2 average pool and a 1x1 conv,
  added);
- a final BN and ReLU (``lastact``), a global average pool and the linear classifier.

A cell has four nodes; node ``j`` is ``sum(op_ij(node_i) for i < j)`` over its six edges. Each
edge runs one op: ``nor_conv_1x1`` / ``nor_conv_3x3`` (ReLU, conv, BN: one conv layer whose
ReLU and BN the eager engine charges as its elementwise passes), ``avg_pool_3x3`` (a
memory-only kernel), ``none`` (xautodl's ``Zero``: ``x.mul(0.)``, a memory-only kernel) or
``skip_connect`` (the identity: no kernel). Python's ``sum`` starts from 0, so node ``j`` runs
``j`` additions: one of a single tensor (``0 + t``) and ``j - 1`` of two; six per cell,
whatever its ops.

A network's six ops are op codes (indices into :data:`OPS`, the space's
:data:`~nasfilter.bench.spaces.TSS_OPS`), one row per network: the shipped ``arch_ops`` table, or
``TSS.digits(index)``; an arch string is read by the one tss parser, ``TSS.parse`` (a
:class:`~nasfilter.bench.spaces.Cell`).

Every cell of a stage has the same shapes, so a network is a count of **unit layers**: one
column per distinct layer (:class:`TssUnits`), and ``counts`` (N, L) saying how often each
network runs each. Any per-layer figure (MACs, seconds) sums over a network as
``counts @ figure``: all 15625 networks cost one small matrix product.

MACs follow NATS-Bench's counting exactly (conv ``k*k*Cin*Cout`` per output pixel, the
classifier ``in*out + out``, pooling, BN, ReLU and additions not counted), and ``params``
counts every ``nn.Parameter`` (conv weights, BN affine, classifier): both are checked
against the shipped figures for all 15625 (``tests/bench/test_tss_layers.py``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.layer_table import KERNEL_LAYOUTS, LayerTable
from nasfilter.bench.spaces import TSS_OPS

OPS: tuple[str, ...] = TSS_OPS  # op codes: indices into this, in the arch string's order
N_EDGES = 6  # edges (1<-0), (2<-0), (2<-1), (3<-0), (3<-1), (3<-2), in the string's order
CELLS_PER_STAGE = 5
STAGE_CHANNELS = (16, 32, 64)


@dataclass(frozen=True, eq=False)
class TssUnits:
    """The unit layers of the tss networks of one dataset and how often each network runs them.

    Attributes:
        table: the unit layers as a one-network :class:`LayerTable` (B = 1, L units).
        params: parameters of each unit, float64 (L,) (conv weights, BN affine, classifier).
        fixed: how often every network runs each unit, float64 (L,) (stem, ResNet blocks,
            additions, head).
        per_op: (3 stages, 5 ops) -> the unit column of that op in that stage, int (3, 5);
            -1 for ``skip_connect`` (no kernel).
        pool_taps: inputs each output of a window pooling unit reads (9 for the cells' 3x3
            average pool, 4 for the reductions' 2x2), 0 for every other unit, float64 (L,).
    """

    table: LayerTable
    params: np.ndarray
    fixed: np.ndarray
    per_op: np.ndarray
    pool_taps: np.ndarray

    def counts(self, ops: np.ndarray) -> np.ndarray:
        """How often each network of ``ops`` (N, 6) op codes runs each unit, float64 (N, L)."""
        ops = np.asarray(ops)
        if ops.ndim != 2 or ops.shape[1] != N_EDGES or ops.min() < 0 or ops.max() >= len(OPS):
            raise ValueError(f"ops must be (N, {N_EDGES}) codes 0..{len(OPS) - 1}")
        out = np.tile(self.fixed, (len(ops), 1))
        for stage in range(len(STAGE_CHANNELS)):
            for op in range(len(OPS)):
                col = self.per_op[stage, op]
                if col >= 0:
                    out[:, col] += CELLS_PER_STAGE * (ops == op).sum(axis=1)
        return out


class _Units:
    """Collects unit layers (one column each) while :func:`tss_units` walks the network."""

    def __init__(self) -> None:
        self.rows: list[dict[str, object]] = []

    def add(
        self,
        name: str,
        kind: str,
        count: float,
        *,
        cin: int = 0,
        cout: int = 0,
        k: int = 0,
        area_in: int = 0,
        area_out: int = 0,
        bn: bool = False,
        reads: float = 0.0,
        writes: float = 0.0,
        taps: int = 0,
    ) -> int:
        """One unit: a conv / linear (``cin``, ``cout``, kernel ``k``) or a memory kernel
        reading ``reads`` and writing ``writes`` elements per image; its column."""
        dense = kind in ("conv", "linear")
        weights = k * k * cin * cout if kind == "conv" else (cin * cout + cout if dense else 0)
        self.rows.append(
            {
                "name": name,
                "kind": kind,
                "count": count,
                "gemm": (area_out, cout, k * k * cin) if dense else (0, 0, 0),
                "macs": float(weights * area_out if kind == "conv" else weights),
                "weights": float(weights),
                "params": float(weights + (2 * cout if bn else 0)),
                "inputs": float(cin * area_in if dense else reads),
                "outputs": float(cout * area_out if dense else writes),
                "cin": float(cin),
                "taps": float(taps),
            }
        )
        return len(self.rows) - 1


@functools.cache
def _tss_units(dataset: Dataset) -> TssUnits:
    side = dataset.input_size
    areas = (side * side, (side // 2) ** 2, (side // 4) ** 2)
    u = _Units()
    u.add("stem", "conv", 1, cin=3, cout=16, k=3, area_in=areas[0], area_out=areas[0], bn=True)
    per_op = np.full((3, len(OPS)), -1, dtype=int)
    for s, (c, a) in enumerate(zip(STAGE_CHANNELS, areas, strict=True)):
        if s > 0:  # the ResNet basic block into this stage
            ci, ai, r = STAGE_CHANNELS[s - 1], areas[s - 1], f"resblock{s}"
            u.add(f"{r}.conv_a", "conv", 1, cin=ci, cout=c, k=3, area_in=ai, area_out=a, bn=True)
            u.add(f"{r}.conv_b", "conv", 1, cin=c, cout=c, k=3, area_in=a, area_out=a, bn=True)
            u.add(f"{r}.downsample.0", "memory", 1, reads=ci * ai, writes=ci * a, taps=4)
            u.add(f"{r}.downsample.1", "conv", 1, cin=ci, cout=c, k=1, area_in=a, area_out=a)
            u.add(f"{r}.add", "memory", 1, reads=2 * c * a, writes=c * a)
        stage = f"stage{s}"
        per_op[s, 0] = u.add(f"{stage}.none", "memory", 0, reads=c * a, writes=c * a)
        for op, k in ((2, 1), (3, 3)):
            per_op[s, op] = u.add(
                f"{stage}.{OPS[op]}", "conv", 0, cin=c, cout=c, k=k, area_in=a, area_out=a, bn=True
            )
        per_op[s, 4] = u.add(
            f"{stage}.avg_pool_3x3", "memory", 0, reads=c * a, writes=c * a, taps=9
        )
        # per cell: three additions of one tensor (0 + t) and three of two
        u.add(f"{stage}.add_first", "memory", 3 * CELLS_PER_STAGE, reads=c * a, writes=c * a)
        u.add(f"{stage}.add", "memory", 3 * CELLS_PER_STAGE, reads=2 * c * a, writes=c * a)
    c, a = STAGE_CHANNELS[-1], areas[-1]
    last = u.add("lastact.bn", "memory", 1, reads=c * a, writes=c * a)
    u.rows[last]["params"] = 2.0 * c
    u.add("lastact.relu", "memory", 1, reads=c * a, writes=c * a)
    u.add("global_pooling", "memory", 1, reads=c * a, writes=c)
    u.add("classifier", "linear", 1, cin=c, cout=dataset.num_classes, area_out=1)
    return _assemble(u.rows, per_op)


def _assemble(rows: list[dict[str, object]], per_op: np.ndarray) -> TssUnits:
    def col(key: str) -> np.ndarray:
        return np.array([[float(r[key]) for r in rows]])  # type: ignore[arg-type]

    gemm = np.array([r["gemm"] for r in rows], dtype=np.float64).T[:, None, :]
    kinds = tuple(str(r["kind"]) for r in rows)
    # FP32 convs run NCHW natively (no tensor-core transposes); layout "any" throughout.
    table = LayerTable(
        names=tuple(str(r["name"]) for r in rows),
        kinds=kinds,
        gemm_m=gemm[0],
        gemm_n=gemm[1],
        gemm_k=gemm[2],
        groups=np.ones((1, len(rows))),
        macs=col("macs"),
        weight_elems=col("weights"),
        input_elems=col("inputs"),
        output_elems=col("outputs"),
        present=np.ones((1, len(rows)), dtype=bool),
        in_channels=col("cin"),
        kernel_layout=np.full((1, len(rows)), KERNEL_LAYOUTS["any"]),
    )
    return TssUnits(table, col("params")[0], col("count")[0], per_op, col("taps")[0])


def tss_units(dataset: str | Dataset = "cifar10") -> TssUnits:
    """The unit layers of the tss networks of ``dataset`` (cached)."""
    return _tss_units(get_dataset(dataset))


def tss_macs(ops: np.ndarray, dataset: str | Dataset = "cifar10") -> np.ndarray:
    """NATS-counted MACs per image of each network of ``ops`` (N, 6), float64 (N,)."""
    units = tss_units(dataset)
    out: np.ndarray = units.counts(ops) @ units.table.macs[0]
    return out


def tss_params(ops: np.ndarray, dataset: str | Dataset = "cifar10") -> np.ndarray:
    """Parameters of each network of ``ops`` (N, 6), float64 (N,)."""
    units = tss_units(dataset)
    out: np.ndarray = units.counts(ops) @ units.params
    return out
