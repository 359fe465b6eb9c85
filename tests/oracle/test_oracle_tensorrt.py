"""The TensorRT backend against fake ``tensorrt`` modules of both API generations."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.network import input_shape
from nasfilter.oracle import tensorrt_backend as trt_mod
from nasfilter.oracle.base import BackendUnavailable
from nasfilter.oracle.measurement import Status
from nasfilter.oracle.registry import create
from nasfilter.oracle.tensorrt_backend import TensorRTBackend
from tests.fake_tensorrt import (
    GENERATIONS,
    SCRATCH_PER_IMAGE,
    SECONDS_PER_IMAGE,
    Clock,
    FakeTorch,
    make_tensorrt,
)

CIFAR = get_dataset("cifar10")
MEMORY_LIMIT = 300 * SCRATCH_PER_IMAGE + 12345  # the largest batch that fits is 300


def _install(monkeypatch: pytest.MonkeyPatch, generation: str) -> tuple[Any, FakeTorch]:
    clock = Clock()
    trt = make_tensorrt(generation, clock)
    torch = FakeTorch(clock, MEMORY_LIMIT)
    monkeypatch.setitem(sys.modules, "tensorrt", trt)
    monkeypatch.setattr(trt_mod, "require_cuda", lambda name: torch)
    return trt, torch


def _backend(tmp_path: Any, **kw: Any) -> TensorRTBackend:
    args: dict[str, Any] = {
        "opt_batch": 32,
        "start_batch": 64,
        "batch_cap": 4096,
        "window": 0.01,
        "trials": 3,
        "warmup": 1,
        "timing_cache": str(tmp_path / "trt.cache"),
        "peak_flops": 1e14,
    }
    args.update(kw)
    return TensorRTBackend("cuda", **args)


def _names(trt: Any) -> list[str]:
    return [name for name, _ in trt.calls]


@pytest.mark.slow
@pytest.mark.parametrize("generation", GENERATIONS)
def test_build_flags_and_profile_per_generation(
    generation: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    trt, _ = _install(monkeypatch, generation)
    backend = _backend(tmp_path)
    m = backend.measure(0, CIFAR)
    assert m.status is Status.OK, m.error

    # The ONNX model handed to TensorRT is FP16, with a free batch axis.
    parse = [args for name, args in trt.calls if name == "parse"]
    assert parse and parse[0][0] == "half"
    assert parse[0][1][0] == ("input", [-1, 3, 32, 32])

    created = [args[0] for name, args in trt.calls if name == "create_network"]
    set_flags = [args[0] for name, args in trt.calls if name == "set_flag"]
    if generation == "10.8":  # old TensorRT 10: weakly typed with the FP16 flag
        assert created == [0]
        assert set_flags == [trt.BuilderFlag.FP16]
        assert backend.config["strongly_typed"] is False
    else:  # strongly typed: the flag where it exists, never a precision flag
        assert set_flags == []
        typed = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
        assert created == [0 if typed is None else 1 << typed]
        assert backend.config["strongly_typed"] is True
    if generation.startswith("11"):
        assert not hasattr(trt.BuilderFlag, "FP16")

    # One optimization profile: min 1, opt fixed, max the cap.
    profiles = [args[0] for name, args in trt.calls if name == "add_optimization_profile"]
    assert profiles == [
        {"input": (input_shape(CIFAR, 1), input_shape(CIFAR, 32), input_shape(CIFAR, 4096))}
    ]
    assert backend.config["tensorrt"] == trt.__version__


@pytest.mark.slow
@pytest.mark.parametrize("generation", ["10.8", "11.x"])
def test_max_batch_search_timing_and_execute(
    generation: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    trt, torch = _install(monkeypatch, generation)
    m = _backend(tmp_path).measure(11, CIFAR)
    assert m.status is Status.OK, m.error
    # The fake GPU has room for MEMORY_LIMIT // SCRATCH_PER_IMAGE images of scratch.
    assert m.max_batch == MEMORY_LIMIT // SCRATCH_PER_IMAGE == 300
    assert m.batch_size == 300
    # Out-of-memory at 512 was handled (memory given back), not fatal.
    assert torch.empty_cache_calls >= 1
    # Every run is one execute_async_v3 on torch's current stream.
    runs = [args for name, args in trt.calls if name == "execute_async_v3"]
    assert runs and all(handle == 0xC0FFEE for handle, _ in runs)
    assert runs[-1][1] == 300
    # User-managed device memory sized for the batch.
    contexts = [args for name, args in trt.calls if name == "create_execution_context"]
    assert all(
        strategy == trt.ExecutionContextAllocationStrategy.USER_MANAGED for (strategy,) in contexts
    )
    memory = [args[0] for name, args in trt.calls if name == "set_device_memory"]
    assert memory[-1] == 300 * SCRATCH_PER_IMAGE
    # CUDA events time the fake GPU, which takes SECONDS_PER_IMAGE per image.
    assert m.throughput == pytest.approx(1 / SECONDS_PER_IMAGE, rel=1e-9)
    assert m.utilization == pytest.approx(m.throughput * m.flops_per_image / 1e14)
    assert m.device["gpu"] == "Fake GPU"


@pytest.mark.slow
def test_timing_cache_shared_and_one_builder_per_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    trt, _ = _install(monkeypatch, "11.0")
    first = _backend(tmp_path)
    first.measure(0, CIFAR)
    first.measure(12, CIFAR)
    second = _backend(tmp_path)  # another backend in the same process
    second.measure(284, CIFAR)
    caches = [args[0] for name, args in trt.calls if name == "create_timing_cache"]
    assert caches == [b"", b"+entry", b"+entry+entry"]  # each build starts from the last
    assert (tmp_path / "trt.cache").read_bytes() == b"+entry+entry+entry"
    assert _names(trt).count("Builder") == 1
    assert _names(trt).count("Runtime") == 1
    assert _names(trt).count("build_serialized_network") == 3


@pytest.mark.slow
def test_timing_cache_file_is_read_by_a_new_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    (tmp_path / "trt.cache").write_bytes(b"warm")
    trt, _ = _install(monkeypatch, "10.13")
    _backend(tmp_path).measure(0, CIFAR)
    caches = [args[0] for name, args in trt.calls if name == "create_timing_cache"]
    assert caches == [b"warm"]


@pytest.mark.slow
def test_nothing_fits_is_an_oom_row(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    _, torch = _install(monkeypatch, "11.x")
    torch.memory_limit = SCRATCH_PER_IMAGE // 2  # not even batch 1
    m = _backend(tmp_path).measure(0, CIFAR)
    assert m.status is Status.OOM
    assert m.max_batch == 0
    assert "batch 1" in m.error


def test_missing_tensorrt_is_backend_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tensorrt", None)  # import fails
    with pytest.raises(BackendUnavailable, match="tensorrt"):
        create("tensorrt")


def test_tensorrt_without_cuda_is_backend_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    if torch.cuda.is_available():  # pragma: no cover - only on a GPU machine
        pytest.skip("this machine has CUDA")
    monkeypatch.setitem(sys.modules, "tensorrt", make_tensorrt("11.x"))
    with pytest.raises(BackendUnavailable, match=r"CUDA.*is_available\(\) is False"):
        create("tensorrt")
