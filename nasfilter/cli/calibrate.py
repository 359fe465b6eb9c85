"""``nasfilter calibrate``: fit the GPU model to measurements, or validate it across GPUs."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.cli.args import (
    add_force,
    check_input_file,
    check_output_file,
    check_parent,
    int_at_least,
    naming,
)
from nasfilter.files import atomic_write
from nasfilter.oracle import calibration as cal
from nasfilter.oracle.calibrated import Calibration, load_calibration
from nasfilter.oracle.cells import cell_measurements, cells_provenance, fit_cells
from nasfilter.oracle.cells_validation import (
    HOST_SEED,
    format_cells_report,
    format_host_report,
    format_measured_cells_report,
    leave_one_generation_out,
    leave_one_gpu_out,
    score_measured_cells,
    timm_only,
    with_measured_host,
)
from nasfilter.oracle.joint import fit_joint
from nasfilter.oracle.joint_validation import format_timm_rows, validate_joint
from nasfilter.oracle.tss_measure import read_tss_export
from nasfilter.oracle.validation import (
    SHIPPED_DEVICES,
    cross_validate,
    evaluate,
    format_measured_report,
    format_report,
)
from nasfilter.survey.tables import SurveyTables


def register(sub: Any) -> None:
    p = sub.add_parser(
        "calibrate",
        help="fit the GPU model to measurements, or hold it against another GPU's",
        description="Fit the calibrated GPU model's efficiency figures to measured inference "
        "throughputs in timm's benchmark format (default: the shipped RTX 3090 and RTX 4090 "
        "files, both layouts) and store them with their provenance (--out). With --validate, "
        "fit on each shipped GPU and predict the other instead, and print the held-out "
        "figures of the plain roofline and the calibrated model; with --validate --measured, "
        "predict your own files with the shipped calibration and score them. Needs the survey "
        "extra (timm) to analyse the measured models.",
    )
    p.add_argument(
        "--measured",
        action="append",
        metavar="FILE",
        help="a benchmark file in timm's format (repeatable); its device and layout come from "
        "its name (…-nhwc-…-rtx4090.csv) unless --device/--layout say. With --validate, also "
        "a `measure --space tss --export` .npz of tss cells measured FP32 eager NCHW at one "
        "batch, scored against the cells' model",
    )
    p.add_argument(
        "--device",
        help="the device of every --measured file (a name or JSON spec; for a tss export, "
        "default the data sheet it carries)",
    )
    p.add_argument("--layout", choices=("nchw", "nhwc"), help="the layout of every --measured file")
    _add_validation_arguments(p)
    p.add_argument(
        "--out", help="write the calibration (with --validate: the figures) here, a .json file"
    )
    add_force(p, "--out file")
    p.add_argument(
        "--cache",
        metavar="DIR",
        help="the survey's profile cache, where analysed models are remembered (default: "
        "~/.cache/nasfilter/survey)",
    )
    p.add_argument(
        "--jobs",
        type=int_at_least(1),
        default=1,
        help="worker processes analysing models (default 1)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _add_validation_arguments(p: Any) -> None:
    """--validate and the flags beside it: --calibration, --joint, --cells-only."""
    p.add_argument(
        "--validate",
        action="store_true",
        help="validation instead of a fit: the tss cells left out one GPU and one "
        "generation at a time and predicted from timm alone, timm's cross-GPU validation, "
        "then the joint fit's (--joint) six GPUs, two generations and two sources left out "
        "in turn (nine fits: minutes). With --measured: your files predicted and scored "
        "by a calibration (--calibration), no fit",
    )
    p.add_argument(
        "--calibration",
        metavar="CAL.json",
        help="with --validate --measured: the calibration your files are scored against "
        "(default: the shipped fit; nasfilter/data/calibration/joint-timm-cells.json is the "
        "joint alternative)",
    )
    p.add_argument(
        "--joint",
        action="store_true",
        help="fit all sixteen figures on timm and the tss cells together (each source "
        "weighing the same) instead of timm's twelve first and the cells' four after",
    )
    p.add_argument(
        "--cells-only",
        action="store_true",
        help="with --validate: only the cells' tables (no timm model is analysed)",
    )


def _table_source(cache: str | None, jobs: int) -> Any:

    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"--jobs must be an integer >= 1, got {jobs!r}")
    return SurveyTables(cache, jobs)


def _check_paths(args: argparse.Namespace) -> Path | None:
    """The inputs and the output checked by :mod:`nasfilter.cli.args`' rules, before any
    model is analysed; the checked ``--out`` path (None without one)."""

    for path in args.measured or []:
        check_input_file(path, "--measured", "measurement")
    if args.cache:
        check_parent(args.cache, "--cache")
        if Path(args.cache).exists() and not Path(args.cache).is_dir():
            raise NotADirectoryError(f"--cache {args.cache!r} is a file, not a folder")
    if not args.out:
        return None
    inputs = {f"--measured #{i + 1}": p for i, p in enumerate(args.measured or [])}
    return check_output_file(args.out, "--out", force=args.force, inputs=inputs, suffix=".json")


def run(args: argparse.Namespace) -> int:
    if args.cells_only and not args.validate:
        raise ValueError("--cells-only goes with --validate")
    if args.joint and args.validate:
        raise ValueError("--joint is a fit (with --out); --validate holds the joint fit out too")
    if args.validate and args.measured and (args.cells_only or args.out):
        raise ValueError(
            "--validate --measured scores your files with a calibration: drop --cells-only "
            "and --out (--json prints the figures)"
        )
    if args.calibration is not None and not (args.validate and args.measured):
        raise ValueError("--calibration goes with --validate --measured (the one it scores)")
    if (args.device or args.layout) and not args.measured:
        raise ValueError("--device and --layout describe --measured files: give one")
    if not args.validate and not args.out:
        raise ValueError("give --out CAL.json for the fitted figures (or --validate)")
    args.out = _check_paths(args)
    try:
        tables = _table_source(args.cache, args.jobs)
    except ImportError as exc:
        print(f"nasfilter calibrate: error: {exc}", file=sys.stderr)
        return 2
    if args.validate and args.measured:
        return _validate_measured(args, tables)
    if args.validate:
        return _validate(args, tables)
    return _fit(args, tables)


def _measured_files(
    args: argparse.Namespace, paths: list[str] | None = None
) -> list[cal.BenchmarkFile]:
    """The ``--measured`` files (or those of them in ``paths``), read with
    ``--device``/``--layout`` where given."""
    files = []
    for path in args.measured if paths is None else paths:
        with naming("--measured" if args.device is None else "--measured/--device"):
            files.append(cal.read_benchmark_file(path, args.device, args.layout))
    return files


def _by_device(files: list[cal.BenchmarkFile]) -> list[list[cal.BenchmarkFile]]:
    by_device: dict[str, list[cal.BenchmarkFile]] = {}
    for f in files:
        by_device.setdefault(f.device.name, []).append(f)
    return list(by_device.values())


def _validate_measured(args: argparse.Namespace, tables: Any) -> int:
    """Your measurements scored by a calibration (default: the shipped fit), no fit: each
    device's files predicted, the plain roofline beside, and each file the calibration was
    fitted on (by its SHA-256) named as in-sample."""
    if args.calibration is not None:
        check_input_file(args.calibration, "--calibration", "calibration")
        with naming("--calibration"):
            calibration = load_calibration(args.calibration)
    else:
        calibration = load_calibration()
    fitted = calibration.fitted_sha256()
    exports = [p for p in args.measured if Path(p).suffix == ".npz"]
    if exports and args.layout:
        raise ValueError("--layout describes timm CSV files; a tss export is scored as NCHW")
    csvs = [p for p in args.measured if p not in exports]
    records = []
    for group in _by_device(_measured_files(args, csvs)) if csvs else []:
        sset = cal.build_samples(group, tables)
        in_fit = [f.path.name for f in group if f.sha256 in fitted]
        record = evaluate(sset, calibration.params)
        records.append({**record, "left_out": dict(sset.left_out), "in_fit": in_fit})
    cells = []
    for path in exports:
        with naming("--measured" if args.device is None else "--measured/--device"):
            cells.append(score_measured_cells(read_tss_export(path), calibration, args.device))
    label = f"{calibration.path or 'the shipped fit'}: {calibration.fitted_on}"
    if args.json:
        print(json.dumps({"calibration": label, "measured": records, "measured_cells": cells},
                         sort_keys=True))
        return 0
    if records:
        print(format_measured_report(records, label), flush=True)
    if cells:
        print(format_measured_cells_report(cells, label), flush=True)
    return 0


def _validate(args: argparse.Namespace, tables: Any) -> int:

    cells = leave_one_gpu_out() + leave_one_generation_out() + timm_only()
    host = with_measured_host(np.random.default_rng(HOST_SEED))
    if not args.json:
        print("tss cells (HELP latencies, FP32 eager), calibrated vs plain roofline:")
        print(format_cells_report(cells), flush=True)
        print(
            "\nthe same held out, with the held-out machine's host time per kernel "
            "(measured_host_kernel_us) from networks measured there at batch 1, scored on "
            "the others:"
        )
        print(format_host_report(host), flush=True)
    records = [] if args.cells_only else cross_validate(tables)
    out: dict[str, Any] = {"cells": cells, "cells_measured_host": host, "timm": records}
    if not args.cells_only:
        if not args.json:
            print("\ntimm (fit on one GPU, predict the other):")
            print(format_report(records), flush=True)
        out["joint"] = _print_joint(tables, quiet=args.json)
    if args.out:
        with atomic_write(args.out, "w") as fh:
            fh.write(json.dumps(out, indent=2, sort_keys=True) + "\n")
    if args.json:
        print(json.dumps(out, sort_keys=True))
    return 0


def _print_joint(tables: Any, quiet: bool) -> dict[str, Any]:
    """The joint fit held out (:func:`~nasfilter.oracle.joint_validation.validate_joint`),
    its tables printed unless ``quiet``; its records."""

    joint = validate_joint(tables)
    if not quiet:
        print("\njoint fit (timm and the cells together), each GPU and source left out:")
        print(format_timm_rows(joint["timm"]))
        print(format_cells_report(joint["cells"]), flush=True)
    return joint


def _tables_label(tables: Any) -> str:
    """Which layer analysis made the tables: the survey cache's versioned folder name."""
    folder = getattr(tables, "folder", None)
    what = f" ({folder.name}: timm version and analysis version)" if folder is not None else ""
    return "nasfilter.survey layer analysis" + what


def _command(args: argparse.Namespace) -> str:
    """The command line that reproduces this fit (its output path left out)."""
    words = ["nasfilter", "calibrate"]
    for path in args.measured or []:
        words += ["--measured", path]
    for flag in ("device", "layout"):
        if getattr(args, flag):
            words += [f"--{flag}", getattr(args, flag)]
    return shlex.join(words + (["--joint"] if getattr(args, "joint", False) else []))


def _fit(args: argparse.Namespace, tables: Any) -> int:

    if args.measured:
        files = _measured_files(args)
    else:
        files = [
            cal.shipped_benchmark_file(d, layout)
            for d in SHIPPED_DEVICES
            for layout in ("nchw", "nhwc")
        ]
    sets = [cal.build_samples(group, tables) for group in _by_device(files)]
    try:
        result = cal.fit(sets)
    except cal.CalibrationError as exc:
        print(f"nasfilter calibrate: fit refused: {exc}", file=sys.stderr)
        return 1

    label = f"timm-format measurements on {result.device}, eager AMP, " + "+".join(
        sorted({f.layout for f in files})
    )
    label += "; tss cells on gtx1080ti+titanx+titanxp+rtx2080ti, eager FP32, batch 1/32/256"
    params, rms = _cell_params(args.joint, sets, result)
    label += "; joint fit of all sixteen figures" if args.joint else ""
    provenance = {
        **result.provenance,
        "samples": result.samples,
        "rms_log_error": rms,
        "evaluations": result.iterations,
        "command": _command(args),
        "layer_tables": _tables_label(tables),
        "cells": {**cells_provenance(), "fit": "joint" if args.joint else "staged"},
    }
    calibration = Calibration(params, label, provenance)
    calibration.save(args.out, force=args.force)
    if args.json:
        print(calibration.to_json())
    else:
        text = f"{rms:.3f}" if isinstance(rms, float) else str(rms)
        print(f"fitted on {result.samples} samples ({label}); rms log error {text}")
        for name, value in params.to_dict().items():
            print(f"  {name:<22} {value:.4g}")
        print(f"wrote {args.out}")
    return 0


def _cell_params(joint: bool, sets: Any, result: Any) -> tuple[Any, dict[str, float] | float]:
    """The sixteen figures and the rms log error: the cells' four fitted with timm's twelve
    held (staged), or all sixteen on timm and the cells together (``joint``, an rms per
    source)."""

    if not joint:
        return fit_cells(result.params), float(result.rms_log_error)
    fit = fit_joint(sets, cell_measurements())
    return fit.params, {k: round(v, 4) for k, v in fit.rms_log_error.items()}
