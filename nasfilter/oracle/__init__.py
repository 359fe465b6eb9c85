"""The utilization oracle: how well does a network use the processor it runs on?

Utilization = achieved FLOP/s / peak FLOP/s = throughput x FLOPs per image / peak
(docs/facts.md §4).
Backends (:mod:`.registry`): the analytic ``roofline`` (any device spec, all 32768 networks in
well under a second), the ``calibrated`` GPU model (:mod:`.gpumodel`: tiles, waves, kernels,
layouts; its figures fitted to real measurements by :mod:`.calibration`), ``onnxruntime``
(real networks on this CPU), ``torch-cuda`` and ``tensorrt`` (real networks on an NVIDIA
GPU). Measurements go to a per-architecture SQLite cache (:mod:`.cache`) through sweeps
(:mod:`.sweep`), and reach the simulator as a :class:`~nasfilter.bench.proxy.ProxyTable` through
:func:`proxy_table`.
"""

from nasfilter.oracle.base import Backend, BackendSpec, BackendUnavailable
from nasfilter.oracle.cache import CacheFileError, Group, MeasurementCache
from nasfilter.oracle.calibrated import (
    CalibratedBackend,
    CalibratedResult,
    Calibration,
    calibrated,
    load_calibration,
)
from nasfilter.oracle.devices import DEVICES, DeviceSpec, UnknownDeviceError, get_device
from nasfilter.oracle.measurement import (
    SCHEMA_VERSION,
    InvalidMeasurement,
    Measurement,
    Status,
)
from nasfilter.oracle.proxies import load_sample, proxy_table
from nasfilter.oracle.registry import BACKENDS, create
from nasfilter.oracle.roofline import RooflineBackend, RooflineResult, roofline
from nasfilter.oracle.sweep import SweepSummary, export_table, pareto_count, sweep
from nasfilter.oracle.tablefile import MeasurementTable, load_table_file, save_table

__all__ = [
    "BACKENDS",
    "DEVICES",
    "SCHEMA_VERSION",
    "Backend",
    "BackendSpec",
    "BackendUnavailable",
    "CacheFileError",
    "CalibratedBackend",
    "CalibratedResult",
    "Calibration",
    "DeviceSpec",
    "Group",
    "InvalidMeasurement",
    "Measurement",
    "MeasurementCache",
    "MeasurementTable",
    "RooflineBackend",
    "RooflineResult",
    "Status",
    "SweepSummary",
    "UnknownDeviceError",
    "calibrated",
    "create",
    "export_table",
    "get_device",
    "load_calibration",
    "load_sample",
    "load_table_file",
    "pareto_count",
    "proxy_table",
    "roofline",
    "save_table",
    "sweep",
]
