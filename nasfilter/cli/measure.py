"""``nasfilter measure``: fill the measurement cache with one oracle backend, and export it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from nasfilter.bench.datasets import get_dataset
from nasfilter.cli.args import (
    add_dataset,
    add_force,
    add_space,
    check_database,
    check_output_file,
    int_at_least,
    naming,
)
from nasfilter.oracle.base import BackendSpec, BackendUnavailable
from nasfilter.oracle.cache import Group, MeasurementCache
from nasfilter.oracle.registry import backend_name, create
from nasfilter.oracle.sweep import export_table, select_archs, sweep
from nasfilter.oracle.tss_measure import (
    REAL_BACKENDS,
    export_tss,
    predict,
    processor,
    real_backend,
    select_tss_archs,
    store,
)
from nasfilter.registry import parse_spec

if TYPE_CHECKING:  # annotations only: the CLI imports the oracle when a command runs
    import numpy as np

    from nasfilter.bench.datasets import Dataset
    from nasfilter.oracle.sweep import SweepSummary


def register(sub: Any) -> None:
    p = sub.add_parser(
        "measure",
        help="measure utilization and throughput into a cache",
        description="Measure (or, for the roofline, predict) the throughput and utilization of "
        "architectures with one oracle backend, storing each row in an SQLite cache. Cached "
        "architectures are never measured again, so an interrupted sweep resumes where it "
        "stopped.",
    )
    p.add_argument(
        "--backend",
        required=True,
        help="roofline, onnxruntime, torch-cuda or tensorrt; settings as NAME[key=value,...], "
        "e.g. 'onnxruntime[batch=32,window=0.5]'. With --space tss: measured[batch=1|32|256] "
        "(HELP's latencies), calibrated[batch=B] or roofline[batch=B] (default batch 256), or "
        "onnxruntime (on this machine's CPU), torch-cuda or tensorrt timing each cell's network",
    )
    p.add_argument(
        "--device",
        help="roofline: v100 (default), a100, h100, h200, name:peak_tflops:bandwidth_tbs or a "
        "JSON file; torch-cuda/tensorrt: a CUDA device such as cuda:1; onnxruntime: cpu. "
        "--space tss (default 2080ti): measured: 1080ti, 2080ti, titanx, titanxp; calibrated, "
        "roofline: any built-in device or a JSON device file with fp32_peak_tflops; onnxruntime, "
        "torch-cuda, tensorrt: as without --space tss",
    )
    add_dataset(p)
    add_space(p)
    p.add_argument(
        "--archs",
        required=True,
        help="all, sample:N (uniform), stratified:N (MACs x intensity strata plus the 32 "
        "corners) or a file with one index or 8:16:24:32:40 per line (--space tss: all, "
        "sample:N or a file with one index or tss arch string per line)",
    )
    p.add_argument(
        "--seed", type=int_at_least(0), default=0, help="seed of sample:N and stratified:N"
    )
    p.add_argument(
        "--cache",
        required=True,
        help="the SQLite measurement cache (created in an existing folder, or added to)",
    )
    p.add_argument(
        "--export", metavar="TABLE.npz", help="write the group's rows as a table (a new file)"
    )
    add_force(p, "--export file")
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="fan out over Ray: a local instance, or the cluster at ADDRESS ('auto')",
    )
    p.add_argument("--chunk-size", type=int_at_least(1), help="architectures per Ray task")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _check_options(args: argparse.Namespace) -> None:
    """Refuse options that would only fail after the sweep (or be silently ignored)."""
    from pathlib import Path


    if args.chunk_size is not None and not args.ray:
        raise ValueError("--chunk-size applies to Ray sweeps only: add --ray")
    archs_file = args.archs if Path(args.archs).is_file() else None
    check_database(args.cache, "--cache", {"--archs": archs_file})
    if args.export:
        check_output_file(
            args.export,
            "--export",
            force=args.force,
            inputs={"--cache": args.cache, "--archs": archs_file},
            databases=("--cache",),
            suffix=".npz",
        )


def run(args: argparse.Namespace) -> int:
    import numpy as np


    ds = get_dataset(args.dataset)
    with naming("--backend"):
        name, params = parse_spec(args.backend)
    _check_options(args)  # refuse bad output paths before a sweep spends any time
    if args.space == "tss":
        return _run_tss(args, ds.name, name, params)
    archs = select_archs(args.archs, np.random.default_rng(args.seed), ds)
    try:
        summary, exported = _sweep(args, ds, name, params, archs)
    except BackendUnavailable as exc:
        print(f"nasfilter measure: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the export or the cache could not be written, Ray unreachable
        if isinstance(exc, ConnectionError):
            print(f"nasfilter measure: error: --ray: {exc}", file=sys.stderr)
        elif exc.filename is None:  # our own message, which names the file
            print(f"nasfilter measure: error: {exc}", file=sys.stderr)
        else:
            print(
                f"nasfilter measure: error: cannot write {exc.filename!s}: {exc}", file=sys.stderr
            )
        return 2
    _print_summary(args, summary, exported)
    return 0


def _sweep(
    args: argparse.Namespace, ds: Dataset, name: str, params: dict[str, Any], archs: np.ndarray
) -> tuple[SweepSummary, str | None]:
    """Run the sweep the arguments ask for; the summary and the exported table's path."""

    backend: Any
    if args.ray:
        with naming("--backend"):
            backend = BackendSpec(backend_name(args.backend), args.device, params)
    else:
        with naming("--backend/--device"):
            backend = create(args.backend, device=args.device)
    ray_init = {"address": args.ray} if args.ray and args.ray != "local" else None
    with MeasurementCache(args.cache) as cache:
        summary = sweep(
            backend,
            archs,
            ds,
            cache,
            progress=not args.quiet,
            executor="ray" if args.ray else "local",
            chunk_size=args.chunk_size,
            ray_init=ray_init,
        )
        exported = None
        if args.export:
            group = Group.make(ds.name, name, summary.config, summary.device_fingerprint)
            exported = str(export_table(cache, group, args.export))
    return summary, exported


def _run_tss(args: argparse.Namespace, dataset: str, name: str, params: dict[str, Any]) -> int:
    """``measure --space tss``: every asked cell of one backend into the cache (and export)."""
    import numpy as np


    if args.ray:
        raise ValueError("--ray: the tss backends answer all 15625 cells in milliseconds; "
                         "leave --ray out with --space tss")
    with naming("--archs"):
        archs = select_tss_archs(args.archs, np.random.default_rng(args.seed))
    if name in REAL_BACKENDS:
        return _run_tss_real(args, dataset, name, params, archs)
    with naming("--backend/--device"):
        pred = predict(name, params, args.device, dataset)
    try:
        with MeasurementCache(args.cache) as cache:
            group, added = store(pred, archs, dataset, cache)
            n_rows = len(cache.cached_indices(group))
            exported = str(export_tss(cache, group, args.export)) if args.export else None
    except OSError as exc:
        print(f"nasfilter measure: error: {exc}", file=sys.stderr)
        return 2
    summary = {"space": "tss", "backend": pred.backend, "label": pred.label,
               "device": pred.device.get("name"), "processor": processor(pred.device),
               "dataset": dataset, "batch": pred.batch,
               "n_requested": int(archs.size), "n_added": added,
               "n_cached": int(archs.size) - added, "n_rows": n_rows, "export": exported}
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"backend   {pred.backend} ({pred.label}) on {summary['device']} at batch "
          f"{pred.batch} ({dataset}, tss)")
    print(f"archs     {archs.size} asked: {added} added, {archs.size - added} cached; "
          f"cache holds {n_rows} rows of this group")
    if exported:
        print(f"exported  {exported}")
    return 0


def _run_tss_real(args: argparse.Namespace, dataset: str, name: str, params: dict[str, Any],
                  archs: np.ndarray) -> int:
    """``measure --space tss`` with onnxruntime (this CPU), torch-cuda or tensorrt: each cell's
    real network timed, as on sss."""
    with naming("--backend/--device"):
        try:
            backend = real_backend(name, params, args.device)
        except BackendUnavailable as exc:
            print(f"nasfilter measure: error: {exc}", file=sys.stderr)
            return 2
    try:
        with MeasurementCache(args.cache) as cache:
            summary = sweep(backend, archs, dataset, cache, progress=not args.quiet)
            group = Group.make(dataset, name, summary.config, summary.device_fingerprint)
            exported = str(export_tss(cache, group, args.export)) if args.export else None
    except OSError as exc:
        print(f"nasfilter measure: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({**summary.to_dict(), "space": "tss", "label": "measured",
                          "processor": processor(summary.device_fingerprint),
                          "export": exported}))
        return 0
    print(f"measured  on this machine's {processor(summary.device_fingerprint)} (tss)")
    _print_summary(args, summary, exported)
    return 0


def _print_summary(
    args: argparse.Namespace, summary: SweepSummary, exported: str | None
) -> None:
    """The sweep's summary: one JSON object with ``--json``, else a few lines."""
    if args.json:
        print(json.dumps({**summary.to_dict(), "export": exported}))
        return
    print(f"backend   {summary.backend} on {summary.device} ({summary.dataset})")
    print(
        f"archs     {summary.n_requested} asked: {summary.n_measured} measured, "
        f"{summary.n_cached} cached, {summary.n_failed} failed, in {summary.seconds:.1f} s"
    )
    print(
        f"cache     {summary.n_rows} rows of this backend and device; throughput-utilization "
        f"Pareto front: {summary.pareto_throughput_utilization}"
    )
    for failure in summary.failures[:5]:
        print(f"failed    {failure['arch']}: {failure['status']} {failure['error']}")
    if exported:
        print(f"exported  {exported}")
