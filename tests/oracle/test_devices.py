"""Device figures a GPU model needs: SM count, memory, L2, and the accumulate rate."""

import json
from typing import Any

import pytest

from nasfilter.oracle.devices import (
    DEVICES,
    MissingDeviceFieldError,
    UnknownDeviceError,
    get_device,
)

# (SMs, memory GB, L2 MB of 2**20 or 1e6 bytes) from the vendors' whitepapers and docs/facts.md §7.
_FIGURES = {
    "v100": (80, 16e9, 6 * 2**20),
    "a100": (108, 80e9, 40e6),
    "h100": (132, 80e9, 50e6),
    "h200": (132, 141e9, 50e6),
    "rtx3090": (82, 24e9, 6 * 2**20),
    "rtx4090": (128, 24e9, 72 * 2**20),
    # The tss cells' GPUs: NVIDIA's spec pages (GP102: L2 = 256 KB per 32-bit memory
    # controller) and the Turing whitepaper, Table 1.
    "gtx1080ti": (28, 11e9, 2816 * 2**10),
    "titanx": (28, 12e9, 3 * 2**20),
    "titanxp": (30, 12e9, 3 * 2**20),
    "rtx2080ti": (68, 11e9, 5632 * 2**10),
}


@pytest.mark.parametrize("name", sorted(_FIGURES))
def test_builtin_devices_carry_the_model_figures_with_sources(name: str) -> None:
    dev = DEVICES[name]
    assert (dev.sm_count, dev.memory_bytes, dev.l2_bytes) == _FIGURES[name]
    assert any(word in dev.sources for word in ("whitepaper", "data sheet", "specifications"))
    dev.require("sm_count", "memory_bytes", "l2_bytes")


# FP32 CUDA cores and boost clock (GHz) from the same sources, typed here: the FP32 rate is
# cores x 2 x clock, which each data sheet rounds.
_CORES_CLOCK = {
    "v100": (5120, 1.53),
    "a100": (6912, 1.41),
    "h100": (16896, 1.98),
    "h200": (16896, 1.98),
    "rtx3090": (10496, 1.695),
    "rtx4090": (16384, 2.52),
    "gtx1080ti": (3584, 1.582),
    "titanx": (3584, 1.531),
    "titanxp": (3840, 1.582),
    "rtx2080ti": (4352, 1.545),
}


@pytest.mark.parametrize("name", sorted(_CORES_CLOCK))
def test_every_builtin_gpu_has_its_fp32_rate_so_cells_predict_on_it(name: str) -> None:
    from nasfilter.oracle.calibrated import predict_tss

    cores, ghz = _CORES_CLOCK[name]
    assert DEVICES[name].fp32_peak_flops == pytest.approx(cores * 2 * ghz * 1e9, rel=0.01)
    assert DEVICES[name].tensor_cores is (name not in ("gtx1080ti", "titanx", "titanxp"))
    thr = predict_tss(name, 256)
    assert thr.shape == (15625,) and bool((thr > 0).all())


def test_a_gpu_ahead_on_every_figure_is_never_predicted_slower_on_a_cell() -> None:
    """The RTX 4090 has more FP32 rate, bandwidth, SMs and L2 than the RTX 3090, and the
    H100 than the A100: no cell may come out slower on the larger one, at any batch."""
    from nasfilter.oracle.calibrated import predict_tss

    for small, large in (("rtx3090", "rtx4090"), ("a100", "h100"), ("rtx2080ti", "rtx3090")):
        a, b = DEVICES[small], DEVICES[large]
        assert b.fp32_peak_flops > a.fp32_peak_flops and b.bandwidth > a.bandwidth
        assert b.sm_count > a.sm_count and b.l2_bytes >= a.l2_bytes
        for batch in (1, 32, 256):
            assert bool((predict_tss(large, batch) >= predict_tss(small, batch)).all()), (
                small, large, batch)  # fmt: skip


def test_geforce_peak_is_the_fp32_accumulate_rate() -> None:
    # docs/facts.md §7: AMP accumulates in FP32, at half the FP16-accumulate rate on GeForce cards.
    assert DEVICES["rtx3090"].peak_flops == 71e12
    assert DEVICES["rtx3090"].fp16_accumulate_peak_flops == 142e12
    assert DEVICES["rtx4090"].peak_flops == pytest.approx(165.2e12)
    assert DEVICES["rtx4090"].fp16_accumulate_peak_flops == pytest.approx(330.3e12)
    assert DEVICES["a100"].fp16_accumulate_peak_flops is None  # one rate on data-centre cards


def test_a_missing_field_is_named_with_its_meaning() -> None:
    dev = get_device("mygpu:200:1.5")
    with pytest.raises(MissingDeviceFieldError, match=r"sm_count.*streaming multiprocessors"):
        dev.require("sm_count")
    with pytest.raises(MissingDeviceFieldError, match="memory_gb"):
        dev.require("memory_bytes")


def test_json_spec_accepts_the_model_fields_and_round_trips(tmp_path: Any) -> None:
    path = tmp_path / "dev.json"
    spec = {
        "name": "lab",
        "peak_tflops": 100,
        "bandwidth_tbs": 1.0,
        "sm_count": 40,
        "memory_gb": 12,
        "l2_mb": 4,
        "fp16_accumulate_peak_tflops": 200,
        "sources": "our data sheet",
    }
    path.write_text(json.dumps(spec))
    dev = get_device(str(path))
    assert (dev.sm_count, dev.memory_bytes, dev.l2_bytes) == (40, 12e9, 4e6)
    assert dev.fp16_accumulate_peak_flops == 200e12 and dev.sources == "our data sheet"
    assert get_device(dev.to_json()) == dev
    assert get_device(DEVICES["rtx4090"].to_json()) == DEVICES["rtx4090"]


@pytest.mark.parametrize(
    ("key", "value"), [("sm_count", 2.5), ("sm_count", 0), ("memory_gb", -1), ("l2_mb", "x")]
)
def test_bad_model_fields_are_refused_by_name(tmp_path: Any, key: str, value: object) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"name": "x", "peak_tflops": 1, "bandwidth_tbs": 1, key: value}))
    with pytest.raises(UnknownDeviceError, match=key.split("_")[0]):
        get_device(str(path))


def test_roofline_fingerprint_of_a_plain_spec_is_unchanged() -> None:
    assert set(get_device("g:1:1").to_dict()) == {
        "kind",
        "name",
        "peak_flops",
        "bandwidth",
        "measured_peak_flops",
        "measured_bandwidth",
    }


# CUDA cores x 2 FLOPs (FMA) x boost clock, from NVIDIA's spec pages; GP102 runs FP16 at 1/64.
_FP32 = {
    "gtx1080ti": 3584 * 2 * 1.582e9,
    "titanx": 3584 * 2 * 1.531e9,
    "titanxp": 3840 * 2 * 1.582e9,
    "rtx2080ti": 4352 * 2 * 1.545e9,
}


@pytest.mark.parametrize("name", sorted(_FP32))
def test_cell_gpus_fp32_peak_and_tensor_cores(name: str) -> None:
    dev = DEVICES[name]
    assert dev.fp32_peak_flops == pytest.approx(_FP32[name], rel=0.005)
    assert dev.tensor_cores is (name == "rtx2080ti")
    if not dev.tensor_cores:  # Pascal: the FP16 peak is the CUDA cores' 1/64 rate
        assert dev.peak_flops == pytest.approx(_FP32[name] / 64, rel=0.01)
    assert get_device(dev.to_json()) == dev


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("peak_tflops", 20000, "peak_flops = 2e.16 is above 10 PFLOP/s"),
        ("bandwidth_tbs", 150, "bandwidth = 1.5e.14 is above 100 TB/s"),
        ("fp32_peak_tflops", 0, "fp32_peak_flops must be a finite number > 0, got 0"),
        ("fp32_peak_tflops", -3, "fp32_peak_tflops must be a finite number, got -3|> 0"),
        ("peak_tflops", 0, "peak_flops must be a finite number > 0, got 0"),
        ("tensor_cores", "yes", "tensor_cores must be true or false, got 'yes'"),
        ("measured_host_kernel_us", 5000, "measured_host_kernel_seconds = 0.005 is above 1 ms"),
        ("measured_host_kernel_us", 0, "measured_host_kernel_seconds must be a finite number > 0"),
        ("measured_host_kernel_us", "fast", "measured_host_kernel_us must be a finite number"),
    ],
)
def test_absurd_zero_and_negative_figures_are_refused_naming_field_and_value(
    tmp_path: Any, key: str, value: object, words: str
) -> None:
    path = tmp_path / "dev.json"
    spec = {"name": "x", "peak_tflops": 1, "bandwidth_tbs": 1, key: value}
    path.write_text(json.dumps(spec))
    with pytest.raises(UnknownDeviceError, match=words):
        get_device(str(path))
