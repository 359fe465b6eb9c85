"""A second SYNTHETIC table, structurally unlike the embedded surrogate, for held-out checks.

NOT NATS-Bench data. A searcher tuned on the embedded surrogate (a saturating function of
one weighted sum of log channel counts, Gaussian noise, times linear in MACs) could fit that
model's shape rather than learn. This table is built from a different model, so a method
that does well on both is less likely to be fitting one generator:

- **Accuracy** depends on the channels through *interactions*: a bottleneck term (the
  narrowest layer), a penalty for every layer narrower than the one before it, a bonus for
  the last two layers together, and a logistic (not exponential) saturation:
  ``test = T_lo + (T_hi - T_lo) / (1 + exp(-(s - s_mid) / width))``.
- **Noise** is heteroscedastic and heavy-tailed: the per-architecture offset is Student-t
  (4 degrees of freedom); the seed-to-seed noise shrinks with capacity; the gap between
  12-epoch validation accuracy and 90-epoch test accuracy grows with capacity (wide
  networks are further from converged after 12 epochs).
- **Time** grows with MACs to the power 0.85 and with the total channel count (a memory
  term), with 12 % log-normal scatter; latency with the square root of MACs.

MACs and parameter counts are exact (:func:`nasfilter.bench.costs.network_costs`). Write it in the
real archive format with :func:`nasfilter.testing.nats_archive.write_nats_archive` and read it
back with ``nasfilter convert``, as the benchmark does.
"""

from __future__ import annotations

import numpy as np

from nasfilter.bench.costs import network_costs
from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.spaces import SSS
from nasfilter.bench.spaces.sss import all_channels
from nasfilter.bench.table import BenchmarkTable, Provenance

SOURCE = "nasfilter structured synthetic test table v1"
SEEDS = (777, 888, 999)
DEFAULT_SEED = 20261130


def structured_table(seed: int = DEFAULT_SEED) -> BenchmarkTable:
    """The structured SYNTHETIC CIFAR-10 table drawn with ``seed`` (module docstring).

    Deterministic for a seed; touches no global random state.
    """
    ds = get_dataset("cifar10")
    g_test, g_arch, g_seed, g_time, g_lat = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)
    )
    ch = all_channels().astype(np.float64)
    logc = np.log2(ch / 8.0)  # 0..3
    shrink = np.clip(logc[:, :-1] - logc[:, 1:], 0.0, None).sum(axis=1)
    s = (
        logc @ np.array([0.35, 0.20, 0.30, 0.15, 0.25])
        + 0.45 * logc.min(axis=1)
        - 0.30 * shrink
        + 0.12 * logc[:, 3] * logc[:, 4]
    )
    test_smooth = 78.0 + 16.0 / (1.0 + np.exp(-(s - 1.2) / 0.9))
    test_acc = test_smooth + 0.25 * g_test.standard_normal(SSS.size)
    gap = 8.0 + 2.5 * (1.0 - np.exp(-0.6 * s))
    offset = 0.35 * g_arch.standard_t(4, SSS.size)
    seed_sd = 0.25 + 0.5 * np.exp(-0.5 * s)
    valid_acc = (test_smooth - gap + offset)[:, None] + seed_sd[:, None] * g_seed.standard_normal(
        (SSS.size, len(SEEDS))
    )

    costs = network_costs(ds)
    scatter = np.exp(0.12 * g_time.standard_normal(SSS.size))
    train_time = (1.8 + 0.11 * costs.macs**0.85 + 0.006 * ch.sum(axis=1)) * scatter
    n = SSS.size
    valid_time = (0.6 + 0.3 * train_time / scatter) * np.exp(0.05 * g_time.standard_normal(n))
    latency = (0.009 + 0.0011 * np.sqrt(costs.macs)) * np.exp(0.05 * g_lat.standard_normal(n))
    return BenchmarkTable(
        dataset=ds,
        seeds=SEEDS,
        valid_acc=valid_acc,
        test_acc=test_acc,
        train_time=train_time,
        valid_time=valid_time,
        latency=latency,
        params=costs.params,
        macs=costs.macs,
        present=np.ones(SSS.size, dtype=bool),
        provenance=Provenance(
            synthetic=True,
            source=SOURCE,
            description=(
                "SYNTHETIC structured test table, NOT NATS-Bench data: accuracies from a "
                "logistic model with layer interactions and heavy-tailed, heteroscedastic "
                "noise; times from MACs**0.85 plus a channel term. For held-out checks of "
                "searchers only."
            ),
            extra={"seed": seed, "kind": "structured test table"},
        ),
    )
