"""The survey's throughput hooks are the oracle's functions: by hand on a one-layer table."""

import numpy as np
import pytest

from nasfilter.bench.layer_table import LayerTable
from nasfilter.oracle.calibrated import load_calibration
from nasfilter.oracle.devices import DeviceSpec, MissingDeviceFieldError
from nasfilter.survey import throughput

# A toy GPU: 2 SMs, 100 TFLOP/s, 1 TB/s, 1 GB.
DEV = DeviceSpec("toy", 100e12, 1e12, sm_count=2, memory_bytes=1e9)


def _table() -> LayerTable:
    """One dense conv per image: 8x8 output pixels, 16 -> 32 channels, 3x3 (K = 144)."""
    one = np.ones((1, 1))
    return LayerTable(
        names=("conv",),
        kinds=("conv",),
        gemm_m=64 * one,
        gemm_n=32 * one,
        gemm_k=144 * one,
        groups=one,
        macs=64 * 32 * 144 * one,
        weight_elems=32 * 144 * one,
        input_elems=16 * 64 * one,
        output_elems=32 * 64 * one,
        present=np.ones((1, 1), dtype=bool),
    )


def test_roofline_column_by_hand() -> None:
    batch = 256
    flops = 2 * 64 * 32 * 144 * batch
    moved = 2 * (batch * (16 * 64 + 32 * 64) + 32 * 144)  # FP16 activations and weights
    seconds = max(flops / 100e12, moved / 1e12)  # no launch overhead in the plain column
    assert throughput.roofline_throughput(_table(), DEV, batch) == pytest.approx(batch / seconds)


def test_prediction_is_the_calibrated_eager_model() -> None:
    cal = load_calibration()
    assert "calibrated" in throughput.PREDICTOR and "eager" in throughput.PREDICTOR
    assert cal.fitted_on and cal.fitted_on in throughput.PREDICTOR
    assert "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv" in throughput.fitted_on_files()
    # NCHW in eager mode pays transposes that NHWC does not: slower, on a toy GPU too.
    nchw = throughput.predicted_throughput(_table(), DEV, 256, "nchw")
    nhwc = throughput.predicted_throughput(_table(), DEV, 256, "nhwc")
    assert 0 < nchw < nhwc < throughput.roofline_throughput(_table(), DEV, 256)
    with pytest.raises(MissingDeviceFieldError, match="sm_count"):
        throughput.predicted_throughput(_table(), DeviceSpec("bare", 1e14, 1e12), 256)


def test_largest_batch_is_the_gpu_models_capped_at_timms_1024() -> None:
    assert throughput.max_batch(_table(), DEV) == 1024  # 146,000 images would fit
    tiny = DeviceSpec("tiny", 1e14, 1e12, sm_count=2, memory_bytes=1e6)
    # (0.9e6 - 2 x 4608) / (2 x 3072) = 144.98 images -> 128
    assert throughput.max_batch(_table(), tiny) == 128
    with pytest.raises(MissingDeviceFieldError, match="memory_bytes"):
        throughput.max_batch(_table(), DeviceSpec("bare", 1e14, 1e12, sm_count=2))
