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
}


@pytest.mark.parametrize("name", sorted(_FIGURES))
def test_builtin_devices_carry_the_model_figures_with_sources(name: str) -> None:
    dev = DEVICES[name]
    assert (dev.sm_count, dev.memory_bytes, dev.l2_bytes) == _FIGURES[name]
    assert "whitepaper" in dev.sources or "data sheet" in dev.sources
    dev.require("sm_count", "memory_bytes", "l2_bytes")


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
