"""Contract tests every searcher and filter must pass, shipped for plugins to reuse.

In a plugin's own tests (pytest collects the ``test_*`` methods of a ``Test*`` subclass)::

    from nasfilter.testing.contracts import FilterContract, SearcherContract

    class TestMySearcher(SearcherContract):
        def make_searcher(self):
            return MySearcher(population=5)

    class TestMyFilter(FilterContract):
        def make_filter(self):
            return MyFilter()

or call :func:`check_searcher` / :func:`check_filter`, which run every check and raise
AssertionError naming the one that failed. The checks:

- proposals are valid architectures (an :class:`~nasfilter.space.Arch` that validates);
  a filter returns a sub-list of its candidates, in order;
- the same seed gives an identical trace (two fresh instances, and one instance reused);
- the budget is respected: no query starts once the clock has reached it;
- a searcher works with a filter that drops everything (the run ends with a status, no
  evaluation happens, every proposal is told None); a filter works when the budget ends
  in the middle of its proxy queries;
- no global random state is touched: ``random``, ``numpy.random`` and ``torch`` (when
  installed) keep their state.

The problem is the embedded synthetic table with the V100 roofline proxy (override
:meth:`SearcherContract.make_problem_inputs` for another), so a check costs well under a
second.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nasfilter.filters import DropAll, Filter
from nasfilter.metered import ProxyHandle
from nasfilter.problem import EVALUATE, Budget
from nasfilter.proxy import ProxyTable
from nasfilter.runner import STATUSES, RunResult, make_problem, run_search
from nasfilter.searchers import RandomSearch, Searcher
from nasfilter.space import N_ARCHS, Arch
from nasfilter.table import BenchmarkTable

DEFAULT_BUDGET = 80_000.0  # s: a full proxy scan (65536 s at 2 s) plus some evaluations
DROP_ALL_MAX_IDLE = 300  # proposals in a row before a drop-all run stops "stalled"

Inputs = tuple[BenchmarkTable, ProxyTable]


def default_inputs() -> Inputs:
    """The embedded synthetic CIFAR-10 table and the V100 roofline proxy."""
    from nasfilter.experiment import _proxy, _table

    return _table(None, "cifar10"), _proxy("roofline", "v100", "cifar10", None)


class _Recording(Filter):
    """Wraps a filter (or passes everything) and records what it saw and returned."""

    name = "recording"

    def __init__(self, inner: Filter | None = None) -> None:
        self.inner = inner
        self.needs_proxy = inner is not None and inner.needs_proxy
        self.seen: list[Any] = []
        self.kept: list[list[Any]] = []

    def setup(self, context: Any) -> None:
        super().setup(context)
        if self.inner is not None:
            self.inner.setup(context)

    def reset(self) -> None:
        self.seen = []
        self.kept = []

    def select(self, candidates: Sequence[Arch], proxy: ProxyHandle) -> list[Arch]:
        self.seen.extend(candidates)
        out = list(candidates) if self.inner is None else self.inner.select(candidates, proxy)
        self.kept.append(list(out))
        return out


class _Spy(Searcher):
    """Wraps a searcher and records its tells."""

    name = "spy"

    def __init__(self, inner: Searcher) -> None:
        self.inner = inner
        self.needs_proxy = inner.needs_proxy
        self.tells: list[tuple[Arch, float | None]] = []

    def setup(self, context: Any) -> None:
        self.tells = []
        self.inner.setup(context)

    def ask(self) -> Arch | None:
        return self.inner.ask()

    def tell(self, arch: Arch, accuracy: float | None) -> None:
        self.tells.append((arch, accuracy))
        self.inner.tell(arch, accuracy)


def _run(
    inputs: Inputs,
    searcher: Searcher,
    filter: Filter | None,
    seed: int,
    budget: float,
    max_idle: int = 10_000,
    max_evaluations: int | None = None,
) -> RunResult:
    table, proxy = inputs
    problem = make_problem(table, Budget(budget, max_evaluations), seed, proxy=proxy)
    return run_search(searcher, problem, filter=filter, seed=seed, max_idle=max_idle)


def _same_events(a: RunResult, b: RunResult) -> bool:
    ea, eb = a.events, b.events
    return ea.keys() == eb.keys() and all(
        np.array_equal(ea[k], eb[k], equal_nan=ea[k].dtype.kind == "f") for k in ea
    )


def _check_budget(result: RunResult, budget: float, who: str) -> None:
    ev = result.events
    started = ev["clock"] - ev["cost"]
    assert result.status in STATUSES, f"{who}: unknown run status {result.status!r}"
    assert np.all(started < budget), (
        f"{who}: a query started at {started.max():.1f} s, at or after the budget {budget:g} s"
    )
    assert result.clock == (ev["clock"][-1] if len(ev["clock"]) else 0.0)


# --------------------------------------------------------------------------- global state


def _torch() -> Any:
    if "torch" in sys.modules or importlib.util.find_spec("torch") is not None:
        import torch

        return torch
    return None


def _global_states() -> dict[str, Any]:
    states: dict[str, Any] = {
        "random": random.getstate(),
        "numpy.random": np.random.get_state(legacy=False),
    }
    torch = _torch()
    if torch is not None:
        states["torch"] = torch.random.get_rng_state().clone()
    return states


def _changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    changed = []
    if before["random"] != after["random"]:
        changed.append("random")
    b, a = before["numpy.random"], after["numpy.random"]
    if b["bit_generator"] != a["bit_generator"] or any(
        not np.array_equal(np.asarray(b["state"][k]), np.asarray(a["state"][k])) for k in b["state"]
    ):
        changed.append("numpy.random")
    if "torch" in before and not bool((before["torch"] == after["torch"]).all()):
        changed.append("torch")
    return changed


def _seed_functions() -> list[tuple[Any, str, str]]:
    """(owner, attribute, label) of every function that re-seeds a global generator."""
    found: list[tuple[Any, str, str]] = [
        (random, "seed", "random"),
        (np.random, "seed", "numpy.random"),
    ]
    torch = _torch()
    if torch is not None:
        found += [(torch, "manual_seed", "torch"), (torch.random, "manual_seed", "torch")]
    return found


def check_no_global_random_state(run: Callable[[], object], who: str) -> None:
    """``run()`` must leave the global generators of random, numpy and torch untouched.

    A draw shows as a changed state; a re-seeding is caught by watching the seed functions
    during the run (it might restore the very state it found). The check itself never draws
    from, nor seeds, a global generator.
    """
    seeded: list[str] = []
    patches = []
    for owner, attr, label in _seed_functions():
        original = getattr(owner, attr)

        def watch(*args: Any, _f: Any = original, _label: str = label, **kwargs: Any) -> Any:
            seeded.append(_label)
            return _f(*args, **kwargs)

        patches.append((owner, attr, original))
        setattr(owner, attr, watch)
    try:
        before = _global_states()
        run()
        changed = _changed(before, _global_states())
    finally:
        for owner, attr, original in patches:
            setattr(owner, attr, original)
    touched = sorted(set(changed) | set(seeded))
    assert not touched, (
        f"{who} touched global random state ({', '.join(touched)}); draw only from the "
        "Generator passed in setup (self.rng)"
    )


# ------------------------------------------------------------------------------ searchers
class SearcherContract:
    """Contract tests for a searcher; subclass as ``Test...`` and define make_searcher."""

    budget: float = DEFAULT_BUDGET
    seed: int = 3

    def make_searcher(self) -> Searcher:
        """A fresh instance of the searcher under test."""
        raise NotImplementedError("define make_searcher() in your Test class")

    def make_problem_inputs(self) -> Inputs:
        """The table and proxy to run on (default: :func:`default_inputs`)."""
        return default_inputs()

    def _who(self) -> str:
        return f"searcher {self.make_searcher()!r}"

    def test_proposals_are_valid_architectures(self) -> None:
        recorder = _Recording()
        result = _run(
            self.make_problem_inputs(), self.make_searcher(), recorder, self.seed, self.budget
        )
        assert recorder.seen, f"{self._who()} proposed nothing"
        for arch in recorder.seen:
            assert type(arch) is Arch, f"{self._who()} proposed {arch!r}, not an Arch"
            assert Arch(arch.channels) == arch and 0 <= arch.index < N_ARCHS
        assert result.n_asked == len(recorder.seen)

    def test_same_seed_gives_identical_trace(self) -> None:
        inputs = self.make_problem_inputs()
        a = _run(inputs, self.make_searcher(), None, self.seed, self.budget)
        b = _run(inputs, self.make_searcher(), None, self.seed, self.budget)
        assert _same_events(a, b), f"{self._who()}: two runs with one seed differ"
        reused = self.make_searcher()
        _run(inputs, reused, None, self.seed + 1, self.budget)
        c = _run(inputs, reused, None, self.seed, self.budget)
        assert _same_events(a, c), (
            f"{self._who()}: a reused instance gives another trace; reset() must clear "
            "every piece of per-run state"
        )
        assert a.status == b.status == c.status

    def test_budget_is_respected(self) -> None:
        inputs = self.make_problem_inputs()
        for budget in (self.budget, 1000.0):
            result = _run(inputs, self.make_searcher(), None, self.seed, budget)
            _check_budget(result, budget, self._who())
        capped = _run(inputs, self.make_searcher(), None, self.seed, self.budget, max_evaluations=5)
        assert capped.n_evaluations <= 5

    def test_works_with_a_filter_that_drops_everything(self) -> None:
        spy = _Spy(self.make_searcher())
        result = _run(
            self.make_problem_inputs(), spy, DropAll(), self.seed, self.budget, DROP_ALL_MAX_IDLE
        )
        assert result.n_evaluations == 0
        assert not np.any(result.events["kind"] == EVALUATE)
        assert result.status in ("stalled", "searcher-done", "budget")
        assert all(acc is None for _, acc in spy.tells)
        assert len(spy.tells) == result.n_dropped == result.n_asked

    def test_touches_no_global_random_state(self) -> None:
        inputs = self.make_problem_inputs()
        check_no_global_random_state(
            lambda: _run(inputs, self.make_searcher(), None, self.seed, self.budget),
            self._who(),
        )


# -------------------------------------------------------------------------------- filters
class FilterContract:
    """Contract tests for a filter; subclass as ``Test...`` and define make_filter."""

    budget: float = DEFAULT_BUDGET
    seed: int = 3

    def make_filter(self) -> Filter:
        """A fresh instance of the filter under test."""
        raise NotImplementedError("define make_filter() in your Test class")

    def make_searcher(self) -> Searcher:
        """The searcher that feeds the filter (default: random search)."""
        return RandomSearch()

    def make_problem_inputs(self) -> Inputs:
        return default_inputs()

    def _who(self) -> str:
        return f"filter {self.make_filter()!r}"

    def test_returns_a_sub_list_of_its_candidates(self) -> None:
        recorder = _Recording(self.make_filter())
        result = _run(
            self.make_problem_inputs(), self.make_searcher(), recorder, self.seed, self.budget
        )
        for cand, kept in zip([[a] for a in recorder.seen], recorder.kept, strict=True):
            assert kept in ([], cand), f"{self._who()} returned {kept!r} for {cand!r}"
        assert result.n_evaluations == sum(len(k) for k in recorder.kept) or (
            result.status == "budget"
        )
        # Several candidates at once: a sub-list, in their order.
        table, proxy = self.make_problem_inputs()
        from nasfilter.metered import SearchContext
        from nasfilter.runner import seed_streams

        problem = make_problem(table, Budget(self.budget), self.seed, proxy=proxy)
        handle = ProxyHandle(problem)
        f = self.make_filter()
        f.setup(SearchContext(seed_streams(self.seed).filter, handle))
        cands = [Arch.from_index(i) for i in (0, 284, 4095, 12345, 32767, 284)]
        kept = f.select(cands, handle)
        assert isinstance(kept, list)
        it = iter(cands)
        assert all(any(k == c for c in it) for k in kept), (
            f"{self._who()} returned {kept!r}, not a sub-list of {cands!r} in order"
        )

    def test_same_seed_gives_identical_trace(self) -> None:
        inputs = self.make_problem_inputs()
        a = _run(inputs, self.make_searcher(), self.make_filter(), self.seed, self.budget)
        b = _run(inputs, self.make_searcher(), self.make_filter(), self.seed, self.budget)
        assert _same_events(a, b), f"{self._who()}: two runs with one seed differ"
        reused = self.make_filter()
        _run(inputs, self.make_searcher(), reused, self.seed + 1, self.budget)
        c = _run(inputs, self.make_searcher(), reused, self.seed, self.budget)
        assert _same_events(a, c), (
            f"{self._who()}: a reused instance gives another trace; reset() must clear "
            "every piece of per-run state"
        )

    def test_budget_is_respected(self) -> None:
        inputs = self.make_problem_inputs()
        # 1000 s ends a full scan of the proxy after 500 queries.
        for budget in (self.budget, 1000.0):
            result = _run(inputs, self.make_searcher(), self.make_filter(), self.seed, budget)
            _check_budget(result, budget, self._who())

    def test_touches_no_global_random_state(self) -> None:
        inputs = self.make_problem_inputs()
        check_no_global_random_state(
            lambda: _run(inputs, self.make_searcher(), self.make_filter(), self.seed, self.budget),
            self._who(),
        )


# ------------------------------------------------------------------------ one-call checks
def _run_all(contract: object) -> None:
    for name in sorted(dir(contract)):
        if name.startswith("test_"):
            try:
                getattr(contract, name)()
            except AssertionError as exc:
                raise AssertionError(f"{name}: {exc}") from exc


def check_searcher(factory: Callable[[], Searcher], inputs: Inputs | None = None) -> None:
    """Run every searcher check on instances from ``factory``; AssertionError on failure."""

    class _Contract(SearcherContract):
        def make_searcher(self) -> Searcher:
            return factory()

        def make_problem_inputs(self) -> Inputs:
            return inputs if inputs is not None else default_inputs()

    _run_all(_Contract())


def check_filter(factory: Callable[[], Filter], inputs: Inputs | None = None) -> None:
    """Run every filter check on instances from ``factory``; AssertionError on failure."""

    class _Contract(FilterContract):
        def make_filter(self) -> Filter:
            return factory()

        def make_problem_inputs(self) -> Inputs:
            return inputs if inputs is not None else default_inputs()

    _run_all(_Contract())
