"""The successive-frontiers filter's layers of a full scan, computed once per process:
the same layers as ranking the scan in its own order, whatever that order."""

from __future__ import annotations

import numpy as np

from nasfilter.bench.spaces.sss import N_ARCHS
from nasfilter.filters import builtins
from nasfilter.filters.builtins import scan_ranks
from nasfilter.pareto import nondominated_ranks
from nasfilter.runs.experiment import RunSpec, run_record


def in_scan_order(answered: np.ndarray, readings: np.ndarray) -> np.ndarray:
    """The layers as the filter computed them before the cache: ranked in scan order."""
    ranks = np.full(N_ARCHS, -1, dtype=np.int64)
    ranks[answered] = nondominated_ranks(readings[:, ::-1])
    return ranks


def test_a_full_scan_gets_the_layers_of_its_own_order_whatever_the_order() -> None:
    rng = np.random.default_rng(7)
    # Rounded readings: many ties and duplicates, which the layering must keep together.
    table = np.round(rng.random((N_ARCHS, 2)) * [50, 400], 0)
    builtins._FULL_SCAN_RANKS.clear()
    for _ in range(3):
        answered = rng.permutation(N_ARCHS)
        readings = table[answered]
        got = scan_ranks(answered, readings, N_ARCHS)
        np.testing.assert_array_equal(got, in_scan_order(answered, readings), strict=True)
    assert len(builtins._FULL_SCAN_RANKS) == 1  # layered once for the three scans
    assert int(got.max()) > 10  # many layers, so the comparison means something


def test_other_readings_and_partial_scans_are_layered_afresh() -> None:
    rng = np.random.default_rng(8)
    builtins._FULL_SCAN_RANKS.clear()
    answered = rng.permutation(N_ARCHS)
    for noise in (0.0, 1e-9):  # a noisy proxy's readings: another key, other layers
        readings = rng.random((N_ARCHS, 2)) + noise
        np.testing.assert_array_equal(
            scan_ranks(answered, readings, N_ARCHS), in_scan_order(answered, readings), strict=True
        )
    assert len(builtins._FULL_SCAN_RANKS) == 2
    part = answered[:1000]
    ranks = scan_ranks(part, readings[:1000], N_ARCHS)
    np.testing.assert_array_equal(ranks, in_scan_order(part, readings[:1000]), strict=True)
    assert (ranks == -1).sum() == N_ARCHS - 1000
    assert len(builtins._FULL_SCAN_RANKS) == 2  # a partial scan is not cached


def test_a_run_is_the_same_with_the_layers_cached_or_not() -> None:
    spec = RunSpec("random", "successive-frontiers", table="synthetic")  # scans everything
    builtins._FULL_SCAN_RANKS.clear()
    cold = run_record(spec, 5)
    assert builtins._FULL_SCAN_RANKS  # the run scanned everything, and cached its layers
    warm = run_record(spec, 5)
    assert cold.events.keys() == warm.events.keys()
    for name, column in cold.events.items():
        np.testing.assert_array_equal(warm.events[name], column, strict=True)
