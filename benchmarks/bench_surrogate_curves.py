"""Building the surrogate's SYNTHETIC learning curves (uncached), against drawing their noise.

The reference is numpy drawing the same number of standard normal values
(``Generator.standard_normal``), the least any model with per-epoch noise must do; the curves
should cost at most a few times that.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from benchmarks import median_seconds, result
from nasfilter.bench.spaces.sss import N_ARCHS
from nasfilter.bench.surrogate import embedded_table
from nasfilter.bench.surrogate_curves import CURVE_SEEDS, EPOCHS, build_curves

RATIO_GOAL = 5.0


def run() -> Iterator[dict[str, Any]]:
    embedded_table("cifar10")  # the table itself is cached, as in use
    for hp in ("12", "90"):
        shape = (N_ARCHS, len(CURVE_SEEDS[hp]), EPOCHS[hp])
        rng = np.random.default_rng(0)
        noise = median_seconds(lambda s=shape, g=rng: g.standard_normal(s), repeat=5)
        seconds = median_seconds(lambda h=hp: build_curves("cifar10", h), repeat=5)
        ratio = seconds / noise
        yield result(
            f"surrogate_curves.build_curves[cifar10, hp {hp}]",
            seconds,
            "s",
            f"<= {RATIO_GOAL:g}x drawing the {np.prod(shape):,} noise values alone",
            ratio <= RATIO_GOAL,
            ratio=ratio,
        )
