"""A machine's host time per eager kernel from tss networks measured on it: the device file's
``measured_host_kernel_us`` (docs/gpu-model.md, "The host"), read from a ``nasfilter measure
--space tss --export`` file.

The latencies must be of the kind the cells' model prices
(:func:`~nasfilter.oracle.tss_measure.cells_export_batch`): CIFAR-10 networks run FP32 in
PyTorch eager, NCHW, at one batch, as HELP's cells ran. ``torch-cuda[batch=1,precision=fp32,
cuda_graph=false,channels_last=false]`` measures them on your GPU (a CUDA graph replays the
kernels without the host, so its latency says nothing of it), and HELP's own
(``measured[batch=1]``) are read too.
:func:`networks_to_measure` draws the networks worth measuring; :func:`host_figure` derives the
figure (:func:`nasfilter.oracle.cells.host_kernel_from_latency`) with each network's share.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from nasfilter.oracle.calibration_file import load_calibration
from nasfilter.oracle.cells import (
    host_bound_networks,
    host_kernel_from_latency,
    host_ratios,
)
from nasfilter.oracle.devices import DeviceSpec, get_device
from nasfilter.oracle.tss_measure import (
    TssExport,
    cells_export_batch,
    export_device,
    measured_on,
)


@dataclass(frozen=True)
class HostFigure:
    """The host time per kernel a measured export implies, with what it was read from.

    ``index``, ``latency_s``, ``ratio`` and ``bound`` are per network with a latency (K,):
    its seconds per batch, that over its modelled host time, and whether it is host-bound
    (:func:`~nasfilter.oracle.cells.host_ratios`; only those count)."""

    device: DeviceSpec  # the data sheet the modelled times are read on
    measured_on: str  # the export's machine, in words
    batch: int
    index: np.ndarray
    latency_s: np.ndarray
    ratio: np.ndarray
    bound: np.ndarray
    dropped: tuple[int, ...]  # rows without a latency (out of memory, an error)
    seconds: float  # the figure: the host's seconds per eager kernel

    def device_file(self, name: str | None = None) -> DeviceSpec:
        """The device with the figure as ``measured_host_kernel_seconds`` (as a JSON device
        file: :func:`~nasfilter.oracle.devices.device_file_dict`), named ``name`` (default
        NAME-host)."""
        return replace(
            self.device,
            name=name or f"{self.device.name}-host",
            measured_host_kernel_seconds=self.seconds,
            sources=f"{self.device.sources}; host time per kernel: nasfilter host-figure, "
            f"{int(self.bound.sum())} tss networks measured at batch {self.batch} on "
            f"{self.measured_on}".lstrip("; "),
        )


def networks_to_measure(
    device: str | DeviceSpec, n: int, rng: np.random.Generator, batch: int = 1
) -> np.ndarray:
    """``n`` tss networks drawn by ``rng`` among :func:`~nasfilter.oracle.cells.
    host_bound_networks` of ``device`` at ``batch``, sorted, int64 (n,); ValueError when
    ``n`` is not an integer from 1 to how many there are."""
    pool = host_bound_networks(device, batch)
    if pool.size == 0:
        raise ValueError(f"no tss network is host-bound at batch {batch} on "
                         f"{get_device(device).name} by the model: measure at batch 1")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= pool.size:
        raise ValueError(f"the number of networks must be an integer from 1 to {pool.size} (the "
                         f"host-bound ones at batch {batch}), got {n!r}")
    return np.sort(rng.choice(pool, int(n), replace=False)).astype(np.int64)


def host_figure(export: TssExport, device: str | DeviceSpec | None = None) -> HostFigure:
    """The host time per eager kernel ``export``'s latencies imply, read on ``device``'s data
    sheet (default: the export's own, when it has one). ValueError naming the value for what
    :func:`~nasfilter.oracle.tss_measure.cells_export_batch`,
    :func:`~nasfilter.oracle.tss_measure.export_device` or
    :func:`~nasfilter.oracle.cells.host_kernel_from_latency` refuse."""
    batch = cells_export_batch(export)
    dev = export_device(export, device)
    has = export.has_latency
    index, latency = export.index[has], export.latency_s[has]
    params = load_calibration().params
    seconds = host_kernel_from_latency(dev, index, latency, batch, params)
    ratio, bound = host_ratios(dev, index, latency, batch, params)
    return HostFigure(dev, measured_on(export.meta), batch, index, latency, ratio, bound,
                      tuple(export.index[~has].tolist()), seconds)


__all__ = ["HostFigure", "host_figure", "networks_to_measure"]
