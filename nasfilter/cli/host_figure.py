"""``nasfilter host-figure``: a machine's host time per eager kernel, from tss networks measured
on it, for a device file (``measured_host_kernel_us``; docs/gpu-model.md, "The host").

Two steps around a measurement: ``--networks N`` draws N networks worth measuring (an
``--archs`` file for ``nasfilter measure``), and ``--from EXPORT.npz`` reads what ``measure
--space tss --backend 'torch-cuda[batch=1,precision=fp32,cuda_graph=false,channels_last=false]'
--export`` wrote (:data:`~nasfilter.oracle.tss_measure.CELLS_SPEC`) and derives the figure,
optionally as a device file (``--out``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.cli.args import add_force, check_input_file, check_output_file, int_at_least, naming
from nasfilter.files import atomic_write
from nasfilter.oracle.calibration_file import load_calibration
from nasfilter.oracle.devices import device_file_dict, get_device
from nasfilter.oracle.host_figure import HostFigure, host_figure, networks_to_measure
from nasfilter.oracle.tss_measure import CELLS_SPEC, read_tss_export

HELP = "a machine's host time per kernel from tss networks measured on it, for a device file"
MEASURE = (
    f"nasfilter measure --space tss --backend '{CELLS_SPEC}' --archs NETWORKS.txt --cache C.db "
    "--export T.npz"
)


def _measure(batch: int) -> str:
    """The measure command that times networks at ``batch`` as the cells' model prices them."""
    return MEASURE.replace("batch=B", f"batch={batch}")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "host-figure",
        help=HELP,
        description="At batch 1 and 32 a tss network's eager latency is the host's time to "
        "issue its kernels, a figure of the machine (CPU, driver, framework), not of the GPU. "
        "--networks N prints N networks worth measuring (host-bound by the model on --device, "
        "one index per line: an --archs file); time them with `" + _measure(1)
        + "`; --from T.npz reads that export and prints the host time per kernel it implies "
        "(measured_host_kernel_us), per network and the median; --out writes --device's "
        "data sheet with it as a JSON device file, which `measure --space tss --backend "
        "calibrated --device FILE` and every other command read.",
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--networks",
        type=int_at_least(1),
        metavar="N",
        help="print N tss networks to measure, drawn among those host-bound on --device",
    )
    mode.add_argument(
        "--from",
        dest="source",
        metavar="T.npz",
        help="a `measure --space tss --export` file of FP32 eager NCHW latencies at one batch "
        f"({CELLS_SPEC.replace('batch=B', 'batch=1')}, or HELP's measured[batch=1])",
    )
    p.add_argument(
        "--device",
        help="the GPU's data sheet, a built-in name or a JSON device file (with --networks: "
        "required; with --from: default the export's, when it has one)",
    )
    p.add_argument(
        "--batch",
        type=int_at_least(1),
        default=1,
        help="with --networks: the batch they are to be measured at (default 1)",
    )
    p.add_argument(
        "--seed", type=int_at_least(0), default=0, help="with --networks: the draw (default 0)"
    )
    p.add_argument("--out", metavar="DEVICE.json", help="with --from: write the device file here")
    add_force(p, "--out file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.networks is not None:
        if args.out:
            raise ValueError("--out goes with --from (the device file of a measured figure)")
        if args.device is None:
            raise ValueError("--networks needs --device: the GPU whose model picks them")
        return _networks(args)
    if args.batch != 1 or args.seed != 0:
        raise ValueError("--batch and --seed go with --networks; --from reads the export's batch")
    return _figure(args)


def _networks(args: argparse.Namespace) -> int:
    with naming("--device"):
        device = get_device(args.device)
    with naming("--networks/--batch"):
        nets = networks_to_measure(device, args.networks, np.random.default_rng(args.seed),
                                   args.batch)
    if args.json:
        print(json.dumps({"device": device.name, "batch": args.batch, "seed": args.seed,
                          "networks": nets.tolist(), "measure": _measure(args.batch)}))
        return 0
    print(f"# {nets.size} tss networks host-bound at batch {args.batch} on {device.name} by the "
          f"calibrated model (modelled host >= 1.5 x GPU time), seed {args.seed}; time them with")
    print(f"# {_measure(args.batch)}")
    print(f"# then: nasfilter host-figure --from T.npz --device {args.device} --out DEVICE.json")
    for index in nets.tolist():
        print(index)
    return 0


def _figure(args: argparse.Namespace) -> int:
    source = check_input_file(args.source, "--from", "tss export")
    out = None
    if args.out:
        out = check_output_file(args.out, "--out", force=args.force, suffix=".json",
                                inputs={"--from": source})
    with naming("--from"):
        export = read_tss_export(source)
    with naming("--from/--device"):
        figure = host_figure(export, args.device)
    device_file = figure.device_file()
    if out is not None:
        with atomic_write(out, "w") as fh:
            fh.write(json.dumps(device_file_dict(device_file), indent=1) + "\n")
    if args.json:
        print(json.dumps(_record(figure, out)))
        return 0
    _print(figure, out)
    return 0


def _record(figure: HostFigure, out: Path | None) -> dict[str, Any]:
    return {
        "device": figure.device.name,
        "measured_on": figure.measured_on,
        "batch": figure.batch,
        "measured_host_kernel_us": figure.seconds * 1e6,
        "fitted_host_kernel_us": load_calibration().params.host_seconds * 1e6,
        "networks": [
            {"index": int(i), "latency_ms": float(t) * 1e3, "over_modelled_host": float(r),
             "host_bound": bool(b)}
            for i, t, r, b in zip(figure.index, figure.latency_s, figure.ratio, figure.bound,
                                  strict=True)
        ],
        "without_latency": list(figure.dropped),
        "out": None if out is None else str(out),
    }


def _print(figure: HostFigure, out: Path | None) -> None:
    record = _record(figure, out)
    print(f"measured on {figure.measured_on}, batch {figure.batch}; modelled on "
          f"{figure.device.name}'s data sheet")
    print("network   latency ms   over modelled host time   host-bound")
    for row in record["networks"]:
        print(f"{row['index']:>7}   {row['latency_ms']:>10.3f}   "
              f"{row['over_modelled_host']:>23.3f}   {'yes' if row['host_bound'] else 'no'}")
    if figure.dropped:
        print(f"without a latency (out of memory or an error), left out: {list(figure.dropped)}")
    print(f"measured_host_kernel_us: {record['measured_host_kernel_us']:.1f}  (the median over "
          f"{int(figure.bound.sum())} host-bound networks; the calibration's fitted host: "
          f"{record['fitted_host_kernel_us']:.1f})")
    if out is not None:
        print(f"wrote {out} (device {figure.device_file().name!r})")
