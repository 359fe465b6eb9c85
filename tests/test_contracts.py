"""The shipped contract suite over every registered searcher and filter and both examples,
and proof that the suite catches the faults it is about."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest

from examples.custom_filter import FastEnough
from examples.custom_searcher import LocalSearch
from nasfilter.filters import FILTERS, Filter
from nasfilter.metered import ProxyHandle
from nasfilter.searchers import SEARCHERS, RandomSearch, Searcher, arch_from_index
from nasfilter.space import N_ARCHS, Arch
from nasfilter.testing.contracts import (
    FilterContract,
    SearcherContract,
    check_filter,
    check_searcher,
)


@pytest.mark.parametrize("name", SEARCHERS.names())
def test_every_registered_searcher_passes_the_contract(name: str) -> None:
    check_searcher(lambda: SEARCHERS.create(name))


@pytest.mark.parametrize("name", FILTERS.names())
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

    def ask(self) -> Arch | None:
        random.random()
        return super().ask()


class GlobalNumpy(RandomSearch):
    name = "global-numpy"

    def ask(self) -> Arch | None:
        np.random.seed(7)  # deterministic, but changes the global state
        return arch_from_index(int(np.random.randint(N_ARCHS)))


class ReseedsOnly(RandomSearch):
    """Re-seeds without drawing: the state may end where it began, but seeding is caught."""

    name = "reseeds-only"

    def ask(self) -> Arch | None:
        state = random.getstate()
        random.seed(1)  # caught although the state is put back
        random.setstate(state)
        return super().ask()


class TorchSeeds(RandomSearch):
    name = "torch-seeds"

    def ask(self) -> Arch | None:
        import torch

        torch.manual_seed(3)
        return super().ask()


class Unseeded(RandomSearch):
    name = "unseeded"

    def ask(self) -> Arch | None:
        return arch_from_index(int(np.random.default_rng().integers(N_ARCHS)))


class Stateful(RandomSearch):
    """Forgets to reset: its second run differs from a fresh one."""

    name = "stateful"

    def reset(self) -> None:
        if not hasattr(self, "_pending"):
            self._pending: list[int] = []
        self._pending.append(0)


class BadProposal(RandomSearch):
    name = "bad-proposal"

    def ask(self) -> Arch | None:
        return 5  # type: ignore[return-value]


class Crashes(RandomSearch):
    name = "crashes"

    def tell(self, arch: Arch, accuracy: float | None) -> None:
        if accuracy is None:
            raise RuntimeError("cannot handle a dropped proposal")


@pytest.mark.parametrize(
    ("cls", "match"),
    [
        (GlobalRandom, "touched global random state \\(random\\)"),
        (GlobalNumpy, "touched global random state \\(numpy.random\\)"),
        (ReseedsOnly, "touched global random state \\(random\\)"),
        (TorchSeeds, "touched global random state \\(torch\\)"),
        (Unseeded, "two runs with one seed differ"),
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


class Reorders(Filter):
    name = "reorders"

    def select(self, candidates: Sequence[Arch], proxy: ProxyHandle) -> list[Arch]:
        return list(reversed(candidates))


class TorchRandom(Filter):
    name = "torch-random"

    def select(self, candidates: Sequence[Arch], proxy: ProxyHandle) -> list[Arch]:
        import torch

        torch.rand(1)
        return list(candidates)


def test_the_suite_catches_faulty_filters() -> None:
    with pytest.raises(AssertionError, match="not a sub-list"):
        check_filter(Reorders)
    with pytest.raises(AssertionError, match=r"global random state \(torch\)"):
        check_filter(TorchRandom)
