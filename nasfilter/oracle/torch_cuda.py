"""The torch-on-CUDA backend: real networks on an NVIDIA GPU (FP16 by default, or FP32).

Per architecture: the real xautodl network in FP16 (``precision="fp32"``: FP32 with TF32 off,
as HELP's tss cells ran), in channels_last (NHWC, the default) or contiguous NCHW memory
(``channels_last=False``: the layout is a setting, so that a GPU run can measure both;
docs/gpu-model.md), cudnn benchmark mode, the largest batch found by doubling and then
bisecting on out-of-memory (up to a cap; ``batch=B`` times that batch instead), one forward
pass captured as a CUDA graph and replayed (``cuda_graph=False``: launched eagerly, so that the
host's issue time is in the latency), timed with CUDA events (warm-up, trials, median,
coefficient of variation). Utilization is computed against the GPU's peak measured by a
matrix product in the same precision (cached per device in ``peaks.json``).

Nothing here has run on a GPU in this project's CI; the search and timing logic is tested
with fakes (see docs/oracle.md).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from typing import Any, ClassVar

from nasfilter.bench.datasets import Dataset
from nasfilter.bench.network import input_shape
from nasfilter.oracle.base import Backend, BackendSpec, BackendUnavailable
from nasfilter.oracle.cpu_peak import cached_peak
from nasfilter.oracle.measurement import Measurement, Status
from nasfilter.oracle.space_nets import build, flops_per_image, space_config
from nasfilter.oracle.timing import Timer, time_runs

DEFAULT_START_BATCH = 64
DEFAULT_BATCH_CAP = 8192
DEFAULT_WINDOW = 0.5  # timed seconds per architecture
DEFAULT_TRIALS = 5
DEFAULT_WARMUP = 3
PEAK_MATMUL_SIZE = 8192
PRECISIONS = ("fp16", "fp32")

_TORCH_HINT = (
    "install the torch extra with a CUDA build of torch: `pip install nasfilter[torch]`, then "
    "`pip install --no-deps xautodl==1.0.0`"
)


def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` is a CUDA (or cuDNN, or TensorRT) out-of-memory error."""
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    return isinstance(exc, (RuntimeError, MemoryError)) and (
        "out of memory" in text or "cudnn_status_alloc_failed" in text
    )


def find_max_batch(
    fits: Callable[[int], bool], start: int = 1, cap: int = DEFAULT_BATCH_CAP
) -> int:
    """The largest batch in [1, cap] for which ``fits`` is True; 0 if not even 1 fits.

    Doubles from ``start`` until a batch fails or ``cap`` is reached, then bisects between the
    last batch that fit and the first that failed (between 0 and ``start`` if ``start``
    fails). Assumes ``fits`` is monotone (a batch fits if a larger one does); ``fits(b)``
    returns False on out-of-memory.
    """
    if isinstance(start, bool) or not isinstance(start, int) or start < 1:
        raise ValueError(f"start must be a positive integer, got {start!r}")
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < start:
        raise ValueError(f"cap must be an integer >= start ({start}), got {cap!r}")
    if not fits(start):
        # Nothing fits at start: bisect below it, down to batch 1.
        lo, hi = 0, start
    else:
        lo, hi = start, cap + 1
        while lo < cap:
            nxt = min(2 * lo, cap)
            if fits(nxt):
                lo = nxt
            else:
                hi = nxt
                break
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def cuda_event_timer(torch: Any) -> Timer:
    """A timer that brackets n runs with CUDA events on the current stream (seconds)."""

    def timer(run: Callable[[], object], n: int) -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            run()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    return timer


def require_cuda(backend: str) -> Any:
    """Import torch and check for a CUDA device; raise BackendUnavailable naming the cause."""
    if importlib.util.find_spec("torch") is None:
        raise BackendUnavailable(
            f"the {backend} backend needs torch, which is not installed; {_TORCH_HINT}"
        )
    import torch

    if not torch.cuda.is_available():
        raise BackendUnavailable(
            f"the {backend} backend needs a CUDA GPU, and torch.cuda.is_available() is False "
            f"(torch {torch.__version__}, built for CUDA {torch.version.cuda}); run it on a "
            "machine with an NVIDIA GPU and a CUDA build of torch"
        )
    return torch


def gpu_fingerprint(torch: Any, device: str) -> dict[str, Any]:
    """The GPU as a device fingerprint: name, compute capability, memory, SM count."""
    props = torch.cuda.get_device_properties(torch.device(device))
    return {
        "kind": "cuda",
        "gpu": props.name,
        "capability": f"{props.major}.{props.minor}",
        "memory_bytes": int(props.total_memory),
        "sm_count": int(props.multi_processor_count),
    }


def measure_gpu_peak(
    torch: Any, device: str, n: int = PEAK_MATMUL_SIZE, repeats: int = 10, precision: str = "fp16"
) -> float:
    """Best matrix-product FLOP/s on ``device`` (an (n, n) x (n, n) product) in ``precision``
    (fp32: with TF32 off, see :func:`set_fp32_math`)."""
    dev = torch.device(device)
    dtype = torch_dtype(torch, precision)
    a = torch.ones((n, n), device=dev, dtype=dtype)
    b = torch.ones((n, n), device=dev, dtype=dtype)
    timer = cuda_event_timer(torch)
    with torch.cuda.device(dev):
        timer(lambda: torch.mm(a, b), 3)
        best = min(timer(lambda: torch.mm(a, b), 5) / 5 for _ in range(repeats))
    return 2.0 * n**3 / best


def torch_dtype(torch: Any, precision: str) -> Any:
    """torch's dtype of a precision of :data:`PRECISIONS`."""
    return {"fp16": torch.float16, "fp32": torch.float32}[precision]


def set_fp32_math(torch: Any, precision: str) -> None:
    """For ``fp32``, turn TF32 off in cuDNN and in matrix products, so that FP32 means FP32
    on Ampere and later as on the GPUs before (torch lets cuDNN use TF32 by default). These
    are torch's process-wide flags: they stay off for the rest of the process."""
    if precision == "fp32":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False


def memory_format(torch: Any, channels_last: bool) -> Any:
    """torch's memory format for a layout: ``channels_last`` (NHWC) or ``contiguous_format``."""
    return torch.channels_last if channels_last else torch.contiguous_format


class TorchCudaBackend(Backend):
    """Real networks on a CUDA GPU with torch (FP16 or FP32, NHWC or NCHW, CUDA graphs or
    eager launches, the largest batch or a given one).

    Args:
        device: the torch device ("cuda", "cuda:1").
        start_batch: the first batch of the max-batch search.
        batch_cap: the largest batch tried (throughput has long saturated by then).
        window: timed seconds per architecture, split over ``trials``.
        trials, warmup: as in :func:`nasfilter.oracle.timing.time_runs`.
        cuda_graph: replay one captured forward pass (else launch eagerly).
        peak_flops: the GPU peak FLOP/s; None measures it (cached per device).
        peak_cache: the JSON file caching the peak.
        channels_last: NHWC memory (torch's ``channels_last``) for the network and its
            input; False keeps torch's default NCHW.
        batch: time this batch (images) instead of the largest that fits; out of memory
            there is an OOM row.
        precision: "fp16" (weights and input) or "fp32" (TF32 off: :func:`set_fp32_math`).
    """

    name: ClassVar[str] = "torch-cuda"
    space: ClassVar[str] = "sss"  # the space whose networks it builds (tss: a subclass)
    uses_gpu: ClassVar[bool] = True

    def __init__(
        self,
        device: str | None = None,
        start_batch: int = DEFAULT_START_BATCH,
        batch_cap: int = DEFAULT_BATCH_CAP,
        window: float = DEFAULT_WINDOW,
        trials: int = DEFAULT_TRIALS,
        warmup: int = DEFAULT_WARMUP,
        cuda_graph: bool = True,
        peak_flops: float | None = None,
        peak_cache: str | None = None,
        channels_last: bool = True,
        batch: int | None = None,
        precision: str = "fp16",
    ) -> None:
        self.device = "cuda" if device in (None, "") else str(device)
        if not self.device.startswith("cuda"):
            raise ValueError(
                f"the {self.name} backend runs on a CUDA device such as 'cuda' or 'cuda:1', "
                f"got {device!r}"
            )
        if not (isinstance(start_batch, int) and 1 <= start_batch <= batch_cap):
            raise ValueError(f"need 1 <= start_batch <= batch_cap, got {start_batch}, {batch_cap}")
        if not (isinstance(window, (int, float)) and math.isfinite(window) and window > 0):
            raise ValueError(f"window must be seconds > 0, got {window!r}")
        self.start_batch = start_batch
        self.batch_cap = batch_cap
        self.window = float(window)
        self.trials = trials
        self.warmup = warmup
        if not isinstance(cuda_graph, bool):
            raise ValueError(f"cuda_graph must be true or false, got {cuda_graph!r}")
        self.cuda_graph = cuda_graph
        if not isinstance(channels_last, bool):
            raise ValueError(f"channels_last must be true or false, got {channels_last!r}")
        self.channels_last = channels_last
        if batch is not None and (
            isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= batch_cap
        ):
            raise ValueError(f"batch must be an integer from 1 to batch_cap ({batch_cap}), "
                             f"got {batch!r}")
        self.batch = batch
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        self.precision = precision
        self._peak = None if peak_flops is None else float(peak_flops)
        self._peak_source = "measured" if peak_flops is None else "spec"
        self.peak_cache = peak_cache
        self.torch = self._require()

    def _require(self) -> Any:
        return require_cuda(self.name)

    @property
    def config(self) -> dict[str, Any]:
        t = self.torch
        fixed: dict[str, Any] = {} if self.batch is None else {"batch": self.batch}
        fp32: dict[str, Any] = {"tf32": False} if self.precision == "fp32" else {}
        return {
            "precision": self.precision,
            **fp32,
            **fixed,
            "channels_last": self.channels_last,
            "cudnn_benchmark": True,
            "cuda_graph": self.cuda_graph,
            "start_batch": self.start_batch,
            "batch_cap": self.batch_cap,
            "window_s": self.window,
            "trials": self.trials,
            "warmup": self.warmup,
            "torch": str(t.__version__),
            "cuda": str(t.version.cuda),
            "cudnn": str(t.backends.cudnn.version()),
            **space_config(self.space),
        }

    def fingerprint(self) -> dict[str, Any]:
        return gpu_fingerprint(self.torch, self.device)

    def spec(self) -> BackendSpec:
        cfg: dict[str, Any] = {
            "start_batch": self.start_batch,
            "batch_cap": self.batch_cap,
            "window": self.window,
            "trials": self.trials,
            "warmup": self.warmup,
            "cuda_graph": self.cuda_graph,
            "peak_cache": self.peak_cache,
            "channels_last": self.channels_last,
        }
        if self.batch is not None:
            cfg["batch"] = self.batch
        if self.precision != "fp16":
            cfg["precision"] = self.precision
        if self._peak_source == "spec":
            cfg["peak_flops"] = self._peak
        return BackendSpec(self.name, self.device, cfg)

    def peak(self) -> float:
        """The GPU peak FLOP/s (a matrix product in the precision), measured once per device."""
        if self._peak is None:
            key = {
                **self.fingerprint(),
                "benchmark": f"torch-{self.precision}-mm-{PEAK_MATMUL_SIZE}",
                "torch": str(self.torch.__version__),
            }
            set_fp32_math(self.torch, self.precision)
            self._peak = cached_peak(
                key,
                lambda: measure_gpu_peak(self.torch, self.device, precision=self.precision),
                self.peak_cache,
            )
        return self._peak

    # The pieces below touch the GPU; tests replace them with fakes.
    def load(self, arch: int, dataset: Dataset) -> Any:
        """The network on the device in the precision and the layout's memory format, eval
        mode."""
        torch = self.torch
        net: Any = build(self.space, arch, dataset).to(torch_dtype(torch, self.precision))
        fmt = memory_format(torch, self.channels_last)
        return net.to(torch.device(self.device), memory_format=fmt)

    def prepare(self, net: Any, dataset: Dataset, batch: int) -> Callable[[], object]:
        """A callable running one forward pass at ``batch`` (a CUDA-graph replay if enabled).

        Raises the framework's out-of-memory error when the batch does not fit.
        """
        torch = self.torch
        torch.backends.cudnn.benchmark = True
        set_fp32_math(torch, self.precision)
        dtype = torch_dtype(torch, self.precision)
        x = torch.zeros(input_shape(dataset, batch), device=self.device, dtype=dtype)
        x = x.contiguous(memory_format=memory_format(torch, self.channels_last))
        with torch.no_grad():  # the documented way to capture a CUDA graph for inference
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(2):  # cudnn autotuning happens here, outside the graph
                    net(x)
            torch.cuda.current_stream().wait_stream(stream)
            torch.cuda.synchronize()
            if not self.cuda_graph:

                def eager() -> object:
                    with torch.no_grad():  # no autograd bookkeeping in the timed launches
                        return net(x)

                return eager
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                net(x)
        return graph.replay

    def release(self) -> None:
        """Give cached device memory back after an out-of-memory error."""
        self.torch.cuda.empty_cache()

    def timer(self) -> Timer:
        return cuda_event_timer(self.torch)

    def measure(self, arch: int, dataset: Dataset) -> Measurement:
        peak = self.peak()
        fpi = float(flops_per_image(self.space, dataset)[arch])
        batch: int | None = None
        max_batch: int | None = None
        timings: dict[str, float] = {}
        throughput, status, error = math.nan, Status.ERROR, ""
        try:
            net = self.load(arch, dataset)
            fixed = self.batch
            max_batch = None if fixed is not None else self._max_batch(net, dataset)
            if max_batch == 0:
                status, error = Status.OOM, "out of memory at batch 1"
            else:
                if fixed is not None:  # out of memory at the given batch is the row's OOM
                    run, batch = self.prepare(net, dataset, fixed), fixed
                else:
                    assert max_batch is not None
                    run, batch = self._prepare_largest(net, dataset, max_batch)
                timing = time_runs(run, self.window, self.trials, self.warmup, self.timer())
                timings = timing.as_dict()
                throughput = batch / timing.median
                if not (math.isfinite(throughput) and throughput > 0):
                    raise RuntimeError(f"timing gave a throughput of {throughput!r} images/s")
                status = Status.OK
        except Exception as exc:
            throughput, status = math.nan, Status.OOM if is_oom(exc) else Status.ERROR
            error = f"{type(exc).__name__}: {exc}"
        return Measurement(
            arch=arch,
            dataset=dataset.name,
            backend=self.name,
            config=self.config,
            device=self.fingerprint(),
            status=status,
            throughput=throughput,
            batch_size=batch,
            max_batch=max_batch,
            flops_per_image=fpi,
            peak_flops=peak,
            peak_source=self._peak_source,
            timings=timings,
            error=error,
        )

    def _max_batch(self, net: Any, dataset: Dataset) -> int:
        """The largest batch up to the cap whose forward pass fits (0: not even 1)."""

        def fits(b: int) -> bool:
            try:
                self.prepare(net, dataset, b)()
                return True
            except Exception as exc:
                if not is_oom(exc):
                    raise
                self.release()
                return False

        return find_max_batch(fits, min(self.start_batch, self.batch_cap), self.batch_cap)

    def _prepare_largest(
        self, net: Any, dataset: Dataset, max_batch: int
    ) -> tuple[Callable[[], object], int]:
        """The runner at the largest batch that fits with its graph; backs off 1/8 on OOM."""
        batch = max_batch
        while True:
            try:
                return self.prepare(net, dataset, batch), batch
            except Exception as exc:
                if not is_oom(exc) or batch == 1:
                    raise
                self.release()
                batch = max(1, batch * 7 // 8)
