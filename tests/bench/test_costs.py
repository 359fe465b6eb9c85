"""Closed-form network costs and the fused layer table, checked against xautodl and nats_bench.

References: xautodl's own ``get_model_infos`` and per-module counters on the real networks,
torch forward hooks for activation shapes, the real ``nats_bench`` API on the official fixture,
and the literal numbers of docs/facts.md §1.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from xautodl.utils import flop_benchmark

from nasfilter.bench.costs import compute_network_costs, flops, network_costs
from nasfilter.bench.datasets import DATASETS, Dataset, get_dataset
from nasfilter.bench.network import (
    GENOTYPE,
    LayerCosts,
    MissingDependencyError,
    build_network,
    compute_layer_costs,
    input_shape,
    layer_costs,
    layer_table,
    xautodl_config,
)
from nasfilter.bench.spaces import sss as space
from nasfilter.bench.spaces.sss import N_ARCHS, Arch, all_channels

FIXTURE = Path(__file__).parent.parent / "data/nats-sss/NATS-sss-v1_0-50262-simple"
DATASET_NAMES = tuple(DATASETS)  # cifar10, cifar100, ImageNet16-120
REFERENCE_INDICES = (0, 11, 12, 284, N_ARCHS - 1)
N_RANDOM = 30
HALF_ULP_6 = 5e-7  # NATS stores MMACs and M params to 6 decimals

# docs/facts.md §1, CIFAR-10: (channels, MMACs, M params)
FACTS_CIFAR10 = (
    ("64:64:64:64:64", 274.399882, 0.713674),
    ("8:8:8:8:8", 4.481114, 0.011714),
    ("8:8:8:16:40", 7.991706, 0.067378),
)


def _indices(dataset: str) -> np.ndarray:
    rng = np.random.default_rng([221207936, DATASET_NAMES.index(dataset)])
    return np.concatenate([REFERENCE_INDICES, space.sample_indices(rng, N_RANDOM)])


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """These nets are tiny: extra threads only contend on a shared machine (and run 10x slower)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(
    scope="module",
    # Building every network in torch takes seconds a dataset: the fast set builds cifar10's;
    # test_matches_nats_bench_cost_info checks every dataset's costs there.
    params=[d if d == "cifar10" else pytest.param(d, marks=pytest.mark.slow)
            for d in DATASET_NAMES],
)
def xautodl_infos(request: pytest.FixtureRequest) -> tuple[str, np.ndarray, np.ndarray]:
    """(dataset, indices, (n, 2) array of xautodl's (MMACs, M params)) on the real networks."""
    dataset = request.param
    indices = _indices(dataset)
    rows = []
    with torch.random.fork_rng(devices=[]):  # get_model_infos draws its input from torch.rand
        for index in indices:
            net = build_network(int(index), dataset)
            rows.append(flop_benchmark.get_model_infos(net, input_shape(dataset)))
    return dataset, indices, np.asarray(rows, dtype=np.float64)


@pytest.fixture(scope="module")
def nats_api() -> Any:
    import nats_bench

    return nats_bench.create(str(FIXTURE), "sss", fast_mode=True, verbose=False)


# ---- network_costs ------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "mmacs", "mparams"), FACTS_CIFAR10)
def test_facts_reference_values(text: str, mmacs: float, mparams: float) -> None:
    costs = network_costs("cifar10")
    index = Arch.from_string(text).index
    assert costs.macs[index] == pytest.approx(mmacs, abs=HALF_ULP_6)
    assert costs.params[index] == pytest.approx(mparams, abs=HALF_ULP_6)


def test_facts_param_count_exact() -> None:
    params = network_costs("cifar10").params
    assert round(params[N_ARCHS - 1] * 1e6) == 713_674
    assert round(params[0] * 1e6) == 11_714


def test_matches_xautodl_get_model_infos(xautodl_infos: tuple[str, np.ndarray, np.ndarray]) -> None:
    dataset, indices, infos = xautodl_infos
    costs = network_costs(dataset)
    # Same integer counts divided by 1e6: equal to the last bit, so also to NATS's 6 decimals.
    np.testing.assert_array_equal(costs.macs[indices], infos[:, 0])
    np.testing.assert_array_equal(costs.params[indices], infos[:, 1])
    assert len(set(indices.tolist())) > N_RANDOM  # the random draw is not degenerate


@pytest.mark.parametrize("dataset", DATASET_NAMES)
@pytest.mark.parametrize("index", [0, 11, 284])
def test_matches_nats_bench_cost_info(nats_api: Any, dataset: str, index: int) -> None:
    info = nats_api.get_cost_info(index, dataset)
    costs = network_costs(dataset)
    assert abs(costs.macs[index] - info["flops"]) < HALF_ULP_6
    assert abs(costs.params[index] - info["params"]) < HALF_ULP_6


@pytest.mark.parametrize("dataset", DATASET_NAMES)
def test_network_costs_shape_cache_and_read_only(dataset: str) -> None:
    costs = network_costs(dataset)
    assert network_costs(get_dataset(dataset)) is costs
    assert costs.dataset == get_dataset(dataset)
    for arr in (costs.macs, costs.params):
        assert arr.shape == (N_ARCHS,)
        assert arr.dtype == np.float64
        assert not arr.flags.writeable
        assert (arr > 0).all()
        with pytest.raises(ValueError):
            arr[0] = 1.0
    # Widening any layer never lowers either cost: compare each arch with its neighbours.
    ch = space.all_channels()
    for layer in range(5):
        wider = ch[:, layer] < 64
        bumped = ch[wider].copy()
        bumped[:, layer] += 8
        other = space.channels_to_index(bumped)
        assert (costs.macs[other] > costs.macs[wider]).all()
        assert (costs.params[other] > costs.params[wider]).all()


@pytest.mark.parametrize("dataset", DATASET_NAMES)
def test_flops_are_twice_the_macs(dataset: str) -> None:
    out = flops(dataset)
    assert out.shape == (N_ARCHS,) and not out.flags.writeable
    np.testing.assert_array_equal(out / 2e6, network_costs(dataset).macs)
    assert out[0] == 2 * round(network_costs(dataset).macs[0] * 1e6)
    assert (out == np.rint(out)).all()


def test_cifar100_differs_from_cifar10_only_in_the_classifier() -> None:
    c4 = space.all_channels()[:, 4]
    extra = (100 - 10) * (c4 + 1) / 1e6  # weights and bias of 90 more outputs
    np.testing.assert_allclose(
        network_costs("cifar100").macs - network_costs("cifar10").macs, extra, atol=1e-9
    )
    np.testing.assert_allclose(
        network_costs("cifar100").params - network_costs("cifar10").params, extra, atol=1e-9
    )


def test_bad_datasets_raise() -> None:
    with pytest.raises(ValueError, match="unknown dataset"):
        network_costs("mnist")
    odd = Dataset("odd", 30, 10, "odd", "odd", 1.0)
    with pytest.raises(ValueError, match="multiple of 4"):
        network_costs(odd)
    with pytest.raises(ValueError, match="multiple of 4"):
        layer_costs(odd)
    with pytest.raises(ValueError, match="batch"):
        input_shape("cifar10", batch=0)


def test_uncached_functions_recompute() -> None:
    ds = get_dataset("cifar10")
    fresh = compute_network_costs(ds)
    assert fresh is not network_costs(ds)
    np.testing.assert_array_equal(fresh.macs, network_costs(ds).macs)
    assert compute_layer_costs(ds) is not layer_costs(ds)


# ---- layer_costs ---------------------------------------------------------------------------

SKIP_LAYERS = {"cells.2.layers.3.conv": (1, 2), "cells.4.layers.3.conv": (3, 4)}


def _folded_bn_channels() -> np.ndarray:
    """Channels of the BNs folded into convs, written out from the xautodl source."""
    c0, c1, c2, c3, c4 = space.all_channels().T
    return 6 * c0 + 2 * c1 + (5 + (c1 != c2)) * c2 + 2 * c3 + (5 + (c3 != c4)) * c4


@pytest.mark.parametrize("dataset", DATASET_NAMES)
def test_layer_table_shapes_and_flags(dataset: str) -> None:
    lc = layer_costs(dataset)
    assert layer_costs(get_dataset(dataset)) is lc
    n_layers = lc.n_layers
    assert n_layers == len(lc.kinds) == len(lc.residual) == len(set(lc.names)) == 28
    for arr in (lc.macs, lc.weight_elems, lc.input_elems, lc.output_elems, lc.present):
        assert arr.shape == (N_ARCHS, n_layers)
        assert not arr.flags.writeable
    assert lc.present.dtype == np.bool_
    assert lc.names[0] == "stem.0" and lc.names[-1] == "classifier"
    assert lc.index("classifier") == n_layers - 1
    with pytest.raises(ValueError, match="no layer named"):
        lc.index("cells.9")
    assert set(lc.kinds) == {"conv", "pool", "fc"}


@pytest.mark.parametrize("dataset", DATASET_NAMES)
def test_layer_costs_positive_where_present(dataset: str) -> None:
    lc = layer_costs(dataset)
    ch = space.all_channels()
    for j, name in enumerate(lc.names):
        if name in SKIP_LAYERS:
            a, b = SKIP_LAYERS[name]
            np.testing.assert_array_equal(lc.present[:, j], ch[:, a] != ch[:, b])
        else:
            assert lc.present[:, j].all(), name
    on = lc.present
    for arr in (lc.macs, lc.input_elems, lc.output_elems):
        assert (arr[on] > 0).all()
        assert (arr[~on] == 0).all()
    weighted = np.array([not n.endswith("downsample.0") for n in lc.names])  # 2x2 pools
    assert (lc.weight_elems[:, weighted][on[:, weighted]] > 0).all()
    assert (lc.weight_elems[:, ~weighted] == 0).all()
    for arr in (lc.macs, lc.weight_elems, lc.input_elems, lc.output_elems):
        assert (arr == np.rint(arr)).all()


@pytest.mark.parametrize("dataset", DATASET_NAMES)
def test_layer_totals_relate_exactly_to_network_costs(dataset: str) -> None:
    lc = layer_costs(dataset)
    nc = network_costs(dataset)
    pool = np.array([k == "pool" for k in lc.kinds])
    # conv + fc MACs are xautodl's count, to the last bit
    np.testing.assert_array_equal(lc.macs[:, ~pool].sum(axis=1) / 1e6, nc.macs)
    # pooling: one MAC per element read
    np.testing.assert_array_equal(lc.macs[:, pool], lc.input_elems[:, pool])
    # each BN folded into a conv turns its 2*C parameters into C bias elements
    np.testing.assert_array_equal(
        lc.weight_elems.sum(axis=1), np.rint(nc.params * 1e6) - _folded_bn_channels()
    )


def _conv_followed_by_bn(net: Any) -> dict[str, int]:
    """Name of each conv directly followed by a BN in the real module tree -> its channels."""
    nn = torch.nn
    out: dict[str, int] = {}
    for name, module in net.named_modules():
        children = list(module.named_children())
        for (cname, child), (_, nxt) in itertools.pairwise(children):
            if isinstance(child, nn.Conv2d) and isinstance(nxt, nn.BatchNorm2d):
                out[f"{name}.{cname}" if name else cname] = nxt.num_features
    return out


def _fused_adds(net: Any) -> set[str]:
    """Module paths of the ops whose output is added to an earlier operand of the same sum.

    Read from the real network: an InferCell's ``node_IX`` lists each node's operands in sum
    order; a ResNet block adds its shortcut to ``conv_b``.
    """
    out = set()
    for k, cell in enumerate(net.cells):
        if hasattr(cell, "node_IX"):
            out |= {f"cells.{k}.layers.{j}" for node in cell.node_IX for j in node[1:]}
        else:
            out.add(f"cells.{k}.conv_b")
    return out


HOOK_CASES = [
    ("cifar10", "8:16:24:32:40"),  # both skip convs present
    ("cifar10", "64:64:64:64:64"),  # neither
    ("ImageNet16-120", "40:32:32:56:8"),  # only the one of cells.4
    ("cifar100", "16:48:24:24:64"),  # only the one of cells.2
]


@pytest.mark.parametrize(("dataset", "text"), HOOK_CASES)
def test_layers_match_the_real_network(dataset: str, text: str) -> None:
    lc: LayerCosts = layer_costs(dataset)
    i = Arch.from_string(text).index
    net = build_network(text, dataset)
    flop_benchmark.add_flops_counting_methods(net)
    shapes: dict[str, tuple[int, int]] = {}

    def recorder(name: str) -> Any:
        def hook(module: Any, inputs: tuple[Any, ...], output: Any) -> None:
            shapes[name] = (inputs[0][0].numel(), output[0].numel())

        return hook

    present = [n for j, n in enumerate(lc.names) if lc.present[i, j]]
    for name in present:
        net.get_submodule(name).register_forward_hook(recorder(name))
    with torch.no_grad():
        net(torch.zeros(input_shape(dataset)))

    # every module that computes is in the table, and only those
    compute = (torch.nn.Conv2d, torch.nn.Linear, torch.nn.AvgPool2d, torch.nn.AdaptiveAvgPool2d)
    real = [n for n, m in net.named_modules() if isinstance(m, compute)]
    assert sorted(real) == sorted(present)
    assert len(shapes) == len(present)

    folded = _conv_followed_by_bn(net)
    fused = _fused_adds(net)
    n_params = sum(p.numel() for p in net.parameters())
    lastact = net.get_submodule("lastact.0")
    assert isinstance(lastact, torch.nn.BatchNorm2d)
    lastact_bn = lastact.num_features
    for j, name in enumerate(lc.names):
        if not lc.present[i, j]:  # a skip conv where the cell's skip is the identity
            assert type(net.get_submodule(name.removesuffix(".conv"))).__name__ == "Identity"
            continue
        module = net.get_submodule(name)
        assert lc.residual[j] == (name.removesuffix(".op.1") in fused), name
        n_in, n_out = shapes[name]
        residual = n_out if lc.residual[j] else 0
        assert lc.input_elems[i, j] == n_in + residual, name
        assert lc.output_elems[i, j] == n_out, name
        if hasattr(module, "__flops__"):  # xautodl's own per-module counter (conv, fc, 2x2 pool)
            assert lc.macs[i, j] == module.__flops__, name
        else:
            assert lc.macs[i, j] == n_in, name  # global pooling
        own = sum(p.numel() for p in module.parameters())
        if lc.kinds[j] == "conv":
            assert lc.weight_elems[i, j] == own + folded.get(name, 0), name
        elif name == "global_pooling":
            assert lc.weight_elems[i, j] == 2 * lastact_bn
        else:
            assert lc.weight_elems[i, j] == own, name
    assert lc.weight_elems[i].sum() == n_params - sum(folded.values())
    flop_benchmark.remove_hook_function(net)


# ---- build_network ---------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", DATASET_NAMES)
def test_build_network_forward(dataset: str) -> None:
    net = build_network("8:16:24:32:40", dataset)
    assert not net.training
    assert type(net).__name__ == "DynamicShapeTinyNet"
    state = torch.random.get_rng_state()
    build_network(0, dataset)
    assert torch.equal(torch.random.get_rng_state(), state)  # global generator untouched
    with torch.no_grad():
        features, logits = net(torch.zeros(input_shape(dataset, batch=2)))
    assert features.shape == (2, 40)
    assert logits.shape == (2, get_dataset(dataset).num_classes)


def test_xautodl_config_is_the_facts_config() -> None:
    config = xautodl_config(32767, "cifar10")
    assert config == {
        "name": "infer.shape.tiny",
        "channels": "64:64:64:64:64",
        "genotype": "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|"
        "+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|",
        "num_classes": 10,
    }
    assert config["genotype"] == GENOTYPE
    assert xautodl_config("8:8:8:8:8", "ImageNet16-120")["num_classes"] == 120
    with pytest.raises(ValueError):
        xautodl_config("8:8:8:8", "cifar10")


def test_build_network_without_xautodl_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "xautodl", None)
    monkeypatch.setitem(sys.modules, "xautodl.models", None)
    with pytest.raises(MissingDependencyError) as info:
        build_network(0, "cifar10")
    assert "pip install nasfilter[torch]" in str(info.value)
    assert "pip install --no-deps xautodl==1.0.0" in str(info.value)
    assert isinstance(info.value, ImportError)


@pytest.mark.subprocess
def test_importing_costs_does_not_import_torch() -> None:
    code = (
        "import sys, nasfilter.bench.costs, nasfilter.bench.network; "
        "nasfilter.bench.costs.network_costs('cifar10'); "
        "nasfilter.bench.network.layer_costs('cifar10'); "
        "heavy = {'torch', 'xautodl'} & set(sys.modules); assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- layer_table: the shared LayerTable of all 32768 ------------------------------------------
@pytest.mark.parametrize("dataset", ["cifar10", "imagenet16-120"])
def test_layer_table_is_layer_costs_exactly(dataset: str) -> None:
    lc, t = layer_costs(dataset), layer_table(dataset)
    assert layer_table(get_dataset(dataset)) is t  # cached
    assert t.names == lc.names and t.n_networks == 32768
    assert t.kinds == tuple({"conv": "conv", "pool": "memory", "fc": "linear"}[k] for k in lc.kinds)
    for name in ("macs", "weight_elems", "input_elems", "output_elems", "present"):
        assert np.array_equal(getattr(t, name), getattr(lc, name)), name
    assert np.all(t.groups == 1)


@pytest.mark.parametrize("dataset", ["cifar10", "imagenet16-120"])
def test_layer_table_gemm_shapes_from_the_channel_strings(dataset: str) -> None:
    t = layer_table(dataset)
    size = get_dataset(dataset).input_size
    ch = all_channels().astype(float)
    stem = t.names.index("stem.0")
    # stem: 3x3 conv 3 -> c0 on the full map: M = H*W, N = c0, K = 3*3*3
    assert np.all(t.gemm_m[:, stem] == size * size)
    assert np.array_equal(t.gemm_n[:, stem], ch[:, 0]) and np.all(t.gemm_k[:, stem] == 27)
    # cells.3's conv_b: 3x3 c3 -> c3 at H/4; the 1x1 skip of cells.4: K = c3, absent if c3 == c4
    conv_b = t.names.index("cells.3.conv_b.op.1")
    assert np.all(t.gemm_m[:, conv_b] == (size // 4) ** 2)
    assert np.array_equal(t.gemm_k[:, conv_b], 9 * ch[:, 3])
    skip = t.names.index("cells.4.layers.3.conv")
    same = ch[:, 3] == ch[:, 4]
    assert np.all(t.gemm_k[same, skip] == 0) and np.array_equal(t.gemm_k[~same, skip], ch[~same, 3])
    # dense convs: MACs = M x N x K; the classifier also counts its bias (xautodl's rule)
    kinds = np.array(t.kinds)
    conv = kinds == "conv"
    assert np.array_equal(t.macs[:, conv], (t.gemm_m * t.gemm_n * t.gemm_k)[:, conv])
    fc = t.names.index("classifier")
    assert np.array_equal(t.macs[:, fc], t.gemm_n[:, fc] * (t.gemm_k[:, fc] + 1))
    assert np.all(t.gemm_m[:, kinds == "memory"] == 0)
