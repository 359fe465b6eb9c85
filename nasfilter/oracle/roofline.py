"""The analytic roofline backend: throughput and utilization of all 32768 networks at once.

For each fused layer ``l`` of :func:`nasfilter.bench.network.layer_table` (BN folded, ReLU and the
residual add fused into the producing conv), at batch ``B``::

    flops_l = 2 x MACs_l x B                                  (FLOPs)
    bytes_l = s x (B x (input_l + output_l) + weights_l)      (s = 2 bytes in FP16)
    time_l  = max(flops_l / peak, bytes_l / bandwidth) + launch overhead
    throughput = B / sum_l time_l                              (images/s)
    utilization = throughput x FLOPs per image / peak         (FLOPs = 2 x NATS MACs)

Layers absent from an architecture (identity skips) cost nothing. A layer can reach the peak
only if its arithmetic intensity ``flops_l / bytes_l`` exceeds the device's CMR
(``peak / bandwidth``), docs/facts.md §4.

Model settings, and why (see docs/oracle.md):

- Batch 1024. The study times the largest batch that fits; these networks are small, so that
  batch is in the thousands on a 16 GB V100, and throughput has saturated long before: at
  1024 the weights are re-read once per 1024 images (negligible next to activations), and the
  launch overhead of the smallest network (8:8:8:8:8, ~37 us of memory traffic per layer at
  0.9 TB/s) is under 10 %. Memory capacity is not modelled, so ``max_batch`` is None.
- 3 us per layer. TensorRT enqueues one kernel per fused layer back to back (or replays a CUDA
  graph); the GPU-side gap between dependent kernels plus the ramp-up and tail of a kernel
  that does not fill the GPU costs a few microseconds on a V100.
- Peak: the measured peak where one is known (V100: the study's 100 TFLOP/s; H200: 780),
  else the data sheet; bandwidth likewise. The same peak is the compute roof and the
  denominator of utilization, so utilization never exceeds 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from nasfilter.bench.costs import flops
from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.layer_table import LayerTable
from nasfilter.bench.network import layer_table
from nasfilter.bench.proxy import ProxyTable
from nasfilter.oracle.analytic import AnalyticBackend, prediction_proxy_table
from nasfilter.oracle.base import BackendSpec
from nasfilter.oracle.devices import DEVICES, DeviceSpec, get_device

DEFAULT_BATCH = 1024
DEFAULT_LAUNCH_OVERHEAD = 3e-6  # seconds per executed layer
BYTES_PER_ELEMENT = 2  # FP16
DEFAULT_PEAK_SOURCE = "measured"


@dataclass(frozen=True, eq=False)
class RooflineResult:
    """The roofline prediction for every architecture on one device and dataset.

    Attributes:
        device: the device spec.
        dataset: the dataset.
        batch: images per batch.
        launch_overhead: seconds added per executed layer.
        peak_source: "spec" or "measured": which peak and bandwidth were used.
        peak_flops: the compute roof and utilization denominator, FLOP/s.
        bandwidth: the memory roof, bytes/s.
        layer_names: the L fused layers, in execution order.
        flops_per_image: 2 x NATS MACs, FLOPs, (32768,).
        batch_seconds: predicted seconds per batch, (32768,).
        throughput: images/s, (32768,).
        utilization: fraction of ``peak_flops``, (32768,).
        layer_intensity: FLOP/byte per layer at ``batch``, (32768, L); NaN where absent.
        layer_seconds: seconds per layer and batch, overhead included, (32768, L); 0 if absent.
        network_intensity: whole-network FLOP/byte at ``batch``, (32768,).
    """

    device: DeviceSpec
    dataset: Dataset
    batch: int
    launch_overhead: float
    peak_source: str
    peak_flops: float
    bandwidth: float
    layer_names: tuple[str, ...]
    flops_per_image: np.ndarray
    batch_seconds: np.ndarray
    throughput: np.ndarray
    utilization: np.ndarray
    layer_intensity: np.ndarray
    layer_seconds: np.ndarray
    network_intensity: np.ndarray

    @property
    def cmr(self) -> float:
        """The compute-to-memory ratio of the model, FLOP/byte (peak / bandwidth)."""
        return self.peak_flops / self.bandwidth

    @property
    def compute_bound(self) -> np.ndarray:
        """bool (32768, L): layers whose arithmetic intensity exceeds the CMR."""
        with np.errstate(invalid="ignore"):
            return self.layer_intensity > self.cmr

    @property
    def compute_bound_fraction(self) -> np.ndarray:
        """(32768,): the share of each network's executed layers that are compute-bound."""
        executed = np.isfinite(self.layer_intensity)
        return self.compute_bound.sum(axis=1) / executed.sum(axis=1)

    @property
    def label(self) -> str:
        return f"roofline {self.device.name} fp16 batch {self.batch}"

    def config(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "launch_overhead_s": self.launch_overhead,
            "bytes_per_element": BYTES_PER_ELEMENT,
            "peak_source": self.peak_source,
        }

    def proxy_table(self) -> ProxyTable:
        """The simulator's view: utilization and throughput of every architecture."""
        return prediction_proxy_table(self, "roofline", "analytic model, not a measurement")


def _check_settings(batch: object, launch_overhead: object) -> None:
    """Raise ValueError unless ``batch`` is a positive int and ``launch_overhead`` seconds >= 0."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    if (
        isinstance(launch_overhead, bool)
        or not isinstance(launch_overhead, (int, float))
        or not math.isfinite(launch_overhead)
        or launch_overhead < 0
    ):
        raise ValueError(f"launch_overhead must be seconds >= 0, got {launch_overhead!r}")


def roofline_layer_seconds(
    table: LayerTable,
    peak: float,
    bandwidth: float,
    batch: int,
    launch_overhead: float = DEFAULT_LAUNCH_OVERHEAD,
) -> np.ndarray:
    """Plain-roofline seconds per layer and batch, overhead included; 0 where absent, (B, L).

    ``max(FLOPs / peak, bytes / bandwidth) + launch_overhead`` per executed layer, FP16 bytes;
    ``peak`` in FLOP/s, ``bandwidth`` in bytes/s. Any :class:`LayerTable` (NATS or torch).
    """
    seconds = np.maximum(
        table.flops(batch) / peak, table.bytes(batch, BYTES_PER_ELEMENT) / bandwidth
    )
    seconds += launch_overhead
    seconds *= table.present
    return seconds


def roofline(
    device: str | DeviceSpec | None = None,
    dataset: str | Dataset = "cifar10",
    batch: int = DEFAULT_BATCH,
    launch_overhead: float = DEFAULT_LAUNCH_OVERHEAD,
    peak_source: str = DEFAULT_PEAK_SOURCE,
) -> RooflineResult:
    """Predict every architecture's throughput and utilization (vectorized, well under 1 s)."""
    dev = get_device(device)
    ds = get_dataset(dataset)
    _check_settings(batch, launch_overhead)
    source = dev.resolved_source(peak_source)
    peak = dev.peak(source)
    bw = dev.memory_bandwidth(source)

    table = layer_table(ds)
    layer_flops = table.flops(batch)  # (N, L) per batch
    layer_bytes = table.bytes(batch, BYTES_PER_ELEMENT)
    present = table.present
    seconds = roofline_layer_seconds(table, peak, bw, batch, launch_overhead)
    batch_seconds = seconds.sum(axis=1)
    throughput = batch / batch_seconds
    fpi = np.asarray(flops(ds), dtype=np.float64)
    utilization = throughput * fpi / peak
    with np.errstate(invalid="ignore", divide="ignore"):
        intensity = np.where(present, layer_flops / layer_bytes, np.nan)
    net_intensity = layer_flops.sum(axis=1) / layer_bytes.sum(axis=1)
    for arr in (throughput, utilization, intensity, seconds, batch_seconds, net_intensity):
        arr.setflags(write=False)
    return RooflineResult(
        device=dev,
        dataset=ds,
        batch=batch,
        launch_overhead=float(launch_overhead),
        peak_source=source,
        peak_flops=peak,
        bandwidth=bw,
        layer_names=table.names,
        flops_per_image=fpi,
        batch_seconds=batch_seconds,
        throughput=throughput,
        utilization=utilization,
        layer_intensity=intensity,
        layer_seconds=seconds,
        network_intensity=net_intensity,
    )


class RooflineBackend(AnalyticBackend):
    """The roofline as an oracle backend: instant, deterministic, no dependencies.

    Args:
        device: v100 (default), a100, h100, h200, name:peak_tflops:bandwidth_tbs or a JSON
            device file.
        batch: images per batch, a positive integer.
        launch_overhead: seconds added per executed layer, >= 0.
        peak_source: "measured" (the measured peak where the device has one) or "spec".
    """

    name: ClassVar[str] = "roofline"
    commit_every: ClassVar[int] = 8192

    def __init__(
        self,
        device: str | DeviceSpec | None = None,
        batch: int = DEFAULT_BATCH,
        launch_overhead: float = DEFAULT_LAUNCH_OVERHEAD,
        peak_source: str = DEFAULT_PEAK_SOURCE,
    ) -> None:
        _check_settings(batch, launch_overhead)  # before any sweep starts
        self.device = get_device(device)
        self.batch = batch
        self.launch_overhead = launch_overhead
        self.peak_source = self.device.resolved_source(peak_source)
        self._results: dict[str, RooflineResult] = {}

    def result(self, dataset: str | Dataset) -> RooflineResult:
        """The full prediction for ``dataset`` (computed once per backend)."""
        ds = get_dataset(dataset)
        if ds.name not in self._results:
            self._results[ds.name] = roofline(
                self.device, ds, self.batch, self.launch_overhead, self.peak_source
            )
        return self._results[ds.name]

    @property
    def config(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "launch_overhead_s": float(self.launch_overhead),
            "bytes_per_element": BYTES_PER_ELEMENT,
            "peak_source": self.peak_source,
        }

    def fingerprint(self) -> dict[str, Any]:
        return self.device.to_dict()

    def spec(self) -> BackendSpec:
        builtin = DEVICES.get(self.device.name)
        device = self.device.name if builtin == self.device else self.device.to_json()
        return BackendSpec(
            self.name,
            device,
            {
                "batch": self.batch,
                "launch_overhead": self.launch_overhead,
                "peak_source": self.peak_source,
            },
        )

    def batch_of(self, prediction: RooflineResult, arch: int) -> tuple[int, int | None]:
        return prediction.batch, None  # memory capacity is not modelled
