"""Fit the GPU model's efficiency figures to measured throughputs, and hold it to others.

Input: benchmark files in timm's published format (``benchmark.py``'s columns, see
``nasfilter/data/timm/README.md``): one row per model and image size with the measured images
per second at a batch, read by :mod:`nasfilter.bench.timm_data` (the survey's reader too). Each row
is paired with its model's :class:`LayerTable` (from a :data:`TableSource`, normally
:class:`nasfilter.survey.tables.SurveyTables`: the survey's layer analysis of the timm model at
that image size, cached; the oracle itself imports nothing of the survey) and the device the
file was measured on. Only CNNs are used (:data:`~nasfilter.bench.layer_table.CNN_MAC_FRACTION`),
and only rows whose analysed MACs match the file's own ``infer_gmacs`` (within
:data:`MACS_TOLERANCE`): a mismatch means the analysed network is not the measured one.

:func:`fit` finds the twelve :class:`~nasfilter.oracle.gpumodel.GpuModelParams` that minimise a
robust (soft-L1, scale 0.1) loss of the log error of predicted against measured throughput
(SciPy's trust-region least squares, from a fixed start, no randomness). Efficiencies are
searched up to 1, their physical limit (a GPU cannot beat its own peak or bandwidth); a fit
that ends on that limit records it (``at_bound``). The costs and pass counts are searched
beyond their physical ranges, so that an unphysical optimum shows: a fit with a negative
cost or pass count, or one that does not converge, raises :class:`CalibrationError` and is
never stored. :func:`scores` gives the figures the project reports: median absolute
percentage error, Spearman correlation, share within ±10 %.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.layer_table import CNN_MAC_FRACTION, LayerTable, conv_mac_fraction
from nasfilter.bench.timm_data import (
    BENCHMARK_COLUMNS,
    DATA,
    BenchmarkRow,
    read_benchmark_digest,
    shipped_benchmark,
)
from nasfilter.oracle.devices import DEVICES, DeviceSpec, get_device
from nasfilter.oracle.gpumodel import (
    LAYOUTS,
    TIMM_FIGURES,
    GpuModelParams,
    LayerWork,
    layer_work,
    seconds_from_work,
)
from nasfilter.oracle.roofline import DEFAULT_LAUNCH_OVERHEAD, roofline_layer_seconds
from nasfilter.stats import spearman

# What a calibration file must have: the survey's columns and the MACs it checks against.
CALIBRATION_COLUMNS = (*BENCHMARK_COLUMNS, "infer_gmacs")
MACS_TOLERANCE = 0.15  # relative; plus the file's rounding to 0.01 GMACs

TableSource = Callable[[str, int], LayerTable]

# The start of every fit (inside the physical ranges; no randomness).
_START = GpuModelParams(0.5, 0.7, 5e-6, 0.05, 4.0, 2.0, 0.05, 0.2, 2.0, 5e-6, 0.05, 0.05)
# The search box: wider than the physical ranges, so an unphysical optimum shows.
_SEARCH = {
    "tensor_efficiency": (1e-4, 1.0),
    "memory_efficiency": (1e-4, 1.0),
    "kernel_seconds": (0.0, 2e-3),  # a kernel takes no negative time: a bound, as for 1
    "grouped_efficiency": (1e-5, 1.0),
    "eager_passes": (-4.0, 32.0),
    "nchw_transpose_passes": (-4.0, 16.0),
    "nhwc_grouped_efficiency": (1e-5, 1.0),
    "unaligned_efficiency": (1e-4, 1.0),
    "layout_copy_passes": (-4.0, 16.0),
    "nchw_conv_seconds": (-1e-4, 2e-3),  # searched below 0, so a negative cost shows
    "depthwise_efficiency": (1e-5, 1.0),
    "nhwc_depthwise_efficiency": (1e-5, 1.0),
}
# Fit in microseconds for the fixed costs.
_SCALE = np.array([1.0, 1.0, 1e-6, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1e-6, 1.0, 1.0])
# Weight of each model's NHWC / NCHW log ratio beside the log throughputs in the fit: the
# layout effect is a small difference of two large times, which the throughput residuals
# alone leave to the noise of the level.
RATIO_WEIGHT = 1.0


class CalibrationInputError(ValueError):
    """A measurement file that cannot be used (wrong columns, no usable row)."""


class CalibrationError(RuntimeError):
    """A fit that did not converge or gave a figure outside its physical range."""


@dataclass(frozen=True)
class BenchmarkFile:
    """A benchmark file in timm's format, its device and layout, and its rows."""

    path: Path
    device: DeviceSpec
    layout: str
    rows: tuple[BenchmarkRow, ...]
    sha256: str

    def provenance(self) -> dict[str, Any]:
        return {
            "file": self.path.name,
            "sha256": self.sha256,
            "device": self.device.name,
            "layout": self.layout,
            "software": software_tag(self.path.name),
            "rows": len(self.rows),
        }


def software_tag(file_name: str) -> str:
    """The PyTorch and CUDA versions timm's file names carry ("pt240-cu124": PyTorch 2.4.0,
    CUDA 12.4), "" where the name has none: the fit's provenance records the software."""
    found = re.search(r"-(pt\d+(?:-cu\d+)?)(?=-|\.csv$)", file_name)
    return found.group(1) if found else ""


def _infer(path: Path, choices: Sequence[str], what: str, given: str | None) -> str:
    if given is not None:
        if given not in choices:
            raise CalibrationInputError(f"{what} must be one of {tuple(choices)}, got {given!r}")
        return given
    found = [c for c in choices if f"-{c}" in path.name.lower()]
    if len(found) != 1:
        raise CalibrationInputError(
            f"cannot tell the {what} of {path.name!r} from its name (timm names files like "
            f"benchmark-infer-amp-nhwc-pt240-cu124-rtx4090.csv); give it explicitly"
        )
    return found[0]


def read_benchmark_file(
    path: str | Path, device: str | DeviceSpec | None = None, layout: str | None = None
) -> BenchmarkFile:
    """A benchmark CSV in timm's format (read by :func:`nasfilter.bench.timm_data.read_benchmark`,
    with its error policy) with its device and layout.

    ``device`` and ``layout`` default to what the file name says (timm's naming). Raises
    :class:`CalibrationInputError` naming the file, and the line and value where one is bad.
    """
    p = Path(path)
    if not p.is_file():
        raise CalibrationInputError(f"measurement file {str(p)!r} does not exist")
    lay = _infer(p, LAYOUTS, "layout", layout)
    dev = get_device(device if device is not None else _infer(p, tuple(DEVICES), "device", None))
    try:
        rows, digest = read_benchmark_digest(p, CALIBRATION_COLUMNS)
    except ValueError as exc:
        raise CalibrationInputError(str(exc)) from None
    return BenchmarkFile(p, dev, lay, tuple(rows), digest)


def shipped_benchmark_file(device: str, layout: str) -> BenchmarkFile:
    """The shipped timm measurement of ``device`` ("rtx3090", "rtx4090") in ``layout``."""
    shipped = ", ".join(sorted(q.name for q in DATA.glob("benchmark-*.csv")))
    try:
        path = shipped_benchmark(device, layout)
    except ValueError as exc:
        raise CalibrationInputError(f"{exc}; shipped: {shipped}") from None
    if not path.is_file():
        raise CalibrationInputError(
            f"no shipped measurement for device {device!r} and layout {layout!r}; shipped: "
            + shipped
        )
    return read_benchmark_file(path)


@dataclass(frozen=True, eq=False)
class Sample:
    """A measured row with its layer table: what a fit or a validation reads."""

    row: BenchmarkRow
    layout: str
    table: LayerTable

    @property
    def key(self) -> tuple[str, int]:
        return (self.row.model, self.row.img_size)


@dataclass
class SampleSet:
    """The usable samples of some benchmark files on one device, and what was left out."""

    device: DeviceSpec
    samples: list[Sample]
    files: list[BenchmarkFile]
    left_out: dict[str, int] = field(default_factory=dict)  # reason -> rows

    def provenance(self) -> dict[str, Any]:
        return {
            "device": self.device.name,
            "files": [f.provenance() for f in self.files],
            "samples": len(self.samples),
            "left_out": dict(self.left_out),
        }


def build_samples(files: Sequence[BenchmarkFile], tables: TableSource) -> SampleSet:
    """Pair every usable row of ``files`` (one device) with its layer table.

    Rows are left out, and counted by reason, when the file has no ``infer_gmacs`` for
    them, when the table source cannot analyse the model (it raises ValueError,
    LookupError or RuntimeError), when the model is not a CNN, or when the analysed MACs
    disagree with the file's. Raises CalibrationInputError if the files are of different
    devices or nothing usable is left.
    """
    if not files:
        raise CalibrationInputError("no measurement file given")
    devices = {f.device for f in files}
    if len(devices) != 1:
        raise CalibrationInputError(
            f"the files are of different devices {sorted(d.name for d in devices)}; "
            "give one device's files at a time"
        )
    prefetch = getattr(tables, "prefetch", None)
    if prefetch is not None:  # analyse every model in one go (in parallel where it can)
        prefetch([(r.model, r.img_size) for f in files for r in f.rows if math.isfinite(r.gmacs)])
    left: dict[str, int] = {}
    samples = []
    for f in files:
        for row in f.rows:
            table, reason = _table_for(row, tables)
            if table is None:
                left[reason] = left.get(reason, 0) + 1
            else:
                samples.append(Sample(row, f.layout, table))
    if not samples:
        raise CalibrationInputError(f"no usable row in {[f.path.name for f in files]}: {left}")
    return SampleSet(next(iter(devices)), samples, list(files), left)


def _table_for(row: BenchmarkRow, tables: TableSource) -> tuple[LayerTable | None, str]:
    """The row's layer table, or None and the reason it is left out."""
    if not math.isfinite(row.gmacs):
        return None, "no infer_gmacs"
    try:
        table = tables(row.model, row.img_size)
    except (ValueError, LookupError, RuntimeError, NotImplementedError, TypeError):
        return None, "not analysable"
    if conv_mac_fraction(table) < CNN_MAC_FRACTION:
        return None, "not a CNN"
    macs = float(np.where(table.present, table.macs, 0.0).sum())
    if abs(macs / 1e9 - row.gmacs) > MACS_TOLERANCE * row.gmacs + 0.005:
        return None, "MACs differ from infer_gmacs"
    return table, ""


@dataclass(frozen=True, eq=False)
class _Flat:
    """All samples' layers side by side: a (1, total layers) LayerWork and a segment index."""

    work: LayerWork
    segment: np.ndarray  # (total layers,) sample index of each layer
    nchw: np.ndarray  # (1, total layers) bool
    peak: np.ndarray  # (1, total layers) FLOP/s of the layer's device
    bandwidth: np.ndarray  # (1, total layers) bytes/s of the layer's device
    batch: np.ndarray  # (samples,)
    measured: np.ndarray  # (samples,)


def _flatten(sets: Sequence[SampleSet]) -> _Flat:
    parts: list[LayerWork] = []
    seg, nchw, peak, bw, batch, truth = [], [], [], [], [], []
    i = 0
    for sset in sets:
        dev = sset.device
        for s in sset.samples:
            n = s.table.n_layers
            parts.append(layer_work(s.table, dev, s.row.batch))
            seg.append(np.full(n, i))
            nchw.append(np.full(n, s.layout == "nchw"))
            peak.append(np.full(n, dev.peak_flops))
            bw.append(np.full(n, dev.bandwidth))
            batch.append(s.row.batch)
            truth.append(s.row.throughput)
            i += 1
    names = LayerWork.__dataclass_fields__
    work = LayerWork(**{n: np.concatenate([getattr(p, n) for p in parts], axis=1) for n in names})
    return _Flat(
        work,
        np.concatenate(seg),
        np.concatenate(nchw)[None, :],
        np.concatenate(peak)[None, :],
        np.concatenate(bw)[None, :],
        np.array(batch, dtype=np.float64),
        np.array(truth, dtype=np.float64),
    )


def _throughput(flat: _Flat, params: GpuModelParams) -> np.ndarray:
    seconds = seconds_from_work(
        flat.work, flat.peak, flat.bandwidth, params, eager=True, nchw=flat.nchw
    )[0]
    total = np.bincount(flat.segment, weights=seconds, minlength=len(flat.batch))
    return flat.batch / np.maximum(total, 1e-12)


def predict(sset: SampleSet, params: GpuModelParams) -> np.ndarray:
    """Predicted images/s of every sample on the set's device (eager engine), (samples,)."""
    return _throughput(_flatten([sset]), params)


def predict_roofline(sset: SampleSet) -> np.ndarray:
    """The plain roofline's images/s of every sample (data-sheet peak and bandwidth)."""
    dev = sset.device
    out = []
    for s in sset.samples:
        sec = roofline_layer_seconds(
            s.table, dev.peak_flops, dev.bandwidth, s.row.batch, DEFAULT_LAUNCH_OVERHEAD
        )
        out.append(s.row.batch / sec.sum())
    return np.array(out)


def measured(sset: SampleSet) -> np.ndarray:
    """Measured images/s of every sample, (samples,)."""
    return np.array([s.row.throughput for s in sset.samples])


def scores(predicted: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """MdAPE (%), Spearman, share within ±10 % of predicted vs measured; n."""
    p, t = np.asarray(predicted, dtype=float), np.asarray(truth, dtype=float)
    if p.shape != t.shape or p.size < 3:
        raise ValueError(f"need two equal arrays of >= 3 values, got {p.shape} and {t.shape}")
    ape = np.abs(p / t - 1.0)
    return {
        "n": int(p.size),
        "mdape_percent": float(100 * np.median(ape)),
        "spearman": spearman(p, t),
        "within_10_percent": float(np.mean(ape <= 0.10)),
    }


def layout_pairs(sets: Sequence[SampleSet]) -> tuple[np.ndarray, np.ndarray]:
    """Indices (into the samples of ``sets`` in order) of every model, image size and device
    measured in both layouts: (NHWC indices, NCHW indices), int arrays of equal length."""
    nhwc, nchw = [], []
    offset = 0
    for sset in sets:
        by_key: dict[tuple[str, int], dict[str, int]] = {}
        for i, s in enumerate(sset.samples):
            by_key.setdefault(s.key, {})[s.layout] = offset + i
        for d in by_key.values():
            if len(d) == 2:
                nhwc.append(d["nhwc"])
                nchw.append(d["nchw"])
        offset += len(sset.samples)
    return np.array(nhwc, dtype=int), np.array(nchw, dtype=int)


@dataclass(frozen=True)
class FitResult:
    """A converged, physical fit and what it came from."""

    params: GpuModelParams
    device: str
    samples: int
    rms_log_error: float
    iterations: int
    provenance: dict[str, Any]


def fit(sets: SampleSet | Sequence[SampleSet]) -> FitResult:
    """Fit the twelve figures to the samples' measured throughputs (deterministic).

    ``sets``: one device's samples, or several devices' fitted together.

    Raises CalibrationError when the optimiser does not converge or a figure leaves its
    physical range (:data:`~nasfilter.oracle.gpumodel.PARAM_RANGES`).
    """
    sets = [sets] if isinstance(sets, SampleSet) else list(sets)
    where = "+".join(s.device.name for s in sets)
    n_samples = sum(len(s.samples) for s in sets)
    n_figures = len(TIMM_FIGURES)
    if n_samples < 2 * n_figures:
        raise CalibrationError(
            f"{n_samples} usable samples on {where}; a fit of {n_figures} figures needs "
            f">= {2 * n_figures}"
        )
    flat = _flatten(sets)
    res = _solve(flat, layout_pairs(sets))
    if not res.success or res.status <= 0 or not np.all(np.isfinite(res.fun)):
        raise CalibrationError(
            f"the fit on {where} did not converge ({res.message}); nothing stored"
        )
    params = GpuModelParams.from_vector(res.x * _SCALE, TIMM_FIGURES)
    bad = params.out_of_range()
    if bad:
        raise CalibrationError(f"the fit on {where} is unphysical, refused and not stored: {bad}")
    at_bound = [  # within a millionth of the figure's unit (a microsecond for the kernel)
        name
        for name, unit in zip(TIMM_FIGURES, _SCALE, strict=True)
        if np.any(np.isclose(getattr(params, name), _SEARCH[name], rtol=1e-6, atol=1e-6 * unit))
    ]
    return FitResult(
        params=GpuModelParams.from_dict(params.to_dict()),
        device=where,
        samples=n_samples,
        rms_log_error=float(np.sqrt(np.mean(res.fun[: len(flat.batch)] ** 2))),
        iterations=int(res.nfev),
        provenance={"sets": [s.provenance() for s in sets], "at_bound": at_bound},
    )


def _solve(flat: _Flat, pairs: tuple[np.ndarray, np.ndarray]) -> Any:
    """SciPy's trust-region least squares (soft-L1, scale 0.1) on the log throughputs and,
    for ``pairs`` (NHWC, NCHW sample indices), the log layout ratios; its result."""
    from scipy.optimize import least_squares

    log_measured = np.log(flat.measured)
    nhwc, nchw = pairs
    names = list(TIMM_FIGURES)

    def residual(z: np.ndarray) -> np.ndarray:
        params = GpuModelParams.from_vector(z * _SCALE, TIMM_FIGURES)
        err = np.log(_throughput(flat, params)) - log_measured
        return np.concatenate([err, RATIO_WEIGHT * (err[nhwc] - err[nchw])])

    start = np.array([getattr(_START, n) for n in names]) / _SCALE
    lo = np.array([_SEARCH[n][0] for n in names]) / _SCALE
    hi = np.array([_SEARCH[n][1] for n in names]) / _SCALE
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return least_squares(
            residual,
            start,
            bounds=(lo, hi),
            method="trf",
            loss="soft_l1",
            f_scale=0.1,
            max_nfev=2000,
        )
