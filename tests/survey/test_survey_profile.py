"""`nasfilter profile` and `nasfilter.survey.profile.profile`: the per-layer breakdown, the
what-ifs, the survey's whole-model figure, and bad input."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

from nasfilter.cli import main
from nasfilter.oracle.devices import get_device
from nasfilter.survey.breakdown import PARTS
from nasfilter.survey.profile import profile
from nasfilter.survey.profile_output import OUTPUTS
from nasfilter.survey.survey import SurveySettings, run_survey

H100_SMS = 132  # H100 SXM5 whitepaper


@pytest.fixture(scope="module")
def cli_out(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("profile") / "r50"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(
            ["profile", "resnet50", "--device", "h100", "--layout", "nhwc", "--out", str(out)]
        )
    assert code == 0
    return out, buf.getvalue()


@pytest.fixture(scope="module")
def survey_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    settings = SurveySettings(
        device=get_device("h100"),
        layout="nhwc",
        models=[("resnet50", 224)],
        fold=4,
        cache_root=tmp_path_factory.mktemp("cache"),
    )
    rows = run_survey(settings).rows
    assert len(rows) == 1
    return rows[0]


@pytest.mark.slow
def test_cli_prints_and_writes_everything(cli_out: tuple[Path, str]) -> None:
    out, printed = cli_out
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    assert "resnet50 3x224x224 on h100, nhwc, eager engine, batch 1024" in printed
    for what in ("layout", "engine", "largest batch", "FoldedCNN f = 4", "time by bound"):
        assert what in printed
    with (out / "layers.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 72  # resnet50's fused layers: 53 convs, 1 fc, 16 adds, pools
    assert sum(r["kind"] == "conv" for r in rows) == 53
    assert sum(float(r["share"]) for r in rows) == pytest.approx(1.0)
    assert {r["bound"] for r in rows} <= set(PARTS)
    data = json.loads((out / "profile.json").read_text())
    assert data["predicted"] is True and data["calibration"]["shipped"] is True
    assert data["cmr"] == pytest.approx(989 / 3.35)  # H100 data sheet: TFLOP/s over TB/s


def test_whole_model_equals_the_survey(
    cli_out: tuple[Path, str], survey_rows: dict[str, object]
) -> None:
    data = json.loads((cli_out[0] / "profile.json").read_text())
    row = survey_rows
    assert data["batch"] == row["batch"]
    assert data["throughput"] == pytest.approx(row["predicted_throughput"], rel=1e-12)
    assert data["arithmetic_intensity"] == pytest.approx(row["arithmetic_intensity"], rel=1e-12)
    assert data["flops_per_image"] == pytest.approx(row["flops"], rel=1e-12)
    fold = {w["name"]: w for w in data["what_ifs"]}["fold"]
    assert fold["throughput"] == pytest.approx(row["folded_predicted_throughput"], rel=1e-12)
    assert fold["utilization"] == pytest.approx(row["folded_utilization"], rel=1e-12)


def test_parts_sum_to_each_layer_and_what_ifs_agree() -> None:
    prof = profile("resnet50", device="h100", layout="nchw", batch=256, fold=1)
    parts = prof.layers.parts
    total = sum(parts[p] for p in PARTS)
    np.testing.assert_allclose(total, prof.layers.seconds, rtol=1e-12)
    assert np.abs(parts["other"]).max() <= 1e-12 * prof.layers.seconds.max()
    assert all(v.min() >= 0 for k, v in parts.items() if k != "other")
    assert parts["transposes"].sum() > 0  # eager NCHW transposes its dense convs
    assert prof.throughput == pytest.approx(256 / prof.layers.seconds.sum())
    other = profile("resnet50", device="h100", layout="nhwc", batch=256, fold=1)
    assert other.layers.parts["transposes"].sum() == 0
    by_name = {w.name: w for w in prof.what_ifs}
    assert by_name["layout"].throughput == pytest.approx(other.throughput, rel=1e-12)
    assert "fold" not in by_name


def test_tile_and_wave_efficiency_by_hand() -> None:
    from torch import nn

    # One Linear(100 -> 10) at batch 1: M = 1, N = 10, K = 100 on H100. Tiles 128 x 32,
    # K padded to 104; one wave of 132 SMs x 8 tile slots.
    model = nn.Sequential(nn.Flatten(), nn.Linear(100, 10))
    prof = profile(model, (1, 10, 10), device="h100", engine="fused", batch=1, fold=1)
    (i,) = [k for k, kind in enumerate(prof.table.kinds) if kind == "linear"]
    assert prof.layers.tile_efficiency[i] == pytest.approx(2 * 10 * 100 / (2 * 128 * 32 * 104))
    assert prof.layers.wave_efficiency[i] == pytest.approx(1 / (8 * H100_SMS))
    assert prof.layers.bound[i] in ("per-kernel cost", "wave quantization")


@pytest.mark.slow
def test_user_module_from_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "mynet.py"
    source.write_text(
        "from torch import nn\n"
        "def build():\n"
        "    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),\n"
        "        nn.Conv2d(16, 16, 3, groups=16, padding=1), nn.AdaptiveAvgPool2d(1),\n"
        "        nn.Flatten(), nn.Linear(16, 10))\n"
    )
    out = tmp_path / "out"
    argv = ["profile", f"{source}:build", "--input-shape", "3,32,32", "--device", "rtx4090"]
    assert main([*argv, "--batch", "64", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "mynet.py:build 3x32x32 on rtx4090, nchw, eager engine, batch 64" in printed
    rows = list(csv.DictReader((out / "layers.csv").open()))
    assert [r["kind"] for r in rows[:2]] == ["conv", "grouped_conv"]
    # 32 x 32 outputs x 16 channels x 27 MACs, x 2 FLOPs, x 64 images
    assert float(rows[0]["flops"]) == 2 * 32 * 32 * 16 * 27 * 64
    # A rerun replaces its own files; a folder with other files needs --force.
    assert main([*argv, "--batch", "64", "--out", str(out), "--quiet"]) == 0
    (out / "mine.txt").write_text("keep")
    assert main([*argv, "--out", str(out), "--quiet"]) == 2
    assert "--force" in capsys.readouterr().err


def _err(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "nets.py"
    source.write_text(
        "import torch\nfrom torch import nn\n"
        "class Data(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * float(x.sum())\n"  # reads a value: impossible on the meta device
        "def data():\n    return Data()\n"
        "def flat():\n    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))\n"
        "def nothing():\n    return 5\n"
    )
    out = ["--out", str(tmp_path / "o")]
    err = _err(capsys, ["profile", f"{source}:data", *out])
    assert "model 'nets.py:data' cannot be traced on the meta device" in err
    err = _err(capsys, ["profile", f"{source}:flat", "--input-shape", "3,16,16", *out])
    assert "'nets.py:flat'" in err and "(3, 16, 16)" in err
    err = _err(capsys, ["profile", f"{source}:nothing", *out])
    assert "nothing" in err and "not a torch module" in err
    err = _err(capsys, ["profile", "resnet5O", *out])
    assert "'resnet5O' (close: resnet50" in err
    assert "--input-shape" in _err(capsys, ["profile", "resnet50", "--input-shape", "3,0,9"])
    nosm = tmp_path / "nosm.json"
    nosm.write_text(json.dumps({"name": "x", "peak_tflops": 100, "bandwidth_tbs": 1}))
    err = _err(capsys, ["profile", "resnet50", "--device", str(nosm), *out])
    assert "--device" in err and "sm_count" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_batch_too_large_names_the_largest_that_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _err(capsys, ["profile", "resnet50", "--device", "v100", "--batch", "100000"])
    assert "batch 100000 of resnet50 does not fit in v100's 16 GB" in err
    largest = int(err.rsplit("the largest batch that fits is ", 1)[1].split()[0])
    # By the GPU model's documented rule, from the layer table: weights plus the largest
    # layer's input and output fit 90 % of the memory, no tensor over 2**31 elements.
    t = profile("resnet50", device="v100", batch=1, fold=1).table
    live = float((t.input_elems + t.output_elems).max())
    by_memory = math.floor((0.9 * 16e9 - 2 * float(t.weight_elems.sum())) / (2 * live))
    by_index = math.floor(2**31 / float(np.maximum(t.input_elems, t.output_elems).max()))
    assert largest == min(by_memory, by_index)
    ok = ["profile", "resnet50", "--device", "v100", "--out", str(tmp_path / "ok"), "--quiet"]
    assert main([*ok, "--batch", str(largest), "--fold", "1"]) == 0
