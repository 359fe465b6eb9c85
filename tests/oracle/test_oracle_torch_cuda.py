"""The torch-CUDA backend's logic, with fakes where the GPU would be (no CUDA here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.oracle.base import BackendUnavailable
from nasfilter.oracle.measurement import Status
from nasfilter.oracle.registry import create
from nasfilter.oracle.timing import Timer
from nasfilter.oracle.torch_cuda import TorchCudaBackend, find_max_batch, is_oom
from tests.fake_tensorrt import Clock, FakeTorch, OutOfMemoryError

CIFAR = get_dataset("cifar10")


class Counter:
    """fits(b) for a device that holds ``limit`` images; counts calls."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.tried: list[int] = []

    def __call__(self, batch: int) -> bool:
        self.tried.append(batch)
        return batch <= self.limit


@pytest.mark.parametrize("limit", [1, 2, 3, 63, 64, 65, 100, 1000, 4095, 4096, 10_000])
@pytest.mark.parametrize("start", [1, 64])
def test_find_max_batch_finds_the_limit(limit: int, start: int) -> None:
    fits = Counter(limit)
    found = find_max_batch(fits, start=start, cap=4096)
    assert found == min(limit, 4096)
    # doubling then bisecting: logarithmic in the cap, never a batch twice
    assert len(fits.tried) <= 2 * 13
    assert len(set(fits.tried)) == len(fits.tried)
    assert max(fits.tried) <= 4096


def test_find_max_batch_nothing_fits() -> None:
    fits = Counter(0)
    assert find_max_batch(fits, start=64, cap=4096) == 0
    assert 1 in fits.tried


def test_find_max_batch_doubles_first() -> None:
    fits = Counter(300)
    find_max_batch(fits, start=64, cap=4096)
    assert fits.tried[:4] == [64, 128, 256, 512]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_find_max_batch_rejects_bad_start(bad: Any) -> None:
    with pytest.raises(ValueError, match="start"):
        find_max_batch(Counter(5), start=bad, cap=10)


def test_is_oom_recognises_out_of_memory() -> None:
    assert is_oom(OutOfMemoryError("CUDA out of memory"))
    assert is_oom(RuntimeError("CUDA error: out of memory"))
    assert is_oom(RuntimeError("cuDNN error: CUDNN_STATUS_ALLOC_FAILED"))
    assert not is_oom(RuntimeError("shape mismatch"))
    assert not is_oom(ValueError("out of memory"))  # not a runtime error


def test_no_cuda_is_backend_unavailable() -> None:
    import torch

    if torch.cuda.is_available():  # pragma: no cover - only on a GPU machine
        pytest.skip("this machine has CUDA")
    with pytest.raises(BackendUnavailable, match=r"CUDA GPU.*is_available\(\) is False"):
        create("torch-cuda")


def test_bad_device_is_value_error() -> None:
    with pytest.raises(ValueError, match="cuda"):
        TorchCudaBackend("cpu")


class FakeGpuBackend(TorchCudaBackend):
    """The real measure(), with the GPU pieces replaced by a fake device.

    The device holds ``limit`` images; a forward pass of batch b takes ``b * 2e-6`` s.
    """

    def __init__(self, limit: int, fail: Exception | None = None, **kw: Any) -> None:
        self.clock = Clock()
        self.limit = limit
        self.fail = fail
        self.prepared: list[int] = []
        self.released = 0
        super().__init__("cuda", peak_flops=1e15, **kw)

    def _require(self) -> Any:
        return FakeTorch(self.clock, 1 << 40)

    def load(self, arch: int, dataset: Dataset) -> Any:
        return ("net", arch)

    def prepare(self, net: Any, dataset: Dataset, batch: int) -> Callable[[], object]:
        self.prepared.append(batch)
        if self.fail is not None:
            raise self.fail
        if batch > self.limit:
            raise OutOfMemoryError(f"CUDA out of memory at batch {batch}")

        def run() -> None:
            self.clock.now += batch * 2e-6

        return run

    def release(self) -> None:
        self.released += 1

    def timer(self) -> Timer:
        return self.clock.timer


def test_measure_at_the_largest_batch() -> None:
    backend = FakeGpuBackend(limit=777, start_batch=64, batch_cap=8192, window=0.01, trials=3)
    m = backend.measure(12, CIFAR)
    assert m.status is Status.OK
    assert m.max_batch == 777 and m.batch_size == 777
    assert m.throughput == pytest.approx(1 / 2e-6)
    assert m.peak_flops == 1e15 and m.peak_source == "spec"
    assert backend.released >= 1  # every OOM gave memory back
    assert m.timings["trials"] == 3
    assert m.device["kind"] == "cuda"
    assert m.config["precision"] == "fp16" and m.config["cuda_graph"] is True


def test_layout_is_a_setting() -> None:
    import torch

    from nasfilter.oracle.torch_cuda import memory_format

    nchw = FakeGpuBackend(limit=100, window=0.01, channels_last=False)
    assert nchw.config["channels_last"] is False and nchw.spec().config["channels_last"] is False
    assert FakeGpuBackend(limit=100, window=0.01).config["channels_last"] is True
    x = torch.zeros(2, 3, 4, 4)
    nhwc = x.contiguous(memory_format=memory_format(torch, True))
    assert nhwc.stride() == (48, 1, 12, 3)  # channels vary fastest: NHWC in memory
    assert x.contiguous(memory_format=memory_format(torch, False)).stride() == (48, 16, 4, 1)
    with pytest.raises(ValueError, match="channels_last must be true or false"):
        FakeGpuBackend(limit=100, channels_last="yes")


def test_a_given_batch_is_timed_without_the_search() -> None:
    backend = FakeGpuBackend(limit=777, window=0.01, trials=3, batch=1, cuda_graph=False)
    m = backend.measure(3, CIFAR)
    assert m.status is Status.OK
    assert backend.prepared == [1]  # no max-batch search: batch 1, prepared once
    assert m.batch_size == 1 and m.max_batch is None
    assert m.throughput == pytest.approx(1 / 2e-6)
    assert m.config["batch"] == 1 and m.config["cuda_graph"] is False
    assert backend.spec().config["batch"] == 1


def test_out_of_memory_at_a_given_batch_is_an_oom_row() -> None:
    backend = FakeGpuBackend(limit=100, window=0.01, batch=256)
    m = backend.measure(0, CIFAR)
    assert m.status is Status.OOM and backend.prepared == [256]
    assert "out of memory at batch 256" in m.error


def test_fp32_is_a_setting_that_keys_the_cache() -> None:
    fp16 = FakeGpuBackend(limit=100, window=0.01)
    fp32 = FakeGpuBackend(limit=100, window=0.01, precision="fp32")
    assert fp16.config["precision"] == "fp16" and "tf32" not in fp16.config
    assert fp32.config["precision"] == "fp32" and fp32.config["tf32"] is False
    assert "precision" not in fp16.spec().config and fp32.spec().config["precision"] == "fp32"
    assert "batch" not in fp16.config  # the default's config (and cache key) is as it was


def test_fp32_turns_tf32_off_and_builds_fp32() -> None:
    import types

    import torch

    from nasfilter.oracle.torch_cuda import set_fp32_math, torch_dtype

    fake = types.SimpleNamespace(
        backends=types.SimpleNamespace(
            cudnn=types.SimpleNamespace(allow_tf32=True),
            cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=True)),
        )
    )
    set_fp32_math(fake, "fp16")
    assert fake.backends.cudnn.allow_tf32 and fake.backends.cuda.matmul.allow_tf32
    set_fp32_math(fake, "fp32")
    assert not fake.backends.cudnn.allow_tf32 and not fake.backends.cuda.matmul.allow_tf32
    assert torch_dtype(torch, "fp32") is torch.float32
    assert torch_dtype(torch, "fp16") is torch.float16


@pytest.mark.parametrize(
    ("setting", "match"),
    [
        ({"batch": 0}, r"batch must be an integer from 1 to batch_cap \(8192\), got 0"),
        ({"batch": 2.5}, "got 2.5"),
        ({"batch": 10_000}, "got 10000"),
        ({"precision": "bf16"}, "precision must be one of fp16, fp32, got 'bf16'"),
        ({"cuda_graph": "false"}, "cuda_graph must be true or false, got 'false'"),
    ],
)
def test_bad_settings_are_refused_by_name(setting: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        FakeGpuBackend(limit=100, **setting)


def test_measure_capped_batch() -> None:
    m = FakeGpuBackend(limit=10**9, start_batch=64, batch_cap=1000, window=0.01).measure(0, CIFAR)
    assert m.max_batch == 1000 and m.batch_size == 1000


def test_nothing_fits_is_an_oom_row_not_an_exception() -> None:
    m = FakeGpuBackend(limit=0, window=0.01).measure(0, CIFAR)
    assert m.status is Status.OOM and m.max_batch == 0
    assert m.batch_size is None


def test_other_errors_are_error_rows() -> None:
    m = FakeGpuBackend(limit=100, fail=RuntimeError("illegal memory access")).measure(0, CIFAR)
    assert m.status is Status.ERROR
    assert "illegal memory access" in m.error


@pytest.mark.slow
@pytest.mark.subprocess
def test_gpu_check_script_says_why_without_cuda(tmp_path: Any) -> None:
    import subprocess
    import sys
    from pathlib import Path

    import torch

    if torch.cuda.is_available():  # pragma: no cover - only on a GPU machine
        pytest.skip("this machine has CUDA: run the script itself")
    script = Path(__file__).parent.resolve().parent.parent / "scripts" / "gpu_check.py"
    done = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "CUDA" in done.stderr
