"""FoldedCNNs: real folded modules that run, MACs kept, intensity up by about sqrt(f)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from nasfilter.survey import profile_model
from nasfilter.survey.fold import FoldError, check_fold, fold
from nasfilter.survey.timm_import import import_timm
from nasfilter.survey.timm_models import build_timm_model

import_timm()


class SmallResNet(nn.Module):
    """Stem, one residual block with a depthwise conv, SE-free head: 10 classes."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU()
        )
        self.block = nn.Sequential(
            nn.Conv2d(width, width, 1),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1, groups=width),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, width, 1),
        )
        self.head = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = torch.relu(x + self.block(x))
        return self.head(x.mean((2, 3)))


@pytest.mark.parametrize("f", [4, 9])
def test_folded_small_model_runs_on_cpu_with_the_right_shapes(f: int) -> None:
    s = math.isqrt(f)
    model = SmallResNet()
    folded = fold(model, f, (3, 16, 16)).eval()
    x = torch.randn(8 // 4 if f == 4 else 1, 3 * f, 16, 16)
    y = folded(x)
    assert y.shape == (x.shape[0], 10 * f)
    assert torch.isfinite(y).all()
    assert folded.stem[0].in_channels == 3 * f
    assert folded.stem[0].out_channels == 16 * s
    assert folded.block[3].groups == 16 * s  # depthwise stays depthwise
    assert folded.head.in_features == 16 * s
    # The original is untouched.
    assert model.stem[0].in_channels == 3 and model(torch.randn(2, 3, 16, 16)).shape == (2, 10)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "mobilenetv2_100"])
def test_folded_timm_models_run_on_cpu(name: str) -> None:
    timm = import_timm()
    model = timm.create_model(name, pretrained=False, num_classes=7).eval()
    folded = fold(model, 4, (3, 64, 64)).eval()
    with torch.no_grad():
        y = folded(torch.randn(2, 12, 64, 64))
    assert y.shape == (2, 28)


# Families the issue names, on the meta device at their native size.
FAMILIES = [
    "resnet50",
    "regnety_040",
    "efficientnet_b0",
    "mobilenetv3_large_100",
    "mobilenetv2_100",
]


@pytest.mark.parametrize("name", FAMILIES)
def test_folded_macs_within_10_percent_and_intensity_up_by_sqrt_f(name: str) -> None:
    f = 4
    model = build_timm_model(name)
    original = profile_model(model, (3, 224, 224))
    folded = profile_model(fold(model, f, (3, 224, 224)), (3 * f, 224, 224))
    # MACs per original image (the folded input stands for f images).
    assert folded.macs / f == pytest.approx(original.macs, rel=0.10)
    # Intensity of the dense inner convolutions (those the proof covers: not the first layer,
    # not the classifier, not depthwise): up by sqrt(f) at the same number of images.
    batch = 256
    t0, t1 = original.table, folded.table
    inner = [
        i
        for i, k in enumerate(t0.kinds)
        if k == "conv" and 0 < i and t0.gemm_m[0, i] > 1 and t0.gemm_k[0, i] >= 64
    ]
    assert len(inner) > 5
    ratio = t1.intensity(batch // f)[0, inner] / t0.intensity(batch)[0, inner]
    assert np.median(ratio) == pytest.approx(math.sqrt(f), rel=0.1)
    whole = float(t1.network_intensity(batch // f)[0] / t0.network_intensity(batch)[0])
    assert 1.5 < whole <= 2.1


def test_fold_factor_must_be_a_perfect_square() -> None:
    with pytest.raises(ValueError, match=r"perfect square.*got 3"):
        fold(SmallResNet(), 3, (3, 16, 16))
    with pytest.raises(ValueError, match="got 0"):
        check_fold(0)
    assert check_fold(16) == 16


class Scaled(SmallResNet):
    """A per-channel scale (like LayerScale) and, optionally, a map-shaped parameter."""

    def __init__(self, positional: bool = False) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(16))
        if positional:
            self.pos = nn.Parameter(torch.zeros(16, 16, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x) * self.gamma[None, :, None, None]
        if hasattr(self, "pos"):
            x = x + self.pos
        return self.head(x.mean((2, 3)))


def test_per_channel_parameters_are_widened() -> None:
    folded = fold(Scaled(), 4, (3, 16, 16)).eval()
    assert folded.gamma.shape == (32,)
    assert folded(torch.randn(3, 12, 16, 16)).shape == (3, 40)


def test_unwidenable_parameter_is_named() -> None:
    match = r"module '' \(Scaled\) holds parameter 'pos' of shape \(16, 16, 16\)"
    with pytest.raises(FoldError, match=match):
        fold(Scaled(positional=True), 4, (3, 16, 16))


@pytest.mark.parametrize("f", [4, 9])
def test_per_original_image_table_predicts_the_folded_batch(f: int) -> None:
    """A batch of N original images is N / f folded inputs: the per-original-image table at
    batch N must cost exactly what the folded table costs at N / f (GEMM rows included)."""
    from nasfilter.oracle.devices import get_device
    from nasfilter.survey.survey import per_original_image
    from nasfilter.survey.throughput import predicted_throughput, roofline_throughput

    width = 32
    table = profile_model(fold(SmallResNet(width), f, (3, 32, 32)), (3 * f, 32, 32)).table
    per_image = per_original_image(table, f)
    device = get_device("rtx4090")
    folded_batches = 64
    n = folded_batches * f
    for layout in ("nchw", "nhwc"):
        folded_inputs_per_s = predicted_throughput(table, device, folded_batches, layout)
        assert predicted_throughput(per_image, device, n, layout) == pytest.approx(
            f * folded_inputs_per_s, rel=1e-12
        )
    assert roofline_throughput(per_image, device, n) == pytest.approx(
        f * roofline_throughput(table, device, folded_batches), rel=1e-12
    )
