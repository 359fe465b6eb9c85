"""The prepared GPU check (scripts/gpu_model_check.py), run here on the CPU in its quick mode:
what it writes is what nasfilter reads (a timm-format CSV, the cells' latencies, a device
file), and its scoring of the cells recovers a host figure it was given."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from nasfilter.oracle.calibration import read_benchmark_file, shipped_benchmark_file
from nasfilter.oracle.calibration_file import load_calibration
from nasfilter.oracle.cells import all_ops, host_bound_networks, tss_batch_seconds
from nasfilter.oracle.devices import DEVICES, get_device

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_model_check.py"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_model_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("gpu", "device"),
    [
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("Tesla V100-SXM2-16GB", "v100"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("NVIDIA GeForce RTX 2080 Ti", "rtx2080ti"),
        ("NVIDIA GeForce GTX 1080 Ti", "gtx1080ti"),
        ("NVIDIA TITAN Xp", "titanxp"),
        ("NVIDIA TITAN X (Pascal)", "titanx"),
        ("NVIDIA L4", None),
    ],
)
def test_the_gpu_is_matched_to_its_built_in_device(
    script: ModuleType, gpu: str, device: str | None
) -> None:
    assert script._built_in(gpu) == device


def test_the_device_file_it_writes_is_read_back_with_the_host_figure(
    script: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "device.json"
    path.write_text(json.dumps(script.device_file("h100", 17.5)))
    dev = get_device(str(path))
    ref = DEVICES["h100"]
    assert dev.measured_host_kernel_seconds == pytest.approx(17.5e-6)
    for field in ("peak_flops", "bandwidth", "fp32_peak_flops", "memory_bytes", "l2_bytes"):
        assert getattr(dev, field) == pytest.approx(getattr(ref, field)), field
    assert (dev.sm_count, dev.tensor_cores) == (ref.sm_count, ref.tensor_cores)


def test_its_cell_scores_recover_a_host_figure_and_predict_with_it(script: ModuleType) -> None:
    """Latencies made by the model on a machine whose host takes 31 us a kernel: the check
    derives 31 us from the host sample's batch 1, and with it predicts the other cells at
    every batch to the digit."""
    params = load_calibration().params
    rng = np.random.default_rng(1)
    host_cells = np.sort(rng.choice(host_bound_networks("h100"), 4, replace=False))
    cells = np.union1d(rng.choice(15625, 12, replace=False), host_cells)
    machine = replace(DEVICES["h100"], measured_host_kernel_seconds=31e-6)
    latency = {
        f"nchw_b{b}": tss_batch_seconds(machine, b, params, all_ops()[cells]) for b in (1, 32, 256)
    }
    got = script.score_cells("h100", cells, latency, host_cells)
    assert got["host_kernel_us"] == pytest.approx(31.0)
    for b in (1, 32, 256):
        assert got[f"batch {b}"]["with host"]["mdape_percent"] < 1e-6
        assert got[f"batch {b}"]["with host"]["n"] == cells.size - host_cells.size
    assert got["batch 1"]["without"]["mdape_percent"] > 1  # the fitted host is not 31 us


@pytest.mark.slow
def test_quick_mode_on_the_cpu_writes_what_nasfilter_reads(
    script: ModuleType, tmp_path: Path
) -> None:
    assert script.main(["--device", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    shipped = {r.model: r for r in shipped_benchmark_file("rtx4090", "nchw").rows}
    for layout in ("nchw", "nhwc"):
        read = read_benchmark_file(tmp_path / f"benchmark-infer-amp-{layout}-check.csv",
                                   "rtx4090", layout)  # fmt: skip
        (row,) = read.rows
        assert (row.model, row.batch, row.img_size) == ("resnet18", 2, 64)
        assert row.gmacs == shipped["resnet18"].gmacs and row.throughput > 0
    cells = np.load(tmp_path / "tss_cells.npz")
    arch = cells["arch"]
    assert arch.size == 3 and np.all(np.diff(arch) > 0)
    assert np.isin(cells["host_arch"], arch).all()
    assert np.isin(cells["host_arch"], host_bound_networks("rtx2080ti")).all()
    for key in ("nchw_b1", "nchw_b2", "nhwc_b1", "nhwc_b2"):
        assert np.all(np.isfinite(cells[key]) & (cells[key] > 0)), key
    assert json.loads(str(cells["fingerprint"]))["device"] == "cpu"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["timm"] == {"nchw": "benchmark-infer-amp-nchw-check.csv",
                               "nhwc": "benchmark-infer-amp-nhwc-check.csv"}  # fmt: skip


def test_without_cuda_it_says_so(script: ModuleType, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    import torch

    if torch.cuda.is_available():  # pragma: no cover - only on a GPU machine
        pytest.skip("this machine has CUDA: run the script itself")
    assert script.main(["--device", "cuda", "--out", str(tmp_path)]) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_the_library_path_runs_measure_host_figure_and_calibrate_on_the_gpu(
    script: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The script's step 4 on a fake GPU (tests/fake_eager_gpu.py): its three commands succeed,
    the export holds the host sample at batch 1, and the figure printed is the fake machine's."""
    from tests.fake_eager_gpu import HOST_FACTOR, use_fake_eager_gpu

    use_fake_eager_gpu(monkeypatch)
    host_cells = np.sort(np.random.default_rng(0).choice(host_bound_networks("titanxp"), 4,
                                                         replace=False))
    codes = script.library_path(tmp_path, host_cells, "titanxp", "cuda")
    assert codes == {"measure": 0, "host-figure": 0, "calibrate": 0}
    with np.load(tmp_path / "host_b1.npz") as z:
        assert z["index"].tolist() == host_cells.tolist() and set(z["batch"].tolist()) == {1}
    fitted_us = load_calibration().params.host_seconds * 1e6
    assert f"measured_host_kernel_us: {HOST_FACTOR * fitted_us:.1f}" in capsys.readouterr().out
