"""Successive halving and Hyperband (Li et al., JMLR 2018) over the epochs of hp 12.

A bracket ``s`` of Hyperband with budgets ``min_epochs .. max_epochs`` and reduction factor
``eta`` (``s_max``: the largest ``s`` with ``min_epochs * eta**s <= max_epochs``) samples
``n = ceil((s_max + 1) / (s + 1) * eta**s)`` random architectures and runs ``s + 1`` rungs:
rung ``i`` trains ``floor(n / eta**i)`` of them for ``floor(max_epochs / eta**(s - i))``
epochs (at least ``min_epochs``), keeping the best ``1 / eta`` for the next rung. With the
defaults (1, 12, 3): bracket 2 is 9 x 1 epoch, 3 x 4, 1 x 12; bracket 1 is 5 x 4, 1 x 12;
bracket 0 is 3 x 12. Hyperband cycles through the brackets ``s_max .. 0`` until the budget is
spent; :class:`SuccessiveHalving` repeats the most aggressive bracket ``s_max``. Each
bracket samples architectures not sampled before in the run (without replacement), so a
run ends (``searcher-done``) once the space is used up, whatever the budget.

Both are synchronous: a rung is promoted once all of its trials are told, so with several
workers the others wait (``propose`` returns WAIT); :mod:`nasfilter.searchers.asha` does not
wait. The last rung at 12 epochs of hp 12 is the problem's full evaluation; what a run
returns is computed from those alone.

On the topology space (tss) there are two real fidelities and no per-epoch curve: hp 12
(12 epochs, seed mean) and hp 200 (200 epochs, one seed). A schedule there runs over those
two "epochs", 12 and 200 (``min_epochs=12, max_epochs=200``, an ``eta`` whose rungs are only
12 and 200, such as 16), each rung proposed at ``Fidelity(epochs, str(epochs))``; the table's
own full fidelity (hp 12 on ``tss-real``, hp 200 on ``tss-real-hp200``) is what a run's front
is made of (:mod:`nasfilter.bench.tss_curves`).
"""

from __future__ import annotations

import math
import numbers
from typing import ClassVar

import numpy as np

from nasfilter.bench.fidelity import Fidelity, is_full
from nasfilter.bench.spaces import SSS
from nasfilter.bench.spaces.sss import Arch, arch_from_index, index_of
from nasfilter.searchers.base import Searcher
from nasfilter.sim.trial import WAIT, Proposal, Trial, Wait

HP = "12"


class RandomIndices:
    """Architecture indices in a uniformly random order from ``rng``, each once (a new
    architecture for every bracket or rung 0) of a space of ``size`` architectures; None
    once all were handed out."""

    __slots__ = ("_order",)

    def __init__(self, rng: np.random.Generator, size: int) -> None:
        self._order: list[int] = rng.permutation(size).tolist()

    def next(self) -> int | None:
        return self._order.pop() if self._order else None


def check_schedule(
    min_epochs: object, max_epochs: object, eta: object
) -> tuple[int, int, float]:
    """The schedule as ``(min_epochs, max_epochs, eta)`` in Python numbers (numpy numbers
    accepted; an integer ``eta`` stays an int), else ValueError naming the valid range."""
    epochs = []
    for name, value in (("min_epochs", min_epochs), ("max_epochs", max_epochs)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1 (epochs of hp 12), got {value!r}")
        epochs.append(int(value))
    min_epochs, max_epochs = epochs
    if min_epochs > max_epochs:
        raise ValueError(
            f"min_epochs={min_epochs} is above max_epochs={max_epochs}; the valid range is "
            f"1 <= min_epochs <= max_epochs"
        )
    if (
        isinstance(eta, bool)
        or not isinstance(eta, numbers.Real)
        or not math.isfinite(eta)
        or eta <= 1
    ):
        raise ValueError(f"eta must be a finite number > 1 (the reduction factor), got {eta!r}")
    eta = int(eta) if isinstance(eta, numbers.Integral) else float(eta)
    rungs = n_rungs(min_epochs, max_epochs, eta)
    if rungs > MAX_RUNGS:
        least = (max_epochs / min_epochs) ** (1 / (MAX_RUNGS - 1))
        raise ValueError(
            f"eta={eta!r} from {min_epochs} to {max_epochs} epochs gives {rungs} rungs "
            f"(log(max_epochs / min_epochs) / log(eta) + 1); at most {MAX_RUNGS} rungs "
            f"(brackets) are allowed, so eta must be >= {math.ceil(least * 1e4) / 1e4:g} here"
        )
    return min_epochs, max_epochs, eta


MAX_RUNGS = 64  # rungs of a schedule (Hyperband's brackets): integer epochs repeat long before


def n_rungs(min_epochs: int, max_epochs: int, eta: float) -> int:
    """The rungs of the schedule (``s_max + 1``), from ``log(max/min) / log(eta)``, computed
    without stepping through them."""
    return math.floor(math.log(max_epochs / min_epochs) / math.log(eta) + 1e-9) + 1


def check_epochs_in_table(searcher: Searcher, max_epochs: int) -> None:
    """ValueError naming the table's range when ``max_epochs`` exceeds hp 12's epochs."""
    top = searcher.proxy.max_epochs(HP)  # NoCurvesError without learning curves
    if max_epochs > top:
        raise ValueError(
            f"{searcher!r}: max_epochs={max_epochs} is out of range: the table's hp {HP} "
            f"trains {top} epochs, so epochs must be in 1..{top}"
        )


def s_max(min_epochs: int, max_epochs: int, eta: float) -> int:
    """The largest ``s`` with ``min_epochs * eta**s <= max_epochs`` (at most
    :data:`MAX_RUNGS` - 1 for a schedule :func:`check_schedule` accepts)."""
    s = 0
    while min_epochs * eta ** (s + 1) <= max_epochs * (1 + 1e-12):
        s += 1
    return s


def bracket(min_epochs: int, max_epochs: int, eta: float, s: int) -> list[tuple[int, int]]:
    """(architectures, epochs) of each rung of Hyperband's bracket ``s`` (module docstring)."""
    top = s_max(min_epochs, max_epochs, eta)
    n = math.ceil((top + 1) / (s + 1) * eta**s - 1e-9)
    rungs = []
    for i in range(s + 1):
        count = max(1, math.floor(n / eta**i + 1e-9))
        epochs = max(min_epochs, math.floor(max_epochs / eta ** (s - i) + 1e-9))
        rungs.append((count, epochs))
    return rungs


TSS_RUNGS = (12, 200)  # the tss tables' two real fidelities, as epochs (hp 12, hp 200)


def check_tss_schedule(searcher: EpochSchedule) -> None:
    """ValueError naming the searcher, the space and the valid schedule unless every rung of
    every bracket of ``searcher``'s schedule is 12 or 200 epochs (tss's two real rungs)."""
    lo, hi, eta = searcher.min_epochs, searcher.max_epochs, searcher.eta
    top = s_max(lo, hi, eta)
    epochs = {e for s in range(top + 1) for _, e in bracket(lo, hi, eta, s)}
    if not epochs <= set(TSS_RUNGS):
        raise ValueError(
            f"{searcher.name} on the tss space ({searcher.space.title}): its schedule "
            f"(min_epochs={lo}, max_epochs={hi}, eta={eta}) has rungs at {sorted(epochs)} "
            "epochs, but tss has two real fidelities and no per-epoch curve: hp 12 (12 "
            "epochs, seed mean) and hp 200 (200 epochs, one seed); use min_epochs=12, "
            f"max_epochs=200 and an eta in [15.4, 16.6], such as {searcher.name}[min_epochs=12,"
            "max_epochs=200,eta=16]"
        )


class EpochSchedule(Searcher):
    """Base of the searchers over epochs ``min_epochs .. max_epochs`` of hp 12 with
    reduction factor ``eta`` (Hyperband, successive halving, ASHA, MO-ASHA): checks and
    holds the schedule. On tss the epochs are the two real rungs, 12 and 200 (module
    docstring)."""

    uses_fidelities: ClassVar[bool] = True  # evaluates at lower fidelities (needs curves)
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")

    def __init__(self, min_epochs: int = 1, max_epochs: int = 12, eta: float = 3) -> None:
        self.min_epochs, self.max_epochs, self.eta = check_schedule(min_epochs, max_epochs, eta)

    def check_space(self) -> None:
        """At reset: the schedule fits the table (sss: hp 12's epochs; tss: its two rungs)."""
        if self.space is SSS:
            check_epochs_in_table(self, self.max_epochs)
        else:
            check_tss_schedule(self)

    def at_epochs(self, index: int, epochs: int) -> Proposal:
        """A proposal of architecture ``index`` at ``epochs`` (of hp 12 on sss, None for its
        full 12; on tss ``Fidelity(epochs, str(epochs))``, hp 12 or hp 200)."""
        if self.space is SSS:
            fidelity = Fidelity(epochs, HP)
            return Proposal(arch_from_index(index), None if is_full(fidelity) else fidelity)
        return Proposal(self.space.arch(index), Fidelity(epochs, str(epochs)))

    def index_of_arch(self, arch: object) -> int:
        """The index of ``arch``, an architecture of the run's space."""
        return index_of(arch) if type(arch) is Arch else self.space.index_of(arch)


class Hyperband(EpochSchedule):
    """Hyperband over epochs ``min_epochs .. max_epochs`` of hp 12, reduction factor ``eta``;
    random architectures; synchronous rungs (module docstring)."""

    name: ClassVar[str] = "hyperband"

    def brackets(self) -> list[int]:
        """The brackets ``s`` run in turn (Hyperband: ``s_max .. 0``)."""
        return list(range(s_max(self.min_epochs, self.max_epochs, self.eta), -1, -1))

    def reset(self) -> None:
        self.check_space()
        self._order = self.brackets()
        self._random = RandomIndices(self.rng, self.space.size)
        self._next = 0  # position in _order of the next bracket
        self._rungs: list[tuple[int, int]] = []
        self._level = 0
        self._todo: list[int] = []  # indices to propose at the current rung
        self._out = 0  # trials of the current rung not told yet
        self._scores: list[tuple[float, int, int]] = []  # (-accuracy, trial id, index)

    def _start_bracket(self) -> None:
        s = self._order[self._next % len(self._order)]
        self._next += 1
        self._rungs = bracket(self.min_epochs, self.max_epochs, self.eta, s)
        self._level = 0
        fresh = (self._random.next() for _ in range(self._rungs[0][0]))
        self._todo = [index for index in fresh if index is not None]

    def _promote(self) -> None:
        """Rung complete: its best ``count`` of the next rung go on, or a new bracket."""
        self._level += 1
        ranked = sorted(self._scores)
        self._scores = []
        if self._level >= len(self._rungs) or not ranked:
            self._rungs = []
            return
        self._todo = [index for _, _, index in ranked[: self._rungs[self._level][0]]]

    def propose(self) -> Proposal | Wait | None:
        if not self._todo:
            if self._out:
                return WAIT  # the rung is not complete
            if self._rungs:
                self._promote()
            if not self._rungs:
                self._start_bracket()
            if not self._todo:
                return None  # every architecture of the space has been sampled
        epochs = self._rungs[self._level][1]
        self._out += 1
        return self.at_epochs(self._todo.pop(0), epochs)

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        self._out -= 1
        if accuracy is not None:
            self._scores.append((-accuracy, trial.id, self.index_of_arch(trial.arch)))


class SuccessiveHalving(Hyperband):
    """Successive halving: Hyperband's most aggressive bracket ``s_max``, repeated."""

    name: ClassVar[str] = "successive-halving"

    def brackets(self) -> list[int]:
        return [s_max(self.min_epochs, self.max_epochs, self.eta)]


__all__ = ["Hyperband", "SuccessiveHalving", "bracket", "check_schedule", "s_max"]
