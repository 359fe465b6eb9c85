"""Backend names -> factories, for the command line and for rebuilding backends in workers.

A backend spec is ``NAME`` or ``NAME[key=value,...]`` (``onnxruntime[batch=32,window=0.5]``);
the device is passed separately (``--device``). Unknown names raise an error listing the
known ones; a backend whose dependency is missing raises
:class:`~nasfilter.oracle.base.BackendUnavailable` naming the extra to install.
"""

from __future__ import annotations

from typing import Any

from nasfilter.oracle.base import Backend, BackendSpec
from nasfilter.registry import Registry, parse_spec


def _roofline(device: str | None = None, **config: Any) -> Backend:
    from nasfilter.oracle.roofline import RooflineBackend

    return RooflineBackend(device, **config)


def _calibrated(device: str | None = None, **config: Any) -> Backend:
    from nasfilter.oracle.calibrated import CalibratedBackend

    return CalibratedBackend(device, **config)


def _onnxruntime(device: str | None = None, **config: Any) -> Backend:
    from nasfilter.oracle.onnx_backend import OnnxRuntimeBackend

    return OnnxRuntimeBackend(device, **config)


def _torch_cuda(device: str | None = None, **config: Any) -> Backend:
    from nasfilter.oracle.torch_cuda import TorchCudaBackend

    return TorchCudaBackend(device, **config)


def _tensorrt(device: str | None = None, **config: Any) -> Backend:
    from nasfilter.oracle.tensorrt_backend import TensorRTBackend

    return TensorRTBackend(device, **config)


BACKENDS: Registry[Backend] = Registry("backend", Backend)


def _roofline_class() -> Any:
    from nasfilter.oracle.roofline import RooflineBackend

    return RooflineBackend


def _calibrated_class() -> Any:
    from nasfilter.oracle.calibrated import CalibratedBackend

    return CalibratedBackend


def _onnxruntime_class() -> Any:
    from nasfilter.oracle.onnx_backend import OnnxRuntimeBackend

    return OnnxRuntimeBackend


def _torch_cuda_class() -> Any:
    from nasfilter.oracle.torch_cuda import TorchCudaBackend

    return TorchCudaBackend


def _tensorrt_class() -> Any:
    from nasfilter.oracle.tensorrt_backend import TensorRTBackend

    return TensorRTBackend


BACKENDS.register(
    "roofline",
    _roofline,
    "analytic roofline on a device spec (v100, a100, ...)",
    params_of=_roofline_class,
)
BACKENDS.register(
    "calibrated",
    _calibrated,
    "GPU model calibrated on real measurements (tiles, waves, kernels) on a device spec",
    params_of=_calibrated_class,
)
BACKENDS.register(
    "onnxruntime",
    _onnxruntime,
    "real networks on this CPU with onnxruntime",
    params_of=_onnxruntime_class,
)
BACKENDS.register(
    "torch-cuda",
    _torch_cuda,
    "real networks on a CUDA GPU with torch, FP16",
    params_of=_torch_cuda_class,
)
BACKENDS.register(
    "tensorrt",
    _tensorrt,
    "real networks on a CUDA GPU with TensorRT, FP16",
    params_of=_tensorrt_class,
)


_GPU_BACKENDS = frozenset({"torch-cuda", "tensorrt"})


def uses_gpu(name: str) -> bool:
    """Whether the backend ``name`` needs a GPU (a Ray task then asks for one)."""
    return name in _GPU_BACKENDS


def create(spec: str, device: str | None = None, **overrides: Any) -> Backend:
    """Build the backend named by ``spec`` (``NAME`` or ``NAME[k=v,...]``) on ``device``."""
    return BACKENDS.create(spec, device=device, **overrides)


def backend_name(spec: str) -> str:
    """The backend name of a spec string, checked against the registry."""
    name, _ = parse_spec(spec)
    BACKENDS.factory(name)
    return name


def from_spec(spec: BackendSpec) -> Backend:
    """Rebuild a backend from :meth:`Backend.spec` (in a Ray worker, say)."""
    factory = BACKENDS.factory(spec.name)
    return factory(device=spec.device, **dict(spec.config))
