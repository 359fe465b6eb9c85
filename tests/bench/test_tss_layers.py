"""The tss network's unit layers against the shipped NATS counts and xautodl's TinyNetwork."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from nasfilter.bench.spaces import TSS, Cell
from nasfilter.bench.tss_data import arch_ops, load_tss_arrays
from nasfilter.bench.tss_layers import OPS, tss_macs, tss_params, tss_units

ARCH_0 = (
    "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|"
    "skip_connect~2|"
)


@pytest.mark.parametrize("dataset", ["cifar10", "cifar100", "ImageNet16-120"])
def test_macs_and_params_match_the_shipped_counts_for_every_cell(dataset: str) -> None:
    ops = arch_ops().astype(int)
    shipped = load_tss_arrays(dataset)
    # The shipped counts are float32 (7 significant digits); ours are exact integers.
    np.testing.assert_allclose(tss_macs(ops, dataset) / 1e6, shipped.flops_M, rtol=1e-7)
    np.testing.assert_allclose(tss_params(ops, dataset) / 1e6, shipped.params_M, rtol=1e-7)


def test_the_op_codes_are_the_spaces_parser_digits() -> None:
    """One tss parser (``TSS.parse``): the units' op codes are its digits, in string order."""
    cell = TSS.parse(ARCH_0)
    codes = tuple(OPS.index(op) for op in cell.ops)
    assert codes == (4, 2, 1, 2, 1, 1)  # avg_pool, 1x1, skip, 1x1, skip, skip by hand
    assert tuple(arch_ops()[0]) == codes == tuple(TSS.digits(0))
    assert str(Cell(tuple(OPS[c] for c in codes))) == ARCH_0
    for bad in ("", "|none~0|", ARCH_0.replace("~1|+", "~0|+"), ARCH_0.replace("avg", "max")):
        with pytest.raises(ValueError, match=r"tss arch string|operation"):
            TSS.parse(bad)


def test_counts_are_per_op_and_fixed_otherwise() -> None:
    units = tss_units("cifar10")
    all_conv = np.full((1, 6), OPS.index("nor_conv_3x3"))
    counts = units.counts(all_conv)[0]
    names = units.table.names
    assert counts[names.index("stage1.nor_conv_3x3")] == 30  # 5 cells x 6 edges
    assert counts[names.index("stage1.none")] == 0
    assert counts[names.index("stage2.add")] == 15 and counts[names.index("stem")] == 1
    with pytest.raises(ValueError, match=r"codes 0\.\.4"):
        units.counts(np.full((1, 6), 5))


def _xautodl_net(arch: str) -> object:
    torch = pytest.importorskip("torch")
    models = pytest.importorskip("xautodl.models")
    genotypes = pytest.importorskip("xautodl.models.cell_searchs.genotypes")
    torch.manual_seed(0)
    structure = genotypes.Structure.str2structure(arch)
    config = {"name": "infer.tiny", "C": 16, "N": 5, "genotype": structure, "num_classes": 10}
    return models.get_cell_based_tiny_net(config).eval()


@pytest.mark.parametrize("index", [0, 10, 1234, 15624])
def test_params_and_kernels_match_xautodl_tinynetwork(index: int) -> None:
    """Params from xautodl's own TinyNetwork, and the eager kernels its forward runs
    (counted with a dispatch mode) equal the units' counts."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    ops = arch_ops()[index : index + 1].astype(int)
    net = _xautodl_net(str(TSS.arch(index)))
    assert sum(p.numel() for p in net.parameters()) == tss_params(ops)[0]  # type: ignore[attr-defined]

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: Counter[str] = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            self.ops[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    counter = Count()
    with torch.no_grad(), counter:
        net(torch.zeros(2, 3, 32, 32))  # type: ignore[operator]
    units = tss_units("cifar10")
    counts = units.counts(ops)[0]
    kinds = np.array(units.table.kinds)
    names = units.table.names
    convs = counts[kinds == "conv"].sum()
    assert counter.ops["convolution"] == convs
    adds = sum(counts[i] for i, n in enumerate(names) if n.endswith("add") or "add_" in n)
    assert counter.ops["add"] == adds
    zeros = sum(counts[i] for i, n in enumerate(names) if n.endswith(".none"))
    assert counter.ops["mul"] == zeros
