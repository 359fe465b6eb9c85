"""The figures docs/gpu-model.md quotes from the tss cells' own latencies (HELP, measured):

1. each GPU's latency at a batch split by least squares into a fixed part and a cost per
   operation and edge (six edges x the four operations other than ``none``, against a
   ``none`` edge), printed per operation as its mean over the edges **against a skip edge**
   (no kernel), with the split's rms relative error;
2. the batch-1 and batch-32 medians: measured latency, its ratio to the Titan X's per cell,
   and the shipped model's host and GPU time (which bounds a cell, ``gpumodel.network_seconds``);
3. each machine's host against its leave-one-GPU-out fit's, at batch 1 and 32: the median over
   the networks of measured latency over modelled host time (the factor that
   ``measured_host_kernel_us`` sets);
4. at batch 256, the Spearman between the GPUs' measured latencies, and each Pascal GPU
   predicted from a fit on the other two Pascal GPUs' cells alone.

    python scripts/cell_op_costs.py      # about half a minute
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nasfilter.bench.spaces import TSS_OPS
from nasfilter.bench.tss_data import load_latency
from nasfilter.bench.tss_layers import tss_units
from nasfilter.oracle.calibrated import load_calibration
from nasfilter.oracle.calibration import scores
from nasfilter.oracle.cells import (
    CELL_DATASET,
    HELP_DEVICES,
    HELP_GENERATIONS,
    all_ops,
    fit_cells,
    tss_batch_seconds,
    unit_seconds,
)
from nasfilter.oracle.devices import DEVICES
from nasfilter.stats import spearman

SKIP = TSS_OPS.index("skip_connect")


def op_costs(ops: np.ndarray, seconds: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-operation cost in ms against a skip edge, (5,) (skip is 0), and the rms relative
    error of the split."""
    edges = ops.shape[1]
    x = np.ones((len(ops), 1 + edges * (len(TSS_OPS) - 1)))
    for e in range(edges):
        for o in range(1, len(TSS_OPS)):
            x[:, 1 + e * (len(TSS_OPS) - 1) + o - 1] = ops[:, e] == o
    y = seconds * 1e3
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    per_op = np.concatenate([[0.0], coef[1:].reshape(edges, -1).mean(axis=0)])  # vs none
    rms = float(np.sqrt(np.mean(((x @ coef - y) / y) ** 2)))
    return per_op - per_op[SKIP], rms


def main() -> int:
    ops = all_ops()
    print("batch 256, ms per edge against a skip edge (mean over the six edges):")
    print("GPU         " + " ".join(f"{o:>14}" for o in TSS_OPS) + "   rms")
    for gpu in HELP_DEVICES:
        cost, rms = op_costs(ops, load_latency(gpu, 256))
        print(f"{gpu:<11} " + " ".join(f"{c:14.2f}" for c in cost) + f"  {rms:.1%}")
    params = load_calibration().params
    counts = tss_units(CELL_DATASET).counts(ops)
    print("\nmedians: measured ms, measured / Titan X per cell, model host ms, model GPU ms")
    for batch in (1, 32):
        titanx = load_latency("titanx", batch)
        for gpu, device in HELP_DEVICES.items():
            measured = load_latency(gpu, batch)
            gpu_s, host_s = unit_seconds(DEVICES[device], batch, params)
            print(f"batch {batch:>2} {gpu:<8} {np.median(measured) * 1e3:6.2f} "
                  f"{np.median(measured / titanx):6.3f} {np.median(counts @ host_s) * 1e3:6.2f} "
                  f"{np.median(counts @ gpu_s) * 1e3:6.2f}")  # fmt: skip
    print("\nmeasured / modelled host time, median over networks (leave-one-GPU-out fits)")
    for gpu, device in HELP_DEVICES.items():
        fit = fit_cells(params, tuple(g for g in HELP_DEVICES if g != gpu))
        factors = []
        for batch in (1, 32):
            host_s = unit_seconds(DEVICES[device], batch, fit)[1]
            factors.append(np.median(load_latency(gpu, batch) / (counts @ host_s)))
        print(f"{gpu:<8} batch 1 {factors[0]:.3f}  batch 32 {factors[1]:.3f}")
    ranking(ops, params)
    return 0


def ranking(ops: np.ndarray, params: Any) -> None:
    """Batch 256: how alike the GPUs' measured latencies rank the cells (Spearman), and each
    Pascal GPU predicted from a fit on the other two Pascal GPUs' cells alone."""
    print("\nbatch 256, Spearman between the GPUs' measured latencies")
    measured = {gpu: load_latency(gpu, 256) for gpu in HELP_DEVICES}
    print("         " + " ".join(f"{gpu:>8}" for gpu in HELP_DEVICES))
    for gpu in HELP_DEVICES:
        print(f"{gpu:<8} " + " ".join(f"{spearman(measured[gpu], measured[other]):8.3f}"
                                      for other in HELP_DEVICES))
    pascal = HELP_GENERATIONS["Pascal"]
    print("\nbatch 256, each Pascal GPU from a fit on the other two Pascal GPUs' cells alone")
    for gpu in pascal:
        fit = fit_cells(params, tuple(g for g in pascal if g != gpu))
        got = scores(256 / tss_batch_seconds(HELP_DEVICES[gpu], 256, fit, ops),
                     256 / measured[gpu])
        print(f"{gpu:<8} MdAPE {got['mdape_percent']:.1f} %  Spearman {got['spearman']:.3f}")


if __name__ == "__main__":
    sys.exit(main())
