"""bench_calibration's held-out rows: one verdict per goal, each on its own figure."""

from typing import Any

from benchmarks.bench_calibration import _record_rows


def _figures(mdape: float, rho: float) -> dict[str, Any]:
    return {"n": 100, "mdape_percent": mdape, "spearman": rho, "within_10_percent": 0.5}


def _record() -> dict[str, Any]:
    layout = {
        "n": 90,
        "direction": 0.91,  # goal >= 0.9: met
        "measured_nhwc_faster": 0.85,
        "predicted_nhwc_faster": 0.9,
        "pearson_log_ratio": 0.55,  # goal >= 0.6: missed
        "spearman": 0.5,
        "median_measured_ratio": 1.12,
        "median_predicted_ratio": 1.1,
        "measured_faster_predicted_faster": 75,
        "measured_faster_predicted_slower": 2,
        "measured_slower_predicted_faster": 6,
        "measured_slower_predicted_slower": 7,
    }
    return {
        "fit": {"device": "rtx3090"},
        "measured_reference": {"n": 80, "direction": 0.894, "pearson_log_ratio": 0.86},
        "held_out": {
            "device": "rtx4090",
            "nchw": {"roofline": _figures(150.0, 0.9), "calibrated": _figures(9.9, 0.974)},
            "nhwc": {"roofline": _figures(120.0, 0.9), "calibrated": _figures(10.1, 0.98)},
            "layout": layout,
        },
    }


def test_each_goal_has_its_own_row_and_verdict() -> None:
    rows = {r["name"]: r for r in _record_rows(_record())}
    where = "fitted on rtx3090, held out rtx4090"
    assert rows[f"calibrated {where} nchw: MdAPE"]["passed"] is True  # 9.9 <= 10
    assert rows[f"calibrated {where} nchw: Spearman"]["passed"] is False  # 0.974 < 0.975
    assert rows[f"calibrated {where} nhwc: MdAPE"]["passed"] is False  # 10.1 > 10
    assert rows[f"calibrated {where} nhwc: Spearman"]["passed"] is True
    direction = rows[f"NHWC/NCHW ratio {where}: direction agrees"]
    assert direction["passed"] is True and direction["measured_slower_predicted_faster"] == 6
    assert direction["reference_direction"] == 0.894
    assert rows[f"NHWC/NCHW ratio {where}: Pearson of log ratios"]["passed"] is False
    assert rows[f"roofline {where} nchw: MdAPE"]["goal"].startswith("report")
    assert len(rows) == 2 * 3 + 2


def test_cell_rows_carry_the_goals_of_their_batch_and_the_roofline() -> None:
    from benchmarks.bench_calibration import _cell_rows

    def rec(batch: int, mdape: float, rho: float) -> dict[str, Any]:
        return {
            "batch": batch,
            "device": "titanx",
            "calibrated": _figures(mdape, rho),
            "roofline": _figures(148.0, 0.8),
        }

    b256 = {r["name"]: r for r in _cell_rows(rec(256, 7.1, 0.925), 20.0, 12.0, 0.95)}
    assert b256["tss cells, titanx held out, batch 256: MdAPE"]["passed"] is True  # 7.1 <= 12
    assert b256["tss cells, titanx held out, batch 256: Spearman"]["passed"] is False  # < 0.95
    assert b256["tss cells, titanx held out, batch 256: MdAPE"]["roofline_mdape"] == 148.0
    b1 = list(_cell_rows(rec(1, 20.5, 0.99), 20.0, 12.0, 0.95))
    assert len(b1) == 1 and b1[0]["passed"] is False  # 20.5 > 20, no Spearman goal at 1
    assert list(_cell_rows(rec(32, 1.0, 0.99), 20.0, 12.0, 0.95)) == []
