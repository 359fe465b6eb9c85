"""MO-ASHA (Schmucker et al., 2021): asynchronous successive halving over the study's two
objectives, validation accuracy and throughput, over epochs of hp 12.

**Rungs**: those of :class:`~nasfilter.searchers.asha.ASHA` (Hyperband's most aggressive
bracket): with the defaults (1, 12, 3), 1, 4 and 12 epochs; the top rung is the full
evaluation, what a run's front counts.

**Asynchronous** (ASHA, Li et al., MLSys 2020): whenever a worker is free, promote the first
architecture of the highest rung (below the top) that is among the best ``n // eta`` of its
rung's ``n`` results and has not been promoted yet; else start a new architecture, drawn
uniformly, at the lowest rung. No rung waits for another, so K workers stay busy. A rung's
order is recomputed after ``max(1, n // 20)`` new results: a new result may wait for 5 % more
of its rung before it counts (what keeps a 110000-s run's rankings within a second).

**Multi-objective ranking** (:mod:`nasfilter.searchers.mo_rank`): a rung's results are
ranked over (validation accuracy at that rung, log10 throughput) by non-dominated sorting,
then an epsilon-net within each layer, instead of by accuracy alone: a fast, less accurate
architecture can be promoted, as the study's front needs. Throughput comes from the metered
proxy: one charged query when an architecture is first proposed (a repeat is free).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from nasfilter.bench.fidelity import Fidelity, is_full
from nasfilter.bench.spaces import SSS
from nasfilter.bench.spaces.sss import Arch, arch_from_index
from nasfilter.searchers.asha import rung_epochs
from nasfilter.searchers.mo_rank import promotable
from nasfilter.searchers.successive_halving import (
    HP,
    EpochSchedule,
)
from nasfilter.sim.trial import Proposal, Trial

_BLOCK = 512  # indices drawn per call of the generator
REFRESH = 20  # a rung of n results re-ranks after max(1, n // REFRESH) new ones


class _Rung:
    """The results of one rung: points (accuracy, log10 throughput) and who was promoted."""

    def __init__(self) -> None:
        self.archs: list[Arch] = []
        self._points = np.empty((64, 2))
        self.promoted: set[int] = set()  # positions in ``archs``
        self._seen = 0  # results when the order was last computed
        self._queue: list[int] = []  # promotable positions not promoted yet, best first

    def add(self, arch: Arch, accuracy: float, log_thr: float) -> None:
        n = len(self.archs)
        if n == len(self._points):
            self._points = np.concatenate([self._points, np.empty_like(self._points)])
        self._points[n] = accuracy, log_thr
        self.archs.append(arch)

    def pop_promotion(self, eta: float) -> int | None:
        """The first promotable position not promoted yet, now marked promoted (or None)."""
        n = len(self.archs)
        if n - self._seen >= max(1, n // REFRESH):
            order = promotable(self._points[:n], eta).tolist()
            self._queue = [p for p in order if p not in self.promoted]
            self._seen = n
        if not self._queue:
            return None
        pos = self._queue.pop(0)
        self.promoted.add(pos)
        return pos


class MOASHA(EpochSchedule):
    """MO-ASHA over (validation accuracy, throughput) on epochs of hp 12 (module docstring).

    Args:
        min_epochs, max_epochs, eta: the schedule, as :class:`~nasfilter.searchers.asha.ASHA`.
    """

    name: ClassVar[str] = "mo-asha"
    needs_proxy = True

    def reset(self) -> None:
        self.check_space()
        self._epochs = rung_epochs(self.min_epochs, self.max_epochs, self.eta)
        self._rungs = [_Rung() for _ in self._epochs]
        self._pending: dict[int, int] = {}  # trial id -> rung
        self._proposed = 0
        self._log_thr: dict[int, float] = {}  # index -> log10 throughput (images/s)
        self._draws: list[int] = []

    def _proposal(self, arch: Arch, rung: int) -> Proposal:
        self._pending[self._proposed] = rung
        self._proposed += 1
        epochs = self._epochs[rung]
        if self.space is not SSS:
            return Proposal(arch, Fidelity(epochs, str(epochs)))
        fidelity = Fidelity(epochs, HP)
        return Proposal(arch, None if is_full(fidelity) else fidelity)

    def propose(self) -> Proposal:
        for k in range(len(self._rungs) - 2, -1, -1):
            rung = self._rungs[k]
            pos = rung.pop_promotion(self.eta)
            if pos is not None:
                return self._proposal(rung.archs[pos], k + 1)
        if not self._draws:
            self._draws = self.rng.integers(0, self.space.size, size=_BLOCK)[::-1].tolist()
        index = self._draws.pop()
        self._log_thr[index] = math.log10(self.proxy.query(index).throughput)  # charged
        arch = arch_from_index(index) if self.space is SSS else self.space.arch(index)
        return self._proposal(arch, 0)

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        k = self._pending.pop(trial.id)
        if accuracy is None:  # dropped by a filter: never promoted
            return
        index = self.index_of_arch(trial.arch)
        self._rungs[k].add(trial.arch, float(accuracy), self._log_thr[index])
