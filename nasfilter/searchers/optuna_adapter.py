"""Any Optuna sampler as a nasfilter searcher (optional extra: ``pip install nasfilter[optuna]``).

The search space is five categorical parameters ``c1..c5`` over the channel choices; the
study is multi-objective, both maximized: validation accuracy (percent, from evaluations)
and log10 throughput (images/s, from the proxy, charged like any query; a repeated proxy
query is free by the problem's default rule). The sampler is built with a seed drawn from
the run's generator, so a run is a pure function of its seed.

Repeat rule: Optuna may propose an architecture it has already had evaluated. Such a trial
is answered from the adapter's memory (the first accuracy seen for it, no new charge) and
the sampler is asked again; after ``max_repeats`` repeats in a row the repeat is proposed
for evaluation after all (charged again with a new training seed, as NATS-Bench does), so a
sampler that has converged cannot stall a run. A proposal a filter drops is told to Optuna
as a pruned trial.

Each nasfilter trial (``propose`` / ``observe``) maps to its own Optuna trial by trial id, so
several may be pending at once (``--workers K``), two of them even of one architecture, and
outcomes may arrive in any order.

:class:`OptunaHyperband` is the multi-fidelity peer: Optuna's TPESampler with its
HyperbandPruner over epochs of hp 12, one Optuna trial reported at several fidelities.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from nasfilter.bench.fidelity import Fidelity, is_full
from nasfilter.bench.spaces import SSS, Space
from nasfilter.bench.spaces.sss import Arch, arch_from_index, index_of
from nasfilter.checks import check_positive_int
from nasfilter.searchers.base import Searcher
from nasfilter.searchers.successive_halving import check_epochs_in_table, check_schedule
from nasfilter.sim.trial import Proposal, Trial

SAMPLERS = ("nsga2", "tpe", "random")
PARAMS = tuple(f"c{k + 1}" for k in range(SSS.n_positions))  # c1..c5: sss channel counts


def space_params(space: Space) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """The Optuna parameter names and their choices for ``space``: ``c1..c5`` over the
    channel counts on sss, ``e1..e6`` (one per edge) over the operation names on tss."""
    if space is SSS:
        return PARAMS, SSS.choices
    return tuple(f"e{k + 1}" for k in range(space.n_positions)), tuple(space.choices)


def arch_of_params(space: Space, names: tuple[str, ...], params: dict[str, Any]) -> Any:
    """The architecture of ``space`` that an Optuna trial's ``params`` name."""
    if space is SSS:
        return arch_from_index(Arch(tuple(int(params[p]) for p in PARAMS)).index)
    digits = np.array([space.choices.index(params[p]) for p in names], dtype=np.int64)
    return space.arch(int(space.from_digits(digits)))


def arch_index(space: Space, arch: Any) -> int:
    """The index of ``arch``, an architecture of ``space``."""
    return index_of(arch) if space is SSS else space.index_of(arch)


def optuna_available() -> bool:
    """Whether ``optuna`` can be imported (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("optuna") is not None


class OptunaMissingError(ImportError, ValueError):
    """Optuna is not installed; the message names the extra to install."""


def import_optuna() -> Any:
    """The ``optuna`` module, or OptunaMissingError naming the ``optuna`` extra."""
    try:
        import optuna
    except ImportError as exc:
        raise OptunaMissingError(
            "the Optuna searchers (optuna-nsga2, optuna-tpe, optuna-random) need optuna: "
            "pip install 'nasfilter[optuna]'"
        ) from exc
    return optuna


@functools.cache
def _channel_choices(optuna: Any) -> Any:
    """Optuna's CategoricalDistribution, equal at once to itself: Optuna compares each
    parameter's distribution with the one recorded before, choice by choice, several times
    a trial (a sixth of a random-sampler trial's cost); here every trial of a study is asked
    with the same five objects. Any other comparison is Optuna's, by value."""
    base = optuna.distributions.CategoricalDistribution

    class ChannelChoices(base):  # type: ignore[misc, valid-type]
        def __eq__(self, other: object) -> bool:
            if self is other:
                return True
            if isinstance(other, base):  # by value, as Optuna's, and with Optuna's class too
                return bool(base.__eq__(other, self))
            return NotImplemented

        __hash__ = base.__hash__

    return ChannelChoices


def _teller() -> Callable[..., None]:
    """``tell(study, trial, values=None, state=None)``: ``Study.tell`` without the deep copy
    of the finished trial that it returns (unused here; a third of a trial's cost with the
    random sampler), by the internal function ``Study.tell`` calls with the same arguments;
    ``Study.tell`` itself in Optuna versions without that function."""
    try:
        from optuna.study._tell import _tell_with_warning
    except ImportError:  # pragma: no cover (Optuna < 3.0 or a later reorganisation)
        return lambda study, trial, values=None, state=None: study.tell(trial, values, state)

    def tell(study: Any, trial: Any, values: Any = None, state: Any = None) -> None:
        _tell_with_warning(study=study, trial=trial, value_or_values=values, state=state)

    return tell


def _nsga2_sampler(optuna: Any, population_size: int, seed: int) -> Any:
    """Optuna's NSGAIISampler, with the bookkeeping it redoes over all trials at every trial
    kept up to date as trials complete instead; the proposals are identical.

    Optuna (4.x and later) scans every trial, O(n) a trial and most of a long run's time,
    three times: to find a new trial's generation (``get_trial_generation``), to find the
    cached parents of its generation (``get_parent_population``), and to intersect the
    completed trials' search spaces (``infer_relative_search_space``). The subclass keeps
    the count of completed trials per generation, each generation's parents (the order
    Optuna returns: elite selection's on first use, trial order from its cache after) and
    the intersection of the completed trials' distributions, sorted by name, as Optuna's
    ``IntersectionSearchSpace`` gives it. Optuna versions without those methods get the
    plain sampler.
    """
    base = optuna.samplers.NSGAIISampler
    if not all(
        hasattr(base, name) for name in ("get_trial_generation", "_get_generation_key",
                                         "get_parent_population")
    ):
        return base(population_size=population_size, seed=seed)
    return _counting_nsga2(base, optuna.trial.TrialState.COMPLETE)(
        population_size=population_size, seed=seed
    )


def _counting_nsga2(base: Any, complete: Any) -> Any:
    """The subclass of NSGAIISampler ``base`` described by :func:`_nsga2_sampler`."""

    class CountingNSGAIISampler(base):
        def _books(self) -> dict[str, Any]:
            books: dict[str, Any] = self.__dict__.setdefault(
                "_books_", {"complete": {}, "parents": {}, "space": None}
            )
            return books

        def get_trial_generation(self, study: Any, trial: Any) -> int:
            key = self._get_generation_key()
            generation = trial.system_attrs.get(key, None)
            if generation is not None:
                return int(generation)
            counts = self._books()["complete"]
            top = max((g for g, n in counts.items() if n > 0 and g >= 0), default=0)
            generation = top if counts.get(top, 0) < self.population_size else top + 1
            study._storage.set_trial_system_attr(trial._trial_id, key, generation)
            return generation

        def get_parent_population(self, study: Any, generation: int) -> list[Any]:
            parents = self._books()["parents"]
            cached = parents.get(generation)
            if cached is None:
                cached = super().get_parent_population(study, generation)
                parents[generation] = sorted(cached, key=lambda t: t._trial_id)
            return list(cached)

        def infer_relative_search_space(self, study: Any, trial: Any) -> dict[str, Any]:
            space = self._books()["space"] or {}
            return {n: d for n, d in sorted(space.items()) if not d.single()}

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            try:
                super().after_trial(study, trial, state, values)
            finally:  # Optuna completes the trial even when after_trial raises
                if state == complete:
                    self._completed(trial)

        def _completed(self, trial: Any) -> None:
            books = self._books()
            g = int(trial.system_attrs.get(self._get_generation_key(), -1))
            books["complete"][g] = books["complete"].get(g, 0) + 1
            space, new = books["space"], trial.distributions
            books["space"] = (
                dict(new) if space is None
                else {n: d for n, d in space.items() if new.get(n) == d}
            )

    return CountingNSGAIISampler


class OptunaSearcher(Searcher):
    """An Optuna sampler behind propose/observe (module docstring).

    Args:
        sampler: one of :data:`SAMPLERS` (NSGAIISampler, TPESampler, RandomSampler).
        population_size: NSGA-II's population (>= 2; ignored by the others).
        max_repeats: repeated proposals in a row answered from memory before one is
            evaluated again (>= 0).
    """

    name: ClassVar[str] = "optuna"
    spaces: ClassVar[tuple[str, ...]] = ("sss", "tss")
    needs_proxy = True

    def __init__(self, sampler: str = "nsga2", population_size: int = 50, max_repeats: int = 100):
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
        self.sampler = sampler
        self.population_size = check_positive_int(
            population_size, "population_size (valid range: >= 2)", minimum=2
        )
        self.max_repeats = check_positive_int(
            max_repeats, "max_repeats (valid range: >= 0)", minimum=0
        )
        import_optuna()  # fail now, naming the extra, rather than inside a run

    def _make_sampler(self, optuna: Any, seed: int) -> Any:
        if self.sampler == "nsga2":
            return _nsga2_sampler(optuna, self.population_size, seed)
        if self.sampler == "tpe":
            return optuna.samplers.TPESampler(seed=seed, multivariate=True)
        return optuna.samplers.RandomSampler(seed=seed)

    def reset(self) -> None:
        optuna = import_optuna()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        seed = int(self.rng.integers(0, 2**31 - 1))
        self._study = optuna.create_study(
            directions=["maximize", "maximize"], sampler=self._make_sampler(optuna, seed)
        )
        self._names, choices = space_params(self.space)
        self._space = {p: _channel_choices(optuna)(choices) for p in self._names}
        self._pruned = optuna.trial.TrialState.PRUNED
        self._tell = _teller()
        self._pending: dict[int, Any] = {}  # nasfilter trial id -> Optuna trial
        self._proposed = 0  # proposals so far (the next trial id)
        self._known: dict[int, tuple[float, float]] = {}  # index -> (accuracy, log10 thr)
        self._repeats = 0

    def propose(self) -> Arch | None:
        while True:
            trial = self._study.ask(self._space)
            params = trial.params  # a deep copy at each reading: read once
            arch = arch_of_params(self.space, self._names, params)
            index = arch_index(self.space, arch)
            known = self._known.get(index)
            if known is not None and self._repeats < self.max_repeats:
                self._repeats += 1
                self._tell(self._study, trial, list(known))
                continue
            self._repeats = 0
            self.proxy.query(index)  # throughput, charged (free for a repeat)
            # The k-th proposal becomes trial id k (nasfilter.sim.trial).
            self._pending[self._proposed] = trial
            self._proposed += 1
            return arch

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        study_trial = self._pending.pop(trial.id, None)
        if study_trial is None:
            return
        if accuracy is None:
            self._tell(self._study, study_trial, state=self._pruned)
            return
        index = arch_index(self.space, trial.arch)
        log_thr = math.log10(self.proxy.query(index).throughput)  # free: asked before
        self._known.setdefault(index, (float(accuracy), log_thr))
        self._tell(self._study, study_trial, [float(accuracy), log_thr])


REPORTS = ("rungs", "epochs")


def report_steps(report: str, max_epochs: int, min_epochs: int, eta: int) -> tuple[int, ...]:
    """The epochs at which :class:`OptunaHyperband` evaluates and reports, ascending, ending
    at ``max_epochs``: every epoch (``"epochs"``) or the rungs ``min_epochs * eta ** k`` of
    the pruner's most aggressive bracket (``"rungs"``)."""
    if report == "epochs":
        return tuple(range(min_epochs, max_epochs + 1))
    steps, step = [], min_epochs
    while step < max_epochs:
        steps.append(step)
        step *= eta
    return (*steps, max_epochs)


class OptunaHyperband(Searcher):
    """Optuna's TPESampler with its HyperbandPruner, a BOHB-like peer, over epochs of hp 12.

    One Optuna trial is one architecture trained to more and more epochs: each report is a
    nasfilter trial at ``Fidelity(epochs)`` (the last one at the full evaluation), its
    accuracy reported as the intermediate value of step ``epochs``; after each report the
    pruner decides whether the Optuna trial goes on. Single objective (validation accuracy),
    as Optuna's pruners support no other; no proxy queries.

    How reports are charged: with the problem's default ``charging="retrain"`` every report
    trains from scratch, so ``report="rungs"`` (the default) reports only at the pruner's
    rungs (``min_epochs * eta ** k`` and the last epoch); with ``charging="resume"`` a
    report pays only its new epochs, so ``report="epochs"`` (every epoch) is honest there.
    The study has a fixed name, so the pruner's brackets (a hash of the name and trial
    number) are a function of the run's seed.

    Args:
        min_epochs, max_epochs, eta: the pruner's ``min_resource``, ``max_resource`` and
            ``reduction_factor`` (epochs of hp 12).
        report: one of :data:`REPORTS`.
        max_repeats: repeated proposals of a fully evaluated architecture answered from
            memory before one is evaluated again (as :class:`OptunaSearcher`).
    """

    name: ClassVar[str] = "optuna-tpe-hyperband"
    uses_fidelities: ClassVar[bool] = True  # evaluates at lower fidelities (needs curves)

    def __init__(
        self, min_epochs: int = 1, max_epochs: int = 12, eta: int = 3, report: str = "rungs",
        max_repeats: int = 100,
    ) -> None:
        self.min_epochs, self.max_epochs, _ = check_schedule(min_epochs, max_epochs, eta)
        self.eta = check_positive_int(eta, "eta (Optuna's reduction_factor, an integer >= 2)",
                                      minimum=2)
        if report not in REPORTS:
            raise ValueError(f"report must be one of {REPORTS}, got {report!r}")
        self.report = report
        self.max_repeats = check_positive_int(
            max_repeats, "max_repeats (valid range: >= 0)", minimum=0
        )
        import_optuna()

    def reset(self) -> None:
        check_epochs_in_table(self, self.max_epochs)
        optuna = import_optuna()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        seed = int(self.rng.integers(0, 2**31 - 1))
        pruner = optuna.pruners.HyperbandPruner(
            min_resource=self.min_epochs, max_resource=self.max_epochs,
            reduction_factor=self.eta,
        )
        self._study = optuna.create_study(
            study_name="nasfilter", direction="maximize", pruner=pruner,
            sampler=optuna.samplers.TPESampler(seed=seed, multivariate=True),
        )
        self._space = {
            p: optuna.distributions.CategoricalDistribution(SSS.choices) for p in PARAMS
        }
        self._pruned = optuna.trial.TrialState.PRUNED
        self._steps = report_steps(self.report, self.max_epochs, self.min_epochs, self.eta)
        self._pending: dict[int, tuple[Any, int]] = {}  # trial id -> (Optuna trial, step k)
        self._ready: list[tuple[Any, Arch, int]] = []  # (Optuna trial, arch, next step k)
        self._proposed = 0
        self._known: dict[int, float] = {}  # index -> accuracy of its full evaluation
        self._repeats = 0
        self.n_pruned = 0

    def _proposal(self, study_trial: Any, arch: Arch, k: int) -> Proposal:
        self._pending[self._proposed] = (study_trial, k)
        self._proposed += 1
        epochs = self._steps[k]
        fidelity = Fidelity(epochs, "12")
        return Proposal(arch, None if is_full(fidelity) else fidelity)

    def propose(self) -> Proposal:
        if self._ready:  # a surviving trial goes on first
            return self._proposal(*self._ready.pop(0))
        while True:
            trial = self._study.ask(self._space)
            arch = arch_from_index(Arch(tuple(int(trial.params[p]) for p in PARAMS)).index)
            known = self._known.get(index_of(arch))
            if known is not None and self._repeats < self.max_repeats:
                self._repeats += 1
                self._study.tell(trial, known)
                continue
            self._repeats = 0
            return self._proposal(trial, arch, 0)

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        study_trial, k = self._pending.pop(trial.id)
        if accuracy is None:  # a filter dropped it
            self._study.tell(study_trial, state=self._pruned)
            self.n_pruned += 1
            return
        study_trial.report(float(accuracy), self._steps[k])
        if k == len(self._steps) - 1:
            self._known.setdefault(index_of(trial.arch), float(accuracy))
            self._study.tell(study_trial, float(accuracy))
        elif study_trial.should_prune():
            self._study.tell(study_trial, state=self._pruned)
            self.n_pruned += 1
        else:
            self._ready.append((study_trial, trial.arch, k + 1))
