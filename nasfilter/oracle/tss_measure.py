"""``nasfilter measure --space tss``: every tss cell's throughput, latency and utilization.

Three backends answer for all 15625 cells at once (each a few milliseconds):

- ``measured[batch=B]`` (B in 1, 32, 256; default 256) on a HELP GPU (1080ti, 2080ti, titanx,
  titanxp): HELP's **measured** latency (:func:`nasfilter.bench.tss_data.load_latency`) of the
  CIFAR-10 network; throughput = B / latency;
- ``calibrated[batch=B]`` (default 256) on any device with the model's data-sheet figures
  (a built-in or a JSON device file, ``sm_count``, ``memory_gb`` and ``fp32_peak_tflops``):
  the calibrated GPU model's **modelled** PyTorch-eager FP32 throughput
  (:meth:`nasfilter.oracle.calibrated.CalibratedBackend.predict_tss`; other datasets through
  :func:`nasfilter.oracle.calibrated.predict_tss` with that backend's calibration);
- ``roofline[batch=B]`` (default 256): the plain roofline's **modelled** seconds per batch on
  the data sheet's FP32 peak and bandwidth (:func:`nasfilter.oracle.cells.roofline_batch_seconds`).

Utilization = throughput x 2 x MACs (NATS's FLOPs of the dataset's network) / the device's
FP32 data-sheet peak. Without ``--device`` every backend runs on the RTX 2080 Ti. Rows go to
the measurement cache under the config ``{"space": "tss", ...}`` (never mixed with sss rows)
with the label ``measured`` or ``modelled``;
:func:`export_tss` writes a group's rows with their arch strings.

The three backends that time real networks run on tss too (:func:`real_backend`): they build
xautodl's ``TinyNetwork`` of each cell (:func:`nasfilter.oracle.space_nets.build`) and time it as
on sss, one cell at a time (:func:`nasfilter.oracle.sweep.sweep`):

- ``onnxruntime`` on **this machine's CPU** (FP32; its rows say ``processor: CPU``, never GPU);
- ``torch-cuda`` and ``tensorrt`` on a CUDA GPU (FP16, the largest batch that fits).

Their rows are labelled ``measured`` with the backend's name and the device's fingerprint, under
a config with ``"space": "tss"``; FLOPs are the tss network's (2 x NATS's MACs).
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.spaces import TSS
from nasfilter.bench.tss_data import GPU_BATCHES, load_latency, load_tss_arrays
from nasfilter.files import atomic_write
from nasfilter.oracle.base import Backend
from nasfilter.oracle.cache import Group
from nasfilter.oracle.calibrated import CalibratedBackend, predict_tss
from nasfilter.oracle.cells import CELL_DATASET, all_ops, roofline_batch_seconds
from nasfilter.oracle.devices import DEVICES, DeviceSpec, get_device
from nasfilter.oracle.measured import DEVICE_SPECS, help_device
from nasfilter.oracle.measurement import Measurement, Status
from nasfilter.oracle.onnx_backend import OnnxRuntimeBackend
from nasfilter.oracle.tensorrt_backend import TensorRTBackend
from nasfilter.oracle.torch_cuda import TorchCudaBackend

TSS_BACKENDS = ("measured", "calibrated", "roofline")
REAL_BACKENDS = ("onnxruntime", "torch-cuda", "tensorrt")  # time real tss networks, one by one
DEFAULT_BATCH = 256
DEFAULT_DEVICE = "rtx2080ti"  # the measured default (HELP's 2080ti) for every tss backend
EXPORT_FORMAT = "nasfilter-tss-measure"


@dataclass(frozen=True)
class TssPrediction:
    """One backend's answer for every tss cell: arrays (15625,), seconds and images/s."""

    backend: str
    label: str  # "measured" or "modelled"
    batch: int
    config: dict[str, Any]
    device: dict[str, Any]
    throughput: np.ndarray
    flops_per_image: np.ndarray
    peak_flops: float

    @property
    def latency_s(self) -> np.ndarray:
        """Seconds per batch of ``batch`` images, (15625,)."""
        out: np.ndarray = self.batch / self.throughput
        return out


def _batch(name: str, params: dict[str, Any], allowed: tuple[int, ...] | None) -> int:
    unknown = sorted(set(params) - {"batch"})
    if unknown:
        raise ValueError(f"backend {name!r} on tss takes only batch=B; unknown settings {unknown}")
    batch = params.get("batch", DEFAULT_BATCH)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"backend {name!r}: batch must be an integer >= 1, got {batch!r}")
    if allowed is not None and batch not in allowed:
        raise ValueError(f"backend {name!r}: no latency was measured at batch {batch}; measured "
                         f"batches: {', '.join(map(str, allowed))}")
    return batch


def _flops(dataset: str) -> np.ndarray:
    """FLOPs per image of every cell on ``dataset`` (2 x NATS's MACs), float64 (15625,)."""
    out: np.ndarray = load_tss_arrays(dataset).flops_M.astype(np.float64) * 2e6
    return out


def _fp32_peak(device: Any) -> float:

    if device.fp32_peak_flops is None:
        known = [name for name, spec in DEVICES.items() if spec.fp32_peak_flops is not None]
        raise ValueError(f"device {device.name!r} has no FP32 peak (fp32_peak_tflops): the tss "
                         "networks run in FP32 and their utilization is taken against that "
                         f"data-sheet peak; devices with one: {', '.join(known)}, or a JSON "
                         "device file with fp32_peak_tflops")
    return float(device.fp32_peak_flops)


def predict(name: str, params: dict[str, Any], device: str | None,
            dataset: str) -> TssPrediction:
    """Every cell's prediction or measurement by backend ``name`` (see module)."""
    if name in REAL_BACKENDS:
        raise ValueError(f"backend {name!r} times real networks one by one: build it with "
                         "real_backend and run it with nasfilter.oracle.sweep.sweep")
    if name == "measured":
        return _measured(params, device, dataset)
    if name == "calibrated":
        return _calibrated(params, device, dataset)
    if name == "roofline":
        return _roofline(params, device, dataset)
    raise ValueError(f"unknown tss backend {name!r}; tss backends: "
                     f"{', '.join(TSS_BACKENDS + REAL_BACKENDS)}")


def _measured(params: dict[str, Any], device: str | None, dataset: str) -> TssPrediction:

    batch = _batch("measured", params, GPU_BATCHES)
    if dataset != "cifar10":
        raise ValueError(f"the measured latencies are of the CIFAR-10 network (HELP); dataset "
                         f"{dataset!r} was not measured: use --dataset cifar10")
    key = help_device("2080ti" if device is None else device)
    spec = get_device(DEVICE_SPECS[key])
    config = {"space": "tss", "batch": batch, "source": "HELP measured latency",
              "help_device": key}
    return TssPrediction("measured", "measured", batch, config, spec.to_dict(),
                         batch / load_latency(key, batch), _flops(dataset), _fp32_peak(spec))


def _calibrated(params: dict[str, Any], device: str | None, dataset: str) -> TssPrediction:

    batch = _batch("calibrated", params, None)
    backend = CalibratedBackend(device=DEFAULT_DEVICE if device is None else device)
    if dataset == "cifar10":
        throughput = backend.predict_tss(batch)
    else:
        throughput = predict_tss(backend.device, batch, backend.calibration, dataset=dataset)
    config = {"space": "tss", "batch": batch, "engine": "eager", "precision": "fp32",
              "params": backend.calibration.params.to_dict(),
              "fitted_on": backend.calibration.fitted_on}
    return TssPrediction("calibrated", "modelled", batch, config, backend.device.to_dict(),
                         np.asarray(throughput, dtype=np.float64), _flops(dataset),
                         _fp32_peak(backend.device))


def _roofline(params: dict[str, Any], device: str | None, dataset: str) -> TssPrediction:

    batch = _batch("roofline", params, None)
    spec = get_device(DEFAULT_DEVICE if device is None else device)
    peak = _fp32_peak(spec)
    seconds = roofline_batch_seconds(spec, batch, all_ops(), dataset, "fp32")
    config = {"space": "tss", "batch": batch, "precision": "fp32"}
    return TssPrediction("roofline", "modelled", batch, config, spec.to_dict(),
                         batch / seconds, _flops(dataset), peak)


class TssOnnxRuntime(OnnxRuntimeBackend):
    """onnxruntime on this machine's CPU, timing each cell's ``TinyNetwork`` (FP32)."""

    space = "tss"


class TssTorchCuda(TorchCudaBackend):
    """torch on a CUDA GPU, timing each cell's ``TinyNetwork`` (FP16, CUDA graphs)."""

    space = "tss"


class TssTensorRT(TensorRTBackend):
    """A TensorRT FP16 engine of each cell's ``TinyNetwork`` on a CUDA GPU."""

    space = "tss"


_REAL = {"onnxruntime": TssOnnxRuntime, "torch-cuda": TssTorchCuda, "tensorrt": TssTensorRT}


def real_backend(name: str, params: dict[str, Any], device: str | None) -> Backend:
    """The backend ``name`` (one of :data:`REAL_BACKENDS`) over tss cells, with the settings
    ``params`` (as on sss) on ``device`` (onnxruntime: cpu; the others: cuda, cuda:N)."""
    if name not in _REAL:
        raise ValueError(f"{name!r} times no real network; real tss backends: "
                         f"{', '.join(REAL_BACKENDS)}")
    backend: Backend = _REAL[name](device, **params)
    return backend


def processor(device: dict[str, Any]) -> str:
    """``"CPU"`` for a row measured on this machine's CPU (onnxruntime), else ``"GPU"`` (a CUDA
    fingerprint, a HELP GPU, or a GPU data sheet the models read)."""
    return "CPU" if device.get("kind") == "cpu" else "GPU"


def select_tss_archs(text: str, rng: np.random.Generator) -> np.ndarray:
    """Indices named by ``--archs``: ``all``, ``sample:N`` (uniform, no repeats) or a file with
    one tss index or arch string per line; sorted, unique, int64."""
    value = text.strip()
    if value == "all":
        return np.arange(TSS.size, dtype=np.int64)
    if value.startswith("sample:"):
        n = value.partition(":")[2]
        if not n.isdigit() or not 1 <= int(n) <= TSS.size:
            raise ValueError(f"--archs {text!r}: sample:N needs N in 1..{TSS.size}")
        return np.sort(rng.choice(TSS.size, int(n), replace=False)).astype(np.int64)
    path = Path(value)
    if not path.is_file():
        raise ValueError(f"--archs {text!r}: give all, sample:N, or a file with one tss index "
                         f"(0..{TSS.size - 1}) or arch string per line")
    out = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            try:
                out.append(TSS.index_of(line.strip()))
            except ValueError as exc:
                raise ValueError(f"--archs {text!r}, line {number}: {exc}") from None
    if not out:
        raise ValueError(f"--archs {text!r}: the file names no architecture")
    return np.unique(np.asarray(out, dtype=np.int64))


def store(pred: TssPrediction, archs: np.ndarray, dataset: str, cache: Any) -> tuple[Any, int]:
    """Put the rows of ``archs`` not yet cached into ``cache``; (the group, rows added)."""

    config = {**pred.config, "label": pred.label}
    group = Group.make(dataset, pred.backend, config, pred.device)
    new = np.setdiff1d(archs, cache.cached_indices(group))
    rows = [Measurement(arch=int(i), dataset=dataset, backend=pred.backend, config=config,
                        device=pred.device, status=Status.OK,
                        throughput=float(pred.throughput[i]), batch_size=pred.batch,
                        max_batch=None, flops_per_image=float(pred.flops_per_image[i]),
                        peak_flops=pred.peak_flops, peak_source="spec",
                        timings={"latency_s": float(pred.latency_s[i])})
            for i in new.tolist()]
    cache.put_many(rows)
    return group, len(rows)


def export_tss(cache: Any, group: Any, path: str | Path) -> Path:
    """Write ``group``'s rows as a .npz: index, arch (string), throughput (images/s),
    latency_s (seconds per batch), utilization, batch, label (measured / modelled), processor
    (CPU / GPU), meta (JSON, with the backend and the device)."""
    rows = sorted(cache.rows(group), key=lambda m: m.arch)
    label = group.config_dict.get("label", "modelled")
    columns = {
        "index": np.asarray([m.arch for m in rows], dtype=np.int64),
        "arch": np.asarray([str(TSS.arch(m.arch)) for m in rows], dtype=str),
        "throughput": np.asarray([m.throughput for m in rows], dtype=np.float64),
        "latency_s": np.asarray([m.timings.get("latency_s", (m.batch_size or np.nan)
                                               / m.throughput) for m in rows], dtype=np.float64),
        "utilization": np.asarray([m.utilization for m in rows], dtype=np.float64),
        "batch": np.asarray([m.batch_size for m in rows], dtype=np.int64),
        "label": np.asarray([label] * len(rows), dtype=str),
        "processor": np.asarray([processor(group.device_dict)] * len(rows), dtype=str),
    }
    meta = {"format": EXPORT_FORMAT, "space": "tss", "dataset": group.dataset,
            "backend": group.backend, "config": group.config_dict, "device": group.device_dict,
            "processor": processor(group.device_dict), "label": label,
            "utilization": "throughput x 2 x MACs / the device's FP32 data-sheet peak"}
    arrays: dict[str, Any] = {"meta": np.array(json.dumps(meta, sort_keys=True)), **columns}
    target = Path(path)
    with atomic_write(target) as fh:
        np.savez_compressed(fh, **arrays)
    return target


@dataclass(frozen=True)
class TssExport:
    """A file :func:`export_tss` wrote: its ``meta`` and per-row columns (R,)."""

    path: Path
    meta: dict[str, Any]
    index: np.ndarray  # int64, tss indices
    latency_s: np.ndarray  # float64, seconds per batch
    batch: np.ndarray  # int64, images per batch

    @property
    def has_latency(self) -> np.ndarray:
        """Which rows hold a latency (finite, at a batch > 0), bool (R,)."""
        out: np.ndarray = np.isfinite(self.latency_s) & (self.batch > 0)
        return out


def read_tss_export(path: str | Path) -> TssExport:
    """Read a ``measure --space tss --export`` file; ValueError naming the file when it is not
    one (not a .npz, or another format), OSError when it cannot be read."""
    target = Path(path)
    what = f"{str(target)!r} is not a file `nasfilter measure --space tss --export` writes"
    if not zipfile.is_zipfile(target):
        raise ValueError(f"{what}: not a .npz archive")
    try:
        with np.load(target, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            found = meta.get("format") if isinstance(meta, dict) else None
            if found != EXPORT_FORMAT:
                raise ValueError(f"format {found!r}")
            index = np.asarray(z["index"], dtype=np.int64)
            latency = np.asarray(z["latency_s"], dtype=np.float64)
            batch = np.asarray(z["batch"], dtype=np.int64)
    except (ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{what} ({EXPORT_FORMAT}): {exc}") from None
    if not index.shape == latency.shape == batch.shape or index.ndim != 1:
        raise ValueError(f"{str(target)!r}: its index, latency_s and batch columns differ in "
                         f"shape ({index.shape}, {latency.shape}, {batch.shape})")
    return TssExport(target, meta, index, latency, batch)


# What the cells' model prices (nasfilter.oracle.cells): CIFAR-10 networks, FP32, PyTorch eager,
# NCHW, at one batch. torch-cuda measures them with these settings; HELP's are read as they are
# (FP32 eager by what the data says: docs/gpu-model.md).
CELLS_TORCH_CUDA = {"precision": "fp32", "cuda_graph": False, "channels_last": False}
CELLS_SPEC = "torch-cuda[batch=B,precision=fp32,cuda_graph=false,channels_last=false]"
CELLS_BACKENDS = ("torch-cuda", "measured")


def measured_on(meta: dict[str, Any]) -> str:
    """The machine an export's rows come from, in words."""
    device = meta.get("device") or {}
    if device.get("kind") == "cuda":
        return f"{device.get('gpu')} (CUDA fingerprint)"
    return f"{device.get('name')} ({meta.get('config', {}).get('source', meta.get('backend'))})"


def cells_export_batch(export: TssExport) -> int:
    """The batch of an export whose latencies are of the kind the cells' model prices (GPU
    measurements of CIFAR-10 networks, FP32 eager NCHW, one given batch); ValueError naming
    the file and what is wrong: not measured, on a CPU, not CIFAR-10, another backend or other
    settings, no latency, or several batches."""
    meta, where = export.meta, repr(str(export.path))
    if meta.get("label") != "measured" or meta.get("processor") != "GPU":
        raise ValueError(f"{where} holds {meta.get('label')} rows on a {meta.get('processor')}: "
                         "give latencies measured on a GPU's machine")
    if meta.get("dataset") != CELL_DATASET:
        raise ValueError(f"{where} was measured on {meta.get('dataset')!r}: the cells' model "
                         f"prices the {CELL_DATASET} networks (measure with --dataset "
                         f"{CELL_DATASET})")
    backend, config = meta.get("backend"), meta.get("config", {})
    if backend not in CELLS_BACKENDS:
        raise ValueError(f"{where} was measured by {backend!r}, which does not launch PyTorch "
                         f"eager kernels; measure with {CELLS_SPEC} ({', '.join(CELLS_BACKENDS)} "
                         "are read)")
    if backend == "torch-cuda":
        wrong = {k: config.get(k) for k, v in CELLS_TORCH_CUDA.items() if config.get(k) != v}
        if wrong or "batch" not in config:
            raise ValueError(
                f"{where} was measured by torch-cuda with {wrong or 'the largest batch'}: the "
                "cells' model prices FP32 eager NCHW launches at a given batch (a CUDA graph "
                f"replays the kernels without the host); measure with {CELLS_SPEC}")
    have = export.batch[export.has_latency]
    if have.size == 0:
        raise ValueError(f"{where} holds no latency (every row is out of memory or an error)")
    if np.unique(have).size > 1:
        raise ValueError(f"{where} mixes batches {sorted(set(have.tolist()))}: give one")
    return int(have[0])


def export_device(export: TssExport, device: str | DeviceSpec | None) -> DeviceSpec:
    """The data sheet an export is modelled on: ``device`` (a name, a JSON file or a
    DeviceSpec), else the export's own when it carries one (HELP's); ValueError for a CUDA
    fingerprint without ``device``."""
    if device is None:
        fingerprint = export.meta.get("device") or {}
        if fingerprint.get("kind") != "spec":
            raise ValueError(
                f"{str(export.path)!r} was measured on {measured_on(export.meta)}, which has "
                "no data sheet: give the device (a built-in name or a JSON device file)")
        device = str(fingerprint["name"])
    return get_device(device)


__all__ = ["CELLS_SPEC", "CELLS_TORCH_CUDA", "REAL_BACKENDS", "TSS_BACKENDS", "TssExport",
           "TssPrediction", "cells_export_batch", "export_device", "export_tss", "measured_on",
           "predict", "processor", "read_tss_export", "real_backend", "select_tss_archs",
           "store"]
