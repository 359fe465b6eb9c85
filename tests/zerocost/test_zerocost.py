"""Zero-cost proxies: checked against independent references (shipped NATS params/FLOPs,
xautodl's own counter, a synflow score worked out by hand), per-seed determinism, the NaN rule
on a disconnected cell, the registry and bad inputs."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("xautodl")

from nasfilter.bench.costs import network_costs  # noqa: E402
from nasfilter.bench.spaces.sss import as_arch  # noqa: E402
from nasfilter.bench.tss_data import load_tss_arrays  # noqa: E402
from nasfilter.zerocost import (  # noqa: E402
    Probe,
    ZeroCostProxy,
    check_finite,
    get_proxy,
    known_proxies,
    parse_proxies,
    register_proxy,
)
from nasfilter.zerocost.base import _REGISTRY  # noqa: E402
from nasfilter.zerocost.compute import score_arch  # noqa: E402
from nasfilter.zerocost.nets import build, is_connected, stand_in_batch  # noqa: E402
from nasfilter.zerocost.proxies import Synflow  # noqa: E402

EMPTY_CELL = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
SMALL_CELL = "|skip_connect~0|+|none~0|nor_conv_1x1~1|+|none~0|none~1|skip_connect~2|"


@pytest.mark.parametrize("dataset", ["cifar10", "ImageNet16-120"])
@pytest.mark.parametrize("index", [0, 1234, 15624])
def test_tss_params_and_flops_match_the_shipped_nats_figures(dataset: str, index: int) -> None:
    arrays = load_tss_arrays(dataset)
    scores = score_arch("tss", index, dataset, parse_proxies("params,flops"))
    assert scores["params"][0] == pytest.approx(float(arrays.params_M[index]), rel=1e-6)
    assert scores["flops"][0] == pytest.approx(float(arrays.flops_M[index]), rel=1e-6)


def test_sss_params_and_flops_match_xautodl_get_model_infos() -> None:
    from xautodl.utils import get_model_infos

    arch = "8:64:16:40:24"
    net = build("sss", arch, "cifar100", 0)
    flops_m, params_m = get_model_infos(net, (1, 3, 32, 32))
    scores = score_arch("sss", arch, "cifar100", parse_proxies("params,flops"))
    assert scores["params"][0] == pytest.approx(params_m, rel=1e-6)
    assert scores["flops"][0] == pytest.approx(flops_m, rel=1e-6)
    index = as_arch(arch).index
    assert scores["params"][0] == pytest.approx(network_costs("cifar100").params[index], rel=1e-6)


class _Hand(torch.nn.Module):
    """conv 1x1 (3 -> 2, no bias) -> BN -> global mean -> linear (2 -> 1, bias)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 2, 1, bias=False)
        self.bn = torch.nn.BatchNorm2d(2)
        self.fc = torch.nn.Linear(2, 1)
        with torch.no_grad():
            self.conv.weight.copy_(
                torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]])[..., None, None]
            )
            self.fc.weight.copy_(torch.tensor([[-2.0, 0.5]]))
            self.fc.bias.fill_(7.0)
            self.bn.weight.fill_(-5.0)  # removed by synflow (bn=False): must not count

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f = self.bn(self.conv(x)).mean(dim=(2, 3))
        return f, self.fc(f)


def test_synflow_of_a_hand_built_network_is_the_hand_computed_value() -> None:
    # |W| on ones: R = sum_j |v_j| sum_c |W_jc| + |b|; dR/dW_jc = |v_j|, dR/dv_j = sum_c |W_jc|
    # so S = 2 * sum_jc |W_jc| |v_j| = 2 * (2 * 3.5 + 0.5 * 4) = 18
    probe = SimpleNamespace(network=_Hand, dataset=SimpleNamespace(input_size=4))
    assert Synflow().score(probe) == pytest.approx(math.log(18.0), rel=1e-12)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "names", ["synflow,zen", pytest.param("jacob_cov,snip,naswot", marks=pytest.mark.slow)]
)
def test_scores_are_a_pure_function_of_the_seed_and_leave_torch_rng_alone(names: str) -> None:
    proxies = parse_proxies(names)
    torch.manual_seed(123)
    before = torch.get_rng_state().clone()
    a = score_arch("tss", SMALL_CELL, "ImageNet16-120", proxies, seed=5)
    assert torch.equal(torch.get_rng_state(), before)
    b = score_arch("tss", SMALL_CELL, "ImageNet16-120", proxies, seed=5)
    c = score_arch("tss", SMALL_CELL, "ImageNet16-120", proxies, seed=6)
    for name in names.split(","):
        assert a[name][0] == b[name][0], name
        assert a[name][0] != c[name][0] or name == "synflow", name  # synflow: |W| on ones


def test_stand_in_batch_is_gaussian_with_labels_in_range() -> None:
    x, y = stand_in_batch("cifar100", 64, seed=1)
    assert tuple(x.shape) == (64, 3, 32, 32) and x.dtype == torch.float32
    assert abs(float(x.mean())) < 0.02 and abs(float(x.std()) - 1) < 0.02
    assert int(y.min()) >= 0 and int(y.max()) < 100


@pytest.mark.slow
def test_disconnected_cell_gets_the_documented_values_and_is_never_ranked() -> None:
    assert not is_connected("tss", EMPTY_CELL) and is_connected("tss", SMALL_CELL)
    scores = score_arch("tss", EMPTY_CELL, "ImageNet16-120", parse_proxies(None))
    for name in ("synflow", "jacob_cov", "zen", "naswot"):  # no ReLU reads the cell input
        assert math.isnan(scores[name][0]), name
    for name in ("snip", "grasp", "grad_norm"):
        assert scores[name][0] == 0.0, name
    # fisher: only the classifier's output (= its bias) carries a * dL/da
    assert 0 < scores["fisher"][0] < 1e-3


def test_nan_scores_are_refused_by_proxy_name_where_ranked() -> None:
    with pytest.raises(ValueError, match=r"proxy 'zen' has 1 NaN.*architectures \[7\]"):
        check_finite("zen", np.array([1.0, np.nan]), np.array([3, 7]))
    with pytest.raises(ValueError, match="proxy 'synflow' has 1 NaN or infinite"):
        check_finite("synflow", np.array([np.inf, 2.0]))
    cheap = score_arch("tss", EMPTY_CELL, "ImageNet16-120", parse_proxies("synflow,zen,params"))
    assert math.isnan(cheap["synflow"][0]) and math.isnan(cheap["zen"][0])
    assert math.isfinite(cheap["params"][0])


def test_unknown_proxy_lists_the_known_ones() -> None:
    with pytest.raises(
        ValueError, match="unknown zero-cost proxy 'synflo'; known proxies: synflow"
    ):
        get_proxy("synflo")
    with pytest.raises(ValueError, match="'snip' is given twice"):
        parse_proxies("snip,snip")


def test_a_users_proxy_plugs_in_as_a_small_class() -> None:
    class Depth(ZeroCostProxy):
        name = "n_convs"
        needs_data = False

        def score(self, probe: Probe) -> float:
            mods = probe.network().modules()
            return float(sum(isinstance(m, torch.nn.Conv2d) for m in mods))

    register_proxy(Depth)
    try:
        assert "n_convs" in known_proxies()
        got = score_arch("tss", EMPTY_CELL, "cifar10", parse_proxies("n_convs"))
        assert got["n_convs"][0] == 1 + 2 * 3  # stem + two ResNet blocks (a, b, shortcut)
        with pytest.raises(ValueError, match="already registered"):
            register_proxy(type("Other", (ZeroCostProxy,), {"name": "n_convs"}))
    finally:
        _REGISTRY.pop("n_convs")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: Probe("tss", 15625, "cifar10", 0), r"\[0, 15624\], got 15625"),
        (lambda: Probe("tss", 0, "cifar10", -1), "seed must be an integer"),
        (lambda: Probe("tss", "8:8:8:8:8", "cifar10", 0), "sss space"),
        (lambda: Probe("sss", 0, "mnist", 0), "mnist"),
        (lambda: register_proxy(int), "ZeroCostProxy subclass"),  # type: ignore[arg-type]
    ],
)
def test_bad_inputs_are_named(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()  # type: ignore[operator]


def test_top_recall_and_rank_signal_against_hand_counts() -> None:
    from nasfilter.zerocost.compare import rank_signal, top_recall

    acc = np.arange(40, dtype=float)  # the best 2 (5 % of 40) are 38 and 39
    scores = acc.copy()
    scores[38] = -1.0  # one of the two best is ranked last
    assert top_recall(scores, acc) == 0.5
    r = rank_signal("s", np.array([1.0, 2.0, 3.0, 5.0, 4.0]), np.arange(5.0))
    # 10 pairs, one discordant (3, 4): tau = (9 - 1) / 10; rho = 1 - 6 * 2 / (5 * 24)
    assert r.kendall == pytest.approx(0.8) and r.spearman == pytest.approx(0.9)
    with pytest.raises(ValueError, match=r"proxy 'jacob_cov' has 1 NaN.*\[12\]"):
        rank_signal("jacob_cov", np.array([1.0, np.nan, 2.0]), np.ones(3), np.array([11, 12, 13]))


@pytest.mark.parametrize(("space", "arch"), [("tss", SMALL_CELL), ("sss", "8:64:16:40:24")])
def test_build_never_touches_torch_global_rng_and_is_bit_equal_per_seed(
    space: str, arch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.manual_seed(7)
    before = torch.get_rng_state().clone()

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("build touched torch's global generator")

    monkeypatch.setattr(torch, "manual_seed", refuse)
    monkeypatch.setattr(torch.random, "fork_rng", refuse)
    monkeypatch.setattr(torch, "set_rng_state", refuse)
    a = build(space, arch, "cifar10", 3).state_dict()
    assert torch.equal(torch.get_rng_state(), before)
    b = build(space, arch, "cifar10", 3).state_dict()
    c = build(space, arch, "cifar10", 4).state_dict()
    assert list(a) == list(b) == list(c)
    assert all(torch.equal(a[k], b[k]) for k in a)
    weights = [k for k in a if k.endswith("weight") and a[k].dim() > 1]
    assert weights and all(not torch.equal(a[k], c[k]) for k in weights)


def test_build_uses_torchs_default_init_distributions() -> None:
    net = build("tss", "|nor_conv_3x3~0|+|none~0|none~1|+|none~0|none~1|none~2|", "cifar10", 0)
    convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    bns = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    stem = convs[0]  # 3 -> 16 channels, 3 x 3: fan_in 27, bound 1/sqrt(27) = 0.19245
    assert stem.weight.abs().max() <= 0.19245 and stem.weight.abs().max() > 0.18
    big = max(convs, key=lambda m: m.weight.numel())  # 64 -> 64, 3 x 3: fan_in 576
    bound, w = 1 / 24.0, big.weight.detach()
    assert float(w.abs().max()) <= bound
    assert float(w.std()) == pytest.approx(bound / math.sqrt(3), rel=0.02)  # U(-b, b)
    assert abs(float(w.mean())) < 0.002
    head = net.classifier  # 64 -> 10 linear: weight and bias bound 1/8
    bias = head.bias.detach().abs().max()
    assert float(bias) <= 0.125 and float(bias) > 0.05
    for bn in bns:
        if bn.weight is not None:
            assert torch.all(bn.weight == 1) and torch.all(bn.bias == 0)
        assert torch.all(bn.running_mean == 0) and torch.all(bn.running_var == 1)


@pytest.mark.parametrize("index", [0, 4708, 11343])
def test_the_local_generator_build_reproduces_the_shipped_scores(index: int) -> None:
    # the shipped scores were computed with the earlier build (manual_seed inside fork_rng);
    # the local-generator init draws the same weights, so synflow, params and FLOPs are equal
    from nasfilter.zerocost.scorefile import packaged_scores

    shipped = packaged_scores("tss", "cifar10")
    got = score_arch("tss", index, "cifar10", parse_proxies("synflow,params,flops"))
    for name in ("synflow", "params", "flops"):
        if shipped.computed[name][index]:
            assert np.float32(got[name][0]) == shipped.values[name][index], name


def test_naswot_kernel_counts_the_units_on_which_two_images_agree() -> None:
    from nasfilter.zerocost.proxies import _hamming_kernel

    codes = np.random.default_rng(3).random((9, 5000)) < 0.3
    agree = (codes[:, None, :] == codes[None, :, :]).sum(axis=-1)  # counted, not multiplied
    got = _hamming_kernel(torch.from_numpy(codes))
    assert got.dtype == torch.float64 and tuple(got.shape) == (9, 9)
    assert np.array_equal(got.numpy(), agree.astype(np.float64))
    c = torch.from_numpy(codes).double()  # Mellor et al.'s two-product form, bit for bit
    assert torch.equal(got, c @ c.t() + (1.0 - c) @ (1.0 - c).t())
