"""The searcher interface: ``ask`` hands out trials, ``tell`` takes each one back once.

A searcher is one small class, passed as an instance. It implements two hooks::

    class MySearcher(Searcher):
        name = "mine"

        def reset(self) -> None:                 # optional: start a fresh run
            self.seen = []

        def propose(self) -> Arch | None:        # the next architecture, or None when done
            return space.sample(self.rng)

        def observe(self, trial: Trial, accuracy: float | None) -> None:  # optional
            self.seen.append((trial.arch, accuracy))  # None: a filter dropped it

The runner (and anyone driving a searcher by hand) calls the two public methods, which the
base class implements once for every searcher:

- :meth:`Searcher.ask` calls :meth:`propose` and returns a :class:`~nasfilter.sim.trial.Trial`
  (a run-unique id and the architecture), or None;
- :meth:`Searcher.tell` takes a trial back with its outcome, refuses an unknown or
  already-told id with a clear error, then calls :meth:`observe`.

Several trials may be pending at once (``run_search(..., workers=K)``): ``ask`` may be
called again before earlier trials are told, and outcomes arrive in completion order.
:attr:`Searcher.pending` lists the outstanding trials.

The runner calls :meth:`Searcher.setup` once per run, before the first ``ask``: it hands in
the run's random generator (the only source of randomness a searcher may use) and a metered
:class:`~nasfilter.sim.proxy_handle.ProxyHandle` (utilization and throughput, charged to the
simulated clock; never accuracy), then calls :meth:`reset`. Accuracies arrive only through
``tell``: validation accuracy in percent after 12 epochs (or at the trial's fidelity, for a
:class:`~nasfilter.sim.trial.Proposal` at fewer epochs), one random training seed.

A searcher's parameters are its ``__init__`` arguments, each stored as the attribute of the
same name; :meth:`~nasfilter.sim.plugin.Plugin.config` reports them (no plugin lists them).

A searcher written for the earlier interface (``ask() -> Arch`` and ``tell(arch, accuracy)``
overridden directly) is refused at :meth:`Searcher.setup` with a message that says how to
migrate (:data:`MIGRATE_SEARCHER`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from nasfilter.bench.fidelity import Fidelity
from nasfilter.bench.spaces import SSS, TSS, Cell
from nasfilter.bench.spaces.sss import Arch
from nasfilter.checks import check_positive_int, check_real
from nasfilter.sim.plugin import Plugin
from nasfilter.sim.proxy_handle import SearchContext
from nasfilter.sim.trial import WAIT, Proposal, Trial, TrialBook, Wait

MIGRATE_SEARCHER = (
    "rename ask() to propose() (it still returns an Arch or None) and tell(arch, accuracy) "
    "to observe(trial, accuracy), reading the architecture as trial.arch "
    "(docs/tutorial-searcher.md, 'Migrating from ask/tell on architectures')"
)


class Searcher(Plugin):
    """Base class of every searcher. Subclasses implement :meth:`propose` (and usually
    :meth:`observe`).

    Class attributes:
        name: a short name used in results (the registry may register it under others).
        needs_proxy: True when the searcher queries the proxy (a class or an instance
            attribute); a run without a proxy then fails before it starts.
    """

    name: ClassVar[str] = "searcher"
    kind: ClassVar[str] = "searcher"

    _trials: TrialBook

    def setup(self, context: SearchContext) -> None:
        """Start a fresh run: check the searcher (:func:`validate_searcher`), store the
        generator and proxy, forget every trial, then call :meth:`reset`."""
        validate_searcher(self)
        self._trials = TrialBook()
        super().setup(context)

    # ------------------------------------------------------------- the two hooks
    def propose(self) -> Arch | Proposal | Wait | None:
        """The next architecture to evaluate (at the full evaluation), a
        :class:`~nasfilter.sim.trial.Proposal` of one at a fidelity,
        :data:`~nasfilter.sim.trial.WAIT`
        (nothing until a pending trial is told), or None when the searcher has nothing more.

        Other trials may still be pending (see :attr:`pending`)."""
        raise NotImplementedError(f"{type(self).__name__} must implement propose() -> Arch | None")

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        """The outcome of ``trial``: validation accuracy (percent), or None if a filter
        dropped it. Called once per trial, in the order outcomes arrive. Default: ignore."""

    # ------------------------------------------------------ the public interface
    def ask(self) -> Trial | Wait | None:
        """A new pending trial from :meth:`propose`, :data:`~nasfilter.sim.trial.WAIT`, or None.

        ``propose`` returning an Arch gives a trial at the full evaluation (fidelity None);
        a :class:`~nasfilter.sim.trial.Proposal` a trial at its fidelity; WAIT is handed back
        as is (ask again once a pending trial has been told); None means done."""
        try:
            book = self._trials
        except AttributeError:  # before setup(): propose() would miss its per-run state
            book = self._book()
        out = self.propose()
        if type(out) is Arch:
            return book.open(out)
        return self._open(book, out)

    def _open(self, book: TrialBook, out: object) -> Trial | Wait | None:
        """What :meth:`ask` returns for ``out``, which :meth:`propose` returned and is not
        an Arch; ValueError for anything it may not return."""
        if out is None or out is WAIT:
            return out
        space = getattr(self, "space", SSS)
        if type(out) is Cell and space is TSS:
            return book.open(out)  # type: ignore[arg-type]
        if type(out) is Proposal and (
            type(out.arch) is Arch or (type(out.arch) is Cell and space is TSS)
        ):
            fidelity = out.fidelity
            if fidelity is None or type(fidelity) is Fidelity:
                return book.open(out.arch, fidelity)
        raise ValueError(
            f"{self!r}.propose() returned {out!r}; expected an Arch or None, a "
            "Proposal(arch, fidelity) with a Fidelity(epochs, hp) or None, or WAIT (an Arch "
            f"is an architecture of the run's {space.name} space, {space.title})"
        )

    def tell(self, trial: Trial, accuracy: float | None) -> None:
        """Give ``trial`` back with its outcome: validation accuracy (percent), or None.

        Raises ValueError for a trial this run did not hand out or that was already told,
        and for an outcome that is not None or a finite number in [0, 100] (a bool, NaN, an
        array); the trial then stays pending.
        """
        try:
            book = self._trials
        except AttributeError:
            book = self._book()
        # checked before the trial is closed: a refusal keeps it (a float in range passes
        # without the call, the common case)
        if accuracy is not None and (type(accuracy) is not float or not 0.0 <= accuracy <= 100.0):
            check_accuracy(accuracy, self)
        self.observe(book.close(trial, self), accuracy)

    def loop_calls(self) -> tuple[Callable[[], Trial | Wait | None], Callable[[Trial], None]]:
        """The calls a run's loop makes per proposal, to bind once per run after
        :meth:`setup`: ``ask()``, :meth:`ask` bound to this run's trials, and
        ``dropped(trial)``, :meth:`tell` with None for a pending trial that ``ask``
        returned, without tell's checks (which it passes) and without calling
        :meth:`observe` when the searcher keeps the default (which ignores it)."""
        book = self._book()
        propose, open_trial, opened, pop = self.propose, book.open, self._open, book.popper()

        def ask() -> Trial | Wait | None:
            out = propose()
            if type(out) is Arch:
                return open_trial(out)
            return opened(book, out)

        if type(self).observe is Searcher.observe:

            def dropped(trial: Trial) -> None:
                pop(trial[0])

        else:
            observe = self.observe

            def dropped(trial: Trial) -> None:
                observe(pop(trial[0]), None)

        return ask, dropped

    @property
    def pending(self) -> tuple[Trial, ...]:
        """The trials asked for and not told yet, in id order."""
        return self._book().pending

    def _book(self) -> TrialBook:
        try:
            return self._trials
        except AttributeError:
            raise RuntimeError(
                f"{type(self).__name__}: call setup(SearchContext(rng, proxy)) before ask/tell"
            ) from None

    def recommend(self) -> Arch | None:
        """The evaluated architecture this searcher returns, at any point of a run.

        None (the default) leaves the choice to the results' documented rule: the evaluated
        architecture with the highest validation accuracy seen (the first on ties). A
        searcher with another criterion (REINFORCE's best reward) overrides this; it must
        return an architecture whose evaluation it has been told. The runner asks after
        every evaluation outcome and stores each change as a ``recommend`` event.
        """
        return None


def check_fits_space(searcher: Searcher, *names: str) -> None:
    """Raise ValueError unless each named count setting of ``searcher`` is at most the size
    of its run's space (known only at :meth:`~Searcher.reset`: a searcher's settings are
    checked against the largest space when it is built)."""
    space = searcher.space
    for name in names:
        value = getattr(searcher, name)
        if value > space.size:
            raise ValueError(
                f"{name} must be at most the {space.name} space's size {space.size}, got {value}"
            )


def check_accuracy(accuracy: object, who: object) -> None:
    """Raise ValueError unless ``accuracy`` is a real number in [0, 100] (percent)."""
    if (
        isinstance(accuracy, (bool, np.bool_))
        or not isinstance(accuracy, (int, float, np.integer, np.floating))
        or not 0.0 <= accuracy <= 100.0  # False for NaN
    ):
        raise ValueError(
            f"{who!r}.tell(): the outcome must be a validation accuracy in percent, a finite "
            f"number in [0, 100], or None for a dropped trial; got {type(accuracy).__name__} "
            f"{accuracy!r}. The trial stays pending: tell it again with its outcome"
        )


def validate_searcher(searcher: object) -> Searcher:
    """``searcher`` itself when it is a usable :class:`Searcher`; ValueError otherwise: not
    a Searcher, no :meth:`~Searcher.propose`, or ``ask``/``tell`` overridden (the earlier
    interface on architectures, with how to migrate)."""
    if not isinstance(searcher, Searcher):
        raise ValueError(f"searcher must be a Searcher instance, got {searcher!r}")
    cls = type(searcher)
    if cls.ask is not Searcher.ask or cls.tell is not Searcher.tell:
        raise ValueError(
            f"{cls.__name__} overrides ask()/tell(), the earlier searcher interface on "
            f"architectures, which nasfilter no longer runs. To migrate, {MIGRATE_SEARCHER}"
        )
    if cls.propose is Searcher.propose:
        raise ValueError(f"{cls.__name__} must implement propose() -> Arch | None")
    return searcher


__all__ = [
    "MIGRATE_SEARCHER",
    "Searcher",
    "check_accuracy",
    "check_fits_space",
    "check_positive_int",  # re-exported for plugins written against earlier versions
    "check_real",
    "validate_searcher",
]
