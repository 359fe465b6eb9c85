"""The study's §3 survey: intensity, throughput, utilization and folding of timm's CNNs.

:func:`run_survey` analyses every requested (model, image size) (cached), keeps the CNNs
(>= 90 % of MACs in convolutions; the others stay in ``survey.csv`` with ``is_cnn`` false),
and computes per row: FLOPs, bytes, the network's arithmetic intensity at the batch, the plain
roofline and the predicted throughput, the measured throughput where a measurement exists,
utilization (measured where it exists, else predicted), the three Pareto fronts of Fig. 1
among the CNNs, and, for the CNNs below the device's CMR (the fold candidates), the same
figures of their folded model.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.layer_table import LayerTable
from nasfilter.bench.timm_data import BenchmarkRow, imagenet_top1
from nasfilter.oracle.calibrated import Calibration
from nasfilter.oracle.devices import DeviceSpec
from nasfilter.pareto import nondominated_among
from nasfilter.stats import spearman
from nasfilter.survey import cache as cache_mod
from nasfilter.survey.analysis import CNN_MAC_FRACTION, ModelProfile
from nasfilter.survey.fold import check_fold
from nasfilter.survey.throughput import (
    BYTES_PER_ELEMENT,
    fitted_on_files,
    max_batch,
    predicted_throughput,
    predictor_label,
    roofline_throughput,
)
from nasfilter.survey.timm_index import timm_index
from nasfilter.survey.timm_models import check_names, timm_architectures

COLUMNS = (
    "model",
    "img_size",
    "batch",
    "layout",
    "device",
    "macs",
    "params",
    "flops",
    "weight_bytes",
    "activation_bytes",
    "arithmetic_intensity",
    "cmr",
    "conv_mac_fraction",
    "is_cnn",
    "top1",
    "roofline_throughput",
    "predicted_throughput",
    "measured_throughput",
    "utilization",
    "utilization_source",
    "pareto_throughput_accuracy",
    "pareto_utilization_accuracy",
    "pareto_throughput_utilization",
    "on_all_fronts",
    "below_cmr",
    "folded_flops",
    "folded_arithmetic_intensity",
    "folded_predicted_throughput",
    "folded_utilization",
    "fold_error",
)


@dataclass(frozen=True)
class SurveySettings:
    """What to survey and on which device.

    Attributes:
        device: the device (peak = dense FP16 tensor rate the computation can use).
        layout: "nchw" or "nhwc" (the layout of the measurements; passed to the predictor).
        batch: images per batch, or None for "max" (the measured batch where there is one,
            else the largest power of two <= 1024 that fits the device memory).
        measured: measured rows (timm's benchmark format), or None.
        measured_label: where the measurements come from (a file name).
        models: (architecture, img_size or None) pairs, or None for every timm architecture
            with a published ImageNet result; a None size means every published and measured
            size, else the model's default.
        fold: the fold factor f (a perfect square), 1 for no folding.
        jobs: worker processes for new analyses.
        cache_root: the profile cache's root folder (None: the default).
        calibration: the GPU model's fitted figures (None: the shipped calibration), e.g.
            one fitted by ``nasfilter calibrate`` (:func:`~nasfilter.oracle.load_calibration`).
    """

    device: DeviceSpec
    layout: str = "nchw"
    batch: int | None = None
    measured: Sequence[BenchmarkRow] | None = None
    measured_label: str = ""
    models: Sequence[tuple[str, int | None]] | None = None
    fold: int = 4
    jobs: int = 1
    cache_root: str | Path | None = None
    calibration: Calibration | None = None

    def __post_init__(self) -> None:
        if self.layout not in ("nchw", "nhwc"):
            raise ValueError(f"layout must be 'nchw' or 'nhwc', got {self.layout!r}")
        if self.batch is not None and (
            isinstance(self.batch, bool) or not isinstance(self.batch, int) or self.batch < 1
        ):
            raise ValueError(f"batch must be a positive integer or None (max), got {self.batch!r}")
        check_fold(self.fold)
        if self.jobs < 1:
            raise ValueError(f"jobs must be >= 1, got {self.jobs}")


@dataclass
class SurveyResult:
    """Rows of ``survey.csv`` (dicts keyed by :data:`COLUMNS`), the analysed tables, summary."""

    rows: list[dict[str, Any]]
    tables: dict[tuple[str, int], LayerTable]
    summary: dict[str, Any]
    not_analysed: dict[str, str] = field(default_factory=dict)


def per_original_image(table: LayerTable, f: int) -> LayerTable:
    """A folded model's table (per folded input of f images) per original image: GEMM rows,
    MACs and activations divided by f (a batch of N images is N / f folded inputs, so its
    GEMMs have M = N / f x gemm_m rows), weights unchanged (read once per batch either way)."""
    return replace(
        table,
        gemm_m=table.gemm_m / f,
        macs=table.macs / f,
        input_elems=table.input_elems / f,
        output_elems=table.output_elems / f,
    )


def _pairs(
    settings: SurveySettings, top1: dict[tuple[str, int], float], folder: Path
) -> list[tuple[str, int]]:
    measured_sizes: dict[str, set[int]] = {}
    for m in settings.measured or ():
        measured_sizes.setdefault(m.model, set()).add(m.img_size)
    published: dict[str, set[int]] = {}
    for arch, size in top1:
        published.setdefault(arch, set()).add(size)
    if settings.models is None:
        known = set(timm_architectures(folder))
        requested: list[tuple[str, int | None]] = [
            (a, None) for a in sorted(published) if a in known
        ]
    else:
        archs = check_names([name for name, _ in settings.models], folder)
        requested = [(a, size) for a, (_, size) in zip(archs, settings.models, strict=True)]
    sizes = timm_index(folder).sizes
    pairs: list[tuple[str, int]] = []
    for arch, wanted in requested:
        if wanted is not None:
            pairs.append((arch, wanted))
            continue
        found = published.get(arch, set()) | measured_sizes.get(arch, set())
        if not found:
            default = sizes.get(arch)
            found = {default if default else 224}
        pairs.extend((arch, s) for s in sorted(found))
    return list(dict.fromkeys(pairs))


def _front(x: np.ndarray, y: np.ndarray, among: np.ndarray) -> np.ndarray:
    """The rows of ``among`` on the front of (x, y), both maximized (non-finite rows out)."""
    return nondominated_among(np.column_stack([x, y]), among, maximize=(True, True))


def run_survey(
    settings: SurveySettings,
    progress: Callable[[str, int, int], None] | None = None,
    workers: cache_mod.Workers | None = None,
) -> SurveyResult:
    """Analyse, predict and compare; see the module docstring. ``progress(stage, k, n)``.

    New analyses run in this process and ``settings.jobs - 1`` spawned workers: those of
    ``workers`` when given (e.g. started before the caller read the timm index), else ones
    started here, on an empty cache before the timm index is built (so that their imports of
    torch and timm overlap this process's), else only when a model needs analysing."""
    with contextlib.ExitStack() as stack:
        if workers is None:
            workers = stack.enter_context(cache_mod.Workers(settings.jobs - 1))
            workers.start_if_cold(cache_mod.cache_folder(settings.cache_root))
        return _survey(settings, progress, workers)


def _survey(
    settings: SurveySettings,
    progress: Callable[[str, int, int], None] | None,
    workers: cache_mod.Workers,
) -> SurveyResult:
    """:func:`run_survey` with its workers."""
    top1 = imagenet_top1()
    folder = cache_mod.cache_folder(settings.cache_root)
    pairs = _pairs(settings, top1, folder)

    def stage(name: str) -> Callable[[int, int], None] | None:
        return (lambda k, n: progress(name, k, n)) if progress else None

    profiles = cache_mod.profile_all(
        pairs, folder, settings.jobs, stage("analyse"), workers=workers
    )
    measured = {(m.model, m.img_size): m for m in settings.measured or ()}
    rows: list[dict[str, Any]] = []
    tables: dict[tuple[str, int], LayerTable] = {}
    not_analysed: dict[str, str] = {}
    for arch, size in pairs:
        prof = profiles[(arch, size)]
        if isinstance(prof, str):
            not_analysed[f"{arch}@{size}"] = prof
            continue
        tables[(arch, size)] = prof.table
        rows.append(_row(settings, prof, size, measured.get((arch, size)), top1))
    _mark_fronts(rows, settings.device.cmr("spec"))
    fold_errors = _fold_rows(rows, settings, folder, stage("fold"), workers)
    summary = _summary(settings, rows, not_analysed, fold_errors)
    return SurveyResult(rows, tables, summary, not_analysed)


def _row(
    settings: SurveySettings,
    prof: ModelProfile,
    size: int,
    meas: BenchmarkRow | None,
    top1: dict[tuple[str, int], float],
) -> dict[str, Any]:
    """One row of ``survey.csv`` before its fronts and folding (see :data:`COLUMNS`)."""
    device, t = settings.device, prof.table
    batch = settings.batch or (meas.batch if meas else max_batch(t, device))
    flops = 2.0 * prof.macs
    pred = predicted_throughput(t, device, batch, settings.layout, settings.calibration)
    thr = meas.throughput if meas else pred
    return {
        "model": prof.name,
        "img_size": size,
        "batch": batch,
        "layout": settings.layout,
        "device": device.name,
        "macs": prof.macs,
        "params": prof.params,
        "flops": flops,
        "weight_bytes": BYTES_PER_ELEMENT * float(t.weight_elems.sum()),
        "activation_bytes": BYTES_PER_ELEMENT * float((t.input_elems + t.output_elems).sum()),
        "arithmetic_intensity": float(t.network_intensity(batch, BYTES_PER_ELEMENT)[0]),
        "cmr": device.cmr("spec"),
        "conv_mac_fraction": prof.conv_mac_fraction,
        "is_cnn": prof.is_cnn,
        "top1": top1.get((prof.name, size), math.nan),
        "roofline_throughput": roofline_throughput(t, device, batch),
        "predicted_throughput": pred,
        "measured_throughput": meas.throughput if meas else math.nan,
        "utilization": thr * flops / device.peak("spec"),
        "utilization_source": "measured" if meas else "predicted",
    }


FRONTS = (
    "pareto_throughput_accuracy",
    "pareto_utilization_accuracy",
    "pareto_throughput_utilization",
)


def _mark_fronts(rows: list[dict[str, Any]], cmr: float) -> None:
    """Set each row's three front memberships, ``on_all_fronts`` and ``below_cmr``."""
    cnn = np.array([r["is_cnn"] for r in rows], dtype=bool)
    # Fronts never mix measured and predicted throughputs: with measurements, only the
    # measured CNN rows compete (predictions and measurements do not share one scale).
    measured_rows = np.array([r["utilization_source"] == "measured" for r in rows], dtype=bool)
    if (cnn & measured_rows).any():
        cnn = cnn & measured_rows
    thr = np.array(
        [
            r["measured_throughput"]
            if r["utilization_source"] == "measured"
            else r["predicted_throughput"]
            for r in rows
        ],
        dtype=float,
    )
    util = np.array([r["utilization"] for r in rows], dtype=float)
    acc = np.array([r["top1"] for r in rows], dtype=float)
    masks = {
        "pareto_throughput_accuracy": _front(thr, acc, cnn),
        "pareto_utilization_accuracy": _front(util, acc, cnn),
        "pareto_throughput_utilization": _front(thr, util, cnn),
    }
    for k, row in enumerate(rows):
        for key, mask in masks.items():
            row[key] = bool(mask[k])
        row["on_all_fronts"] = all(bool(m[k]) for m in masks.values())
        row["below_cmr"] = bool(row["is_cnn"] and row["arithmetic_intensity"] < cmr)


def _fold_rows(
    rows: list[dict[str, Any]],
    settings: SurveySettings,
    folder: Path,
    progress: Callable[[int, int], None] | None,
    workers: cache_mod.Workers | None = None,
) -> dict[str, str]:
    """Fold the CNNs below the CMR and fill the rows' folded columns; the fold failures."""
    f, device = settings.fold, settings.device
    candidates = [(r["model"], r["img_size"]) for r in rows if r["below_cmr"]]
    folded = (
        cache_mod.profile_all(candidates, folder, settings.jobs, progress, f, workers)
        if f > 1 and candidates
        else {}
    )
    fold_errors: dict[str, str] = {}
    for row in rows:
        row.update(
            folded_flops=math.nan,
            folded_arithmetic_intensity=math.nan,
            folded_predicted_throughput=math.nan,
            folded_utilization=math.nan,
            fold_error="",
        )
        fp = folded.get((row["model"], row["img_size"]))
        if isinstance(fp, str):
            row["fold_error"] = fp
            fold_errors[f"{row['model']}@{row['img_size']}"] = fp
        elif fp is not None:
            ft = per_original_image(fp.table, f)
            batch = int(row["batch"])
            fpred = predicted_throughput(ft, device, batch, settings.layout, settings.calibration)
            row["folded_flops"] = 2.0 * float(ft.macs.sum())
            row["folded_arithmetic_intensity"] = float(
                ft.network_intensity(batch, BYTES_PER_ELEMENT)[0]
            )
            row["folded_predicted_throughput"] = fpred
            row["folded_utilization"] = fpred * row["folded_flops"] / device.peak("spec")
    return fold_errors


def _median(values: list[float]) -> float | None:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.median(finite)) if finite else None


def _labels(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(f"{r['model']}@{r['img_size']}" for r in rows)


def _summary(
    settings: SurveySettings,
    rows: list[dict[str, Any]],
    not_analysed: dict[str, str],
    fold_errors: dict[str, str],
) -> dict[str, Any]:
    """``summary.json``: the device and predictor, then the study's questions."""
    cnn_rows = [r for r in rows if r["is_cnn"]]
    return {
        **_predictor_fields(settings),
        "cnn_mac_fraction_threshold": CNN_MAC_FRACTION,
        "n_rows": len(rows),
        "n_models": len({r["model"] for r in rows}),
        "n_cnn_rows": len(cnn_rows),
        "n_cnn_models": len({r["model"] for r in cnn_rows}),
        "non_cnn_models": sorted({r["model"] for r in rows if not r["is_cnn"]}),
        "not_analysed": not_analysed,
        "cnn_rows_without_accuracy": _labels([r for r in cnn_rows if not math.isfinite(r["top1"])]),
        **_utilization_fields(cnn_rows, settings.device.peak("spec")),
        **_fold_fields(cnn_rows, settings.fold, fold_errors),
    }


def _predictor_fields(settings: SurveySettings) -> dict[str, Any]:
    """The device, layout, batch, measurements and the GPU model that predicted."""
    device, cal = settings.device, settings.calibration
    fitted = fitted_on_files(cal)
    in_sample = bool(settings.measured_label) and settings.measured_label in fitted
    return {
        "device": device.name,
        "peak_tflops": device.peak("spec") / 1e12,
        "bandwidth_tbs": device.memory_bandwidth("spec") / 1e12,
        "cmr": device.cmr("spec"),
        "layout": settings.layout,
        "batch": settings.batch if settings.batch is not None else "max",
        "measured": settings.measured_label or None,
        "predictor": predictor_label(cal),
        "calibration_file": cal.path if cal is not None else None,
        "predictor_fitted_on_files": fitted,
        "predictor_in_sample": in_sample,
        "predictor_note": (
            "predicted throughputs beside these measurements are in-sample: the calibration "
            "was fitted on this very file; held-out accuracy is the cross-GPU validation in "
            "docs/gpu-model.md"
            if in_sample
            else "held-out accuracy of the predictor: the cross-GPU validation in docs/gpu-model.md"
        ),
    }


def _utilization_fields(cnn_rows: list[dict[str, Any]], peak: float) -> dict[str, Any]:
    """Utilization medians, the fronts and the Spearman correlation with top-1."""
    measured_cnn = [r for r in cnn_rows if r["utilization_source"] == "measured"]
    # Like the fronts, the correlation never mixes measured and predicted utilizations.
    with_acc = [r for r in measured_cnn or cnn_rows if math.isfinite(r["top1"])]
    rho = spearman([r["utilization"] for r in with_acc], [r["top1"] for r in with_acc])
    measured_util = [r["utilization"] for r in measured_cnn]
    return {
        "n_cnn_rows_measured": len(measured_util),
        "median_measured_utilization_cnn": _median(measured_util),
        "median_predicted_utilization_cnn": _median(
            [r["predicted_throughput"] * r["flops"] / peak for r in cnn_rows]
        ),
        "median_predicted_utilization_measured_cnn": _median(
            [r["predicted_throughput"] * r["flops"] / peak for r in measured_cnn]
        ),
        "on_all_three_fronts": _labels([r for r in cnn_rows if r["on_all_fronts"]]),
        "fronts_over": "measured CNN rows" if measured_util else "CNN rows (predicted throughput)",
        "front_sizes": {key: sum(1 for r in cnn_rows if r[key]) for key in FRONTS},
        "spearman_utilization_top1": rho if math.isfinite(rho) else None,
        "n_spearman": len(with_acc),
    }


def _fold_fields(
    cnn_rows: list[dict[str, Any]], fold: int, fold_errors: dict[str, str]
) -> dict[str, Any]:
    """The CMR counts and what folding gave."""
    candidates = [r for r in cnn_rows if r["below_cmr"]]
    folded_ok = [r for r in candidates if not r["fold_error"]]
    return {
        "n_cnn_below_cmr": len(candidates),
        "n_cnn_above_cmr": len(cnn_rows) - len(candidates),
        "fold": fold,
        "n_fold_candidates": len(candidates),
        "n_folded": len(folded_ok),
        "fold_failures": fold_errors,
        "median_folded_over_original_predicted_throughput": _median(
            [r["folded_predicted_throughput"] / r["predicted_throughput"] for r in folded_ok]
        ),
        "median_folded_over_original_intensity": _median(
            [r["folded_arithmetic_intensity"] / r["arithmetic_intensity"] for r in folded_ok]
        ),
    }
