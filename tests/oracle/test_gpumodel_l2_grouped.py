"""The L2 hits of a read of the tensor just written, and the memory-bound rate of grouped and
depthwise convs (each per layout), by hand; older calibration formats are refused."""

import json
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench.layer_table import LayerTable
from nasfilter.oracle.calibrated import CalibrationFileError, load_calibration
from nasfilter.oracle.devices import DEVICES, DeviceSpec
from nasfilter.oracle.gpumodel import (
    DEPTHWISE_FLOP_PER_BYTE,
    GpuModelParams,
    l2_hit_share,
    layer_seconds,
    layer_work,
)

# A toy GPU: 2 SMs, 100 TFLOP/s, 1 TB/s, 1 GB, with and without a 4 MB L2.
NO_L2 = DeviceSpec("toy", 100e12, 1e12, sm_count=2, memory_bytes=1e9)
L2 = DeviceSpec("toy-l2", 100e12, 1e12, sm_count=2, memory_bytes=1e9, l2_bytes=4e6)
PARAMS = GpuModelParams(
    tensor_efficiency=0.5,
    memory_efficiency=0.8,
    kernel_seconds=0.0,
    grouped_efficiency=0.4,
    eager_passes=4.0,
    nchw_transpose_passes=2.0,
    nhwc_grouped_efficiency=0.2,
    unaligned_efficiency=0.25,
    layout_copy_passes=3.0,
    nchw_conv_seconds=0.0,
    depthwise_efficiency=0.5,
    nhwc_depthwise_efficiency=0.25,
)


def _layer(kind: str, groups: float, in_ch: float, n: float, k: float) -> LayerTable:
    one = np.ones((1, 1))
    return LayerTable(
        names=("l",),
        kinds=(kind,),
        gemm_m=1000.0 * one,
        gemm_n=n * one,
        gemm_k=k * one,
        groups=groups * one,
        macs=1000.0 * n * k * one,
        weight_elems=0.0 * one,
        input_elems=1000.0 * in_ch * one,
        output_elems=1000.0 * n * one,
        present=np.ones((1, 1), dtype=bool),
        in_channels=in_ch * one,
    )


def test_hit_share_is_the_l2_over_the_tensor_capped_at_one() -> None:
    got = l2_hit_share(np.array([1e6, 4e6, 16e6, 400e6]), 4e6)
    assert got.tolist() == [1.0, 1.0, 0.25, 0.01]
    assert l2_hit_share(np.array([1e6]), None).tolist() == [0.0]  # L2 size unknown


def test_reads_of_the_tensor_just_written_hit_the_l2() -> None:
    # A dense 1x1 conv, 32 -> 32 channels on 1000 pixels, batch 250: in = out = 16 MB.
    t = _layer("conv", 1.0, 32.0, 32.0, 32.0)
    plain, cached = layer_work(t, NO_L2, 250), layer_work(t, L2, 250)
    size = 2 * 250 * 1000 * 32  # bytes of the input, and of the output
    assert plain.bytes[0, 0] == 2 * size
    hit = 4e6 / size  # 0.25 of the input read comes from the L2
    assert cached.bytes[0, 0] == pytest.approx(size * (1 - hit) + size)  # writes go to DRAM
    # An eager pass over the output: half of it reads (hit share 0.25), half writes.
    assert plain.eager_bytes[0, 0] == size
    assert cached.eager_bytes[0, 0] == pytest.approx(size * (1 - hit / 2))
    # NCHW transposes read and write the input and the output.
    assert cached.transpose_bytes[0, 0] == pytest.approx(2 * size * (1 - hit / 2))
    # A layer whose tensors fit the L2 reads nothing from DRAM.
    small = layer_work(t, L2, 1)
    assert small.bytes[0, 0] == pytest.approx(2 * 1000 * 32)


def test_a_depthwise_conv_runs_at_a_memory_bound_rate_per_layout() -> None:
    # Depthwise 3x3: 32 groups of one channel; each pads to 8 wide and K = 9 to 16.
    t = _layer("grouped_conv", 32.0, 32.0, 32.0, 9.0)
    w = layer_work(t, NO_L2, 1000)
    padded = 2 * 1000 * 1000 * 32 * 8 * 16
    assert w.grouped_flops[0, 0] == padded and w.depthwise[0, 0] == 1
    rate = 1e12 * DEPTHWISE_FLOP_PER_BYTE  # bandwidth x 64 FLOP/B: memory-bound
    memory = 2 * 1000 * 1000 * 64 / 0.8e12
    for layout, eff in (("nchw", 0.5), ("nhwc", 0.25)):
        got = layer_seconds(w, NO_L2, PARAMS, layout=layout, engine="eager")[0, 0]
        eager = 4.0 * 2 * 1000 * 1000 * 32 / 0.8e12  # no transposes for grouped convs
        assert got == pytest.approx(max(padded / (rate * eff), memory) + eager)
    # The fused engine takes the faster kernel.
    fused = layer_seconds(w, NO_L2, PARAMS, engine="fused")[0, 0]
    assert fused == pytest.approx(max(padded / (rate * 0.5), memory))


def test_a_grouped_conv_with_several_channels_per_group_has_its_own_efficiencies() -> None:
    # 4 groups of 8 channels, 3x3: K = 72, width 8 per group.
    t = _layer("grouped_conv", 4.0, 32.0, 32.0, 72.0)
    w = layer_work(t, NO_L2, 1000)
    padded = 2 * 1000 * 1000 * 4 * 8 * 72
    assert w.grouped_flops[0, 0] == padded and w.depthwise[0, 0] == 0
    rate = 100e12  # the tensor peak: cuDNN runs it as grouped GEMMs on the tensor cores
    got = layer_seconds(w, NO_L2, PARAMS, layout="nhwc", engine="fused")[0, 0]
    assert got == pytest.approx(max(padded / (rate * 0.4), 2 * 1000 * 1000 * 64 / 0.8e12))
    nhwc = layer_seconds(w, NO_L2, PARAMS, layout="nhwc", engine="eager")[0, 0]
    eager = 4.0 * 2 * 1000 * 1000 * 32 / 0.8e12
    assert nhwc == pytest.approx(padded / (rate * 0.2) + eager)


def test_depthwise_efficiencies_default_to_the_grouped_ones() -> None:
    p = GpuModelParams(0.5, 0.8, 0.0, 0.4, 4.0, 2.0, 0.2, 0.25, 3.0)
    assert (p.depthwise_efficiency, p.nhwc_depthwise_efficiency) == (0.4, 0.2)


def test_measured_figures_cap_grouped_by_the_peak_and_depthwise_by_the_bandwidth() -> None:
    from nasfilter.oracle.gpumodel import capped_by_measurements

    fast = GpuModelParams(0.95, 0.97, 0.0, 0.99, 4.0, 2.0, 0.99, 0.9, 2.0, 0.0, 0.99, 0.99)
    h200 = capped_by_measurements(fast, DEVICES["h200"])  # 780 of 989; 4.3 of 4.8 TB/s
    for name in ("grouped", "nhwc_grouped"):
        assert getattr(h200, f"{name}_efficiency") == pytest.approx(780 / 989), name
    for name in ("depthwise", "nhwc_depthwise"):
        assert getattr(h200, f"{name}_efficiency") == pytest.approx(4.3 / 4.8), name


@pytest.mark.parametrize("fmt", [1, 2, 3])
def test_older_calibration_formats_are_refused_naming_the_refit(tmp_path: Path, fmt: int) -> None:
    old = tmp_path / "old.json"
    params = load_calibration().params.to_dict()
    old.write_text(json.dumps({"format": fmt, "fitted_on": "old", "params": params}))
    with pytest.raises(CalibrationFileError, match=f"format {fmt}.*nasfilter calibrate"):
        load_calibration(old)
