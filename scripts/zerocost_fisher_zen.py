"""Why fisher and Zen-score rank nothing on the shipped tss CIFAR-10 sample: each one's
Spearman with the other proxies, with accuracy, and with the count of each operation in the
cell (docs/cheap-signals.md, "Why fisher and Zen-score rank nothing here").

    python scripts/zerocost_fisher_zen.py

Accuracy: the real NATS tss hp-200 validation accuracy (x-valid, seed mean), cifar10-valid.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nasfilter.bench.spaces import get_space
from nasfilter.bench.tss_data import load_tss_arrays
from nasfilter.zerocost.scorefile import packaged_scores

OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")


def rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho of x and y, (n,) each."""
    return float(spearmanr(x, y)[0])


def main() -> None:
    f = packaged_scores("tss", "cifar10")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: no seed trained
        acc = np.nanmean(load_tss_arrays("cifar10").hp200_valid_acc.astype(np.float64), axis=1)
    finite = np.all([np.isfinite(f.values[p]) for p in f.proxies], axis=0)
    idx = np.flatnonzero(f.computed["snip"] & finite & np.isfinite(acc))
    v = {p: f.values[p][idx].astype(np.float64) for p in f.proxies}
    print(f"{idx.size} sample architectures where every proxy is finite")
    for p in ("fisher", "zen"):
        x = v[p]
        print(f"{p}: min {x.min():.3g}, median {np.median(x):.3g}, max {x.max():.3g}")
        for q in ("params", "synflow", "snip", "grad_norm", "naswot"):
            print(f"  Spearman with {q}: {rho(x, v[q]):+.3f}")
        print(f"  Spearman with accuracy: {rho(x, acc[idx]):+.3f}")
    space = get_space("tss")
    ops = np.array([space.parse(int(i)).ops for i in idx])
    print("count of          accuracy   fisher      zen")
    for op in OPS:
        n = (ops == op).sum(axis=1)
        print(f"{op:16s}  {rho(n, acc[idx]):+.3f}     {rho(n, v['fisher']):+.3f}     "
              f"{rho(n, v['zen']):+.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
