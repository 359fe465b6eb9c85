"""The fronts a run's curves are scored with: front_steps, one pass over the evaluations,
gives front_of's front of every prefix, on points full of ties, copies and unusable rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nasfilter.bench.spaces.sss import N_ARCHS
from nasfilter.runs.metrics import FrontReference, front_of, front_steps
from tests.tables import random_proxy, random_table

BASE = FrontReference.build(random_table(3), random_proxy(3))


def _reference(seed: int) -> FrontReference:
    """BASE with coarse points (many ties and copies) and some unusable architectures."""
    rng = np.random.default_rng(seed)
    points = rng.integers(0, 6, size=(N_ARCHS, 2)).astype(np.float64)
    usable = rng.random(N_ARCHS) > 0.1
    points[~usable] = np.nan
    return dataclasses.replace(BASE, points=points, usable=usable)


@pytest.mark.parametrize("seed", range(6))
def test_front_steps_give_front_of_every_prefix(seed: int) -> None:
    reference = _reference(seed)
    rng = np.random.default_rng(100 + seed)
    # repeats of a few architectures, as searchers re-evaluate them
    idx = rng.choice(rng.integers(0, N_ARCHS, size=60), size=300)
    counts, fronts = front_steps(reference, idx)
    assert counts == sorted(set(counts))
    j = -1
    for k in range(len(idx) + 1):
        while j + 1 < len(counts) and counts[j + 1] <= k:
            j += 1
        expected = front_of(reference, idx[:k])
        got = fronts[j] if j >= 0 else np.zeros(0, dtype=np.int64)
        assert got.dtype == expected.dtype
        assert np.array_equal(got, expected), k
    changed = [k for k in range(1, len(idx) + 1)
               if not np.array_equal(front_of(reference, idx[:k]),
                                     front_of(reference, idx[: k - 1]))]  # fmt: skip
    assert counts == changed  # a step where, and only where, the front changes


def test_no_evaluations_no_steps() -> None:
    assert front_steps(BASE, np.zeros(0, dtype=np.int64)) == ([], [])
