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

- :meth:`Searcher.ask` calls :meth:`propose` and returns a :class:`~nasfilter.trial.Trial`
  (a run-unique id and the architecture), or None;
- :meth:`Searcher.tell` takes a trial back with its outcome, refuses an unknown or
  already-told id with a clear error, then calls :meth:`observe`.

Several trials may be pending at once (``run_search(..., workers=K)``): ``ask`` may be
called again before earlier trials are told, and outcomes arrive in completion order.
:attr:`Searcher.pending` lists the outstanding trials.

The runner calls :meth:`Searcher.setup` once per run, before the first ``ask``: it hands in
the run's random generator (the only source of randomness a searcher may use) and a metered
:class:`~nasfilter.metered.ProxyHandle` (utilization and throughput, charged to the
simulated clock; never accuracy), then calls :meth:`reset`. Accuracies arrive only through
``tell``: validation accuracy in percent after 12 epochs, one random training seed.

Searchers written for the earlier interface (``ask() -> Arch`` and ``tell(arch, accuracy)``
overridden directly) keep working through :class:`LegacySearcher`, which the runner applies
with a ``FutureWarning`` that says how to migrate (:func:`as_trial_searcher`).
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import numpy as np

from nasfilter.checks import check_positive_int, check_real
from nasfilter.fidelity import Fidelity
from nasfilter.metered import ProxyHandle, SearchContext
from nasfilter.space import Arch
from nasfilter.trial import WAIT, Proposal, Trial, TrialBook, Wait

MIGRATE_SEARCHER = (
    "rename ask() to propose() (it still returns an Arch or None) and tell(arch, accuracy) "
    "to observe(trial, accuracy), reading the architecture as trial.arch "
    "(docs/tutorial-searcher.md, 'Migrating from ask/tell on architectures')"
)


class Searcher:
    """Base class of every searcher. Subclasses implement :meth:`propose` (and usually
    :meth:`observe`).

    Class attributes:
        name: a short name used in results (the registry may register it under others).
        needs_proxy: True when the searcher queries the proxy (a class or an instance
            attribute); a run without a proxy then fails before it starts.
    """

    name: ClassVar[str] = "searcher"
    needs_proxy: bool = False

    rng: np.random.Generator
    proxy: ProxyHandle
    _trials: TrialBook
    _told_trial: Trial | None = None  # set by LegacySearcher around an old tell override

    def setup(self, context: SearchContext) -> None:
        """Start a fresh run: store the generator and proxy, forget every trial, then call
        :meth:`reset`."""
        if self.needs_proxy:
            context.proxy.require(f"searcher {self.name!r}")
        self.rng = context.rng
        self.proxy = context.proxy
        self._trials = TrialBook()
        self.reset()

    def reset(self) -> None:
        """Clear all per-run state. Called by :meth:`setup`; override when there is state."""

    # ------------------------------------------------------------- the two hooks
    def propose(self) -> Arch | Proposal | Wait | None:
        """The next architecture to evaluate (at the full evaluation), a
        :class:`~nasfilter.trial.Proposal` of one at a fidelity, :data:`~nasfilter.trial.WAIT`
        (nothing until a pending trial is told), or None when the searcher has nothing more.

        Other trials may still be pending (see :attr:`pending`)."""
        raise NotImplementedError(f"{type(self).__name__} must implement propose() -> Arch | None")

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        """The outcome of ``trial``: validation accuracy (percent), or None if a filter
        dropped it. Called once per trial, in the order outcomes arrive. Default: ignore."""

    # ------------------------------------------------------ the public interface
    def ask(self) -> Trial | Wait | None:
        """A new pending trial from :meth:`propose`, :data:`~nasfilter.trial.WAIT`, or None.

        ``propose`` returning an Arch gives a trial at the full evaluation (fidelity None);
        a :class:`~nasfilter.trial.Proposal` a trial at its fidelity; WAIT is handed back
        as is (ask again once a pending trial has been told); None means done."""
        try:
            book = self._trials
        except AttributeError:  # before setup(): propose() would miss its per-run state
            book = self._book()
        out = self.propose()
        if type(out) is Arch:
            return book.open(out)
        if out is None or out is WAIT:
            return out
        if type(out) is Proposal and type(out.arch) is Arch:
            fidelity = out.fidelity
            if fidelity is None or type(fidelity) is Fidelity:
                return book.open(out.arch, fidelity)
        raise ValueError(
            f"{self!r}.propose() returned {out!r}; expected an Arch or None, a "
            "Proposal(arch, fidelity) with a Fidelity(epochs, hp) or None, or WAIT"
        )

    def tell(self, trial: Trial, accuracy: float | None) -> None:
        """Give ``trial`` back with its outcome: validation accuracy (percent), or None.

        Raises ValueError for a trial this run did not hand out or that was already told,
        and for an outcome that is not None or a finite number in [0, 100] (a bool, NaN, an
        array); the trial then stays pending.
        """
        current = self._told_trial
        if current is not None and type(trial) is Arch and trial == current.arch:
            trial = current  # super().tell(arch, ...) from a LegacySearcher-run override
        try:
            book = self._trials
        except AttributeError:
            book = self._book()
        if accuracy is not None:  # checked before the trial is closed: a refusal keeps it
            check_accuracy(accuracy, self)
        self.observe(book.close(trial, self), accuracy)

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

    def config(self) -> dict[str, Any]:
        """The searcher's parameters, recorded with its results (JSON-serialisable)."""
        return {}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({params})"


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


def is_legacy_searcher(searcher: Searcher) -> bool:
    """True when ``searcher``'s class overrides ``ask`` or ``tell`` (the earlier interface)."""
    cls = type(searcher)
    return cls.ask is not Searcher.ask or cls.tell is not Searcher.tell


class LegacySearcher(Searcher):
    """Runs a searcher written for ``ask() -> Arch`` and ``tell(arch, accuracy)``.

    ``propose`` calls the wrapped ``ask``; ``observe`` calls the wrapped ``tell`` with the
    trial's architecture. The wrapped searcher sees outcomes in completion order, as before;
    with several workers, two pending trials of one architecture are told by architecture,
    which it cannot tell apart. Port it (:data:`MIGRATE_SEARCHER`) to use trial ids.
    """

    def __init__(self, inner: Searcher) -> None:
        if not isinstance(inner, Searcher):
            raise ValueError(f"LegacySearcher wraps a Searcher, got {inner!r}")
        self.inner = inner
        self.needs_proxy = inner.needs_proxy

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    def setup(self, context: SearchContext) -> None:
        self.inner.setup(context)
        super().setup(context)

    def reset(self) -> None:
        self._inner_trials: list[Trial | None] = []  # per trial id: the inner one, if any

    def propose(self) -> Arch | None:
        out: Any = type(self.inner).ask(self.inner)
        if out is None:
            return None
        if isinstance(out, Trial):  # an ask override that calls the new super().ask()
            self._inner_trials.append(out)
            return out.arch
        if type(out) is not Arch:
            raise ValueError(f"{self.inner!r}.ask() returned {out!r}; expected an Arch or None")
        self._inner_trials.append(None)
        return out

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        inner, inner_trial = self.inner, self._inner_trials[trial.id]
        if type(inner).tell is Searcher.tell:
            if inner_trial is None:
                inner.observe(trial, accuracy)
            else:
                inner.tell(inner_trial, accuracy)
            return
        # A tell(arch, accuracy) override; a call it makes to super().tell(arch, ...)
        # reaches Searcher.tell, which takes the arch as this trial.
        inner._told_trial = inner_trial
        try:
            tell: Any = type(inner).tell
            tell(inner, trial.arch, accuracy)
        finally:
            inner._told_trial = None

    def recommend(self) -> Arch | None:
        return self.inner.recommend()

    def config(self) -> dict[str, Any]:
        return self.inner.config()

    def __repr__(self) -> str:
        return repr(self.inner)


def as_trial_searcher(searcher: Searcher) -> Searcher:
    """``searcher`` itself, or a :class:`LegacySearcher` around one written for the earlier
    interface (with a ``FutureWarning`` saying how to migrate). ValueError for anything
    that is not a usable Searcher."""
    if not isinstance(searcher, Searcher):
        raise ValueError(f"searcher must be a Searcher instance, got {searcher!r}")
    if isinstance(searcher, LegacySearcher):
        return searcher
    if is_legacy_searcher(searcher):
        warnings.warn(
            f"{type(searcher).__name__} overrides ask()/tell() on architectures, the earlier "
            f"searcher interface; it runs through LegacySearcher for now. To migrate, "
            f"{MIGRATE_SEARCHER}",
            FutureWarning,
            stacklevel=3,
        )
        return LegacySearcher(searcher)
    if type(searcher).propose is Searcher.propose:
        raise ValueError(f"{type(searcher).__name__} must implement propose() -> Arch | None")
    return searcher


__all__ = [
    "LegacySearcher",
    "Searcher",
    "as_trial_searcher",
    "check_positive_int",  # re-exported for plugins written against earlier versions
    "check_real",
    "is_legacy_searcher",
]
