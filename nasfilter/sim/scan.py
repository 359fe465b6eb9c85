"""How much of the space a proxy scan may cover: the budget-aware scan policy.

The study measures every architecture (32768 proxy queries, 65536 s at the default 2 s
each) before it evaluates anything. Under a smaller budget that scan would spend everything
and the run would evaluate nothing. Every built-in searcher and filter that scans therefore
takes ``scan_share``: the largest share of the run's budget the scan may spend.

- ``scan_share=0.6`` (the default): scan everything when that costs at most 60 % of the
  budget (at 110000 s and 2 s per query the full scan, 65536 s, is 60 % of it, so the
  study's runs are unchanged), otherwise a uniform random sample of the architectures that
  costs 60 % of the budget. The rest is left for accuracy evaluations.
- ``scan_share=None``: the study's full scan, whatever it costs.

The order is a random permutation from the run's generator either way, so a scan cut short
by the budget still sees an unbiased sample.
"""

from __future__ import annotations

import math

import numpy as np

from nasfilter.sim.proxy_handle import ProxyHandle

DEFAULT_SCAN_SHARE = 0.6


def check_scan_share(value: object) -> float | None:
    """``value`` as a share in (0, 1], or None (full scan); ValueError naming the range."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and 0 < value <= 1)
    ):
        raise ValueError(
            f"scan_share must be a number in (0, 1] (the largest share of the budget a proxy "
            f"scan may spend) or None (the study's full scan), got {value!r}"
        )
    return float(value)


def scan_size(proxy: ProxyHandle, share: float | None) -> int:
    """Architectures to scan under ``share`` of the budget, 1..32768."""
    if share is None or proxy.cost <= 0:
        return proxy.space.size
    # A worker-seconds budget as a whole; under a wall-clock budget, what is left of it.
    budget = proxy.budget_seconds
    affordable = int(share * (proxy.remaining if budget is None else budget) / proxy.cost)
    return max(1, min(proxy.space.size, affordable))


def scan(
    proxy: ProxyHandle, rng: np.random.Generator, share: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """Query a random sample (or all) of the space; (answered (k,), readings (k, 2)).

    Readings are utilization and throughput columns, as :meth:`ProxyHandle.query_many`.
    """
    order = rng.permutation(proxy.space.size)[: scan_size(proxy, share)]
    return proxy.query_many(order)
