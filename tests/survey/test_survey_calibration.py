"""`nasfilter survey --calibration FILE`: a user's fit is used, named, and checked."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from nasfilter.cli import main
from nasfilter.oracle.calibrated import Calibration
from nasfilter.oracle.gpumodel import GpuModelParams

# Test figures (not a product calibration). HALF has every efficiency of FULL halved and no
# kernel or host cost in either, so every layer takes exactly twice as long with HALF (the
# FP32 efficiency and the pooling rate, which a calibration file must hold, halve too).
FULL = GpuModelParams(0.8, 0.6, 0.0, 0.4, 2.0, 0.7, 0.3, 0.6, 3.0,
                      fp32_efficiency=0.5, pool_tap_rate=4e11)
HALF = GpuModelParams(0.4, 0.3, 0.0, 0.2, 2.0, 0.7, 0.15, 0.3, 3.0,
                      fp32_efficiency=0.25, pool_tap_rate=2e11)


def _survey(tmp_path: Path, name: str, calibration: Path) -> tuple[dict, list[dict[str, str]]]:
    out = tmp_path / name
    code = main(
        [
            "survey", "--device", "rtx4090", "--models", "resnet18,mobilenetv3_small_100",
            "--calibration", str(calibration), "--batch", "256", "--fold", "1",
            "--cache", str(tmp_path / "cache"), "--out", str(out), "--quiet",
        ]
    )  # fmt: skip
    assert code == 0
    with (out / "survey.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    return json.loads((out / "summary.json").read_text()), rows


@pytest.mark.slow
def test_the_survey_uses_and_names_a_users_calibration(tmp_path: Path) -> None:
    full = Calibration(FULL, "TEST full figures", {}).save(tmp_path / "full.json")
    half = Calibration(HALF, "TEST half figures", {}).save(tmp_path / "half.json")
    s_full, rows_full = _survey(tmp_path, "a", full)
    s_half, rows_half = _survey(tmp_path, "b", half)
    assert "TEST full figures" in s_full["predictor"] and str(full) in s_full["predictor"]
    assert s_half["calibration_file"] == str(half)
    for a, b in zip(rows_full, rows_half, strict=True):
        assert a["model"] == b["model"]
        ratio = float(a["predicted_throughput"]) / float(b["predicted_throughput"])
        assert ratio == pytest.approx(2.0, rel=1e-9)


def test_a_bad_calibration_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["survey", "--out", str(tmp_path / "o"), "--models", "resnet18", "--calibration"]
    assert main([*base, str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert "--calibration" in err and "does not exist" in err
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": 1, "params": {}}))
    assert main([*base, str(old)]) == 2
    err = capsys.readouterr().err
    assert "--calibration" in err and "older nasfilter" in err and "nasfilter calibrate" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_the_profile_uses_and_names_a_users_calibration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`nasfilter profile --calibration FILE`: the printed line and profile.json name the fit
    and its file, and every layer takes twice as long with HALF as with FULL."""
    source = tmp_path / "tiny.py"
    source.write_text(
        "from torch import nn\n"
        "def build():\n"
        "    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),\n"
        "        nn.Conv2d(32, 32, 3, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),\n"
        "        nn.Linear(32, 10))\n"
    )
    data = {}
    for name, params in (("full", FULL), ("half", HALF)):
        cal = Calibration(params, f"TEST {name} figures", {}).save(tmp_path / f"{name}.json")
        out = tmp_path / f"out-{name}"
        argv = ["profile", f"{source}:build", "--input-shape", "3,32,32", "--device", "rtx4090"]
        argv += ["--batch", "64", "--fold", "1", "--calibration", str(cal), "--out", str(out)]
        assert main(argv) == 0
        assert f"fit: TEST {name} figures" in capsys.readouterr().out
        data[name] = json.loads((out / "profile.json").read_text())
        assert data[name]["calibration"] == {
            "fitted_on": f"TEST {name} figures",
            "path": str(cal),
            "shipped": False,
        }
    ratio = data["full"]["throughput"] / data["half"]["throughput"]
    assert ratio == pytest.approx(2.0, rel=1e-9)
