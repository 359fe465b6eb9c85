"""The real-network backends on tss cells: each builds xautodl's ``TinyNetwork`` of the cell
(checked against xautodl built here and the shipped parameter counts), onnxruntime times its
ONNX export on this CPU (outputs equal to torch's; rows labelled CPU), and torch-cuda and
tensorrt run it on fakes of the GPU (tests/fake_tensorrt), labelled with backend and device."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.cli import main
from nasfilter.oracle import onnx_backend, space_nets
from nasfilter.oracle import tensorrt_backend as trt_mod
from nasfilter.oracle.measurement import Status
from nasfilter.oracle.timing import Timer
from nasfilter.oracle.tss_measure import TssTensorRT, TssTorchCuda, real_backend
from tests.fake_tensorrt import Clock, FakeTorch, OutOfMemoryError, make_tensorrt
from tests.tss_shared import shared_data, shared_tss

CIFAR = get_dataset("cifar10")
CELLS = (0, 11, 284)


def _arch(index: int) -> str:
    return (shared_data() / "nats-tss-real" / "arch_strings.txt").read_text().splitlines()[index]


def _xautodl(index: int, num_classes: int) -> Any:
    """xautodl's TinyNetwork built here, from the arch string as the shared data ships it."""
    from xautodl.models import get_cell_based_tiny_net
    from xautodl.models.cell_searchs.genotypes import Structure

    config = SimpleNamespace(name="infer.tiny", C=16, N=5, num_classes=num_classes,
                             genotype=Structure.str2structure(_arch(index)))
    return get_cell_based_tiny_net(config).eval()


@pytest.mark.parametrize("index", CELLS)
@pytest.mark.parametrize(("dataset", "classes", "side"),
                         [("cifar10", 10, 32), ("ImageNet16-120", 120, 16)])
def test_the_built_network_is_xautodls_tiny_network(index: int, dataset: str, classes: int,
                                                    side: int) -> None:
    import torch

    torch.manual_seed(7)
    net = space_nets.build("tss", index, dataset)
    torch.manual_seed(7)
    ref = _xautodl(index, classes)
    assert type(net).__name__ == "TinyNetwork"
    params = sum(p.numel() for p in net.parameters())
    shipped = shared_tss(f"{'cifar10' if dataset == 'cifar10' else dataset}_params_M")[index]
    assert params / 1e6 == pytest.approx(float(shipped), rel=1e-6)
    x = torch.randn(3, 3, side, side)
    with torch.no_grad():
        (feat, logits), (rfeat, rlogits) = net(x), ref(x)
    assert logits.shape == (3, classes) and feat.shape == (3, 64)
    torch.testing.assert_close(logits, rlogits, rtol=0, atol=0)
    torch.testing.assert_close(feat, rfeat, rtol=0, atol=0)
    flops = space_nets.flops_per_image("tss", dataset)
    assert flops.shape == (15625,)
    assert flops[index] == pytest.approx(2e6 * float(shared_tss(
        f"{'cifar10' if dataset == 'cifar10' else dataset}_flops_M")[index]), rel=1e-6)


@pytest.mark.parametrize("index", (11, 284))
def test_the_onnx_export_computes_what_xautodl_computes(index: int) -> None:
    import onnxruntime as ort
    import torch

    torch.manual_seed(3)
    model = onnx_backend.export_onnx(index, CIFAR, 1, dynamic_batch=True, space="tss")
    torch.manual_seed(3)
    ref = _xautodl(index, 10)
    x = np.random.default_rng(0).standard_normal((4, 3, 32, 32)).astype(np.float32)
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    feat, logits = sess.run(None, {"input": x})
    with torch.no_grad():
        rfeat, rlogits = ref(torch.from_numpy(x))
    np.testing.assert_allclose(logits, rlogits.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(feat, rfeat.numpy(), rtol=1e-4, atol=1e-4)


def test_onnxruntime_measures_a_cell_on_this_cpu(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o.npz"
    archs = tmp_path / "a.txt"
    archs.write_text(f"{_arch(284)}\n")
    argv = ["measure", "--space", "tss", "--backend",
            "onnxruntime[batch=4,window=0.05,trials=2,threads=1,peak_flops=1e11]",
            "--archs", str(archs), "--cache", str(tmp_path / "c.db"), "--json", "--quiet"]
    assert main([*argv, "--export", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["processor"], summary["label"], summary["space"]) == ("CPU", "measured", "tss")
    assert summary["device_fingerprint"]["kind"] == "cpu" and summary["n_measured"] == 1
    with np.load(out, allow_pickle=False) as data:
        rows = {key: data[key] for key in data.files}
    meta = json.loads(str(rows["meta"]))
    assert rows["index"].tolist() == [284] and rows["arch"].tolist() == [_arch(284)]
    assert rows["processor"].tolist() == ["CPU"] and rows["label"].tolist() == ["measured"]
    assert (meta["backend"], meta["processor"], meta["config"]["space"]) == (
        "onnxruntime", "CPU", "tss")
    assert rows["latency_s"][0] * rows["throughput"][0] == pytest.approx(4)
    flops = 2e6 * float(shared_tss("cifar10_flops_M")[284])
    assert rows["utilization"][0] == pytest.approx(rows["throughput"][0] * flops / 1e11)
    assert main(argv) == 0  # the cache resumes: the sss rows of index 284 are another group
    assert json.loads(capsys.readouterr().out)["n_cached"] == 1


class FakeTssGpu(TssTorchCuda):
    """torch-cuda's real measure() over tss cells, on a fake GPU holding ``limit`` images."""

    def __init__(self, limit: int, **kw: Any) -> None:
        self.clock, self.limit, self.loaded = Clock(), limit, []
        super().__init__("cuda", peak_flops=1e15, window=0.01, trials=3, **kw)

    def _require(self) -> Any:
        return FakeTorch(self.clock, 1 << 40)

    def load(self, arch: int, dataset: Dataset) -> Any:
        self.loaded.append((self.space, arch))
        return ("net", arch)

    def prepare(self, net: Any, dataset: Dataset, batch: int) -> Callable[[], object]:
        if batch > self.limit:
            raise OutOfMemoryError(f"CUDA out of memory at batch {batch}")

        def run() -> None:
            self.clock.now += batch * 2e-6

        return run

    def release(self) -> None:
        pass

    def timer(self) -> Timer:
        return self.clock.timer


def test_torch_cuda_on_a_cell_is_labelled_with_its_backend_device_and_space() -> None:
    backend = FakeTssGpu(limit=500)
    m = backend.measure(11, CIFAR)
    assert m.status is Status.OK and m.batch_size == 500
    assert backend.loaded == [("tss", 11)]
    assert m.backend == "torch-cuda" and m.device["kind"] == "cuda"
    assert m.config["space"] == "tss" and m.config["label"] == "measured"
    assert m.flops_per_image == pytest.approx(2e6 * float(shared_tss("cifar10_flops_M")[11]))
    assert m.throughput == pytest.approx(1 / 2e-6)


def test_torch_cuda_load_builds_the_tss_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from nasfilter.oracle import torch_cuda

    built: list[tuple[str, int]] = []

    def build(space: str, arch: int, dataset: Any) -> Any:
        built.append((space, arch))
        return torch.nn.Linear(2, 2)

    monkeypatch.setattr(torch_cuda, "build", build)
    cpu = SimpleNamespace(channels_last=torch.channels_last, float16=torch.float16,
                          float32=torch.float32, contiguous_format=torch.contiguous_format,
                          device=lambda name: torch.device("cpu"))
    backend = FakeTssGpu(limit=10)
    backend.torch = cpu
    net = TssTorchCuda.load(backend, 284, CIFAR)
    assert built == [("tss", 284)] and net.weight.dtype == torch.float16
    fp32 = FakeTssGpu(limit=10, precision="fp32")
    fp32.torch = cpu
    assert TssTorchCuda.load(fp32, 284, CIFAR).weight.dtype == torch.float32


@pytest.mark.slow
def test_tensorrt_builds_the_engine_of_the_cells_network(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    import onnx

    clock = Clock()
    trt = make_tensorrt("11.x", clock)
    monkeypatch.setitem(sys.modules, "tensorrt", trt)
    monkeypatch.setattr(trt_mod, "require_cuda", lambda name: FakeTorch(clock, 1 << 34))
    exported: list[bytes] = []
    real_export = onnx_backend.export_onnx

    def export(*args: Any, **kw: Any) -> bytes:
        exported.append(real_export(*args, **kw))
        return exported[-1]

    monkeypatch.setattr(trt_mod, "export_onnx", export)
    backend = real_backend("tensorrt", {"window": 0.01, "trials": 2, "batch_cap": 512,
                                        "timing_cache": str(tmp_path / "t.cache"),
                                        "peak_flops": 1e14}, "cuda")
    assert isinstance(backend, TssTensorRT)
    m = backend.measure(11, CIFAR)
    assert m.status is Status.OK, m.error
    assert m.backend == "tensorrt" and m.config["space"] == "tss" and m.device["kind"] == "cuda"
    graph = onnx.load_from_string(exported[0]).graph
    # cell 11 runs three convs (nor_conv_3x3 x3; two avg pools, one none) in each of 15 cells,
    # plus the stem and 3 convs in each of the two ResNet blocks: 45 + 1 + 6
    assert sum(node.op_type == "Conv" for node in graph.node) == 52
    assert graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
