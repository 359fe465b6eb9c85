"""The TensorRT backend, the study's: FP16 engines on an NVIDIA GPU (TensorRT 10 and 11).

Per architecture: export the real network to an FP16 ONNX model with a free batch axis, parse
it, and build an engine with one optimization profile (min 1, opt ``opt_batch``, max
``batch_cap``; ``opt`` stays the same for every architecture so timing-cache entries match).
Builds are strongly typed where TensorRT offers it (``NetworkDefinitionCreationFlag.
STRONGLY_TYPED``: TensorRT 10.12+ and 11, which removed the precision builder flags); older
TensorRT 10 builds set ``BuilderFlag.FP16`` instead (docs/facts.md §6). A timing cache is shared by
every build of the process and saved to a file so that later processes start warm; one
``Builder`` and one ``Runtime`` serve the whole process. The largest batch that fits is
found by doubling and bisecting on out-of-memory (device memory is allocated per shape,
``USER_MANAGED``), then ``execute_async_v3`` is timed with CUDA events.

Device buffers, the stream and the events come from torch's CUDA API. TensorRT cannot be
installed on the project's machines; the code is tested against fake ``tensorrt`` modules of
both generations (tests/fake_tensorrt), and has not run on real TensorRT (docs/oracle.md).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from nasfilter.bench.datasets import Dataset
from nasfilter.bench.network import input_shape
from nasfilter.files import atomic_write
from nasfilter.oracle.base import BackendSpec, BackendUnavailable
from nasfilter.oracle.cpu_peak import cache_dir
from nasfilter.oracle.measurement import canonical_json
from nasfilter.oracle.onnx_backend import export_onnx
from nasfilter.oracle.torch_cuda import (
    DEFAULT_BATCH_CAP,
    DEFAULT_START_BATCH,
    DEFAULT_TRIALS,
    DEFAULT_WARMUP,
    DEFAULT_WINDOW,
    TorchCudaBackend,
    require_cuda,
)

DEFAULT_OPT_BATCH = 256
WORKSPACE_BYTES = 1 << 30

_TRT_HINT = (
    "TensorRT is not on the public package index (its 'tensorrt' packages there only "
    "download NVIDIA's libraries at install time): install TensorRT 10 or 11 from NVIDIA on a "
    "machine with a CUDA GPU, plus the onnx extra (`pip install nasfilter[onnx]`)"
)

# One builder, runtime and logger per process and TensorRT module (creating a builder costs
# seconds). Each entry keeps its module, so a module (a test's fake) never gets another's.
_PROCESS: list[tuple[Any, dict[str, Any]]] = []


def import_tensorrt() -> Any:
    """Import the ``tensorrt`` module, or raise BackendUnavailable saying how to get it."""
    try:
        return importlib.import_module("tensorrt")
    except ImportError as exc:
        raise BackendUnavailable(
            f"the tensorrt backend needs NVIDIA TensorRT (Python package 'tensorrt'), which "
            f"cannot be imported ({exc}); {_TRT_HINT}"
        ) from exc


def has_precision_flags(trt: Any) -> bool:
    """True for TensorRT generations with ``BuilderFlag.FP16`` (10 and older); False for 11+."""
    return hasattr(trt.BuilderFlag, "FP16")


def strongly_typed_flag(trt: Any) -> int | None:
    """The network-creation bit for a strongly typed network, or None where TensorRT lacks it."""
    flag = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
    return None if flag is None else 1 << int(flag)


def process_objects(trt: Any) -> dict[str, Any]:
    """The process's logger, builder and runtime for ``trt`` (created on first use)."""
    for module, objs in _PROCESS:
        if module is trt:
            return objs
    logger = trt.Logger(trt.Logger.WARNING)
    objs = {"logger": logger, "builder": trt.Builder(logger), "runtime": trt.Runtime(logger)}
    _PROCESS.append((trt, objs))
    return objs


def _trt_version(trt: Any) -> str:
    return str(getattr(trt, "__version__", "unknown"))


class TensorRTBackend(TorchCudaBackend):
    """FP16 TensorRT engines timed with ``execute_async_v3`` and CUDA events.

    Args:
        device: the CUDA device ("cuda", "cuda:1").
        opt_batch: the optimization profile's ``opt`` batch (the same for every architecture).
        start_batch, batch_cap: the max-batch search (``batch_cap`` is the profile's ``max``).
        window, trials, warmup: timing, as in :func:`nasfilter.oracle.timing.time_runs`.
        timing_cache: the file holding the shared timing cache (default: in the nasfilter
            cache folder, one per GPU and TensorRT version).
        peak_flops, peak_cache: as for the torch-cuda backend.
    """

    name: ClassVar[str] = "tensorrt"

    def __init__(
        self,
        device: str | None = None,
        opt_batch: int = DEFAULT_OPT_BATCH,
        start_batch: int = DEFAULT_START_BATCH,
        batch_cap: int = DEFAULT_BATCH_CAP,
        window: float = DEFAULT_WINDOW,
        trials: int = DEFAULT_TRIALS,
        warmup: int = DEFAULT_WARMUP,
        timing_cache: str | None = None,
        peak_flops: float | None = None,
        peak_cache: str | None = None,
    ) -> None:
        if not (isinstance(opt_batch, int) and 1 <= opt_batch <= batch_cap):
            raise ValueError(f"need 1 <= opt_batch <= batch_cap, got {opt_batch}, {batch_cap}")
        self.opt_batch = opt_batch
        self.trt: Any = None
        super().__init__(
            device, start_batch, batch_cap, window, trials, warmup, False, peak_flops, peak_cache
        )
        self._timing_cache_arg = timing_cache
        self._timing_cache_bytes: bytes | None = None

    def _require(self) -> Any:
        if importlib.util.find_spec("onnx") is None:
            raise BackendUnavailable(
                "the tensorrt backend needs the onnx extra to export networks: "
                "`pip install nasfilter[onnx]`"
            )
        self.trt = import_tensorrt()
        return require_cuda(self.name)

    @property
    def strongly_typed(self) -> bool:
        """Whether builds are strongly typed (else weakly typed with the FP16 flag)."""
        return strongly_typed_flag(self.trt) is not None or not has_precision_flags(self.trt)

    @property
    def config(self) -> dict[str, Any]:
        base = super().config
        for key in ("channels_last", "cudnn_benchmark", "cuda_graph"):
            base.pop(key, None)
        return {
            **base,
            "tensorrt": _trt_version(self.trt),
            "opt_batch": self.opt_batch,
            "strongly_typed": self.strongly_typed,
            "onnx": "fp16",
        }

    def spec(self) -> BackendSpec:
        base = super().spec()
        cfg = dict(base.config)
        cfg.pop("cuda_graph", None)
        cfg["opt_batch"] = self.opt_batch
        cfg["timing_cache"] = self._timing_cache_arg
        return BackendSpec(self.name, self.device, cfg)

    # ------------------------------------------------------------- timing cache
    @property
    def timing_cache_path(self) -> Path:
        """The timing-cache file shared across architectures and processes."""
        if self._timing_cache_arg:
            return Path(self._timing_cache_arg)

        tag = canonical_json({**self.fingerprint(), "tensorrt": _trt_version(self.trt)})
        digest = hashlib.sha256(tag.encode()).hexdigest()[:16]
        return cache_dir() / f"tensorrt-timing-{digest}.cache"

    def _load_timing_cache(self) -> bytes:
        if self._timing_cache_bytes is None:
            path = self.timing_cache_path
            self._timing_cache_bytes = path.read_bytes() if path.is_file() else b""
        return self._timing_cache_bytes

    def _save_timing_cache(self, data: bytes) -> None:
        self._timing_cache_bytes = data
        path = self.timing_cache_path
        with atomic_write(path) as fh:
            fh.write(data)

    # ------------------------------------------------------------------ engine
    def load(self, arch: int, dataset: Dataset) -> Any:
        """Build (and deserialize) the FP16 engine of ``arch``."""
        trt = self.trt
        objs = process_objects(trt)
        builder, logger = objs["builder"], objs["logger"]
        model = export_onnx(arch, dataset, 1, half=True, dynamic_batch=True, space=self.space)
        typed = strongly_typed_flag(trt)
        network = builder.create_network(typed or 0)
        parser = trt.OnnxParser(network, logger)
        if not parser.parse(model):
            errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise RuntimeError(f"TensorRT could not parse the ONNX model: {errors}")
        config = builder.create_builder_config()
        if typed is None and has_precision_flags(trt):
            # TensorRT 10 before 10.12: weakly typed, FP16 kernels allowed by the flag.
            config.set_flag(trt.BuilderFlag.FP16)
        # Otherwise the network is strongly typed (the flag, or TensorRT 11 where it always
        # is), and the FP16 ONNX model fixes the precision.
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, WORKSPACE_BYTES)
        cache = config.create_timing_cache(self._load_timing_cache())
        config.set_timing_cache(cache, False)
        profile = builder.create_optimization_profile()
        profile.set_shape(
            "input",
            input_shape(dataset, 1),
            input_shape(dataset, self.opt_batch),
            input_shape(dataset, self.batch_cap),
        )
        config.add_optimization_profile(profile)
        plan = builder.build_serialized_network(network, config)
        if plan is None:
            raise RuntimeError(f"TensorRT failed to build the engine of architecture {arch}")
        self._save_timing_cache(bytes(config.get_timing_cache().serialize()))
        engine = objs["runtime"].deserialize_cuda_engine(plan)
        if engine is None:
            raise RuntimeError(f"TensorRT could not deserialize the engine of architecture {arch}")
        return engine

    def _torch_dtype(self, trt_dtype: Any) -> Any:
        trt, torch = self.trt, self.torch
        table = {trt.DataType.HALF: torch.float16, trt.DataType.FLOAT: torch.float32}
        if trt_dtype not in table:
            raise RuntimeError(f"unexpected TensorRT I/O data type {trt_dtype}")
        return table[trt_dtype]

    def prepare(self, engine: Any, dataset: Dataset, batch: int) -> Callable[[], object]:
        """Context, device memory and I/O buffers for ``batch``; returns one inference.

        Raises the framework's out-of-memory error when the batch does not fit.
        """
        trt, torch = self.trt, self.torch
        context = engine.create_execution_context(
            trt.ExecutionContextAllocationStrategy.USER_MANAGED
        )
        if context is None:
            raise RuntimeError("TensorRT could not create an execution context")
        context.set_input_shape("input", input_shape(dataset, batch))
        size = int(context.update_device_memory_size_for_shapes())
        scratch = torch.empty((max(size, 1),), dtype=torch.uint8, device=self.device)
        context.set_device_memory(scratch.data_ptr(), size)
        buffers = [scratch]
        for i in range(engine.num_io_tensors):
            name = engine.get_tensor_name(i)
            shape = tuple(context.get_tensor_shape(name))
            dtype = self._torch_dtype(engine.get_tensor_dtype(name))
            buf = torch.zeros(shape, dtype=dtype, device=self.device)
            context.set_tensor_address(name, buf.data_ptr())
            buffers.append(buf)
        stream = torch.cuda.current_stream(torch.device(self.device))
        handle = stream.cuda_stream

        def run() -> object:
            if not context.execute_async_v3(handle):
                raise RuntimeError("TensorRT execute_async_v3 failed")
            return buffers  # keeps the buffers alive as long as the runner

        run()
        stream.synchronize()
        return run
