"""SYNTHETIC learning curves for the structured test table (NOT NATS-Bench data).

:class:`StructuredCurves` gives :func:`nasfilter.testing.structured_table.structured_table`
per-epoch validation accuracies for hp ``12`` (12 epochs, seeds 777 / 888 / 999), so that
multi-fidelity searchers can be checked on a second table whose curves come from another
model than the embedded surrogate's (a power law with independent epoch noise):

- **Shape**: an exponential approach, ``x = (e + 1) / E``, ``t = E / tau_i``::

      acc[e] = F - (F - B) (exp(-t x) - exp(-t)) / (1 - exp(-t))

  from chance ``B`` (10 %) towards the final ``F``, reached exactly at the last epoch.
- **Speed**: ``tau_i = 2.5 * (1 + 0.3 c_i) * exp(0.1 u_i)`` epochs, where ``c_i`` in [0, 1]
  is the architecture's total log channel count scaled to [0, 1]: wide networks learn
  more slowly, so early epochs favour narrow ones and curves cross.
- **Noise**: AR(1) across epochs (correlation 0.6), scale ``1.0 (1 - x)`` percent: training
  noise persists for a few epochs and vanishes at the end.

``F`` is the table's ``valid_acc`` of that seed (so epoch 12 is the full evaluation's
accuracy), ``u`` standard normal per architecture. Times per epoch are the table's
(``train_time``, ``valid_time``); charged as :class:`nasfilter.bench.fidelity.SyntheticCurves`
charges, ``train * (iepoch + 1) + valid``. Every draw comes from a ``SeedSequence`` of the
table's seed, so the curves are a pure function of it.
"""

from __future__ import annotations

import numpy as np

from nasfilter.bench.spaces import SSS
from nasfilter.bench.spaces.sss import all_channels
from nasfilter.bench.table import BenchmarkTable
from nasfilter.testing.structured_table import DEFAULT_SEED, SEEDS, structured_table

EPOCHS = 12
CHANCE = 10.0
TAU = 2.5  # epochs, for the narrowest network
WIDTH_SLOWDOWN = 0.3
SD_LOG_TAU = 0.10
NOISE = 1.0  # percent at x = 0
AR = 0.6
_CURVE_KEY = 7  # spawn key: the table's own children are 0..4


def build_structured_curves(table: BenchmarkTable, seed: int) -> np.ndarray:
    """float (32768, 3, 12): the SYNTHETIC curves of the module docstring, in percent."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_CURVE_KEY,)))
    logc = np.log2(all_channels() / 8.0).sum(axis=1)
    width = (logc - logc.min()) / (logc.max() - logc.min())
    tau = TAU * (1.0 + WIDTH_SLOWDOWN * width) * np.exp(SD_LOG_TAU * rng.standard_normal(SSS.size))
    x = np.arange(1, EPOCHS + 1) / EPOCHS
    t = (EPOCHS / tau)[:, None]  # (N, 1)
    rise = (np.exp(-t * x) - np.exp(-t)) / (1.0 - np.exp(-t))  # (N, E): 1 -> 0
    final = np.asarray(table.valid_acc, dtype=np.float64)  # (N, 3)
    z = rng.standard_normal((SSS.size, len(SEEDS), EPOCHS))
    for e in range(1, EPOCHS):
        z[:, :, e] = AR * z[:, :, e - 1] + np.sqrt(1.0 - AR**2) * z[:, :, e]
    curves = final[:, :, None] - (final - CHANCE)[:, :, None] * rise[:, None, :]
    curves += NOISE * (1.0 - x) * z
    np.clip(curves, 0.0, 100.0, out=curves)
    curves[:, :, -1] = final
    return curves


class StructuredCurves:
    """The structured table's SYNTHETIC curves (:class:`nasfilter.bench.fidelity.LearningCurves`).

    Args:
        table: the structured table (default: ``structured_table(seed)``); its provenance
            seed, when it has one, seeds the curves.
    """

    dataset = "cifar10"
    synthetic = True

    def __init__(self, table: BenchmarkTable | None = None, seed: int = DEFAULT_SEED) -> None:
        self.table = structured_table(seed) if table is None else table
        self.seed = int((self.table.provenance.extra or {}).get("seed", seed))
        self._curves = build_structured_curves(self.table, self.seed)
        self._curves.setflags(write=False)

    def hps(self) -> list[str]:
        return ["12"]

    def epochs(self, hp: str) -> int:
        return EPOCHS

    def seeds(self, index: int, hp: str) -> list[int]:
        return list(SEEDS)

    def curves(self) -> np.ndarray:
        """float (32768, 3, 12), read-only: every curve (seeds in :data:`SEEDS` order)."""
        return self._curves

    def evaluation(self, index: int, hp: str, seed: int, iepoch: int) -> tuple[float, float]:
        acc = self._curves[index, SEEDS.index(seed), iepoch]
        train = float(self.table.train_time[index]) * (iepoch + 1)
        return float(acc), train + float(self.table.valid_time[index])
