"""A trial: one proposal of a run, with an id, so outcomes are matched by id, not by value.

:meth:`nasfilter.searchers.Searcher.ask` hands out trials; the runner gives each one back
through :meth:`~nasfilter.searchers.Searcher.tell` with its outcome: the validation accuracy
(percent), or ``None`` when a filter dropped it. Several trials may be pending at once (the
simulated parallel workers of :func:`nasfilter.runs.runner.run_search`), possibly of the same
architecture.

A trial carries the fidelity it is evaluated at (:class:`~nasfilter.bench.fidelity.Fidelity`:
epochs of a training setting), or None for the problem's full evaluation (hp 12, 12
epochs). A searcher asks for a lower fidelity by proposing a :class:`Proposal`; it returns
:data:`WAIT` from ``propose`` when it has nothing to propose until a pending trial is told.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Literal, NamedTuple

from nasfilter.bench.fidelity import Fidelity
from nasfilter.bench.spaces.sss import Arch


class Trial(NamedTuple):
    """One proposal: ``id`` (0, 1, 2, ... in ask order within a run), its architecture and
    the fidelity it is evaluated at (None: the problem's full evaluation)."""

    id: int
    arch: Arch
    fidelity: Fidelity | None = None


class Proposal(NamedTuple):
    """What ``propose`` returns to evaluate ``arch`` at ``fidelity`` (None: full)."""

    arch: Arch
    fidelity: Fidelity | None = None


class Wait(enum.Enum):
    """The type of :data:`WAIT`."""

    WAIT = "wait"

    def __repr__(self) -> str:
        return "WAIT"


# propose() (and so ask()) returns WAIT for "nothing to propose until a pending trial is
# told": the runner then waits for the next evaluation to complete and asks again.
WAIT: Literal[Wait.WAIT] = Wait.WAIT


class TrialBook:
    """The pending trials of one run: hands out ids, checks each trial is told once."""

    __slots__ = ("_next", "_pending")

    def __init__(self) -> None:
        self._next = 0
        self._pending: dict[int, Trial] = {}

    def open(self, arch: Arch, fidelity: Fidelity | None = None) -> Trial:
        """A new pending trial of ``arch`` at ``fidelity`` with the next id."""
        n = self._next
        # tuple.__new__ skips the generated NamedTuple constructor: this is the hot path.
        trial = self._pending[n] = tuple.__new__(Trial, (n, arch, fidelity))
        self._next = n + 1
        return trial

    def close(self, trial: object, who: object) -> Trial:
        """Remove ``trial`` from the pending ones; ValueError naming ``who`` (the searcher)
        if it is not pending."""
        found = None
        if isinstance(trial, Trial):
            found = self._pending.pop(trial.id, None)
            if found is not None:
                if found.arch is trial.arch or found.arch == trial.arch:
                    return found
                self._pending[found.id] = found
        if not isinstance(trial, Trial):
            raise ValueError(
                f"{who!r}.tell() takes the Trial that ask() returned, got {trial!r}; "
                "a searcher written for tell(arch, accuracy) must be migrated "
                "(docs/tutorial-searcher.md, 'Migrating from ask/tell on architectures')"
            )
        if found is None:
            state = "was already told" if 0 <= trial.id < self._next else "was never asked"
            raise ValueError(f"{who!r}.tell(): trial id {trial.id} {state}; tell each trial once")
        raise ValueError(
            f"{who!r}.tell(): trial id {trial.id} was asked for {found.arch}, "
            f"told with {trial.arch}"
        )

    def popper(self) -> Callable[[int], Trial]:
        """``pop(id)``: remove the pending trial ``id`` and return it, unchecked (KeyError
        if it is not pending), for a caller that holds the trial :meth:`open` returned."""
        return self._pending.pop

    @property
    def pending(self) -> tuple[Trial, ...]:
        """The trials asked and not told yet, in id order."""
        return tuple(self._pending[k] for k in sorted(self._pending))

    @property
    def asked(self) -> int:
        """How many trials were handed out."""
        return self._next
