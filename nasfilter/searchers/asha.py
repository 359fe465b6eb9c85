"""ASHA, asynchronous successive halving (Li et al., MLSys 2020), over the epochs of hp 12.

Rungs ``k = 0 .. s_max`` train ``floor(max_epochs / eta**(s_max - k))`` epochs (at least
``min_epochs``): with the defaults (1, 12, 3) 1, 4 and 12 epochs, the rungs of Hyperband's
most aggressive bracket (:mod:`nasfilter.searchers.successive_halving`). Whenever a worker
is free, ASHA promotes to rung ``k + 1`` the best architecture of rung ``k`` that is among
the top ``floor(n_k / eta)`` of the ``n_k`` told there and not promoted yet (highest rung
first); if none can be promoted, it starts a new random architecture at rung 0 (one not started
before in the run: without replacement). It never waits for a rung, so K simulated
workers stay busy, until the space is used up (then it waits for promotions, and ends).
The top rung, 12 epochs of hp 12, is the problem's full evaluation; what a run returns is
computed from those alone.
"""

from __future__ import annotations

import bisect
from typing import ClassVar

from nasfilter.searchers.successive_halving import (
    EpochSchedule,
    RandomIndices,
    s_max,
)
from nasfilter.sim.trial import WAIT, Proposal, Trial, Wait


class _Rung:
    """The outcomes told at one rung: the candidates for promotion, sorted best first."""

    __slots__ = ("open", "promoted")

    def __init__(self) -> None:
        self.open: list[tuple[float, int, int]] = []  # (-accuracy, trial id, index)
        self.promoted: list[tuple[float, int]] = []  # (-accuracy, trial id), sorted

    def best_promotable(self, eta: float) -> tuple[float, int, int] | None:
        """The best open entry if it ranks in the top ``floor(n / eta)``; else None."""
        if not self.open:
            return None
        best = self.open[0]
        rank = bisect.bisect_left(self.promoted, best[:2])  # promoted entries above it
        quota = int((len(self.open) + len(self.promoted)) / eta + 1e-9)
        return best if rank < quota else None


def rung_epochs(min_epochs: int, max_epochs: int, eta: float) -> list[int]:
    """The epochs of each rung, lowest first: ``max_epochs / eta**(s_max - k)`` (at least
    ``min_epochs``), k = 0 .. s_max."""
    top = s_max(min_epochs, max_epochs, eta)
    return [max(min_epochs, int(max_epochs / eta ** (top - k) + 1e-9)) for k in range(top + 1)]


class ASHA(EpochSchedule):
    """Asynchronous successive halving over epochs ``min_epochs .. max_epochs`` of hp 12,
    reduction factor ``eta``, random architectures (module docstring)."""

    name: ClassVar[str] = "asha"

    def reset(self) -> None:
        self.check_space()
        self._epochs = rung_epochs(self.min_epochs, self.max_epochs, self.eta)
        self._rungs = [_Rung() for _ in self._epochs]
        self._level: dict[int, int] = {}  # trial id -> its rung
        self._random = RandomIndices(self.rng, self.space.size)

    def propose(self) -> Proposal | Wait | None:
        for k in range(len(self._rungs) - 2, -1, -1):
            rung = self._rungs[k]
            entry = rung.best_promotable(self.eta)
            if entry is not None:
                rung.open.pop(0)
                bisect.insort(rung.promoted, entry[:2])
                return self._at(k + 1, entry[2])
        index = self._random.next()
        if index is None:  # every architecture started: only promotions are left
            return WAIT if self.pending else None
        return self._at(0, index)

    def _at(self, k: int, index: int) -> Proposal:
        self._level[self._next_id()] = k
        return self.at_epochs(index, self._epochs[k])

    def _next_id(self) -> int:
        return self._book().asked  # the id ask() gives the trial proposed now

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        k = self._level.pop(trial.id)
        if accuracy is not None and k < len(self._rungs) - 1:
            bisect.insort(self._rungs[k].open, (-accuracy, trial.id, trial.arch.index))


__all__ = ["ASHA"]
