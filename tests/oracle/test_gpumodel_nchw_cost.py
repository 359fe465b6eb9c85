"""The fixed cost of a dense conv in eager NCHW (``nchw_conv_seconds``), by hand."""

from dataclasses import replace

import numpy as np
import pytest

from nasfilter.bench.layer_table import KERNEL_LAYOUTS, LayerTable
from nasfilter.oracle.devices import DeviceSpec
from nasfilter.oracle.gpumodel import GpuModelParams, layer_seconds, layer_work

DEV = DeviceSpec("toy", 100e12, 1e12, sm_count=2, memory_bytes=1e9)
BASE = GpuModelParams(0.5, 0.8, 2e-6, 0.1, 4.0, 2.0, 0.05, 0.25, 3.0)
COST = 30e-6


def _table(kinds: tuple[str, ...], layouts: tuple[str, ...]) -> LayerTable:
    """Layers of one image: 8x8 map, 16 -> 32 channels, 3x3 convs (K = 144)."""
    n = len(kinds)
    one = np.ones((1, n))
    return LayerTable(
        names=tuple(f"l{i}" for i in range(n)),
        kinds=kinds,
        gemm_m=64.0 * one,
        gemm_n=32.0 * one,
        gemm_k=np.where(np.array(kinds) == "memory", 0.0, 144.0)[None, :] * one,
        groups=one,
        macs=np.where(np.array(kinds) == "memory", 0.0, 64 * 32 * 144.0)[None, :] * one,
        weight_elems=32 * 144.0 * one,
        input_elems=1024.0 * one,
        output_elems=2048.0 * one,
        present=np.ones((1, n), dtype=bool),
        in_channels=16.0 * one,
        kernel_layout=np.array([KERNEL_LAYOUTS[x] for x in layouts])[None, :],
    )


def _extra(table: LayerTable, layout: str, engine: str) -> np.ndarray:
    """Seconds per layer that the cost adds, (L,)."""
    work = layer_work(table, DEV, 64)
    with_cost = replace(BASE, nchw_conv_seconds=COST)
    new = layer_seconds(work, DEV, with_cost, layout=layout, engine=engine)[0]
    return new - layer_seconds(work, DEV, BASE, layout=layout, engine=engine)[0]


def test_each_dense_conv_pays_it_once_in_eager_nchw_only() -> None:
    t = _table(("conv", "memory", "conv"), ("nhwc", "any", "nhwc"))
    assert _extra(t, "nchw", "eager") == pytest.approx([COST, 0.0, COST], abs=1e-15)
    assert np.all(_extra(t, "nhwc", "eager") == 0.0)  # channels_last: no conversion
    assert np.all(_extra(t, "nchw", "fused") == 0.0)  # the engine picks its layouts


def test_none_after_a_channels_last_norm() -> None:
    # A LayerNorm2d permutes the map to channels-last: the conv after it runs NHWC.
    t = _table(("conv", "memory", "conv"), ("nhwc", "nhwc", "nhwc"))
    assert _extra(t, "nchw", "eager") == pytest.approx([COST, 0.0, 0.0], abs=1e-15)
