"""Built-in filters: pass-through, drop-all, successive frontiers and a proxy threshold.

Both proxy filters look at the throughput–utilization plane (both maximized), the plane in
which the study takes its Pareto front.
"""

from __future__ import annotations

import hashlib
import math
from typing import ClassVar

import numpy as np

from nasfilter.bench.spaces.sss import Arch, index_of
from nasfilter.checks import check_positive_int, check_real
from nasfilter.filters.base import Filter
from nasfilter.pareto import nondominated_mask, nondominated_ranks
from nasfilter.sim.proxy_handle import ProxyHandle
from nasfilter.sim.scan import DEFAULT_SCAN_SHARE, check_scan_share, scan


class PassThrough(Filter):
    """Evaluate every candidate (the same as no filter)."""

    name: ClassVar[str] = "none"
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")

    def keep(self, arch: Arch) -> bool:
        return True


class DropAll(Filter):
    """Evaluate nothing. For tests: a searcher must survive a run in which nothing passes."""

    name: ClassVar[str] = "drop-all"
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")

    def keep(self, arch: Arch) -> bool:
        return False


# The layers of full scans met in this process, by the SHA-256 of their readings in index
# order: every run through the filter on one proxy scans the same 32768 readings (in its
# own order), and layering them is most of the filter's start (~65 ms). A few proxies at
# most per process.
_FULL_SCAN_RANKS: dict[bytes, np.ndarray] = {}
_FULL_SCAN_KEEP = 4


def scan_ranks(answered: np.ndarray, readings: np.ndarray, size: int) -> np.ndarray:
    """Front layer (:func:`~nasfilter.pareto.nondominated_ranks` of throughput and
    utilization, both maximized) of every index, int64 (size,), -1 where ``answered`` (k,)
    holds no reading (``readings`` (k, 2), utilization and throughput); ``size`` is the
    space's size.

    The layers are a function of the set of points, not of their order, so a full scan of
    finite readings is layered once per process (:data:`_FULL_SCAN_RANKS`); the same
    numbers as layering it in the scan's order."""
    ranks = np.full(size, -1, dtype=np.int64)
    if len(answered) == size and np.isfinite(readings).all():
        by_index = np.empty_like(readings, dtype=np.float64)
        by_index[answered] = readings
        key = hashlib.sha256(by_index.tobytes()).digest()
        layers = _FULL_SCAN_RANKS.get(key)
        if layers is None:
            layers = nondominated_ranks(by_index[:, ::-1])
            layers.setflags(write=False)
            while len(_FULL_SCAN_RANKS) >= _FULL_SCAN_KEEP:
                _FULL_SCAN_RANKS.pop(next(iter(_FULL_SCAN_RANKS)))
            _FULL_SCAN_RANKS[key] = layers
        ranks[:] = layers
    elif len(answered):
        ranks[answered] = nondominated_ranks(readings[:, ::-1])
    return ranks


class SuccessiveFrontiers(Filter):
    """Pass only the current throughput–utilization front layer; move on when it is used up.

    At the first candidate the filter queries the proxy for every architecture (charged,
    in a random order from the run's generator) and ranks them into non-dominated layers
    (layer 0 is the front). It passes a candidate whose layer is at most the current level
    and which it has not passed before. The level rises by one when every architecture up
    to it has been passed (the front is exhausted and budget remains, so none sits idle), or
    after ``patience`` candidates in a row were dropped (the searcher is not finding the rest
    of the layer); ``patience=None`` rises only on exhaustion.

    The scan follows :mod:`nasfilter.sim.scan`: by default it covers everything when that costs
    at most ``scan_share`` of the budget, else a random sample costing that share; a
    candidate outside the scanned sample is dropped.

    Args:
        patience: consecutive drops before the level rises (>= 1), or None.
        scan_share: the largest share of the budget the scan may spend, in (0, 1], or None
            for the study's full scan.
    """

    name: ClassVar[str] = "successive-frontiers"
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")
    needs_proxy = True
    uses_utilization = True

    def __init__(
        self, patience: int | None = 100, scan_share: float | None = DEFAULT_SCAN_SHARE
    ) -> None:
        self.patience = None if patience is None else check_positive_int(patience, "patience")
        self.scan_share = check_scan_share(scan_share)

    def reset(self) -> None:
        self._ranks: list[int] | None = None  # layer per index, -1 if unanswered
        self._passed = bytearray(self.space.size)
        self._level = 0
        self._left = 0  # architectures of layers <= level not passed yet
        self._drops = 0

    @property
    def level(self) -> int:
        """The highest front layer currently passed (0 = the front)."""
        return self._level

    def _start(self, proxy: ProxyHandle) -> None:
        answered, readings = scan(proxy, self.rng, self.scan_share)
        ranks = scan_ranks(answered, readings, self.space.size)
        self._ranks = ranks.tolist()
        self._counts = np.bincount(ranks[ranks >= 0], minlength=1)
        self._left = int(self._counts[0])

    def _raise_level(self) -> None:
        while self._level + 1 < len(self._counts):
            self._level += 1
            self._left += int(self._counts[self._level])
            if self._left:
                break
        self._drops = 0

    def keep(self, arch: Arch) -> bool:
        return self.keep_index(arch, index_of(arch))

    def keep_index(self, arch: Arch, index: int) -> bool:
        """:meth:`keep` of ``arch`` with its index ``index`` known: a list look-up."""
        ranks = self._ranks
        if ranks is None:
            self._start(self.proxy)
            ranks = self._ranks
            assert ranks is not None
        rank = ranks[index]
        if 0 <= rank <= self._level and not self._passed[index]:
            self._passed[index] = 1
            self._left -= 1
            self._drops = 0
            if self._left == 0:
                self._raise_level()
            return True
        self._drops += 1
        if self.patience is not None and self._drops >= self.patience:
            self._raise_level()
        return False


def log_epsilon(points: np.ndarray, front: np.ndarray) -> np.ndarray:
    """How far each point lies behind ``front``, in natural-log units, shape (n,).

    ``points`` (n, 2) and ``front`` (f, 2) hold positive (throughput, utilization), both
    maximized. The result is ``max_q min_i (log q_i - log p_i)`` over front points q: the
    smallest additive shift in log space (a common factor ``e**eps`` in both objectives)
    that leaves p strictly dominated by no front point. 0 on the front, > 0 behind it. An
    empty front gives -inf. O(n log f), by one binary search per point.
    """
    p = np.log(np.asarray(points, dtype=np.float64))
    q = np.log(np.asarray(front, dtype=np.float64))
    return additive_epsilon(p, q)


def additive_epsilon(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """How far each point of ``p`` (n, 2) lies behind the front ``q`` (f, 2), both
    maximized, in their own units: ``max_q min_i (q_i - p_i)``, the smallest equal shift
    of both coordinates that leaves p strictly dominated by no front point (0 on the
    front, > 0 behind it, < 0 beyond it; -inf for an empty front). :func:`log_epsilon` is
    this of the logarithms. O(n log f), by one binary search per point."""
    if len(q) == 0:
        return np.full(len(p), -np.inf)
    q = q[np.lexsort((-q[:, 1], q[:, 0]))]  # x ascending (so y descending on a front)
    key = q[:, 0] - q[:, 1]  # nondecreasing along the front
    j = np.searchsorted(key, p[:, 0] - p[:, 1], side="left")
    # From j on, min_i(q_i - p_i) is the y gap, largest at j; before j it is the x gap,
    # largest at j - 1.
    right = np.where(j < len(q), q[np.minimum(j, len(q) - 1), 1] - p[:, 1], -np.inf)
    left = np.where(j > 0, q[np.maximum(j - 1, 0), 0] - p[:, 0], -np.inf)
    return np.maximum(left, right)


class ProxyThreshold(Filter):
    """Pass a candidate only if it is on, or within ``tolerance`` of, the proxy front.

    "Within tolerance" means no front architecture beats it by more than a factor
    ``1 + tolerance`` in *both* throughput and utilization (see :func:`log_epsilon`);
    ``tolerance=0`` passes the front only. Wraps any searcher, e.g. REINFORCE.

    Args:
        tolerance: relative slack (>= 0); 0.05 = within 5 % of the front.
        scan: True: query every architecture at the first candidate (charged, as the study
            does; under a small budget a random sample, see ``scan_share``) and judge
            against that proxy front; a candidate outside a sample is queried and judged
            against it too. False: query only the candidates (charged once each; the filter
            remembers readings) and judge against the front of the readings seen so far,
            which is cheaper but lenient early in a run.
        scan_share: with ``scan=True``, the largest share of the budget the scan may spend,
            in (0, 1] (:mod:`nasfilter.sim.scan`), or None for the study's full scan.
    """

    name: ClassVar[str] = "proxy-threshold"
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")
    needs_proxy = True
    uses_utilization = True

    def __init__(
        self,
        tolerance: float = 0.05,
        scan: bool = True,
        scan_share: float | None = DEFAULT_SCAN_SHARE,
    ) -> None:
        self.tolerance = check_real(tolerance, "tolerance", low=0.0)
        if not isinstance(scan, bool):
            raise ValueError(f"scan must be True or False, got {scan!r}")
        self.scan = scan
        self.scan_share = check_scan_share(scan_share)
        self._slack = math.log1p(self.tolerance)

    def reset(self) -> None:
        self._near: list[bool] | None = None  # scan mode: one flag per index
        self._scanned: list[bool] = []  # scan mode: whether the scan answered each index
        self._front = np.zeros((0, 2))  # scan mode: the scanned proxy front
        self._readings: dict[int, tuple[float, float]] = {}  # online: log readings
        self._front_logs: list[tuple[float, float]] = []  # online: front of those

    def _start_scan(self, proxy: ProxyHandle) -> None:
        answered, readings = scan(proxy, self.rng, self.scan_share)
        points = readings[:, ::-1]  # (throughput, utilization)
        near = np.zeros(self.space.size, dtype=bool)
        scanned = np.zeros(self.space.size, dtype=bool)
        scanned[answered] = True
        if len(answered):
            self._front = points[nondominated_mask(points)]
            near[answered] = log_epsilon(points, self._front) <= self._slack
        self._near = near.tolist()
        self._scanned = scanned.tolist()

    def _judge(self, index: int, proxy: ProxyHandle) -> bool:
        """Scan mode, candidate ``index`` outside the scanned sample: query it, judge it."""
        util, thr = proxy.query(index)
        eps = log_epsilon(np.array([[thr, util]]), self._front)[0]
        self._near[index] = bool(eps <= self._slack)  # type: ignore[index]
        self._scanned[index] = True
        return bool(eps <= self._slack)

    def _online(self, index: int, proxy: ProxyHandle) -> bool:
        # Plain Python on purpose: the front of what was seen is small (tens of points)
        # and one candidate at a time is far cheaper without numpy's per-call overhead.
        point = self._readings.get(index)
        if point is None:
            util, thr = proxy.query(index)
            point = self._readings[index] = (math.log(thr), math.log(util))
            x, y = point
            front = self._front_logs
            if not any(qx >= x and qy >= y and (qx > x or qy > y) for qx, qy in front):
                self._front_logs = [
                    (qx, qy) for qx, qy in front if not (x >= qx and y >= qy and (x > qx or y > qy))
                ] + [point]
        x, y = point
        eps = max(min(qx - x, qy - y) for qx, qy in self._front_logs)
        return eps <= self._slack

    def keep(self, arch: Arch) -> bool:
        return self.keep_index(arch, index_of(arch))

    def keep_index(self, arch: Arch, index: int) -> bool:
        """:meth:`keep` of ``arch`` with its index ``index`` known: a list look-up in scan
        mode."""
        if not self.scan:
            return self._online(index, self.proxy)
        near = self._near
        if near is None:
            self._start_scan(self.proxy)
            near = self._near
            assert near is not None
        return near[index] if self._scanned[index] else self._judge(index, self.proxy)
