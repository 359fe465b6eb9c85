"""Layer analysis of torch models: hand-counted layers, fusion rules, timm on the meta device."""

from __future__ import annotations

import numpy as np
import pytest
import torch

nn = torch.nn

from nasfilter.survey import (  # noqa: E402
    AnalysisError,
    UnknownModelError,
    analyze_model,
    profile_model,
    timm_layer_table,
    timm_profile,
)
from nasfilter.survey.timm_import import import_timm  # noqa: E402


class Tiny(nn.Module):
    """conv-BN-ReLU, depthwise-BN-ReLU, pointwise, 1x1 shortcut, add, ReLU, mean, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.pw = nn.Conv2d(8, 16, 1, bias=True)
        self.shortcut = nn.Conv2d(8, 16, 1, bias=False)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        y = self.pw(torch.relu(self.bn2(self.dw(x))))
        y = torch.relu(y + self.shortcut(x))
        return self.fc(y.mean((2, 3)))


# Counted by hand for a 3 x 8 x 8 input (64 pixels).
EXPECTED = {
    # name: (kind, macs, weights (BN folded into a bias), inputs, outputs, gemm m/n/k, groups)
    "conv1": ("conv", 64 * 8 * 27, 8 * 27 + 8, 3 * 64, 8 * 64, (64, 8, 27), 1),
    "dw": ("grouped_conv", 64 * 8 * 9, 8 * 9 + 8, 8 * 64, 8 * 64, (64, 8, 9), 8),
    "pw": ("conv", 64 * 16 * 8, 16 * 8 + 16, 8 * 64, 16 * 64, (64, 16, 8), 1),
    "shortcut": ("conv", 64 * 16 * 8, 16 * 8, 8 * 64, 16 * 64, (64, 16, 8), 1),
    "model:add": ("memory", 0, 0, 2 * 16 * 64, 16 * 64, (0, 0, 0), 1),
    "model:mean": ("memory", 0, 0, 16 * 64, 16, (0, 0, 0), 1),
    "fc": ("linear", 160, 170, 16, 10, (1, 10, 16), 1),
}


def test_tiny_model_counted_by_hand() -> None:
    table = analyze_model(Tiny(), (3, 8, 8))
    assert table.names == tuple(EXPECTED)
    assert table.n_networks == 1
    for i, (kind, macs, weights, inputs, outputs, gemm, groups) in enumerate(EXPECTED.values()):
        assert table.kinds[i] == kind, table.names[i]
        assert table.macs[0, i] == macs, table.names[i]
        assert table.weight_elems[0, i] == weights, table.names[i]
        assert table.input_elems[0, i] == inputs, table.names[i]
        assert table.output_elems[0, i] == outputs, table.names[i]
        got = (table.gemm_m[0, i], table.gemm_n[0, i], table.gemm_k[0, i])
        assert got == gemm, table.names[i]
        assert table.groups[0, i] == groups, table.names[i]


def test_profile_totals_and_fvcore_convention() -> None:
    profile = profile_model(Tiny(), (1, 3, 8, 8))
    conv_macs = 64 * 8 * 27 + 64 * 8 * 9 + 2 * 64 * 16 * 8
    assert profile.macs == conv_macs + 160
    assert profile.conv_mac_fraction == pytest.approx(conv_macs / (conv_macs + 160))
    assert profile.is_cnn
    # Own parameters: conv1 216, bn1 16, dw 72, bn2 16, pw 144, shortcut 128, fc 170.
    assert profile.params == 762
    # fvcore also counts 2 per element of each affine batch norm (two of 8 x 64 elements).
    assert profile.fvcore_macs == profile.macs + 2 * 2 * 8 * 64


def test_real_weights_are_left_alone() -> None:
    model = Tiny()
    before = model.conv1.weight.detach().clone()
    analyze_model(model, (3, 8, 8))
    assert model.conv1.weight.device.type == "cpu"
    assert torch.equal(model.conv1.weight, before)


def test_linear_only_model_is_not_a_cnn() -> None:
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 32), nn.GELU(), nn.Linear(32, 5))
    profile = profile_model(model, (3, 4, 4))
    assert profile.table.kinds == ("linear", "linear")  # flatten is a view, GELU is fused
    assert profile.macs == 48 * 32 + 32 * 5
    assert profile.conv_mac_fraction == 0.0
    assert not profile.is_cnn


def test_se_gate_is_memory_traffic_not_fused() -> None:
    class SE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 1)
            self.reduce = nn.Conv2d(4, 2, 1)
            self.expand = nn.Conv2d(2, 4, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.conv(x)
            s = torch.sigmoid(self.expand(torch.relu(self.reduce(x.mean((2, 3), keepdim=True)))))
            return x * s

    table = analyze_model(SE(), (4, 5, 5))
    assert table.kinds == ("conv", "memory", "conv", "conv", "memory")
    gate = table.names.index("model:mul")
    assert table.input_elems[0, gate] == 4 * 25 + 4
    assert table.output_elems[0, gate] == 4 * 25


def test_bad_inputs_name_the_value() -> None:
    with pytest.raises(TypeError, match=r"torch\.nn\.Module"):
        analyze_model("resnet50", (3, 224, 224))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\(C, H, W\)"):
        analyze_model(Tiny(), (224, 224))
    with pytest.raises(ValueError, match=">= 1"):
        analyze_model(Tiny(), (3, 0, 8))


def test_untraceable_model_is_named() -> None:
    class Broken(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(x).item()  # data-dependent: impossible on the meta device

    with pytest.raises(AnalysisError, match="'Broken' cannot be traced"):
        analyze_model(Broken(), (3, 8, 8))


# timm is in the `test` extra; it is imported through nasfilter's route (see timm_import).
import_timm()


def test_timm_resnet50_matches_published_counts() -> None:
    # ResNet-50 at 224 px: 4,089,184,256 MACs and 25,557,032 parameters (torchvision's and
    # timm's published figures; 4.09 GMACs, 25.56 M).
    profile = timm_profile("resnet50.a1_in1k", 224)
    assert profile.name == "resnet50"
    assert profile.macs == 4_089_184_256
    assert profile.params == 25_557_032
    assert profile.table.kinds.count("conv") == 53  # 49 in the bottlenecks, 4 downsamples
    assert profile.table.kinds.count("linear") == 1
    assert profile.is_cnn


def test_timm_depthwise_layers_and_layer_table() -> None:
    table = timm_layer_table("mobilenetv2_100", 224)
    grouped = [i for i, k in enumerate(table.kinds) if k == "grouped_conv"]
    assert len(grouped) == 17  # one depthwise conv per inverted residual block
    # Depthwise: groups == C_out and a reduction of 3 x 3 = 9 per output.
    assert np.all(table.groups[0, grouped] == table.gemm_n[0, grouped])
    assert np.all(table.gemm_k[0, grouped] == 9)


def test_timm_unknown_name_lists_close_matches() -> None:
    with pytest.raises(UnknownModelError, match="resnet50"):
        timm_layer_table("resnet5O", 224)
    with pytest.raises(ValueError, match="img_size"):
        timm_layer_table("resnet50", 0)


class PixelMlp(nn.Module):
    """A ConvNeXt-style block of a user's own: depthwise conv, permute to (N, H, W, C), layer
    norm, two Linear layers per pixel, permute back; then a group norm and a token Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.dw = nn.Conv2d(16, 16, 7, padding=3, groups=16)
        self.norm = nn.LayerNorm(16)
        self.fc1 = nn.Linear(16, 64)
        self.fc2 = nn.Linear(64, 16)
        self.gn = nn.GroupNorm(1, 16)
        self.tokens = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(y))))
        x = self.gn(x + y.permute(0, 3, 1, 2))
        return self.tokens(x.flatten(2).transpose(1, 2))  # (N, H x W, C): a token sequence


def test_a_linear_on_every_pixel_of_a_map_is_a_1x1_conv() -> None:
    from nasfilter.bench.layer_table import KERNEL_LAYOUTS

    table = profile_model(PixelMlp(), (16, 8, 8)).table
    kinds = dict(zip((n.split(":")[0] for n in table.names), table.kinds, strict=True))
    assert kinds["fc1"] == kinds["fc2"] == "conv"  # per pixel of an (N, H, W, C) map
    assert kinds["tokens"] == "linear"  # per token of a flattened sequence
    i = table.names.index("fc1")
    assert table.gemm_m[0, i] == 64 and table.gemm_k[0, i] == 16 and table.gemm_n[0, i] == 64
    assert table.in_channels[0, i] == 16
    layout = {n.split(":")[-1]: table.kernel_layout[0, j] for j, n in enumerate(table.names)}
    assert layout["native_layer_norm"] == KERNEL_LAYOUTS["nhwc"]  # over a permuted map
    assert layout["native_group_norm"] == KERNEL_LAYOUTS["nchw"]
    assert table.in_channels[0, table.names.index("dw")] == 16


@pytest.mark.slow
def test_timm_convnext_is_a_cnn_its_pointwise_linears_are_convs() -> None:
    # timm's published ConvNeXt-T at 224 px: 4.47 GMACs, 28.59 M parameters (the shipped
    # timm benchmark file's infer_gmacs and param_count).
    profile = timm_profile("convnext_tiny", 224)
    assert profile.params == pytest.approx(28.59e6, rel=5e-4)
    assert profile.macs / 1e9 == pytest.approx(4.47, rel=0.01)
    kinds = profile.table.kinds
    # 18 blocks of two pointwise Linear layers over channels-last maps, the stem and three
    # downsampling convs; the classifier stays a linear layer.
    assert kinds.count("conv") == 36 + 4 and kinds.count("linear") == 1
    assert kinds.count("grouped_conv") == 18
    assert profile.conv_mac_fraction > 0.99 and profile.is_cnn
    # A vision transformer's Linear layers act on tokens: still not a CNN.
    assert not timm_profile("vit_small_patch16_224", 224).is_cnn


def test_the_recording_mode_is_outside_dynamos_guard() -> None:
    """torch wraps a dispatch mode's __torch_dispatch__ in its dynamo guard unless the mode
    opts out; the recorder's does (nothing is compiled), and is one class per process."""
    from nasfilter.survey.recorder import _mode_class

    cls = _mode_class()
    assert cls is _mode_class()
    assert not hasattr(cls.__dict__["__torch_dispatch__"], "__wrapped__")
