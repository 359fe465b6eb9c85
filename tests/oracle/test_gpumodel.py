"""The GPU model: tile and wave quantization, memory, kernels, layouts, largest batch; by hand."""

import numpy as np
import pytest

from nasfilter.bench.layer_table import LayerTable
from nasfilter.oracle.devices import DeviceSpec, MissingDeviceFieldError
from nasfilter.oracle.gpumodel import (
    GpuModelParams,
    bounding_term,
    layer_seconds,
    layer_terms,
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
    nhwc_grouped_efficiency=0.05,
    unaligned_efficiency=0.25,
    layout_copy_passes=3.0,
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


def test_largest_batch_cap() -> None:
    t = _table()  # fits 131072 on DEV (above)
    assert max_batch(t, DEV, cap=1024)[0] == 1024  # timm's benchmark starts at 1024
    assert max_batch(t, DEV, cap=1000)[0] == 512  # the largest power of two <= the cap
    assert max_batch(t, DEV, cap=2**20)[0] == 131072  # a cap above the fit changes nothing
    with pytest.raises(ValueError, match="cap"):
        max_batch(t, DEV, cap=0)


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
        GpuModelParams(1.2, 0.5, 1e-6, 0.1, 4, 2, 0.1, 0.2, 1)
    with pytest.raises(ValueError, match="kernel_seconds"):
        GpuModelParams(0.5, 0.5, -1e-6, 0.1, 4, 2, 0.1, 0.2, 1)
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

    fast = GpuModelParams(0.95, 0.97, 2e-6, 0.9, 4.0, 2.0, 0.9, 0.9, 2.0)
    v100 = capped_by_measurements(fast, DEVICES["v100"])  # measured 100 of 125 TFLOP/s
    assert v100.tensor_efficiency == pytest.approx(0.8) and v100.memory_efficiency == 0.97
    assert v100.grouped_efficiency == pytest.approx(0.8)
    assert v100.nhwc_grouped_efficiency == pytest.approx(0.8)
    assert v100.unaligned_efficiency == pytest.approx(0.8)
    h200 = capped_by_measurements(fast, DEVICES["h200"])  # 780 of 989; 4.3 of 4.8 TB/s
    assert h200.tensor_efficiency == pytest.approx(780 / 989)
    assert h200.memory_efficiency == pytest.approx(4.3 / 4.8)
    assert capped_by_measurements(fast, DEVICES["a100"]) == fast  # nothing measured
    assert capped_by_measurements(PARAMS, DEVICES["v100"]) == PARAMS  # already below


def _layers(**columns: object) -> LayerTable:
    """A one-network table of the given per-layer columns (lists), others 0."""
    kinds = tuple(columns.pop("kinds"))  # type: ignore[arg-type]
    n = len(kinds)
    arrays = {k: np.array([v], dtype=np.float64) for k, v in columns.items()}
    zero = np.zeros((1, n))
    names = ("gemm_m", "gemm_n", "gemm_k", "macs", "weight_elems", "input_elems", "output_elems")
    full = {k: arrays.get(k, zero) for k in names}
    return LayerTable(
        names=tuple(f"l{i}" for i in range(n)),
        kinds=kinds,
        groups=arrays.get("groups", np.ones((1, n))),
        present=np.ones((1, n), dtype=bool),
        in_channels=arrays.get("in_channels"),
        kernel_layout=arrays.get("kernel_layout"),
        **full,
    )


def test_nhwc_kernels_pad_the_channels_of_every_filter_tap() -> None:
    # A 3x3 stem on RGB: K = 27 pads to 8 channels x 9 taps = 72 (not to 32 as one block).
    stem = _layers(kinds=["conv"], gemm_m=[512.0], gemm_n=[256.0], gemm_k=[27.0], in_channels=[3.0])
    w = layer_work(stem, DEV, 1)
    assert w.tensor_flops[0, 0] == 2 * 512 * 256 * 72
    assert w.unaligned[0, 0] == 1
    # 16 channels x 9 taps is already aligned: no padding, not unaligned.
    body = _layers(
        kinds=["conv"], gemm_m=[512.0], gemm_n=[256.0], gemm_k=[144.0], in_channels=[16.0]
    )
    wb = layer_work(body, DEV, 1)
    assert wb.tensor_flops[0, 0] == 2 * 512 * 256 * 144 and wb.unaligned[0, 0] == 0
    # A table without channel counts (the default) pads K as one block of 1 tap.
    assert layer_work(_table(k=27.0), DEV, 1).tensor_flops[0, 0] == 2 * 2 * 128 * 256 * 32


def test_an_unaligned_stem_runs_slower_only_in_eager_nhwc() -> None:
    stem = _layers(
        kinds=["conv"],
        gemm_m=[512.0],
        gemm_n=[256.0],
        gemm_k=[27.0],
        in_channels=[3.0],
        input_elems=[1.0],
        output_elems=[1.0],
    )
    w = layer_work(stem, DEV, 1)
    flops = 2 * 512 * 256 * 72
    fused = layer_seconds(w, DEV, PARAMS)[0, 0]
    assert fused == pytest.approx(flops / (100e12 * 0.5) + 2e-6)
    nhwc = layer_seconds(w, DEV, PARAMS, engine="eager", layout="nhwc")[0, 0]
    eager = 4 * (2 * 1 / 0.8e12 + 1e-6)  # 4 passes over 1 element, half a kernel each
    assert nhwc == pytest.approx(flops / (100e12 * 0.25) + 2e-6 + eager)
    nchw = layer_seconds(w, DEV, PARAMS, engine="eager", layout="nchw")[0, 0]
    transposes = 2 * (2 * 2 / 0.8e12 + 1e-6)  # the transpose pads the channels: full speed
    assert nchw == pytest.approx(fused + eager + transposes)


def test_grouped_convs_use_the_efficiency_of_their_layout() -> None:
    t = _table("grouped_conv", m=1e6, n=32.0, k=9.0)
    w = layer_work(t, DEV, 1)
    padded = 2 * 1e6 * 32 * 8 * 16
    terms = {
        layout: layer_terms(w, 100e12, 1e12, PARAMS, eager=True, nchw=layout == "nchw")
        for layout in ("nchw", "nhwc")
    }
    rate = 100e12  # the tensor peak (the table's 288 input channels: 9 per group, not depthwise)
    assert terms["nchw"]["compute"][0, 0] == pytest.approx(padded / (rate * 0.1))
    assert terms["nhwc"]["compute"][0, 0] == pytest.approx(padded / (rate * 0.05))
    fused = layer_terms(w, 100e12, 1e12, PARAMS, eager=False, nchw=False)
    assert fused["compute"][0, 0] == pytest.approx(padded / (rate * 0.1))  # the faster one


def test_norms_pay_a_layout_copy_where_their_kernel_needs_the_other_layout() -> None:
    # conv -> group norm (needs NCHW) -> conv -> layer norm over channels (needs NHWC) -> conv
    nhwc_k, nchw_k = 1.0, 2.0
    t = _layers(
        kinds=["conv", "memory", "conv", "memory", "conv"],
        gemm_m=[64.0, 0, 64.0, 0, 64.0],
        gemm_n=[32.0, 0, 32.0, 0, 32.0],
        gemm_k=[32.0, 0, 32.0, 0, 32.0],
        in_channels=[32.0, 0, 32.0, 0, 32.0],
        input_elems=[2048.0] * 5,
        output_elems=[2048.0] * 5,
        kernel_layout=[nhwc_k, nchw_k, nhwc_k, nhwc_k, nhwc_k],
    )
    w = layer_work(t, DEV, 10)
    in_out = 2 * 10 * 4096.0
    assert w.nhwc_copy_bytes[0].tolist() == [0, in_out, 0, 0, 0]
    assert w.nchw_copy_bytes[0].tolist() == [0, 0, 0, in_out, 0]
    # After the layer norm (timm's LayerNorm2d permutes to N, H, W, C) an NCHW run holds
    # channels-last data: the last conv pays no transposes.
    assert w.channels_last[0].tolist() == [0, 0, 0, 0, 1]
    bw = 0.8e12
    copy = 3 * (in_out / bw + 1e-6)  # 3 passes, half a kernel each
    transpose = 2 * (in_out / bw + 1e-6)
    nhwc = layer_terms(w, 100e12, 1e12, PARAMS, eager=True, nchw=False)["layout"][0]
    assert nhwc == pytest.approx([0, copy, 0, 0, 0])
    nchw = layer_terms(w, 100e12, 1e12, PARAMS, eager=True, nchw=True)["layout"][0]
    assert nchw == pytest.approx([transpose, 0, transpose, copy, 0])
    assert layer_terms(w, 100e12, 1e12, PARAMS, eager=False, nchw=True)["layout"].sum() == 0


def test_layer_terms_add_up_to_the_layer_seconds_and_name_the_bound() -> None:
    t = _layers(
        kinds=["conv", "memory"],
        gemm_m=[4096.0, 0],
        gemm_n=[256.0, 0],
        gemm_k=[576.0, 0],
        in_channels=[64.0, 0],
        input_elems=[1.0, 1e6],
        output_elems=[1.0, 1e6],
    )
    w = layer_work(t, DEV, 8)
    for eager, layout in ((False, "nhwc"), (True, "nchw"), (True, "nhwc")):
        terms = layer_terms(w, 100e12, 1e12, PARAMS, eager=eager, nchw=layout == "nchw")
        engine = "eager" if eager else "fused"
        total = layer_seconds(w, DEV, PARAMS, layout=layout, engine=engine)
        rebuilt = np.maximum(terms["compute"], terms["memory"]) + terms["kernel"]
        rebuilt = rebuilt + terms["eager"] + terms["layout"]
        assert total == pytest.approx(rebuilt)
    bound = bounding_term(layer_terms(w, 100e12, 1e12, PARAMS, eager=False, nchw=False))
    assert bound[0].tolist() == ["compute", "memory"]
