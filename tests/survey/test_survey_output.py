"""layers.csv cells: each distinct value formatted once, as each cell was formatted alone."""

from __future__ import annotations

import numpy as np

from nasfilter.survey.output import _formatted


def test_cells_as_formatted_one_by_one() -> None:
    values = np.array([64.0, 1e10, 3.0, np.nan, 64.0, 0.1 + 0.2, 2.5e-7, np.nan, 0.0, 123456789.0])
    expected = ["64", "1e+10", "3", "", "64", "0.3", "2.5e-07", "", "0", "123456789"]
    assert _formatted(values) == expected
    rng = np.random.default_rng(3)
    raw, digits = rng.lognormal(5, 3, size=5000), rng.integers(0, 6, size=5000)
    many = np.array([round(v, int(d)) for v, d in zip(raw.tolist(), digits, strict=True)])
    assert _formatted(many) == [f"{v:.10g}" for v in many.tolist()]


def test_negative_zero_keeps_its_sign() -> None:
    """np.unique makes -0.0 and 0.0 one value; their cells differ ("-0" and "0")."""
    assert _formatted(np.array([0.0, -0.0, 2.0, -0.0])) == ["0", "-0", "2", "-0"]
