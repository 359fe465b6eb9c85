"""Fake ``tensorrt`` modules (TensorRT 10 and 11 API generations) and a fake CUDA torch.

TensorRT cannot be installed on the project's machines (docs/facts.md §6), so the TensorRT
backend is tested against these fakes. They implement the calls the backend makes, record
every call in ``module.calls``, and enforce the rules of each generation that the backend
must respect:

- generation "10.8": ``BuilderFlag.FP16`` exists, no ``STRONGLY_TYPED`` network flag;
- generation "10.13": both exist; a strongly typed network refuses precision flags;
- generation "11.0": no precision flags; ``STRONGLY_TYPED`` kept (deprecated, ignored);
- generation "11.x": no precision flags and no ``STRONGLY_TYPED``; every network is strongly
  typed.

The fake GPU runs every ``execute_async_v3`` in ``batch x SECONDS_PER_IMAGE`` of simulated
time and needs ``batch x SCRATCH_PER_IMAGE`` bytes of scratch memory; the fake torch refuses
allocations past ``memory_limit`` bytes with an ``OutOfMemoryError``.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, ClassVar

import onnx

GENERATIONS = ("10.8", "10.13", "11.0", "11.x")
SECONDS_PER_IMAGE = 1e-6
SCRATCH_PER_IMAGE = 1 << 20  # bytes of TensorRT scratch per image


class Clock:
    """Simulated GPU time, advanced by fake kernels."""

    def __init__(self) -> None:
        self.now = 0.0

    def timer(self, run: Callable[[], object], n: int) -> float:
        """A backend's timer on this clock: the simulated seconds of ``n`` calls of ``run``."""
        start = self.now
        for _ in range(n):
            run()
        return self.now - start


def make_tensorrt(generation: str, clock: Clock | None = None) -> Any:
    """A fake ``tensorrt`` module of one API generation (see the module docstring)."""
    if generation not in GENERATIONS:
        raise ValueError(f"unknown fake generation {generation!r}")
    has_fp16 = generation.startswith("10")
    has_typed_flag = generation in ("10.13", "11.0")
    always_typed = generation.startswith("11")
    clk: Clock = clock or Clock()
    trt: Any = types.ModuleType("tensorrt")
    trt.__version__ = {"10.8": "10.8.0", "10.13": "10.13.0", "11.0": "11.0.0", "11.x": "11.4.0"}[
        generation
    ]
    calls: list[tuple[str, tuple[Any, ...]]] = []
    trt.calls = calls
    trt.clock = clk

    def record(name: str, *args: Any) -> None:
        calls.append((name, args))

    class Logger:
        WARNING = 2

        def __init__(self, severity: int) -> None:
            record("Logger", severity)

    flags: dict[str, int] = {"TF32": 1, "REFIT": 2}
    if has_fp16:
        flags["FP16"] = 0
    trt.BuilderFlag = types.SimpleNamespace(**flags)
    net_flags: dict[str, int] = {}
    if has_typed_flag:
        net_flags["STRONGLY_TYPED"] = 5
    if generation.startswith("10"):
        net_flags["EXPLICIT_BATCH"] = 0
    trt.NetworkDefinitionCreationFlag = types.SimpleNamespace(**net_flags)
    trt.MemoryPoolType = types.SimpleNamespace(WORKSPACE=0)
    trt.DataType = types.SimpleNamespace(FLOAT="float", HALF="half")
    trt.ExecutionContextAllocationStrategy = types.SimpleNamespace(
        STATIC=0, ON_PROFILE_CHANGE=1, USER_MANAGED=2
    )

    class Network:
        def __init__(self, flags: int) -> None:
            self.flags = flags
            typed_bit = 1 << net_flags["STRONGLY_TYPED"] if has_typed_flag else 0
            self.strongly_typed = always_typed or bool(flags & typed_bit)
            self.input_dtype: str | None = None
            self.inputs: list[tuple[str, list[int]]] = []
            self.outputs: list[tuple[str, list[int]]] = []

    class OnnxParser:
        def __init__(self, network: Network, logger: Logger) -> None:
            record("OnnxParser")
            self.network = network
            self.num_errors = 0

        def parse(self, data: bytes) -> bool:
            model = onnx.load_from_string(data)
            graph = model.graph

            def dims(vi: Any) -> list[int]:
                return [
                    d.dim_value if d.HasField("dim_value") else -1
                    for d in vi.type.tensor_type.shape.dim
                ]

            elem = graph.input[0].type.tensor_type.elem_type
            self.network.input_dtype = "half" if elem == onnx.TensorProto.FLOAT16 else "float"
            self.network.inputs = [(vi.name, dims(vi)) for vi in graph.input]
            self.network.outputs = [(vi.name, dims(vi)) for vi in graph.output]
            record("parse", self.network.input_dtype, self.network.inputs)
            return True

        def get_error(self, i: int) -> str:
            return "no error"

    class TimingCache:
        def __init__(self, data: bytes) -> None:
            self.data = bytes(data)

        def serialize(self) -> bytes:
            return self.data + b"+entry"

    class BuilderConfig:
        def __init__(self) -> None:
            self.flags: list[int] = []
            self.profiles: list[Any] = []
            self.cache: TimingCache | None = None

        def set_flag(self, flag: int) -> None:
            record("set_flag", flag)
            self.flags.append(flag)

        def set_memory_pool_limit(self, pool: int, size: int) -> None:
            record("set_memory_pool_limit", pool, size)

        def create_timing_cache(self, data: bytes) -> TimingCache:
            record("create_timing_cache", bytes(data))
            return TimingCache(data)

        def set_timing_cache(self, cache: TimingCache, ignore_mismatch: bool) -> bool:
            record("set_timing_cache", ignore_mismatch)
            self.cache = cache
            return True

        def get_timing_cache(self) -> TimingCache:
            assert self.cache is not None
            return self.cache

        def add_optimization_profile(self, profile: Any) -> int:
            record("add_optimization_profile", dict(profile.shapes))
            self.profiles.append(profile)
            return len(self.profiles) - 1

    class Profile:
        def __init__(self) -> None:
            self.shapes: dict[str, tuple[Any, Any, Any]] = {}

        def set_shape(self, name: str, lo: Any, opt: Any, hi: Any) -> None:
            self.shapes[name] = (tuple(lo), tuple(opt), tuple(hi))

    class Builder:
        def __init__(self, logger: Logger) -> None:
            record("Builder")

        def create_network(self, flags: int = 0) -> Network:
            record("create_network", flags)
            return Network(flags)

        def create_builder_config(self) -> BuilderConfig:
            return BuilderConfig()

        def create_optimization_profile(self) -> Profile:
            return Profile()

        def build_serialized_network(self, network: Network, config: BuilderConfig) -> Any:
            record("build_serialized_network")
            if network.strongly_typed and config.flags:
                return None  # real TensorRT refuses precision flags on strongly typed networks
            if len(config.profiles) != 1 or not network.inputs:
                return None
            return {"network": network, "profile": config.profiles[0]}

    class Stream:
        pass

    class Context:
        scratch: tuple[int, int] | None

        def __init__(self, engine: Engine) -> None:
            self.engine = engine
            self.batch = 0
            self.scratch = None
            self.addresses: dict[str, int] = {}

        def set_input_shape(self, name: str, shape: Any) -> bool:
            record("set_input_shape", name, tuple(shape))
            lo, _, hi = self.engine.profile.shapes[name]
            if not lo[0] <= shape[0] <= hi[0]:
                raise ValueError(f"batch {shape[0]} outside the profile {lo[0]}..{hi[0]}")
            self.batch = int(shape[0])
            return True

        def update_device_memory_size_for_shapes(self) -> int:
            return self.batch * SCRATCH_PER_IMAGE

        def set_device_memory(self, ptr: int, size: int) -> None:
            record("set_device_memory", size)
            self.scratch = (ptr, size)

        def get_tensor_shape(self, name: str) -> tuple[int, ...]:
            for tensor, dims in self.engine.network.inputs + self.engine.network.outputs:
                if tensor == name:
                    return tuple(self.batch if d == -1 else d for d in dims)
            raise KeyError(name)

        def set_tensor_address(self, name: str, ptr: int) -> bool:
            self.addresses[name] = ptr
            return True

        def execute_async_v3(self, stream_handle: int) -> bool:
            names = {n for n, _ in self.engine.network.inputs + self.engine.network.outputs}
            if self.scratch is None or set(self.addresses) != names:
                return False
            record("execute_async_v3", stream_handle, self.batch)
            clk.now += self.batch * SECONDS_PER_IMAGE
            return True

    class Engine:
        def __init__(self, plan: dict[str, Any]) -> None:
            self.network: Network = plan["network"]
            self.profile: Profile = plan["profile"]
            self.names = [n for n, _ in self.network.inputs + self.network.outputs]
            self.num_io_tensors = len(self.names)

        def get_tensor_name(self, i: int) -> str:
            return self.names[i]

        def get_tensor_dtype(self, name: str) -> str:
            return "half" if self.network.input_dtype == "half" else "float"

        def create_execution_context(self, strategy: int = 0) -> Context:
            record("create_execution_context", strategy)
            return Context(self)

    class Runtime:
        def __init__(self, logger: Logger) -> None:
            record("Runtime")

        def deserialize_cuda_engine(self, plan: Any) -> Engine:
            return Engine(plan)

    trt.Logger = Logger
    trt.Builder = Builder
    trt.Runtime = Runtime
    trt.OnnxParser = OnnxParser
    trt.Stream = Stream
    return trt


class OutOfMemoryError(RuntimeError):
    """What torch.cuda raises when an allocation does not fit."""


class FakeTensor:
    _next = 0x1000

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        FakeTensor._next += max(nbytes, 256)
        self._ptr = FakeTensor._next

    def data_ptr(self) -> int:
        return self._ptr


class FakeTorch:
    """Just enough of torch's CUDA API for the GPU backends, on a fake device.

    Allocations are not freed: each prepared batch lives in its own fake "pool", so only the
    largest single prepare (scratch + I/O) is compared with ``memory_limit``.
    """

    float16 = "float16"
    float32 = "float32"
    uint8 = "uint8"
    __version__ = "2.99.0+fake"
    _ITEM: ClassVar[dict[str, int]] = {"float16": 2, "float32": 4, "uint8": 1}

    def __init__(self, clock: Clock, memory_limit: int) -> None:
        self.clock = clock
        self.memory_limit = memory_limit
        self.version = types.SimpleNamespace(cuda="12.9")
        self.backends = types.SimpleNamespace(
            cudnn=types.SimpleNamespace(version=lambda: 91000, benchmark=False)
        )
        self.empty_cache_calls = 0
        torch = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.t = 0.0

            def record(self) -> None:
                self.t = torch.clock.now

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Event) -> float:
                return (end.t - self.t) * 1e3

        class Stream:
            cuda_stream = 0xC0FFEE

            def synchronize(self) -> None:
                pass

        def empty_cache() -> None:
            torch.empty_cache_calls += 1

        self.cuda = types.SimpleNamespace(
            Event=Event,
            current_stream=lambda device=None: Stream(),
            empty_cache=empty_cache,
            is_available=lambda: True,
            get_device_properties=lambda device: types.SimpleNamespace(
                name="Fake GPU",
                major=9,
                minor=0,
                total_memory=memory_limit,
                multi_processor_count=132,
            ),
            OutOfMemoryError=OutOfMemoryError,
        )

    def device(self, name: str) -> str:
        return name

    def _alloc(self, shape: Any, dtype: str) -> FakeTensor:
        n = 1
        for d in shape:
            n *= int(d)
        nbytes = n * self._ITEM[dtype]
        if nbytes > self.memory_limit:
            raise OutOfMemoryError(f"CUDA out of memory. Tried to allocate {nbytes} bytes")
        return FakeTensor(nbytes)

    def empty(self, shape: Any, dtype: str, device: str) -> FakeTensor:
        return self._alloc(shape, dtype)

    def zeros(self, shape: Any, dtype: str, device: str) -> FakeTensor:
        return self._alloc(shape, dtype)
