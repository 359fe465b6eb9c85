"""The study's approximate filtering (arXiv 2212.07936), as a searcher.

1. Query the proxy (utilization and throughput) for every architecture, each query charged
   (``query_proxy_many``, vectorized), in a random order drawn from the run's generator.
   When the whole scan would cost more than ``scan_share`` of the budget (60 % by default),
   only a uniform random sample costing that share is scanned, leaving the rest for
   evaluations (:mod:`nasfilter.sim.scan`); ``scan_share=None`` is the study's full scan. The
   front is then taken over what was answered.
2. Take the throughput–utilization Pareto set (both maximized; :mod:`nasfilter.pareto`).
3. Propose its members for accuracy evaluation, each once, in the chosen ``order``.

With ``layers=1`` (the study) the searcher is done after the first front. With ``layers=k``
it goes on with the next non-dominated layers ("successive frontiers", the front of what
remains once earlier layers are removed) up to k layers; ``layers=None`` goes on until the
budget or the space runs out, so no budget sits idle.

Orders within a layer:

- ``"spread"`` (default): sort the layer by throughput, then take both ends, then the
  midpoints of the gaps, coarse to fine (a bisection order). Whenever the run stops, the
  evaluated part covers the whole layer about evenly, so the returned accuracy–throughput
  front spans the full throughput range early.
- ``"utilization"``: highest utilization first (the widest, most accurate networks first).
- ``"throughput"``: highest throughput first (the cheapest evaluations first).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from nasfilter.bench.spaces import SSS
from nasfilter.bench.spaces.sss import Arch, arch_from_index
from nasfilter.checks import check_positive_int
from nasfilter.pareto import nondominated_mask, nondominated_ranks
from nasfilter.searchers.base import Searcher
from nasfilter.sim.scan import DEFAULT_SCAN_SHARE, check_scan_share, scan

ORDERS = ("spread", "utilization", "throughput")


def spread_order(n: int) -> np.ndarray:
    """Positions 0..n-1 in bisection order: both ends, then midpoints coarse to fine, (n,)."""
    if n <= 2:
        return np.arange(n, dtype=np.int64)
    out = [0, n - 1]
    intervals = [(0, n - 1)]
    while intervals:
        nxt = []
        for lo, hi in intervals:
            mid = (lo + hi) // 2
            if lo < mid < hi:
                out.append(mid)
                nxt += [(lo, mid), (mid, hi)]
        intervals = nxt
    return np.asarray(out, dtype=np.int64)


def order_layer(
    indices: np.ndarray, utilization: np.ndarray, throughput: np.ndarray, order: str
) -> np.ndarray:
    """Architecture indices (k,) of one front layer, rearranged in ``order``.

    Ties are broken by the architecture index, so the order is deterministic.
    """
    if order == "utilization":
        return indices[np.lexsort((indices, -utilization))]
    by_throughput = indices[np.lexsort((indices, -throughput))]
    if order == "throughput":
        return by_throughput
    if order == "spread":
        return by_throughput[spread_order(len(indices))]
    raise ValueError(f"order must be one of {ORDERS}, got {order!r}")


class UtilizationPareto(Searcher):
    """Scan the proxy over the whole space, then evaluate its front(s) once each.

    Args:
        layers: front layers to evaluate (>= 1), or None for all of them; the study uses 1.
        order: order within a layer, one of ``ORDERS`` (see the module docstring).
        scan_share: the largest share of the budget the scan may spend, in (0, 1]: the
            whole space when it fits, else a random sample that costs this share
            (:mod:`nasfilter.sim.scan`); None for the study's full scan whatever it costs.
    """

    name: ClassVar[str] = "utilization-pareto"
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")
    needs_proxy = True
    uses_utilization = True

    def __init__(
        self,
        layers: int | None = 1,
        order: str = "spread",
        scan_share: float | None = DEFAULT_SCAN_SHARE,
    ) -> None:
        self.layers = None if layers is None else check_positive_int(layers, "layers")
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
        self.order = order
        self.scan_share = check_scan_share(scan_share)

    def reset(self) -> None:
        self._queue: list[int] | None = None
        self._layer = 0
        self._ranks: np.ndarray | None = None

    def _scan(self) -> None:
        answered, readings = scan(self.proxy, self.rng, self.scan_share)
        self._indices = answered
        self._util = readings[:, 0]
        self._thr = readings[:, 1]
        self._points = readings[:, ::-1]  # (throughput, utilization), both maximized
        self._first = nondominated_mask(self._points) if len(answered) else np.zeros(0, bool)
        self._queue = []

    def _layer_mask(self, layer: int) -> np.ndarray:
        if layer == 0:
            return self._first
        if self._ranks is None:
            self._ranks = nondominated_ranks(self._points)
        return self._ranks == layer

    def propose(self) -> Arch | None:
        if self._queue is None:
            self._scan()
        queue = self._queue
        assert queue is not None
        while not queue:
            if self.layers is not None and self._layer >= self.layers:
                return None
            mask = self._layer_mask(self._layer)
            if not mask.any():
                return None  # every answered architecture has been proposed
            self._layer += 1
            ordered = order_layer(
                self._indices[mask], self._util[mask], self._thr[mask], self.order
            )
            queue.extend(ordered[::-1].tolist())
        index = queue.pop()
        return arch_from_index(index) if self.space is SSS else self.space.arch(index)

    @property
    def current_layer(self) -> int:
        """How many front layers have been started (0 before the scan)."""
        return self._layer
