"""Backend names -> factories, for the command line and for rebuilding backends in workers.

A backend spec is ``NAME`` or ``NAME[key=value,...]`` (``onnxruntime[batch=32,window=0.5]``);
the device is passed separately (``--device``). Unknown names raise an error listing the
known ones; a backend whose dependency is missing raises
:class:`~nasfilter.oracle.base.BackendUnavailable` naming the extra to install.
"""

from __future__ import annotations

from typing import Any

from nasfilter.oracle.base import Backend, BackendSpec
from nasfilter.oracle.devices import DeviceSpec
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


def create(spec: str, device: str | DeviceSpec | None = None, **overrides: Any) -> Backend:
    """Build the backend named by ``spec`` (``NAME`` or ``NAME[k=v,...]``) on ``device``."""
    return BACKENDS.create(spec, device=device, **overrides)


ANALYTIC_BACKENDS = frozenset({"roofline", "calibrated"})  # computed when no cache is given


def check_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``(name, settings)`` of an oracle spec ``NAME[k=v,...]``, the one check every command
    and the API use: the name must be registered and every setting one the backend takes.

    Values are checked where the backend is built (analytic backends) or against the
    settings recorded with the measurements (measured backends); ValueError names the spec
    and lists the valid settings.
    """
    name, params = parse_spec(spec)
    BACKENDS.factory(name)  # an unknown name gets the list of known backends
    known = BACKENDS.setting_names(name)
    unknown = sorted(set(params) - (known or set()) | ({"device"} & set(params)))
    if known is not None and unknown:
        listed = BACKENDS.parameters(name, hidden=("device",)) or []
        raise ValueError(
            f"oracle {spec!r}: backend {name!r} takes no setting {', '.join(map(repr, unknown))}"
            + (" (the device is its own option, --device)" if "device" in unknown else "")
            + f"; its settings are: {'; '.join(listed) or 'none'}"
        )
    return name, params


def backend_name(spec: str) -> str:
    """The backend name of a spec string, checked (with its settings) by :func:`check_spec`."""
    return check_spec(spec)[0]


def default_device(name: str) -> str | None:
    """The device a backend runs on when none is named: the V100 of the study for the
    analytic models, the CPU for onnxruntime, and for the CUDA backends None (the one
    device a measurement cache holds)."""
    if name in ANALYTIC_BACKENDS:
        return "v100"
    if name == "onnxruntime":
        return "cpu"
    return None


def from_spec(spec: BackendSpec) -> Backend:
    """Rebuild a backend from :meth:`Backend.spec` (in a Ray worker, say)."""
    factory = BACKENDS.factory(spec.name)
    return factory(device=spec.device, **dict(spec.config))
