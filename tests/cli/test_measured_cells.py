"""A user's measured tss cells: ``nasfilter host-figure`` (the networks to measure, the figure
from a measured export, the device file it writes) and ``calibrate --validate --measured
T.npz`` (the cells scored), and what they refuse. The GPU is a fake (no CUDA here); the sweep, the
cache, the export, the model and the device files are nasfilter's own."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.tss_data import load_latency
from nasfilter.cli import main
from nasfilter.oracle.calibration_file import load_calibration
from nasfilter.oracle.cells import all_ops, host_bound_networks, tss_batch_seconds
from nasfilter.oracle.devices import DEVICES, device_file_dict, get_device
from nasfilter.oracle.tss_measure import EXPORT_FORMAT, select_tss_archs
from tests.fake_eager_gpu import HOST_FACTOR, FakeEagerGpu, modelled_host, use_fake_eager_gpu


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_eager_gpu(monkeypatch)


def _measure(tmp_path: Path, archs: Path, backend: str, name: str = "t.npz") -> Path:
    out = tmp_path / name
    argv = ["measure", "--space", "tss", "--backend", backend, "--archs", str(archs),
            "--cache", str(tmp_path / f"{name}.db"), "--export", str(out), "--quiet"]
    assert main(argv) == 0
    return out


EAGER = "torch-cuda[batch=1,precision=fp32,cuda_graph=false,channels_last=false]"


def test_networks_are_host_bound_seeded_and_an_archs_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["host-figure", "--networks", "5", "--device", "titanxp"]) == 0
    text = capsys.readouterr().out
    nets = [int(line) for line in text.splitlines() if not line.startswith("#")]
    assert len(nets) == 5 == len(set(nets))
    assert set(nets) <= set(host_bound_networks("titanxp").tolist())
    (tmp_path / "nets.txt").write_text(text)
    assert select_tss_archs(str(tmp_path / "nets.txt"), np.random.default_rng()).tolist() == sorted(
        nets
    )
    assert main(["host-figure", "--networks", "5", "--device", "titanxp", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["networks"] == sorted(nets)  # the same draw
    assert main(["host-figure", "--networks", "5", "--device", "titanxp", "--seed", "1"]) == 0
    other = [int(x) for x in capsys.readouterr().out.splitlines() if not x.startswith("#")]
    assert other != nets


def test_the_figure_from_an_eager_fp32_export_is_the_machines_and_predicts_it(
    tmp_path: Path, fake_gpu: None, capsys: pytest.CaptureFixture[str]
) -> None:
    archs = np.random.default_rng(0).choice(host_bound_networks("titanxp"), 6, replace=False)
    (tmp_path / "nets.txt").write_text("\n".join(map(str, archs.tolist())))
    export = _measure(tmp_path, tmp_path / "nets.txt", EAGER)
    capsys.readouterr()
    out = tmp_path / "mine.json"
    argv = ["host-figure", "--from", str(export), "--device", "titanxp", "--out", str(out)]
    assert main([*argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    fitted = load_calibration().params.host_seconds
    # every network took 1.3 x its modelled host time, so the machine's host is 1.3 x the fit's
    assert record["measured_host_kernel_us"] == pytest.approx(HOST_FACTOR * fitted * 1e6)
    assert record["fitted_host_kernel_us"] == pytest.approx(fitted * 1e6)
    assert [n["over_modelled_host"] for n in record["networks"]] == pytest.approx([HOST_FACTOR] * 6)
    assert all(n["host_bound"] for n in record["networks"]) and record["batch"] == 1
    assert "Fake GPU" in record["measured_on"]
    # the device file it wrote predicts those networks at what was measured
    mine = get_device(str(out))
    assert mine.name == "titanxp-host"
    assert mine.measured_host_kernel_seconds == pytest.approx(HOST_FACTOR * fitted)
    assert mine.fp32_peak_flops == DEVICES["titanxp"].fp32_peak_flops
    with np.load(export) as z:
        measured, index = z["latency_s"], z["index"]
    predicted = tss_batch_seconds(mine, 1, load_calibration().params, all_ops()[index])
    assert predicted == pytest.approx(measured, rel=1e-6)
    assert main(argv) == 2  # the device file exists: --force to overwrite
    assert "already exists" in capsys.readouterr().err
    assert main([*argv, "--force"]) == 0
    assert "measured_host_kernel_us: " in capsys.readouterr().out


def test_a_network_out_of_memory_is_not_exported_and_the_others_count(
    tmp_path: Path, fake_gpu: None, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    archs = host_bound_networks("titanxp")[:3]
    monkeypatch.setattr(FakeEagerGpu, "too_large", (int(archs[1]),))
    (tmp_path / "nets.txt").write_text("\n".join(map(str, archs.tolist())))
    export = _measure(tmp_path, tmp_path / "nets.txt", EAGER)
    with np.load(export) as z:  # only measured rows are cached, so exported
        assert z["index"].tolist() == [int(archs[0]), int(archs[2])]
    capsys.readouterr()
    assert main(["host-figure", "--from", str(export), "--device", "titanxp", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["without_latency"] == [] and len(record["networks"]) == 2
    assert record["measured_host_kernel_us"] == pytest.approx(
        HOST_FACTOR * load_calibration().params.host_seconds * 1e6)


def test_helps_own_batch_1_latencies_are_read_with_their_data_sheet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archs = np.array([4250, 4838, 8034, 9968, 13304])
    (tmp_path / "nets.txt").write_text("\n".join(map(str, archs.tolist())))
    export = _measure(tmp_path, tmp_path / "nets.txt", "measured[batch=1]")
    assert main(["measure", "--space", "tss", "--backend", "measured[batch=1]", "--device",
                 "titanxp", "--archs", str(tmp_path / "nets.txt"), "--cache",
                 str(tmp_path / "x.db"), "--export", str(tmp_path / "xp.npz"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["host-figure", "--from", str(tmp_path / "xp.npz"), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["device"] == "titanxp"  # the export's own data sheet
    ratios = load_latency("titanxp", 1)[archs] / modelled_host("titanxp", archs)
    assert record["measured_host_kernel_us"] == pytest.approx(
        float(np.median(ratios)) * load_calibration().params.host_seconds * 1e6)
    assert main(["host-figure", "--from", str(export), "--json"]) == 0  # the 2080 Ti default
    assert json.loads(capsys.readouterr().out)["device"] == "rtx2080ti"


def _write_export(path: Path, meta: dict[str, Any], latency: list[float],
                  batch: list[int]) -> Path:
    n = len(latency)
    np.savez(path, meta=np.array(json.dumps(meta)), index=np.arange(n) + 4250,
             latency_s=np.array(latency), batch=np.array(batch))
    return path


GOOD_META = {"format": EXPORT_FORMAT, "space": "tss", "dataset": "cifar10", "label": "measured",
             "processor": "GPU", "backend": "torch-cuda",
             "config": {"precision": "fp32", "cuda_graph": False, "channels_last": False,
                        "batch": 1},
             "device": {"kind": "cuda", "gpu": "Fake GPU"}}


@pytest.mark.parametrize(
    ("change", "latency", "batch", "message"),
    [
        ({"config": {"precision": "fp16", "cuda_graph": False, "channels_last": False,
                     "batch": 1}}, [0.01], [1], "torch-cuda with {'precision': 'fp16'}"),
        ({"config": {"precision": "fp32", "cuda_graph": True, "channels_last": False,
                     "batch": 1}}, [0.01], [1], "'cuda_graph': True"),
        ({"config": {"precision": "fp32", "cuda_graph": False, "channels_last": True,
                     "batch": 1}}, [0.01], [1], "'channels_last': True"),
        ({"config": {"precision": "fp32", "cuda_graph": False, "channels_last": False}},
         [0.01], [64], "the largest batch"),
        ({"backend": "tensorrt"}, [0.01], [1], "measured by 'tensorrt'"),
        ({"label": "modelled"}, [0.01], [1], "holds modelled rows"),
        ({"processor": "CPU"}, [0.01], [1], "on a CPU"),
        ({"dataset": "cifar100"}, [0.01], [1], "measured on 'cifar100'"),
        ({}, [0.01, 0.02], [1, 32], "mixes batches [1, 32]"),
        ({}, [float("nan")], [-1], "holds no latency"),
        ({}, [0.01], [1], "which has no data sheet: give the device"),
        ({"format": "something-else"}, [0.01], [1], "is not a file `nasfilter measure"),
    ],
)
def test_exports_that_say_nothing_of_the_host_are_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any],
    latency: list[float], batch: list[int], message: str,
) -> None:
    path = _write_export(tmp_path / "t.npz", {**GOOD_META, **change}, latency, batch)
    assert main(["host-figure", "--from", str(path)]) == 2
    err = capsys.readouterr().err
    assert "nasfilter host-figure: error: --from" in err and message in err


def test_a_file_that_is_no_npz_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "dev.json").write_text('{"name": "x"}')
    assert main(["host-figure", "--from", str(tmp_path / "dev.json")]) == 2
    assert "dev.json' is not a file `nasfilter measure --space tss --export` writes: not a .npz" \
        in capsys.readouterr().err


def test_rows_without_a_latency_are_left_out_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = modelled_host("titanxp", np.array([4250, 4251]))
    path = _write_export(tmp_path / "t.npz", GOOD_META,
                         [float(host[0]) * 2, float(host[1]) * 2, float("nan")], [1, 1, -1])
    assert main(["host-figure", "--from", str(path), "--device", "titanxp", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["without_latency"] == [4252]
    assert [n["index"] for n in record["networks"]] == [4250, 4251]
    assert record["measured_host_kernel_us"] == pytest.approx(
        2 * load_calibration().params.host_seconds * 1e6)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--networks", "5"], "--networks needs --device"),
        (["--networks", "5", "--device", "titanxp", "--out", "x.json"], "--out goes with --from"),
        (["--networks", "99999", "--device", "titanxp"], "an integer from 1 to"),
        (["--networks", "5", "--device", "nosuchgpu"], "--device: unknown device 'nosuchgpu'"),
        (["--from", "t.npz", "--batch", "32"], "--batch and --seed go with --networks"),
        (["--from", "missing.npz"], "--from 'missing.npz': tss export file does not exist"),
        (["--networks", "5", "--device", "titanxp", "--batch", "256"],
         "no tss network is host-bound at batch 256 on titanxp by the model: measure at batch 1"),
        (["--networks", "0", "--device", "titanxp"], "--networks"),
    ],
)
def test_bad_arguments_are_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    argv: list[str], message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["host-figure", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_device_file_dict_reads_back_as_the_same_device(tmp_path: Path) -> None:
    # the reader is the device files' own (user units), independent of the writer
    for name, spec in DEVICES.items():
        data = device_file_dict(replace(spec, measured_host_kernel_seconds=2.5e-5))
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        back = get_device(str(path))
        for field in ("peak_flops", "bandwidth", "fp32_peak_flops", "memory_bytes", "l2_bytes",
                      "measured_host_kernel_seconds", "fp16_accumulate_peak_flops"):
            assert getattr(back, field) == pytest.approx(getattr(spec, field) if field !=
                "measured_host_kernel_seconds" else 2.5e-5), (name, field)
        assert (back.sm_count, back.tensor_cores, back.sources) == (
            spec.sm_count, spec.tensor_cores, spec.sources)
    titanxp = device_file_dict(DEVICES["titanxp"])  # the data sheet's units
    assert (titanxp["fp32_peak_tflops"], titanxp["memory_gb"], titanxp["sm_count"]) == (
        pytest.approx(12.15), pytest.approx(12.0), 30)


# ------------------------------------------------- calibrate --validate --measured T.npz
def test_calibrate_scores_measured_cells_and_the_host_figure_closes_the_gap(
    tmp_path: Path, fake_gpu: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fake machine takes 1.3 x the modelled host time of every network: on its data
    sheet alone the model's throughput is 30 % high on host-bound networks; with the figure
    from five other networks it is exact."""
    pool = host_bound_networks("titanxp")
    rng = np.random.default_rng(1)
    picked = rng.choice(pool, 25, replace=False)
    (tmp_path / "host.txt").write_text("\n".join(map(str, picked[:5].tolist())))
    (tmp_path / "rest.txt").write_text("\n".join(map(str, picked[5:].tolist())))
    host_export = _measure(tmp_path, tmp_path / "host.txt", EAGER, "host.npz")
    rest_export = _measure(tmp_path, tmp_path / "rest.txt", EAGER, "rest.npz")
    assert main(["host-figure", "--from", str(host_export), "--device", "titanxp", "--out",
                 str(tmp_path / "mine.json")]) == 0
    capsys.readouterr()
    runs = {}
    for device in ("titanxp", str(tmp_path / "mine.json")):
        assert main(["calibrate", "--validate", "--measured", str(rest_export), "--device",
                     device, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["measured"] == [] and len(out["measured_cells"]) == 1
        runs[device] = out["measured_cells"][0]
    plain, mine = runs["titanxp"], runs[str(tmp_path / "mine.json")]
    assert plain["calibrated"]["n"] == 20 and plain["batch"] == 1
    assert plain["calibrated"]["mdape_percent"] == pytest.approx(30.0)
    assert mine["calibrated"]["mdape_percent"] == pytest.approx(0.0, abs=1e-6)
    assert mine["host_kernel_us"] == pytest.approx(
        HOST_FACTOR * load_calibration().params.host_seconds * 1e6)
    assert not plain["in_sample"] and plain["roofline"]["mdape_percent"] > 100
    assert main(["calibrate", "--validate", "--measured", str(rest_export), "--device",
                 "titanxp"]) == 0
    text = capsys.readouterr().out
    assert "rest.npz" in text and "IN-SAMPLE" not in text and "30.0" in text


def test_helps_latencies_are_named_in_sample_unless_the_calibration_left_them_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["measure", "--space", "tss", "--backend", "measured[batch=256]", "--device",
                 "titanx", "--archs", "sample:200", "--cache", str(tmp_path / "c.db"),
                 "--export", str(tmp_path / "t.npz"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["calibrate", "--validate", "--measured", str(tmp_path / "t.npz"), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)["measured_cells"][0]
    assert record["in_sample"] and record["device"] == "titanx"
    shipped = json.loads(Path(load_calibration().path).read_text())
    shipped["provenance"]["cells"]["devices"].remove("titanx")
    (tmp_path / "cal.json").write_text(json.dumps(shipped))
    assert main(["calibrate", "--validate", "--measured", str(tmp_path / "t.npz"),
                 "--calibration", str(tmp_path / "cal.json"), "--json"]) == 0
    assert not json.loads(capsys.readouterr().out)["measured_cells"][0]["in_sample"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--layout", "nchw"], "--layout describes timm CSV files"),
        (["--device", "nosuchgpu"], "--measured/--device: unknown device 'nosuchgpu'"),
    ],
)
def test_calibrate_refuses_bad_cell_exports_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    path = _write_export(tmp_path / "t.npz", GOOD_META, [0.01, 0.02, 0.03], [1, 1, 1])
    assert main(["calibrate", "--validate", "--measured", str(path), *extra]) == 2
    assert message in capsys.readouterr().err
    assert main(["calibrate", "--validate", "--measured", str(path)]) == 2  # no data sheet
    assert "--measured: " in capsys.readouterr().err


def test_exports_at_several_batches_are_scored_each_at_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = []
    for batch in (1, 256):
        path = tmp_path / f"b{batch}.npz"
        assert main(["measure", "--space", "tss", "--backend", f"measured[batch={batch}]",
                     "--device", "titanxp", "--archs", "sample:50", "--cache",
                     str(tmp_path / "c.db"), "--export", str(path), "--quiet"]) == 0  # fmt: skip
        files += ["--measured", str(path)]
    capsys.readouterr()
    assert main(["calibrate", "--validate", *files, "--json"]) == 0
    records = json.loads(capsys.readouterr().out)["measured_cells"]
    assert [(r["batch"], r["calibrated"]["n"], Path(r["file"]).name) for r in records] == [
        (1, 50, "b1.npz"), (256, 50, "b256.npz")]
    # HELP's batch-1 latencies are host-bound, its batch-256 ones GPU-bound: the plain
    # roofline misses the first by far more than the second (docs/gpu-model.md)
    assert records[0]["roofline"]["mdape_percent"] > 5 * records[1]["roofline"]["mdape_percent"]
