"""The runner's dropped-proposal shortcuts answer as the plain calls do.

``Filter.keep_index`` against ``keep`` (answers, proxy charges and trace), ``index_keep``
not bypassing a subclass's ``keep``, ``Searcher.loop_calls`` against ``ask`` and
``tell(trial, None)``, and ``Trace.drop`` against ``EventLog.append_instant``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nasfilter.bench.spaces.sss import N_ARCHS, Arch, arch_from_index, index_of
from nasfilter.filters import Filter, ProxyThreshold, SuccessiveFrontiers
from nasfilter.filters.base import index_keep
from nasfilter.searchers.base import Searcher
from nasfilter.sim.events import EventKind, EventLog
from nasfilter.sim.problem import Budget, Problem
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from nasfilter.sim.trace import Trace
from nasfilter.sim.trial import Proposal, Trial
from tests.tables import random_proxy, random_table

TABLE = random_table(5)
PROXY = random_proxy(5)


def _set_up(flt: Filter, budget: float) -> Problem:
    problem = Problem(TABLE, np.random.default_rng(0), Budget(budget), proxy=PROXY)
    flt.setup(SearchContext(np.random.default_rng(7), ProxyHandle(problem)))
    return problem


@pytest.mark.parametrize(
    "make",
    [
        lambda: SuccessiveFrontiers(),
        lambda: SuccessiveFrontiers(patience=None),
        lambda: ProxyThreshold(tolerance=0.02),
        lambda: ProxyThreshold(tolerance=0.02, scan=False),
        lambda: ProxyThreshold(tolerance=0.02, scan_share=0.01),  # sample: some judged later
        lambda: SuccessiveFrontiers(patience=3, scan_share=0.01),
    ],
)
def test_keep_index_answers_and_charges_as_keep(make: object) -> None:
    indices = np.random.default_rng(3).integers(0, N_ARCHS, size=3000).tolist()
    indices += indices[:500]  # repeats: a filter's memory of what it passed or read
    plain, fast = make(), make()  # type: ignore[operator]
    p_plain, p_fast = _set_up(plain, 2e6), _set_up(fast, 2e6)
    by_index = index_keep(fast)
    got = [by_index(arch_from_index(i), i) for i in indices]
    want = [plain.keep(arch_from_index(i)) for i in indices]
    assert got == want
    assert 0 < sum(want) < len(want)  # the filter both passed and dropped
    assert p_fast.worker_seconds == p_plain.worker_seconds > 0
    assert p_fast.log.buffer == p_plain.log.buffer


class _PassAll(SuccessiveFrontiers):
    """Overrides keep only: the parent's keep_index must not be used."""

    def keep(self, arch: Arch) -> bool:
        return True


class _Odd(Filter):
    """A plugin without keep_index."""

    def keep(self, arch: Arch) -> bool:
        return index_of(arch) % 2 == 1


def test_index_keep_does_not_bypass_a_keep_override() -> None:
    pass_all, odd = _PassAll(), _Odd()
    _set_up(pass_all, 2e6)
    _set_up(odd, 2e6)
    assert all(index_keep(pass_all)(arch_from_index(i), i) for i in range(0, N_ARCHS, 97))
    assert [index_keep(odd)(arch_from_index(i), i) for i in range(6)] == [
        False,
        True,
        False,
        True,
        False,
        True,
    ]


class _Scripted(Searcher):
    """Proposes a fixed script and records what it is told."""

    def __init__(self) -> None:
        self.script: list[object] = []

    def reset(self) -> None:
        self.told: list[tuple[Trial, float | None]] = []

    def propose(self) -> object:  # type: ignore[override]
        return self.script.pop(0)

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        self.told.append((trial, accuracy))


class _Quiet(_Scripted):
    observe = Searcher.observe


def _scripted(cls: type[_Scripted]) -> _Scripted:
    searcher = cls()
    problem = Problem(TABLE, np.random.default_rng(0), Budget(1e6), proxy=PROXY)
    searcher.setup(SearchContext(np.random.default_rng(1), ProxyHandle(problem)))
    return searcher


def test_loop_calls_ask_and_drop_as_ask_and_tell_none() -> None:
    a, b = arch_from_index(12), arch_from_index(345)
    plain, fast = _scripted(_Scripted), _scripted(_Scripted)
    script = [a, Proposal(b), b, None]
    plain.script, fast.script = list(script), list(script)
    ask, dropped = fast.loop_calls()
    for _ in range(3):
        want, got = plain.ask(), ask()
        assert got == want and type(got) is Trial
        plain.tell(want, None)  # type: ignore[arg-type]
        dropped(got)
    assert plain.ask() is None and ask() is None
    assert (
        fast.told == plain.told == [(Trial(0, a), None), (Trial(1, b), None), (Trial(2, b), None)]
    )
    assert fast.pending == ()
    with pytest.raises(ValueError, match="trial id 0 was already told"):
        fast.tell(Trial(0, a), None)


def test_loop_calls_refuses_what_ask_refuses_and_skips_a_default_observe() -> None:
    fast = _scripted(_Scripted)
    fast.script = ["8:8:8:8:8"]
    ask, _ = fast.loop_calls()
    with pytest.raises(ValueError, match=r"propose\(\) returned '8:8:8:8:8'; expected an Arch"):
        ask()
    quiet = _scripted(_Quiet)
    quiet.script = [arch_from_index(1)]
    ask, dropped = quiet.loop_calls()
    trial = ask()
    assert quiet.pending == (trial,)
    dropped(trial)  # type: ignore[arg-type]
    assert quiet.pending == () and quiet.told == []


def test_trace_drop_packs_the_row_append_instant_packs_and_counts_past_the_limit() -> None:
    trace, log = Trace(limit=2), EventLog()
    for trial, (spent, now) in enumerate([(1.5, 2.5), (3.0, 4.25), (5.0, 6.0)]):
        trace.drop(trial, 100 + trial, spent, now)
        if trial < 2:
            log.append_instant(EventKind.DROP, trial, 100 + trial, math.nan, spent, now)
    assert trace.log.buffer == log.buffer and len(trace.log) == 2
    assert trace.unlogged["drop"] == 1
