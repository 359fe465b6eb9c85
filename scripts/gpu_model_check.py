"""The prepared GPU check of the GPU model: timm models and tss cells, both layouts, written
in the formats nasfilter scores. Sized for a few minutes on one H100 (18 models x 2 layouts,
48 cells x 3 batches x 2 layouts); it has not run on a GPU yet, only in ``--quick`` mode on a
CPU (tests/oracle/test_gpu_model_check.py).

1. the machine: GPU name, SMs and memory, torch, CUDA and cuDNN versions (the fingerprint);
2. **timm models as timm's benchmark.py runs them** (PyTorch eager, AMP FP16, ``torch.no_grad``,
   NCHW and channels-last NHWC, random weights) at the image size and batch of the shipped
   RTX 4090 file's row for each model of :data:`MODELS`; written as one timm-format CSV per
   layout (``infer_gmacs`` copied from that row), which
   ``nasfilter calibrate --validate --measured FILE --device D --layout L`` scores;
3. **tss cells as HELP's cells ran** (PyTorch eager, FP32, CIFAR-10 32x32): a fixed sample
   (``default_rng(0)``: :data:`N_CELLS` cells, and :data:`N_HOST` among
   ``cells.host_bound_networks`` of the matching built-in device) at batch 1, 32 and 256, NCHW
   and NHWC; seconds per batch, the mean of synchronised forward passes after a warm-up;
4. on a CUDA device, the host sample again through nasfilter's own commands (``measure --space
   tss`` with ``torch-cuda[batch=1,precision=fp32,cuda_graph=false,channels_last=false]``,
   ``host-figure``, ``calibrate --validate --measured``), their exit status in the summary;
5. a summary (JSON, printed and written): for the built-in device of the GPU (if one
   matches its name) the calibrated model's MdAPE and Spearman on the NCHW cells at each
   batch, the host time per kernel the batch-1 latencies of the host sample imply
   (``cells.host_kernel_from_latency``) and the same scores with it (on the other cells);
   and a device file
   ``device.json`` with that figure, for ``measure --space tss --device device.json``.

    python scripts/gpu_model_check.py [--out DIR] [--device cuda]
    python scripts/gpu_model_check.py --device cpu --quick   # the logic, on this machine

Everything lands in ``--out`` (default $OUT, else "."), the fingerprint in each file. Without
torch, timm or xautodl it exits with status 2 and says why; on a CUDA device that is absent,
too.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nasfilter.bench.timm_data import TIMM_COLUMNS  # noqa: E402
from nasfilter.oracle.calibration import scores, shipped_benchmark_file  # noqa: E402
from nasfilter.oracle.calibration_file import load_calibration  # noqa: E402
from nasfilter.oracle.cells import (  # noqa: E402
    CELL_BATCHES,
    all_ops,
    host_bound_networks,
    host_kernel_from_latency,
    tss_batch_seconds,
)
from nasfilter.oracle.devices import DEVICES, device_file_dict  # noqa: E402
from nasfilter.survey.timm_import import import_timm  # noqa: E402

SEED = 0
N_CELLS = 40
N_HOST = 8
# timm CNNs of every family the survey has (plain, residual, grouped, depthwise, dense,
# squeeze-excite, re-parametrised), each a row of the shipped RTX 4090 files.
MODELS = (
    "resnet18", "resnet50", "resnet101", "resnext50_32x4d", "wide_resnet50_2", "densenet121",
    "efficientnet_b0", "mobilenetv2_100", "mobilenetv3_large_100", "regnety_016", "regnetx_032",
    "convnext_tiny", "vgg16", "mnasnet_100", "ghostnet_100", "dla34", "repvgg_a2", "seresnet50",
)  # fmt: skip
LAYOUTS = ("nchw", "nhwc")
WARMUP, REPS = 3, 10


def _built_in(gpu_name: str) -> str | None:
    """The built-in device whose name the GPU's contains (longest first: h200 before h100)."""
    squeezed = gpu_name.lower().replace(" ", "").replace("-", "")
    for name in sorted(DEVICES, key=len, reverse=True):
        if name in squeezed:
            return name
    return None


def _timer(torch: Any, device: str) -> Callable[[Callable[[], object], int], float]:
    """Mean seconds of ``reps`` calls of a function after :data:`WARMUP`, synchronised."""

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)

    def timed(fn: Callable[[], object], reps: int) -> float:
        for _ in range(WARMUP):
            fn()
        sync()
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        return (time.perf_counter() - start) / reps

    return timed


def fingerprint(torch: Any, device: str) -> dict[str, Any]:
    """The machine the figures come from."""
    out: dict[str, Any] = {"torch": torch.__version__, "device": device, "host": os.uname()[1]}
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(device)
        out |= {
            "gpu": props.name,
            "sm_count": props.multi_processor_count,
            "memory_bytes": props.total_memory,
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
        }
    else:
        out["gpu"] = None
    return out


def time_timm(torch: Any, device: str, out: Path, quick: bool) -> dict[str, Path]:
    """One timm-format CSV per layout of :data:`MODELS` (rows as the shipped RTX 4090 file's)."""
    timm = import_timm()
    timed = _timer(torch, device)
    rows = {r.model: r for r in shipped_benchmark_file("rtx4090", "nchw").rows}
    models = MODELS[:1] if quick else MODELS
    paths = {}
    for layout in LAYOUTS:
        path = out / f"benchmark-infer-amp-{layout}-check.csv"
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(TIMM_COLUMNS)
            for name in models:
                row = rows[name]
                batch, size = (2, 64) if quick else (row.batch, row.img_size)
                net = timm.create_model(name, pretrained=False).to(device).eval()
                x = torch.randn(batch, 3, size, size, device=device)
                if layout == "nhwc":
                    net = net.to(memory_format=torch.channels_last)
                    x = x.contiguous(memory_format=torch.channels_last)
                amp = torch.autocast(device.split(":")[0], dtype=torch.float16, enabled=not quick)
                with torch.no_grad(), amp:
                    seconds = timed(functools.partial(net, x), 1 if quick else REPS)
                params = sum(p.numel() for p in net.parameters()) / 1e6
                writer.writerow([name, size, batch / seconds, 1e3 * seconds, batch, params,
                                 row.gmacs, ""])  # fmt: skip
                print(f"  timm {layout} {name}: {batch / seconds:.0f} img/s", flush=True)
                del net, x
        paths[layout] = path
    return paths


def time_cells(
    torch: Any, device: str, cells: np.ndarray, batches: tuple[int, ...], reps: int
) -> dict[str, np.ndarray]:
    """Seconds per batch of ``cells`` at each batch, per layout: key ``"{layout}_b{batch}"``,
    float64 (len(cells),)."""
    from nasfilter.oracle.space_nets import build

    timed = _timer(torch, device)
    out = {f"{lay}_b{b}": np.full(len(cells), np.nan) for lay in LAYOUTS for b in batches}
    for i, arch in enumerate(cells.tolist()):
        net = build("tss", int(arch), "cifar10").to(device)
        for layout in LAYOUTS:
            if layout == "nhwc":
                net = net.to(memory_format=torch.channels_last)
            for b in batches:
                x = torch.zeros(b, 3, 32, 32, device=device)
                if layout == "nhwc":
                    x = x.contiguous(memory_format=torch.channels_last)
                with torch.no_grad():
                    out[f"{layout}_b{b}"][i] = timed(functools.partial(net, x), reps)
    return out


def score_cells(
    spec: str, cells: np.ndarray, latency: dict[str, np.ndarray], host_cells: np.ndarray
) -> dict[str, Any]:
    """The calibrated model on the NCHW cells of built-in ``spec`` other than ``host_cells``,
    without and with the host figure the batch-1 latencies of ``host_cells`` imply (so the
    figure is scored on cells it was not derived from). ``latency`` is per ``cells`` (sorted)."""
    params = load_calibration().params
    at_host = np.searchsorted(cells, host_cells)
    host = host_kernel_from_latency(spec, host_cells, latency["nchw_b1"][at_host], 1, params)
    rest = ~np.isin(cells, host_cells)
    ops = all_ops()[cells[rest]]
    with_host = replace(DEVICES[spec], measured_host_kernel_seconds=host)
    out: dict[str, Any] = {"device": spec, "host_kernel_us": host * 1e6}
    for b in CELL_BATCHES:
        truth = b / latency[f"nchw_b{b}"][rest]
        out[f"batch {b}"] = {
            "without": scores(b / tss_batch_seconds(spec, b, params, ops), truth),
            "with host": scores(b / tss_batch_seconds(with_host, b, params, ops), truth),
        }
    return out


def device_file(spec: str, host_us: float) -> dict[str, Any]:
    """A JSON device file (its units: TFLOP/s, TB/s, GB, MB, us) of built-in ``spec`` with
    the machine's measured host time per kernel."""
    dev = DEVICES[spec]
    return device_file_dict(replace(
        dev,
        name=f"{spec}-measured-host",
        measured_host_kernel_seconds=host_us * 1e-6,
        sources=f"{dev.sources}; host: scripts/gpu_model_check.py, batch-1 tss cells",
    ))


def library_path(out: Path, host_cells: np.ndarray, spec: str, cuda: str) -> dict[str, int]:
    """The host sample again through nasfilter's own commands on the GPU (torch-cuda's FP32
    eager NCHW path at batch 1, ``host-figure``, ``calibrate --validate --measured``): the
    first run of that backend code on a GPU. Each command's exit status; its output is in the
    log."""
    from nasfilter.cli import main as nasfilter
    from nasfilter.oracle.tss_measure import CELLS_SPEC

    (out / "host_cells.txt").write_text("\n".join(map(str, host_cells.tolist())) + "\n")
    export = str(out / "host_b1.npz")
    commands = {
        "measure": ["measure", "--space", "tss", "--backend",
                    CELLS_SPEC.replace("batch=B", "batch=1"), "--device", cuda, "--archs",
                    str(out / "host_cells.txt"), "--cache", str(out / "cells.db"), "--export",
                    export, "--quiet", "--force"],
        "host-figure": ["host-figure", "--from", export, "--device", spec],
        "calibrate": ["calibrate", "--validate", "--measured", export, "--device", spec],
    }
    codes = {}
    for name, command in commands.items():
        try:
            codes[name] = nasfilter(command)
        except Exception as exc:  # a check: report and go on
            print(f"  {name}: {type(exc).__name__}: {exc}", flush=True)
            codes[name] = -1
    return codes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="output folder")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu (--quick)")
    parser.add_argument("--quick", action="store_true", help="a few cells and one model")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        import torch
        import xautodl  # noqa: F401

        import_timm()  # timm with a torchvision whose C ops may not load (a CPU torch)
    except ImportError as exc:
        print(f"gpu_model_check: needs torch, timm and xautodl: {exc}", file=sys.stderr)
        return 2
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_model_check: no CUDA device here", file=sys.stderr)
        return 2
    started = time.time()
    machine = fingerprint(torch, args.device)
    print(f"gpu_model_check: {machine}", flush=True)
    spec = _built_in(machine["gpu"] or "") or "rtx2080ti"  # the cells' sample needs a device
    rng = np.random.default_rng(SEED)
    n_cells, n_host = (2, 1) if args.quick else (N_CELLS, N_HOST)
    host_cells = np.sort(rng.choice(host_bound_networks(spec), n_host, replace=False))
    cells = np.union1d(rng.choice(15625, n_cells, replace=False), host_cells)
    batches = (1, 2) if args.quick else CELL_BATCHES
    latency = time_cells(torch, args.device, cells, batches, 1 if args.quick else REPS)
    arrays: dict[str, Any] = {"arch": cells, "host_arch": host_cells, **latency}
    arrays["fingerprint"] = json.dumps(machine)
    np.savez(out / "tss_cells.npz", **arrays)
    print(f"  tss cells: {len(cells)} at batch {batches}, {time.time() - started:.0f} s")
    csvs = time_timm(torch, args.device, out, args.quick)
    summary: dict[str, Any] = {
        "machine": machine,
        "seconds": time.time() - started,
        "cells": {"n": len(cells), "file": "tss_cells.npz"},
        "timm": {k: p.name for k, p in csvs.items()},
        "score timm with": [
            f"nasfilter calibrate --validate --measured {p.name} --device DEVICE --layout {k}"
            for k, p in csvs.items()
        ],
    }
    matched = _built_in(machine["gpu"] or "")
    if matched and not args.quick:
        summary["cells"]["scores"] = score_cells(matched, cells, latency, host_cells)
        host_us = summary["cells"]["scores"]["host_kernel_us"]
        (out / "device.json").write_text(json.dumps(device_file(matched, host_us), indent=1))
        summary["device_file"] = "device.json"
    if args.device.startswith("cuda") and not args.quick:
        summary["library_path"] = library_path(out, host_cells, matched or spec, args.device)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print(json.dumps(summary, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
