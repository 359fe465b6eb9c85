"""The GPU model: tile and wave quantization, memory, kernels, layouts, largest batch; by hand."""

import numpy as np
import pytest

from nasfilter.layers import LayerTable
from nasfilter.oracle.devices import DeviceSpec, MissingDeviceFieldError
from nasfilter.oracle.gpumodel import (
    GpuModelParams,
    layer_seconds,
    layer_work,
    max_batch,
    quantized_gemm_flops,
)

# A toy GPU: 2 SMs, 100 TFLOP/s, 1 TB/s, 1 GB.
DEV = DeviceSpec("toy", 100e12, 1e12, sm_count=2, memory_bytes=1e9)
PARAMS = GpuModelParams(
    tensor_efficiency=0.5,
    memory_efficiency=0.8,
    kernel_seconds=2e-6,
    grouped_efficiency=0.1,
    eager_passes=4.0,
    nchw_transpose_passes=2.0,
)


def _table(kind: str = "conv", m: float = 64.0, n: float = 32.0, k: float = 144.0) -> LayerTable:
    # One layer per image: gemm M x N x K, 16 input channels on an 8x8 map.
    groups = 32.0 if kind == "grouped_conv" else 1.0
    one = np.ones((1, 1))
    return LayerTable(
        names=("l",),
        kinds=(kind,),
        gemm_m=m * one,
        gemm_n=n * one,
        gemm_k=k * one,
        groups=groups * one,
        macs=m * n * k * one,
        weight_elems=n * k * one,
        input_elems=1024.0 * one,
        output_elems=m * n * one,
        present=np.ones((1, 1), dtype=bool),
    )


def test_full_tiles_and_waves_cost_exactly_2mnk() -> None:
    # M = 128 x 4, N = 256: 4 tiles of 128x256 = 2 waves on 2 SMs, no waste.
    m, n, k = np.array([512.0]), np.array([256.0]), np.array([64.0])
    assert quantized_gemm_flops(m, n, k, 2)[0] == 2 * 512 * 256 * 64


def test_narrow_and_short_gemms_pay_for_empty_tiles() -> None:
    # N = 8 pads to the narrowest tile (32 columns): 128x32 tiles, 8 fit an SM at once
    # (an SM holds 128x256 outputs). M = 128 x 16 -> 16 tiles = 1 wave of 2 SMs x 8 slots.
    # Busy FLOPs: 1 wave x 2 SMs x 128 x 256 x K(=64) x 2, 4x the useful 2 x 2048 x 8 x 64.
    got = quantized_gemm_flops(np.array([2048.0]), np.array([8.0]), np.array([64.0]), 2)[0]
    assert got == 2 * 128 * 256 * 64 * 2
    assert got / (2 * 2048 * 8 * 64) == 4  # the channel padding
    # M = 128: one tile in a wave of 16 slots: 16x more, 64x the useful work.
    one = quantized_gemm_flops(np.array([128.0]), np.array([8.0]), np.array([64.0]), 2)[0]
    assert one == got and one / (2 * 128 * 8 * 64) == 64
    # K = 27 (a 3x3 stem on RGB) pads to 32.
    full = quantized_gemm_flops(np.array([512.0]), np.array([256.0]), np.array([27.0]), 2)[0]
    assert full == 2 * 512 * 256 * 32
    assert quantized_gemm_flops(np.array([0.0]), np.array([8.0]), np.array([9.0]), 2)[0] == 0


def test_one_conv_by_hand() -> None:
    t = _table()
    batch = 1000
    w = layer_work(t, DEV, batch)
    # bytes: 2 x (1000 x (1024 + 2048) + 32 x 144)
    moved = 2 * (1000 * 3072 + 4608)
    assert w.bytes[0, 0] == moved
    memory = moved / (1e12 * 0.8)
    # M = 64,000, N = 32: 500 tiles of 128x32, 16 per wave (2 SMs x 8) -> 32 waves.
    assert w.tensor_flops[0, 0] == 32 * 2 * 128 * 256 * 144 * 2
    compute = 32 * 2 * 128 * 256 * 144 * 2 / (100e12 * 0.5)
    assert compute > memory  # this layer is compute-bound
    got = layer_seconds(w, DEV, PARAMS)[0, 0]
    assert got == pytest.approx(compute + 2e-6)


def test_eager_passes_and_nchw_transposes_by_hand() -> None:
    t = _table()
    w = layer_work(t, DEV, 1000)
    fused = layer_seconds(w, DEV, PARAMS)[0, 0]
    bw = 1e12 * 0.8
    out_pass = 2 * 1000 * 2048 / bw
    nhwc = layer_seconds(w, DEV, PARAMS, engine="eager", layout="nhwc")[0, 0]
    assert nhwc == pytest.approx(fused + 4 * out_pass + 2 * 2e-6)  # 4 passes, 2 kernels
    nchw = layer_seconds(w, DEV, PARAMS, engine="eager", layout="nchw")[0, 0]
    in_out_pass = 2 * 1000 * 3072 / bw
    assert nchw == pytest.approx(nhwc + 2 * in_out_pass + 1 * 2e-6)
    # A fused engine picks its own layout: no transposes.
    assert layer_seconds(w, DEV, PARAMS, layout="nchw")[0, 0] == fused


def test_a_depthwise_conv_pays_for_its_padded_groups() -> None:
    # 32 groups of width 1 (depthwise 3x3, K = 9): each group pads to 8 wide, K to 16.
    t = _table("grouped_conv", m=1e6, n=32.0, k=9.0)
    w = layer_work(t, DEV, 1)
    assert w.tensor_flops[0, 0] == 0
    assert w.grouped_flops[0, 0] == 2 * 1e6 * 32 * 8 * 16  # 14.2x the useful 2 x 1e6 x 32 x 9
    compute = 2 * 1e6 * 32 * 8 * 16 / (100e12 * 0.1)
    memory = 2 * (1024 + 32e6 + 288) / 0.8e12
    assert layer_seconds(w, DEV, PARAMS)[0, 0] == pytest.approx(max(compute, memory) + 2e-6)


def test_absent_layers_cost_nothing() -> None:
    t = _table()
    t = LayerTable(**{**t.__dict__, "present": np.zeros((1, 1), dtype=bool)})
    assert layer_seconds(layer_work(t, DEV, 64), DEV, PARAMS, engine="eager")[0, 0] == 0


def test_largest_batch_from_memory_by_hand() -> None:
    t = _table()
    # live per image: 1024 + 2048 elements x 2 bytes = 6144 bytes; weights 4608 x 2 bytes.
    fits = (0.9 * 1e9 - 2 * 4608) / 6144  # 146,483.8 -> 2**17 = 131072
    assert max_batch(t, DEV)[0] == 2 ** int(np.log2(fits)) == 131072
    small = DeviceSpec("small", 1e12, 1e11, sm_count=1, memory_bytes=1e4)
    with pytest.raises(ValueError, match="not even one image"):
        max_batch(t, small)


def test_largest_batch_respects_32_bit_indexing() -> None:
    big = DeviceSpec("big", 1e12, 1e12, sm_count=1, memory_bytes=1e15)
    t = _table()  # largest tensor: 2048 elements per image -> 2**31 / 2**11 = 2**20 images
    assert max_batch(t, big)[0] == 2**20


def test_the_model_needs_sm_count_and_memory() -> None:
    bare = DeviceSpec("bare", 1e12, 1e12)
    with pytest.raises(MissingDeviceFieldError, match="sm_count"):
        layer_work(_table(), bare, 1)
    with pytest.raises(MissingDeviceFieldError, match="memory"):
        max_batch(_table(), bare)


def test_parameters_outside_their_physical_range_are_refused() -> None:
    with pytest.raises(ValueError, match=r"tensor_efficiency = 1\.2"):
        GpuModelParams(1.2, 0.5, 1e-6, 0.1, 4, 2)
    with pytest.raises(ValueError, match="kernel_seconds"):
        GpuModelParams(0.5, 0.5, -1e-6, 0.1, 4, 2)
    assert GpuModelParams.from_dict(PARAMS.to_dict()) == PARAMS
    with pytest.raises(ValueError, match="exactly the keys"):
        GpuModelParams.from_dict({"tensor_efficiency": 0.5})


def test_bad_layout_or_engine_is_named() -> None:
    w = layer_work(_table(), DEV, 1)
    with pytest.raises(ValueError, match="layout must be one of"):
        layer_seconds(w, DEV, PARAMS, layout="chwn")
    with pytest.raises(ValueError, match="engine must be one of"):
        layer_seconds(w, DEV, PARAMS, engine="jit")


def test_measured_figures_cap_the_efficiencies() -> None:
    from nasfilter.oracle.devices import DEVICES
    from nasfilter.oracle.gpumodel import capped_by_measurements

    fast = GpuModelParams(0.95, 0.97, 2e-6, 0.9, 4.0, 2.0)
    v100 = capped_by_measurements(fast, DEVICES["v100"])  # measured 100 of 125 TFLOP/s
    assert v100.tensor_efficiency == pytest.approx(0.8) and v100.memory_efficiency == 0.97
    assert v100.grouped_efficiency == pytest.approx(0.8)
    h200 = capped_by_measurements(fast, DEVICES["h200"])  # 780 of 989; 4.3 of 4.8 TB/s
    assert h200.tensor_efficiency == pytest.approx(780 / 989)
    assert h200.memory_efficiency == pytest.approx(4.3 / 4.8)
    assert capped_by_measurements(fast, DEVICES["a100"]) == fast  # nothing measured
    assert capped_by_measurements(PARAMS, DEVICES["v100"]) == PARAMS  # already below
