"""The shared layer table: shapes are checked, and derived figures follow their definitions."""

import numpy as np
import pytest

from nasfilter.bench.layer_table import LayerTable


def _table(**overrides: object) -> LayerTable:
    # One network, two layers: a 3x3 conv 16->32 on an 8x8 map, and a linear 32->10.
    fields: dict[str, object] = dict(
        names=("conv", "fc"),
        kinds=("conv", "linear"),
        gemm_m=np.array([[64.0, 1.0]]),
        gemm_n=np.array([[32.0, 10.0]]),
        gemm_k=np.array([[144.0, 32.0]]),
        groups=np.array([[1.0, 1.0]]),
        macs=np.array([[64 * 32 * 144.0, 320.0]]),
        weight_elems=np.array([[4608.0 + 32, 330.0]]),
        input_elems=np.array([[16 * 64.0, 32.0]]),
        output_elems=np.array([[32 * 64.0, 10.0]]),
        present=np.array([[True, True]]),
    )
    fields.update(overrides)
    return LayerTable(**fields)  # type: ignore[arg-type]


def test_intensity_by_hand() -> None:
    t = _table()
    # conv at batch 4, FP16: flops = 2*4*294912; bytes = 2*(4*(1024+2048) + 4640)
    assert t.flops(4)[0, 0] == 2 * 4 * 294912
    assert t.bytes(4)[0, 0] == 2 * (4 * 3072 + 4640)
    assert t.intensity(4)[0, 0] == pytest.approx(2359296 / 33856)
    total_flops = 2 * 4 * (294912 + 320)
    total_bytes = 2 * (4 * 3072 + 4640) + 2 * (4 * 42 + 330)
    assert t.network_intensity(4)[0] == pytest.approx(total_flops / total_bytes)


def test_absent_layers_cost_nothing() -> None:
    t = _table(present=np.array([[True, False]]))
    assert t.flops()[0, 1] == 0 and t.bytes()[0, 1] == 0
    assert np.isnan(t.intensity()[0, 1])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"kinds": ("conv", "pool")}, "unknown layer kind"),
        ({"kinds": ("conv",)}, "1 kinds for 2"),
        ({"macs": np.array([[1.0, 2.0, 3.0]])}, "macs must have shape"),
        ({"gemm_k": np.array([[-1.0, 2.0]])}, "gemm_k must be finite"),
        ({"macs": np.array([[np.nan, 2.0]])}, "macs must be finite"),
        ({"output_elems": np.array([[1.0, np.inf]])}, "output_elems must be finite"),
        ({"kinds": ("conv", "pool")}, r"unknown layer kind\(s\) \['pool'\]"),
        ({"kernel_layout": np.array([[1.0, 3.0]])}, "kernel_layout must hold codes"),
    ],
)
def test_bad_tables_are_refused(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _table(**overrides)
