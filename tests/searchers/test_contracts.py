"""The shipped contract suite over every registered searcher and filter and both examples,
and proof that the suite catches the faults it is about."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest

from examples.custom_filter import FastEnough
from examples.custom_searcher import LocalSearch
from nasfilter.bench.spaces.sss import N_ARCHS, Arch, neighbours
from nasfilter.filters import FILTERS, Filter
from nasfilter.searchers import SEARCHERS, RandomSearch, Searcher, arch_from_index
from nasfilter.sim.proxy_handle import ProxyHandle
from nasfilter.sim.trial import Trial
from nasfilter.testing.contracts import (
    DEFAULT_BUDGET,
    FilterContract,
    SearcherContract,
    check_filter,
    check_searcher,
)

# The model-based searchers refit their model on every proposal, and an Optuna trial costs
# milliseconds: 10-50 CPU seconds each here.
SLOW_CONTRACTS = (
    "model-based",
    "model-based-hw",
    "model-based-mf",
    "optuna-nsga2",
    "optuna-tpe",
    "optuna-random",
    "bohb",
    "mo-asha",
    "optuna-tpe-hyperband",  # 40 s and more each on a loaded machine
    # Several seconds each on 2 idle cores; tests/searchers/test_multifidelity_searchers.py runs
    # them in the fast set.
    "successive-halving",
    "asha",
    "hyperband",
)
# Filters whose contract runs take several seconds (most proposals dropped: the searcher
# runs up to its idle limit); tests/filters/test_filters.py covers them in the fast set.
SLOW_FILTER_CONTRACTS = ("successive-frontiers", "drop-all")
# Filters the (sss) contract cannot run, each with why; their runs are tested elsewhere.
NO_CONTRACT_FILTERS = {
    "zerocost-frontiers": "the contract's hand-made sss tables have no zero-cost scores; "
    "tests/filters/test_zerocost_filter.py runs it on tss and on sss with a hand-made file",
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[pytest.mark.slow] if n in SLOW_CONTRACTS else [])
        for n in SEARCHERS.names()
    ],
)
def test_every_registered_searcher_passes_the_contract(name: str) -> None:
    # TPE's own cost grows with the trials, and with the pruner's one-epoch evaluations a run
    # of the default 80000 s has thousands: its contract runs on a quarter of that budget.
    budget = 20_000.0 if name == "optuna-tpe-hyperband" else DEFAULT_BUDGET
    check_searcher(lambda: SEARCHERS.create(name), budget=budget)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[pytest.mark.slow] if n in SLOW_FILTER_CONTRACTS else [])
        for n in FILTERS.names()
        if n not in NO_CONTRACT_FILTERS
    ],
)
def test_every_registered_filter_passes_the_contract(name: str) -> None:
    check_filter(lambda: FILTERS.create(name))


def test_the_online_proxy_threshold_passes_the_contract() -> None:
    check_filter(lambda: FILTERS.create("proxy-threshold[scan=False]"))


# The way a plugin reuses the suite: subclass it as a pytest test class.
class TestLocalSearchContract(SearcherContract):
    def make_searcher(self) -> Searcher:
        return LocalSearch(patience=10)


class TestFastEnoughContract(FilterContract):
    def make_filter(self) -> Filter:
        return FastEnough(min_throughput=5e5)


# ------------------------------------------------------------ the suite catches faults
class GlobalRandom(RandomSearch):
    name = "global-random"

    def propose(self) -> Arch | None:
        random.random()
        return super().propose()


class GlobalNumpy(RandomSearch):
    name = "global-numpy"

    def propose(self) -> Arch | None:
        np.random.seed(7)  # deterministic, but changes the global state
        return arch_from_index(int(np.random.randint(N_ARCHS)))


class ReseedsOnly(RandomSearch):
    """Re-seeds without drawing: the state may end where it began, but seeding is caught."""

    name = "reseeds-only"

    def propose(self) -> Arch | None:
        state = random.getstate()
        random.seed(1)  # caught although the state is put back
        random.setstate(state)
        return super().propose()


class TorchSeeds(RandomSearch):
    name = "torch-seeds"

    def propose(self) -> Arch | None:
        import torch

        torch.manual_seed(3)
        return super().propose()


class Unseeded(RandomSearch):
    name = "unseeded"

    def propose(self) -> Arch | None:
        return arch_from_index(int(np.random.default_rng().integers(N_ARCHS)))


class Stateful(RandomSearch):
    """Forgets to reset: its second run differs from a fresh one."""

    name = "stateful"

    def reset(self) -> None:
        if not hasattr(self, "_draws"):
            self._draws: list[int] = []
        self._draws.append(0)


class BadProposal(RandomSearch):
    name = "bad-proposal"

    def propose(self) -> Arch | None:
        return 5  # type: ignore[return-value]


class Crashes(RandomSearch):
    name = "crashes"

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        if accuracy is None:
            raise RuntimeError("cannot handle a dropped proposal")


@pytest.mark.parametrize(
    ("cls", "match"),
    [
        (GlobalRandom, "touched global random state \\(random\\)"),
        (GlobalNumpy, "touched global random state \\(numpy.random\\)"),
        pytest.param(  # a full run; GlobalRandom's case checks the same message, fast
            ReseedsOnly, "touched global random state \\(random\\)", marks=pytest.mark.slow
        ),
        pytest.param(  # imports torch: slow
            TorchSeeds, "touched global random state \\(torch\\)", marks=pytest.mark.slow
        ),
        (Unseeded, "one seed differ"),
        (Stateful, "reused instance gives another trace"),
    ],
)
def test_the_suite_catches_faulty_searchers(cls: type[Searcher], match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        check_searcher(cls)


def test_the_suite_catches_bad_proposals_and_crashes() -> None:
    with pytest.raises(ValueError, match="expected an Arch or None"):
        check_searcher(BadProposal)
    with pytest.raises(RuntimeError, match="dropped proposal"):
        check_searcher(Crashes)


class AnswersAList(Filter):
    name = "answers-a-list"

    def keep(self, arch: Arch) -> bool:
        return [arch]  # type: ignore[return-value]


class TorchRandom(Filter):
    name = "torch-random"

    def keep(self, arch: Arch) -> bool:
        import torch

        torch.rand(1)
        return True


def test_the_suite_catches_faulty_filters() -> None:
    with pytest.raises(ValueError, match="expected True or False"):
        check_filter(AnswersAList)
    with pytest.raises(AssertionError, match=r"global random state \(torch\)"):
        check_filter(TorchRandom)


# ------------------------------------------------------------ pending trials
class KeyedByArch(Searcher):
    """Matches outcomes to proposals by architecture value (the collision the trial ids
    remove): two pending proposals of one architecture break it."""

    name = "keyed-by-arch"

    def reset(self) -> None:
        self.waiting: dict[Arch, int] = {}
        self.k = 0

    def propose(self) -> Arch | None:
        self.k += 1
        arch = arch_from_index(self.k // 2)  # every architecture proposed twice in a row
        if arch in self.waiting:
            raise RuntimeError(f"{arch} is already pending")
        self.waiting[arch] = self.k
        return arch

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        del self.waiting[trial.arch]


def test_the_suite_catches_a_searcher_that_collides_on_pending_trials() -> None:
    with pytest.raises(RuntimeError, match="already pending"):
        check_searcher(KeyedByArch)


def test_tell_refuses_unknown_and_repeated_trials() -> None:
    from nasfilter.testing.contracts import _context, default_inputs

    s = RandomSearch()
    s.setup(_context(default_inputs(), 0, 1e5))
    a, b = s.ask(), s.ask()
    assert a is not None and b is not None and (a.id, b.id) == (0, 1)
    assert s.pending == (a, b)
    s.tell(b, 70.0)  # out of order
    with pytest.raises(ValueError, match="trial id 1 was already told"):
        s.tell(b, 70.0)
    with pytest.raises(ValueError, match="trial id 7 was never asked"):
        s.tell(Trial(7, a.arch), 70.0)
    with pytest.raises(ValueError, match="takes the Trial that ask\\(\\) returned"):
        s.tell(a.arch, 70.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="was asked for"):
        s.tell(Trial(a.id, neighbours(a.arch)[0]), 70.0)
    s.tell(a, None)
    assert s.pending == ()


# ------------------------------------------------------------ the earlier interface
class OldStyleSearcher(Searcher):
    """Written for ask() -> Arch and tell(arch, accuracy): refused at setup."""

    name = "old-style"

    def reset(self) -> None:
        self.told: list[tuple[Arch, float | None]] = []

    def ask(self) -> Arch:  # type: ignore[override]
        return arch_from_index(int(self.rng.integers(N_ARCHS)))

    def tell(self, arch: Arch, accuracy: float | None) -> None:  # type: ignore[override]
        self.told.append((arch, accuracy))


class OldStyleFilter(Filter):
    """Written for select(candidates, proxy) -> list: refused at setup."""

    name = "old-style-filter"
    needs_proxy = True

    def select(self, candidates: Sequence[Arch], proxy: ProxyHandle) -> list[Arch]:
        return [a for a in candidates if proxy.query(a).throughput > 2e5]


class OldTellOnABuiltin(RandomSearch):
    """A built-in subclass whose tell(arch, accuracy) override calls super().tell(arch)."""

    name = "old-tell"

    def tell(self, arch: Arch, accuracy: float | None) -> None:  # type: ignore[override]
        super().tell(arch, accuracy)  # type: ignore[arg-type]


class OldAskOnABuiltin(RandomSearch):
    """A built-in subclass whose ask override calls super().ask() (now a Trial)."""

    name = "old-ask"

    def ask(self) -> Trial | None:
        return super().ask()


MIGRATE_SEARCHER_TEXT = "rename ask\\(\\) to propose\\(\\)"
MIGRATE_FILTER_TEXT = "replace select.*with keep"


@pytest.mark.parametrize("cls", [OldStyleSearcher, OldTellOnABuiltin, OldAskOnABuiltin])
def test_a_searcher_of_the_earlier_interface_is_refused_at_setup(cls: type[Searcher]) -> None:
    from nasfilter.runs.runner import make_problem
    from nasfilter.sim.proxy_handle import SearchContext
    from nasfilter.testing.contracts import default_inputs

    table, _ = default_inputs()
    context = SearchContext(np.random.default_rng(0), ProxyHandle(make_problem(table, 5000.0, 0)))
    with pytest.raises(ValueError, match=f"{cls.__name__} overrides ask.*{MIGRATE_SEARCHER_TEXT}"):
        cls().setup(context)


def test_the_earlier_interface_is_refused_before_a_run_saying_how_to_migrate() -> None:
    from nasfilter.runs.runner import make_problem, run_search
    from nasfilter.testing.contracts import default_inputs

    table, proxy = default_inputs()
    problem = make_problem(table, 5000.0, 0, proxy=proxy)
    with pytest.raises(ValueError, match=f"OldStyleSearcher overrides.*{MIGRATE_SEARCHER_TEXT}"):
        run_search(OldStyleSearcher(), problem)
    with pytest.raises(ValueError, match=f"OldStyleFilter defines select.*{MIGRATE_FILTER_TEXT}"):
        run_search(RandomSearch(), problem, filter=OldStyleFilter())
    assert problem.n_evaluations == 0  # refused before anything was charged


def test_a_searcher_with_no_proposal_method_is_refused() -> None:
    from nasfilter.runs.runner import make_problem, run_search
    from nasfilter.testing.contracts import default_inputs

    class Empty(Searcher):
        name = "empty"

    with pytest.raises(ValueError, match="must implement propose"):
        run_search(Empty(), make_problem(default_inputs()[0], 5000.0, 0))
