"""``nasfilter profile MODEL``: one model's predicted per-layer execution on a GPU, with what-ifs.

Prints the slowest layers, the time by bound and the what-ifs; writes ``layers.csv``,
``profile.json`` and ``roofline.png``/``.svg`` into ``--out`` (default
``profile-<model>``). The folder may be new, empty or hold only those files (a previous
profile, replaced); anything else needs ``--force`` (which still replaces only those files).
A folder or link named like one of those files is never replaced, even with ``--force``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from nasfilter.cli.args import (
    check_input_file,
    check_not_input,
    check_parent,
    check_writable_folder,
    int_at_least,
    naming,
)
from nasfilter.cli.survey import _batch, _device, _fold
from nasfilter.oracle.calibrated import load_calibration
from nasfilter.survey.profile import profile
from nasfilter.survey.profile_output import OUTPUTS, report, write_profile


def _shape(text: str) -> tuple[int, int, int]:
    """An argparse ``type``: ``C,H,W`` (or ``CxHxW``) of positive integers."""
    parts = re.split(r"[,x]", text.strip())
    if len(parts) != 3 or not all(p.strip().isdigit() and int(p) >= 1 for p in parts):
        raise argparse.ArgumentTypeError(
            f"expected C,H,W of positive integers (e.g. 3,224,224), got {text!r}"
        )
    c, h, w = (int(p) for p in parts)
    return (c, h, w)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "profile",
        help="one model's predicted per-layer time on a GPU, what bounds it, and what-ifs",
        description="Analyse one model on the meta device (no weights, no download, no GPU) "
        "and predict each layer's time on --device with the calibrated GPU model: its "
        "FLOPs, bytes, arithmetic intensity against the device's CMR, share of the time, "
        "what bounds it (compute, memory, tile or wave quantization, elementwise passes, "
        "per-kernel cost, transposes) and its tile and wave efficiency; then the what-ifs "
        "(the other layout, the other engine, the largest batch that fits, a FoldedCNN). "
        "The whole-model throughput is the survey's for the same settings. Writes "
        "layers.csv, profile.json and roofline.png/.svg. Needs the survey extra (timm).",
    )
    _add_model_arguments(p)
    _add_output_arguments(p)
    p.set_defaults(func=run)


def _add_model_arguments(p: argparse.ArgumentParser) -> None:
    """MODEL and what it runs on: input shape, device, layout, engine, batch, calibration."""

    p.add_argument(
        "model",
        metavar="MODEL",
        help="a timm model name (resnet50), or module:function / file.py:function, a "
        "function without arguments returning a torch.nn.Module",
    )
    p.add_argument(
        "--input-shape",
        type=_shape,
        metavar="C,H,W",
        help="one image's shape (default: timm's size for a timm model, else 3,224,224)",
    )
    p.add_argument(
        "--device",
        default="v100",
        type=_device,
        help="built-in device (v100, a100, h100, h200, rtx3090, rtx4090, rtx2080ti, gtx1080ti, "
        "titanx, titanxp) or a JSON device "
        "file with the SM count and memory size (default v100)",
    )
    p.add_argument(
        "--layout", default="nchw", choices=("nchw", "nhwc"), help="data layout (default nchw)"
    )
    p.add_argument(
        "--engine",
        default="eager",
        choices=("eager", "fused"),
        help="eager: PyTorch eager with AMP, as timm's benchmark and the survey; fused: "
        "TensorRT-like, BN folded and activations fused (default eager)",
    )
    p.add_argument(
        "--batch",
        default=None,
        type=_batch,
        metavar="{max,N}",
        help="images per batch; max: the largest power of two <= 1024 that fits the device "
        "memory, as the survey (default max)",
    )
    p.add_argument(
        "--calibration",
        metavar="FILE",
        help="a calibration written by `nasfilter calibrate` (default: the shipped fit)",
    )


def _add_output_arguments(p: argparse.ArgumentParser) -> None:
    """The FoldedCNN what-if and what is written and printed."""

    p.add_argument(
        "--fold",
        type=_fold,
        default=4,
        help="the FoldedCNN what-if's fold factor, a perfect square; 1: none (default 4)",
    )
    p.add_argument("--out", metavar="DIR", help="output folder (default profile-<model>)")
    p.add_argument("--top", type=int_at_least(1), default=15, help="layers printed, slowest first")
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a folder holding other files (only the profile's files are replaced)",
    )
    p.add_argument("--quiet", action="store_true", help="print nothing; only write the files")


def check_out(args: argparse.Namespace) -> Path:
    """The ``--out`` folder, checked before any analysis (see the module docstring)."""

    text = args.out if args.out is not None else "profile-" + re.sub(r"[^\w.-]", "_", args.model)
    if not text.strip():
        raise ValueError("--out '': give a folder name, or leave --out out for the default")
    out = check_parent(text, "--out")
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {text!r} is a file; give a folder name")
    inputs = {"--calibration": args.calibration, "MODEL": args.model.rpartition(":")[0] or None}
    for name in OUTPUTS:
        check_not_input(out / name, "--out", inputs)
    check_writable_folder(out if out.is_dir() else (out.parent or Path(".")), "--out", out)
    for name in OUTPUTS:  # a folder or link named like an output: never replaced
        entry = out / name
        if entry.is_symlink() or (entry.exists() and not entry.is_file()):
            kind = "a link" if entry.is_symlink() else "a folder"
            raise FileExistsError(
                f"--out {text!r} holds {name!r}, which is {kind}, not a file the profile "
                "wrote: the profile replaces only its own files; move it or choose another "
                "--out"
            )
    others = sorted(p.name for p in out.iterdir() if p.name not in OUTPUTS) if out.is_dir() else []
    if others and not args.force:
        raise FileExistsError(
            f"--out {text!r} holds other files ({', '.join(others[:3])}); choose a new folder "
            "or pass --force to write the profile's files there"
        )
    return out


def run(args: argparse.Namespace) -> int:

    calibration = None
    if args.calibration is not None:
        check_input_file(args.calibration, "--calibration", "calibration")
        with naming("--calibration"):
            calibration = load_calibration(args.calibration)
    with naming("--device"):
        args.device.require("memory_bytes")  # the largest batch that fits
    out = check_out(args)
    prof = profile(
        args.model,
        args.input_shape,
        device=args.device,
        layout=args.layout,
        engine=args.engine,
        batch="max" if args.batch is None else args.batch,
        calibration=calibration,
        fold=args.fold,
    )
    out.mkdir(exist_ok=True)
    written = write_profile(prof, out)
    if not args.quiet:
        print(report(prof, args.top))
        print(f"\nwrote {', '.join(str(p) for p in written)}")
    return 0
