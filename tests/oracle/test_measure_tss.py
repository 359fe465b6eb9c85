"""``nasfilter measure --space tss``: measured rows equal HELP's shared latencies, the model
predicts every cell on a device file it never saw, the roofline bounds the measurements, the
cache resumes, and bad backends, devices, batches and archs are refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from nasfilter.cli import main
from tests.tss_shared import shared_data, shared_tss

DEVICE_FILE = {  # data-sheet figures of a GPU no built-in and no calibration holds
    "name": "sheet-gpu", "peak_tflops": 120, "bandwidth_tbs": 0.9, "fp32_peak_tflops": 15.0,
    "sm_count": 60, "memory_gb": 16,
}


def _measure(tmp_path: Path, *argv: str) -> dict[str, object]:
    code = main(["measure", "--space", "tss", "--cache", str(tmp_path / "c.db"), "--json",
                 *argv])
    assert code == 0
    return {}


def _export(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def _arch_strings() -> list[str]:
    return (shared_data() / "nats-tss-real" / "arch_strings.txt").read_text().splitlines()


@pytest.mark.parametrize("batch", (1, 32, 256))
def test_measured_rows_are_helps_latencies(tmp_path: Path, batch: int,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m.npz"
    _measure(tmp_path, "--backend", f"measured[batch={batch}]", "--device", "titanxp",
             "--archs", "all", "--export", str(out))
    summary = json.loads(capsys.readouterr().out)
    assert summary["label"] == "measured" and summary["n_added"] == 15625
    rows = _export(out)
    seconds = shared_tss(f"help_latency_ms_titanxp_{batch}").astype(np.float64) / 1000
    np.testing.assert_array_equal(rows["index"], np.arange(15625))
    assert rows["arch"].tolist() == _arch_strings()
    np.testing.assert_allclose(rows["latency_s"], seconds, rtol=1e-12)
    np.testing.assert_allclose(rows["throughput"], batch / seconds, rtol=1e-12)
    peak = 3840 * 2 * 1.582e9  # Titan Xp: CUDA cores x FMA x boost clock (NVIDIA data sheet)
    flops = 2e6 * shared_tss("cifar10_flops_M").astype(np.float64)
    np.testing.assert_allclose(rows["utilization"], batch / seconds * flops / peak, rtol=1e-3)
    assert set(rows["label"].tolist()) == {"measured"} and set(rows["batch"]) == {batch}


def test_calibrated_predicts_every_cell_on_a_users_device_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    device = tmp_path / "sheet.json"
    device.write_text(json.dumps(DEVICE_FILE))
    out = tmp_path / "t.npz"
    argv = ["--backend", "calibrated[batch=256]", "--device", str(device), "--archs", "all"]
    _measure(tmp_path, *argv, "--export", str(out))
    first = json.loads(capsys.readouterr().out)
    rows = _export(out)
    assert first["label"] == "modelled" and rows["index"].size == 15625
    assert np.isfinite(rows["throughput"]).all() and (rows["throughput"] > 0).all()
    np.testing.assert_allclose(rows["latency_s"] * rows["throughput"], 256, rtol=1e-12)
    assert set(rows["label"].tolist()) == {"modelled"}
    assert json.loads(str(rows["meta"]))["device"]["name"] == "sheet-gpu"
    _measure(tmp_path, *argv)  # the cache resumes: nothing new
    again = json.loads(capsys.readouterr().out)
    assert again["n_added"] == 0 and again["n_cached"] == 15625


def test_model_and_roofline_against_the_2080ti_measurements(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    measured = 256 / (shared_tss("help_latency_ms_2080ti_256").astype(np.float64) / 1000)
    for backend, name in (("calibrated", "c.npz"), ("roofline", "r.npz")):
        _measure(tmp_path, "--backend", backend, "--device", "rtx2080ti", "--archs", "all",
                 "--export", str(tmp_path / name))
    capsys.readouterr()
    model = _export(tmp_path / "c.npz")["throughput"]
    roof = _export(tmp_path / "r.npz")["throughput"]
    assert spearmanr(model, measured)[0] > 0.8  # the model ranks the real cells
    assert (roof >= measured).all()  # a roofline bounds what the GPU reached


def test_a_file_of_archs_and_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = _arch_strings()
    archs = tmp_path / "archs.txt"
    archs.write_text(f"11\n{names[284]}\n# a comment\n0\n")
    out = tmp_path / "a.npz"
    _measure(tmp_path, "--backend", "measured", "--archs", str(archs), "--export", str(out))
    rows = _export(out)
    assert rows["index"].tolist() == [0, 11, 284]
    assert rows["arch"].tolist() == [names[0], names[11], names[284]]
    _measure(tmp_path, "--backend", "roofline", "--archs", "sample:7")
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["n_requested"] == 7


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--backend", "measured[batch=64]"], "batch 64; measured batches: 1, 32, 256"),
        (["--backend", "measured", "--device", "h100"], "measured GPUs: 1080ti, 2080ti"),
        (["--backend", "measured", "--dataset", "cifar100"], "CIFAR-10 network"),
        (["--backend", "torch-cuda"], "needs a CUDA GPU"),
        (["--backend", "onnxruntime", "--device", "2080ti"], "device must be 'cpu'"),
        (["--backend", "sss-only"], "tss backends: measured, calibrated, roofline, onnxruntime"),
        (["--backend", "calibrated[precision=fp16]"], "only batch=B"),
        (["--backend", "roofline", "--archs", "sample:0"], "sample:N needs N in 1..15625"),
    ],
)
def test_bad_input_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      argv: list[str], words: str) -> None:
    base = ["measure", "--space", "tss", "--cache", str(tmp_path / "c.db")]
    if "--archs" not in argv:
        argv = [*argv, "--archs", "all"]
    assert main([*base, *argv]) == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize(("line", "words"), [
    ("15625", r"[0, 15624], got 15625"),
    ("8:16:24:32:40", "architecture of the sss space"),
    ("|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|", "'conv'; allowed: none"),
])
def test_bad_archs_in_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str,
                             words: str) -> None:
    archs = tmp_path / "archs.txt"
    archs.write_text(f"0\n{line}\n")
    assert main(["measure", "--space", "tss", "--backend", "measured", "--archs", str(archs),
                 "--cache", str(tmp_path / "c.db")]) == 2
    err = capsys.readouterr().err
    assert words in err and "line 2" in err
