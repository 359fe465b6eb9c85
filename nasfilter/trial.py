"""A trial: one proposal of a run, with an id, so outcomes are matched by id, not by value.

:meth:`nasfilter.searchers.Searcher.ask` hands out trials; the runner gives each one back
through :meth:`~nasfilter.searchers.Searcher.tell` with its outcome: the validation accuracy
(percent), or ``None`` when a filter dropped it. Several trials may be pending at once (the
simulated parallel workers of :func:`nasfilter.runner.run_search`), possibly of the same
architecture.
"""

from __future__ import annotations

from typing import NamedTuple

from nasfilter.space import Arch


class Trial(NamedTuple):
    """One proposal: ``id`` (0, 1, 2, ... in ask order within a run) and its architecture."""

    id: int
    arch: Arch


class TrialBook:
    """The pending trials of one run: hands out ids, checks each trial is told once."""

    __slots__ = ("_next", "_pending")

    def __init__(self) -> None:
        self._next = 0
        self._pending: dict[int, Trial] = {}

    def open(self, arch: Arch) -> Trial:
        """A new pending trial of ``arch`` with the next id."""
        n = self._next
        # tuple.__new__ skips the generated NamedTuple constructor: this is the hot path.
        trial = self._pending[n] = tuple.__new__(Trial, (n, arch))
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

    @property
    def pending(self) -> tuple[Trial, ...]:
        """The trials asked and not told yet, in id order."""
        return tuple(self._pending[k] for k in sorted(self._pending))

    @property
    def asked(self) -> int:
        """How many trials were handed out."""
        return self._next
