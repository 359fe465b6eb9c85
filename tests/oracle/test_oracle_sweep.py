"""Sweeps, architecture selection, the `nasfilter measure` command, exports and proxy tables."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from nasfilter.bench.costs import network_costs
from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.spaces.sss import Arch
from nasfilter.cli import main
from nasfilter.oracle.cache import Group, MeasurementCache
from nasfilter.oracle.measurement import Measurement
from nasfilter.oracle.proxies import load_sample, proxy_table
from nasfilter.oracle.roofline import RooflineBackend, roofline
from nasfilter.oracle.sweep import corner_indices, select_archs, stratified_sample, sweep
from nasfilter.oracle.tablefile import load_table_file

CIFAR = get_dataset("cifar10")
ORT_QUICK = "onnxruntime[window=0.04,trials=2,warmup=1,batch=8,peak_flops=1e11]"


class Counting(RooflineBackend):
    """The roofline, counting what it is asked to measure."""

    name: ClassVar[str] = "roofline"

    def __init__(self) -> None:
        super().__init__("v100")
        self.asked: list[int] = []

    def measure_many(self, archs: Sequence[int], dataset: Dataset) -> Iterator[Measurement]:
        self.asked.extend(archs)
        return super().measure_many(archs, dataset)


def test_sweep_never_measures_a_cached_key(tmp_path: Path) -> None:
    with MeasurementCache(tmp_path / "c.sqlite") as cache:
        first = Counting()
        s1 = sweep(first, [5, 1, 5, 9], CIFAR, cache)
        assert first.asked == [5, 1, 9]
        assert (s1.n_requested, s1.n_measured, s1.n_cached) == (3, 3, 0)
        second = Counting()
        s2 = sweep(second, [9, 1, 2], CIFAR, cache)
        assert second.asked == [2]
        assert (s2.n_measured, s2.n_cached, s2.n_rows) == (1, 2, 4)


def test_corners_and_stratified_sample() -> None:
    corners = corner_indices()
    assert len(corners) == 32
    assert {0, 32767} <= set(corners.tolist())
    for index in corners:
        assert set(Arch.from_index(int(index)).channels) <= {8, 64}
    rng = np.random.default_rng(1)
    sample = stratified_sample(256, rng, CIFAR)
    assert set(corners.tolist()) <= set(sample.tolist())
    assert 256 <= len(sample) <= 256 + 32
    # every MACs octile holds its share of the stratified part
    macs = network_costs(CIFAR).macs
    edges = np.quantile(macs, np.linspace(0, 1, 9))
    counts = np.histogram(macs[sample], bins=edges)[0]
    assert counts.min() >= 256 // 8 - 2
    again = stratified_sample(256, np.random.default_rng(1), CIFAR)
    np.testing.assert_array_equal(sample, again)


def test_select_archs(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    assert len(select_archs("all", rng)) == 32768
    a = select_archs("sample:4", np.random.default_rng(3))
    b = select_archs("sample:4", np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    assert len(set(a.tolist())) == 4
    listing = tmp_path / "archs.txt"
    listing.write_text("# my picks\n12\n8:8:8:16:32   # index 11\n\n12\n")
    assert select_archs(str(listing), rng).tolist() == [12, 11]
    for bad in ("sample:0", "sample:x", "some", "stratified:99999"):
        with pytest.raises(ValueError, match="archs"):
            select_archs(bad, rng)
    broken = tmp_path / "broken.txt"
    broken.write_text("12\n8:8:9:8:8\n")
    with pytest.raises(ValueError, match=r"broken.txt:2"):
        select_archs(str(broken), rng)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_cli_roofline_all_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import moocore

    cache = str(tmp_path / "c.sqlite")
    argv = ["measure", "--backend", "roofline", "--device", "v100", "--archs", "all"]
    code, out, _ = _run([*argv, "--cache", cache, "--json", "--quiet"], capsys)
    assert code == 0
    summary = json.loads(out)
    for key in ("backend", "device", "n_measured", "n_cached", "seconds"):
        assert key in summary
    assert (summary["n_measured"], summary["n_cached"]) == (32768, 0)
    res = roofline("v100", CIFAR)
    points = np.stack([res.throughput, res.utilization], axis=1)
    expected = int(moocore.is_nondominated(points, maximise=True, keep_weakly=True).sum())
    assert summary["pareto_throughput_utilization"] == expected
    export = tmp_path / "v100.npz"
    code, out, _ = _run([*argv, "--cache", cache, "--json", "--export", str(export)], capsys)
    again = json.loads(out)
    assert (again["n_measured"], again["n_cached"]) == (0, 32768)
    table = load_table_file(export).proxy_table()
    np.testing.assert_allclose(table.throughput, res.throughput, rtol=1e-12)
    assert table.provenance["synthetic"] is True


@pytest.mark.slow
def test_cli_onnxruntime_sample_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = str(tmp_path / "c.sqlite")
    export = tmp_path / "cpu.npz"
    argv = ["measure", "--backend", ORT_QUICK, "--archs", "sample:2", "--cache", cache]
    code, out, err = _run([*argv, "--json"], capsys)
    assert code == 0, err
    first = json.loads(out)
    assert (first["n_measured"], first["n_cached"], first["n_failed"]) == (2, 0, 0)
    assert "arch" in err  # the progress bar went to stderr
    code, out, _ = _run([*argv, "--quiet", "--export", str(export)], capsys)
    assert code == 0
    assert "0 measured, 2 cached" in out
    table = load_table_file(export)
    assert len(table) == 2 and table.backend == "onnxruntime"
    np.testing.assert_array_equal(
        np.sort(table.arch), np.sort(select_archs("sample:2", np.random.default_rng(0)))
    )
    proxy = proxy_table("onnxruntime", dataset="cifar10", cache=cache)
    assert proxy.measured.sum() == 2
    np.testing.assert_allclose(proxy.throughput[table.arch], table.throughput)


def test_cli_bad_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = str(tmp_path / "c.sqlite")
    code, _, err = _run(
        ["measure", "--backend", "tpu-magic", "--archs", "all", "--cache", cache], capsys
    )
    assert code == 2
    for name in ("roofline", "onnxruntime", "torch-cuda", "tensorrt"):
        assert name in err
    code, _, err = _run(
        [
            "measure",
            "--backend",
            "roofline",
            "--device",
            "b200",
            "--archs",
            "all",
            "--cache",
            cache,
        ],
        capsys,
    )
    assert code == 2 and "v100" in err and "h200" in err


def test_cli_missing_cuda_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():  # pragma: no cover - only on a GPU machine
        pytest.skip("this machine has CUDA")
    code, _, err = _run(
        [
            "measure",
            "--backend",
            "torch-cuda",
            "--archs",
            "sample:1",
            "--cache",
            str(tmp_path / "c.sqlite"),
        ],
        capsys,
    )
    assert code == 2 and "CUDA" in err


def test_proxy_table_sources(tmp_path: Path) -> None:
    direct = proxy_table("roofline", "a100", "cifar100")
    assert direct.measured.all() and "a100" in direct.label
    with MeasurementCache(tmp_path / "c.sqlite") as cache:
        sweep(RooflineBackend("h100"), range(100), CIFAR, cache)
        sweep(RooflineBackend("v100"), range(50), CIFAR, cache)
    with pytest.raises(ValueError, match="name the device"):
        proxy_table("roofline", None, "cifar10", cache=tmp_path / "c.sqlite")
    table = proxy_table("roofline", "h100", "cifar10", cache=tmp_path / "c.sqlite")
    assert table.measured.sum() == 100
    expected = roofline("h100", CIFAR).throughput[:100]
    np.testing.assert_allclose(table.throughput[:100], expected, rtol=1e-12)
    with pytest.raises(LookupError, match="holds no tensorrt"):
        proxy_table("tensorrt", None, "cifar10", cache=tmp_path / "c.sqlite")
    with pytest.raises(LookupError, match="nasfilter measure"):
        proxy_table("tensorrt")


def test_shipped_sample() -> None:
    sample = load_sample()
    assert sample.backend == "onnxruntime" and sample.dataset == "cifar10"
    assert len(sample) >= 256
    assert set(corner_indices().tolist()) <= set(sample.arch.tolist())
    assert sample.meta["device"]["kind"] == "cpu"
    assert np.all(sample.throughput > 0)
    np.testing.assert_allclose(
        sample.utilization, sample.throughput * sample.flops_per_image / sample.peak_flops
    )
    table = proxy_table("onnxruntime")
    assert table.measured.sum() == len(sample)
    # the CPU is slower on bigger networks: throughput falls with MACs
    from scipy.stats import spearmanr

    macs = network_costs(CIFAR).macs[sample.arch]
    assert spearmanr(macs, sample.throughput).statistic < -0.5


def test_export_refuses_mixed_groups(tmp_path: Path) -> None:
    from nasfilter.oracle.tablefile import build_table

    rows = list(RooflineBackend("v100").measure_many([1], CIFAR))
    rows += list(RooflineBackend("a100").measure_many([2], CIFAR))
    with pytest.raises(ValueError, match="one dataset, backend"):
        build_table(rows)


def test_foreign_table_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.npz"
    np.savez(path, a=np.zeros(3))
    with pytest.raises(ValueError, match="not a nasfilter measurement table"):
        load_table_file(path)


def test_group_keys_include_the_schema() -> None:
    g = Group.make("cifar10", "roofline", {"a": 1}, {"b": 2})
    assert g.schema >= 1 and g.config_dict == {"a": 1} and g.device_dict == {"b": 2}
