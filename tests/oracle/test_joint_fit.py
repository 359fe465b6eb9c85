"""The joint fit of timm and the tss cells: a SYNTHETIC round trip and the cells-only rules.

The timm tables and throughputs and the cell latencies here are SYNTHETIC (made from known
figures): they test the fitting machinery, not a GPU.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from nasfilter.oracle import calibration as cal
from nasfilter.oracle.cells import all_ops, tss_batch_seconds
from nasfilter.oracle.devices import DEVICES
from nasfilter.oracle.joint import SHARED_FIGURES, cell_scale, fit_joint, timm_only_params
from tests.oracle.test_calibration import TRUE, _synthetic_table

# Known figures: timm's SYNTHETIC twelve and four cell figures of a plausible size.
KNOWN = replace(
    TRUE, fp32_efficiency=0.6, host_seconds=20e-6, conv_host_seconds=80e-6, pool_tap_rate=4e9
)
OPS = all_ops()[::500]  # 32 networks: enough to tell the cell figures apart


def _timm(params: object) -> cal.SampleSet:
    rng = np.random.default_rng(11)
    tables = [_synthetic_table(rng, int(rng.choice([160, 224]))) for _ in range(16)]
    samples = [
        cal.Sample(cal.BenchmarkRow(f"m{i}", 224, 256, 1.0, 1.0), layout, t)
        for i, t in enumerate(tables)
        for layout in ("nchw", "nhwc")
    ]
    sset = cal.SampleSet(DEVICES["rtx3090"], samples, [])
    thr = cal.predict(sset, params)  # type: ignore[arg-type]
    out = [
        replace(s, row=replace(s.row, throughput=float(x)))
        for s, x in zip(samples, thr, strict=True)
    ]
    return cal.SampleSet(sset.device, out, [])


def _cells(params: object) -> list[tuple[str, int, np.ndarray]]:
    return [
        (dev, b, tss_batch_seconds(dev, b, params, OPS))  # type: ignore[arg-type]
        for dev in ("gtx1080ti", "rtx2080ti")
        for b in (1, 32, 256)
    ]


def test_the_joint_fit_recovers_known_figures_from_both_sources() -> None:
    got = fit_joint([_timm(KNOWN)], _cells(KNOWN), OPS)
    assert got.rms_log_error["timm"] < 1e-4 and got.rms_log_error["cells"] < 1e-4
    for name in (*SHARED_FIGURES, "tensor_efficiency", "fp32_efficiency", "conv_host_seconds"):
        assert getattr(got.params, name) == pytest.approx(getattr(KNOWN, name), rel=1e-2), name
    assert got.timm_devices == ("rtx3090",) and got.cell_devices == ("gtx1080ti", "rtx2080ti")


def test_cells_alone_tie_the_tensor_rate_to_the_fp32_rate_and_leave_the_rest() -> None:
    got = fit_joint([], _cells(KNOWN), OPS)
    assert got.params.tensor_efficiency == got.params.fp32_efficiency
    assert got.params.fp32_efficiency == pytest.approx(0.6, rel=1e-2)
    # nothing in an FP32 cell transposes NCHW or copies a norm: the fixed start stays
    assert got.params.nchw_transpose_passes == 2.0 and got.params.layout_copy_passes == 2.0
    assert math.isnan(got.rms_log_error["timm"])


def test_the_cell_weight_scales_the_cells_share_of_the_loss() -> None:
    # 400 cell residuals against 100 timm ones: each cell residual x 0.5 gives the cells the
    # same sum of squares; a weight of 4 gives them four times timm's (factor 1)
    assert cell_scale(100, 400) == pytest.approx(0.5)
    assert cell_scale(100, 400, 4.0) == pytest.approx(1.0)
    assert cell_scale(0, 400, 0.25) == 1.0  # one source only: nothing to balance
    for bad in (0.0, -1.0, math.nan, math.inf, True):
        with pytest.raises(ValueError, match=f"cell_weight must be .*got {bad!r}"):
            cell_scale(100, 400, bad)  # type: ignore[arg-type]


def test_timm_only_sets_the_cell_figures_to_what_timm_says() -> None:
    got = timm_only_params(KNOWN)
    assert got.fp32_efficiency == KNOWN.tensor_efficiency
    assert got.host_seconds == got.conv_host_seconds == 0 and got.pool_tap_rate == math.inf


def test_the_shipped_joint_calibration_names_its_data_and_fits_the_cells() -> None:
    """The shipped joint fit, IN-SAMPLE on HELP's measured cells (its held-out figures are
    docs/gpu-model.md's): a format-5 file that says it is joint, on all six GPUs."""
    from nasfilter.oracle.calibrated import load_calibration
    from nasfilter.oracle.calibration import scores
    from nasfilter.oracle.cells import cell_measurements
    from nasfilter.oracle.joint import JOINT_CALIBRATION

    cal_ = load_calibration(JOINT_CALIBRATION)
    assert "joint" in cal_.fitted_on and cal_.provenance["cells"]["fit"] == "joint"
    assert cal_.provenance["cells"]["devices"] == ["gtx1080ti", "titanx", "titanxp", "rtx2080ti"]
    assert 0 < cal_.params.fp32_efficiency <= 1 and cal_.params.host_seconds > 0
    for device, batch, seconds in cell_measurements(batches=(256,)):
        got = scores(
            batch / tss_batch_seconds(device, batch, cal_.params, all_ops()), batch / seconds
        )
        assert got["mdape_percent"] <= 12 and got["spearman"] >= 0.95, (device, got)
