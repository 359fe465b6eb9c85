"""The onnxruntime backend: real networks timed on this machine's CPU.

For each architecture: build the real xautodl network (:func:`nasfilter.oracle.space_nets.build`:
the size-space network, or with ``space = "tss"`` (:mod:`nasfilter.oracle.tss_measure`) the
topology-space ``TinyNetwork``),
export it to ONNX with the TorchScript exporter (``dynamo=False``, traced at batch 1 with a
free batch axis, ~0.1 s), open an
onnxruntime session with all graph optimizations (which fold BN and fuse ReLU and the
residual add into the convs), run a warm-up, then time ``trials`` trials of equal length that
fill ``window`` seconds together. Throughput is the batch over the median seconds per run;
the coefficient of variation of the trials is recorded. Utilization is computed against the
CPU peak measured by :mod:`nasfilter.oracle.cpu_peak` (cached per machine).
"""

from __future__ import annotations

import importlib.util
import io
import math
import time
import warnings
from typing import Any, ClassVar, cast

import numpy as np

from nasfilter.bench.datasets import Dataset
from nasfilter.bench.network import input_shape
from nasfilter.oracle.base import Backend, BackendSpec, BackendUnavailable
from nasfilter.oracle.cpu_peak import cpu_fingerprint, cpu_peak
from nasfilter.oracle.measurement import Measurement, Status
from nasfilter.oracle.space_nets import build, flops_per_image, space_config
from nasfilter.oracle.timing import time_runs

DEFAULT_BATCH = 64
DEFAULT_WINDOW = 1.0  # seconds of timed runs per architecture
DEFAULT_TRIALS = 5
DEFAULT_WARMUP = 1  # untimed runs before timing (onnxruntime is warm after one)
OPSET = 17

_EXTRA_HINT = (
    "install the onnx extra: `pip install nasfilter[onnx]`, then "
    "`pip install --no-deps xautodl==1.0.0`"
)


def require_modules(backend: str, modules: tuple[str, ...], hint: str) -> None:
    """Raise BackendUnavailable naming the first of ``modules`` that is not installed."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise BackendUnavailable(
                f"the {backend} backend needs the Python package {module!r}, which is not "
                f"installed; {hint}"
            )


def _check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def input_array(shape: tuple[int, ...]) -> np.ndarray:
    """A deterministic float32 input in [-1, 1) of ``shape`` (no random draws)."""
    n = int(np.prod(shape))
    return ((np.arange(n, dtype=np.float32) % 251) / 125.5 - 1.0).reshape(shape)


def export_onnx(
    arch: int, dataset: Dataset, batch: int, half: bool = False, dynamic_batch: bool = False,
    space: str = "sss",
) -> bytes:
    """The real network of ``arch`` of ``space`` as ONNX bytes, traced at ``batch``
    (TorchScript exporter).

    ``half`` exports an FP16 model (for TensorRT's strongly typed builds); ``dynamic_batch``
    leaves the batch axis free (for one optimization profile). The input is named ``input``;
    the outputs ``features`` and ``logits``.
    """
    import torch

    net: Any = build(space, arch, dataset)
    dtype = torch.float16 if half else torch.float32
    net = net.to(dtype)
    example = torch.zeros(input_shape(dataset, batch), dtype=dtype)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            net,
            (example,),
            cast(Any, buffer),
            dynamo=False,
            input_names=["input"],
            output_names=["features", "logits"],
            opset_version=OPSET,
            dynamic_axes=(
                {"input": {0: "batch"}, "features": {0: "batch"}, "logits": {0: "batch"}}
                if dynamic_batch
                else None
            ),
        )
    return buffer.getvalue()


class OnnxRuntimeBackend(Backend):
    """Real networks on the CPU with onnxruntime (FP32, all graph optimizations).

    Args:
        batch: images per run.
        threads: intra-op threads (0 or None: onnxruntime's default, one per physical core).
        window: timed seconds per architecture, split over ``trials``.
        trials: timed trials; the median is reported.
        warmup: untimed runs first.
        peak_flops: the CPU peak FLOP/s; None measures it (cached per machine).
        peak_cache: the JSON file caching the peak (default: the nasfilter cache folder).
    """

    name: ClassVar[str] = "onnxruntime"
    space: ClassVar[str] = "sss"  # the space whose networks it builds (tss: a subclass)

    def __init__(
        self,
        device: str | None = None,
        batch: int = DEFAULT_BATCH,
        threads: int | None = None,
        window: float = DEFAULT_WINDOW,
        trials: int = DEFAULT_TRIALS,
        warmup: int = DEFAULT_WARMUP,
        peak_flops: float | None = None,
        peak_cache: str | None = None,
    ) -> None:
        if device not in (None, "cpu"):
            raise ValueError(
                f"the onnxruntime backend runs on the CPU: device must be 'cpu', got {device!r}"
            )
        require_modules(self.name, ("onnxruntime", "onnx", "torch", "xautodl"), _EXTRA_HINT)
        self.batch = _check_positive_int("batch", batch)
        self.threads = 0 if threads in (None, 0) else _check_positive_int("threads", threads)
        if not (isinstance(window, (int, float)) and math.isfinite(window) and window > 0):
            raise ValueError(f"window must be seconds > 0, got {window!r}")
        self.window = float(window)
        self.trials = _check_positive_int("trials", trials)
        self.warmup = _check_positive_int("warmup", warmup)
        if peak_flops is not None and not (
            isinstance(peak_flops, (int, float)) and math.isfinite(peak_flops) and peak_flops > 0
        ):
            raise ValueError(f"peak_flops must be FLOP/s > 0, got {peak_flops!r}")
        self._peak = None if peak_flops is None else float(peak_flops)
        self._peak_source = "spec" if peak_flops is not None else "measured"
        self.peak_cache = peak_cache

    @property
    def config(self) -> dict[str, Any]:
        import onnxruntime as ort
        import torch

        return {
            "batch": self.batch,
            "threads": self.threads,
            "window_s": self.window,
            "trials": self.trials,
            "warmup": self.warmup,
            "precision": "fp32",
            "graph_optimization": "all",
            "exporter": f"torchscript-opset{OPSET}-dynamic-batch",
            "onnxruntime": ort.__version__,
            "torch": torch.__version__.split("+")[0],
            **space_config(self.space),
        }

    def fingerprint(self) -> dict[str, Any]:
        return cpu_fingerprint()

    def spec(self) -> BackendSpec:
        cfg: dict[str, Any] = {
            "batch": self.batch,
            "threads": self.threads,
            "window": self.window,
            "trials": self.trials,
            "warmup": self.warmup,
            "peak_cache": self.peak_cache,
        }
        if self._peak_source == "spec":
            cfg["peak_flops"] = self._peak
        return BackendSpec(self.name, None, cfg)

    def peak(self) -> float:
        """The CPU peak FLOP/s utilization is computed against."""
        if self._peak is None:
            self._peak = cpu_peak(self.threads or None, self.peak_cache)
        return self._peak

    def session(self, model: bytes, optimized_path: str | None = None) -> Any:
        """An onnxruntime session for ``model`` with all graph optimizations.

        ``optimized_path`` saves the optimized graph there (to inspect the fusions).
        """
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if self.threads:
            options.intra_op_num_threads = self.threads
        options.log_severity_level = 3
        if optimized_path is not None:
            options.optimized_model_filepath = optimized_path
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def measure(self, arch: int, dataset: Dataset) -> Measurement:
        peak = self.peak()
        config = self.config
        fpi = float(flops_per_image(self.space, dataset)[arch])
        timings: dict[str, float] = {}
        try:
            t0 = time.perf_counter()
            model = export_onnx(arch, dataset, 1, dynamic_batch=True, space=self.space)
            t1 = time.perf_counter()
            sess = self.session(model)
            t2 = time.perf_counter()
            feeds = {"input": input_array(input_shape(dataset, self.batch))}
            timing = time_runs(lambda: sess.run(None, feeds), self.window, self.trials, self.warmup)
            timings = {"export_s": t1 - t0, "session_s": t2 - t1, **timing.as_dict()}
            throughput = self.batch / timing.median
            status, error = Status.OK, ""
            if not (math.isfinite(throughput) and throughput > 0):
                raise RuntimeError(f"timing gave a throughput of {throughput!r} images/s")
        except Exception as exc:  # a failed architecture is a row with status error
            throughput, status, error = math.nan, Status.ERROR, f"{type(exc).__name__}: {exc}"
        return Measurement(
            arch=arch,
            dataset=dataset.name,
            backend=self.name,
            config=config,
            device=self.fingerprint(),
            status=status,
            throughput=throughput,
            batch_size=self.batch,
            max_batch=None,
            flops_per_image=fpi,
            peak_flops=peak,
            peak_source=self._peak_source,
            timings=timings,
            error=error,
        )
