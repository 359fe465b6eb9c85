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

- proposals are valid architectures of the table's space (on sss an
  :class:`~nasfilter.bench.spaces.sss.Arch`) that read back from their arch string,
  handed out as trials with distinct ids; a filter answers True or False;
- the same seed gives an identical trace (two fresh instances, and one instance reused);
- pending trials: a searcher asked again before earlier trials are told (several trials
  at once, told out of order, the same architecture pending twice) copes, and a run with
  :data:`PENDING_WORKERS` simulated workers is deterministic per seed and within budget;
- the budget is respected: no query starts once the clock has reached it;
- what a run returns and recommends was evaluated at full fidelity (a multi-fidelity
  searcher's partial evaluations never count as observations of the front);
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

from collections.abc import Callable
from typing import Any

import numpy as np

from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.spaces.sss import Arch
from nasfilter.bench.table import BenchmarkTable
from nasfilter.filters import DropAll, Filter
from nasfilter.filters.base import validate_filter
from nasfilter.runs.experiment import RunSpec
from nasfilter.runs.experiment import inputs as run_inputs  # `inputs` names the tuples below
from nasfilter.runs.runner import STATUSES, RunResult, make_problem, run_search, seed_streams
from nasfilter.searchers import RandomSearch, Searcher
from nasfilter.searchers.base import validate_searcher
from nasfilter.sim.problem import EVALUATE, PARTIAL, PROXY, ZEROCOST, Budget
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from nasfilter.sim.trial import WAIT, Proposal, Trial, Wait
from nasfilter.testing.random_state import check_no_global_random_state

DEFAULT_BUDGET = 80_000.0  # s: a full proxy scan (65536 s at 2 s) plus some evaluations
DROP_ALL_MAX_IDLE = 300  # proposals in a row before a drop-all run stops "stalled"
PENDING_WORKERS = 4  # simulated workers of the pending-trials checks

Inputs = tuple[BenchmarkTable, ProxyTable]


def default_inputs() -> Inputs:
    """The embedded synthetic CIFAR-10 table and the V100 roofline proxy."""
    table, proxy, _ = run_inputs(RunSpec("random", table="synthetic", oracle="roofline"))
    return table, proxy


class _Recording(Filter):
    """Wraps a filter (or passes everything) and records what it saw and answered."""

    name = "recording"
    spaces = ("sss", "tss")  # any space: a wrapped filter checks its own in setup

    def __init__(self, inner: Filter | None = None) -> None:
        self.inner = None if inner is None else validate_filter(inner)
        self.needs_proxy = inner is not None and inner.needs_proxy
        self.seen: list[Any] = []
        self.answers: list[Any] = []

    def setup(self, context: Any) -> None:
        super().setup(context)
        if self.inner is not None:
            self.inner.setup(context)

    def reset(self) -> None:
        self.seen = []
        self.answers = []

    def keep(self, arch: Arch) -> bool:
        self.seen.append(arch)
        out = True if self.inner is None else self.inner.keep(arch)
        self.answers.append(out)
        return out


class _Spy(Searcher):
    """Wraps a searcher and records its trials and tells."""

    name = "spy"
    spaces = ("sss", "tss")  # any space: the wrapped searcher checks its own in setup

    def __init__(self, inner: Searcher) -> None:
        self.inner = validate_searcher(inner)
        self.needs_proxy = self.inner.needs_proxy
        self.tells: list[tuple[Trial, float | None]] = []
        self.trials: list[Trial] = []

    def setup(self, context: SearchContext) -> None:
        self.inner.setup(context)
        super().setup(context)

    def reset(self) -> None:
        self.tells = []
        self.trials = []

    def propose(self) -> Proposal | Wait | None:
        trial = self.inner.ask()
        if trial is None or trial is WAIT:
            return trial
        self.trials.append(trial)  # the k-th proposal is this wrapper's trial id k
        return Proposal(trial.arch, trial.fidelity)

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        inner = self.trials[trial.id]
        self.tells.append((inner, accuracy))
        self.inner.tell(inner, accuracy)

    def recommend(self) -> Arch | None:
        return self.inner.recommend()


def _run(
    inputs: Inputs,
    searcher: Searcher,
    filter: Filter | None,
    seed: int,
    budget: float,
    max_idle: int = 10_000,
    max_evaluations: int | None = None,
    workers: int = 1,
) -> RunResult:
    table, proxy = inputs
    problem = make_problem(table, Budget(budget, max_evaluations), seed, proxy=proxy)
    return run_search(
        searcher, problem, filter=filter, max_idle=max_idle, workers=workers
    )


def _context(inputs: Inputs, seed: int, budget: float) -> SearchContext:
    table, proxy = inputs
    problem = make_problem(table, Budget(budget), seed, proxy=proxy)
    return SearchContext(seed_streams(seed).searcher, ProxyHandle(problem))


def _same_events(a: RunResult, b: RunResult) -> bool:
    ea, eb = a.events, b.events
    return ea.keys() == eb.keys() and all(
        np.array_equal(ea[k], eb[k], equal_nan=ea[k].dtype.kind == "f") for k in ea
    )


def _check_budget(result: RunResult, budget: float, who: str) -> None:
    ev = result.events
    charged = np.isin(ev["kind"], (EVALUATE, PARTIAL, PROXY, ZEROCOST))
    started = (ev["worker_seconds"] - ev["cost"])[charged]  # worker-seconds before each query
    assert result.status in STATUSES, f"{who}: unknown run status {result.status!r}"
    assert np.all(started < budget), (
        f"{who}: a query started at {started.max():.1f} worker-seconds, at or after the "
        f"budget {budget:g} s"
    )
    assert result.worker_seconds == (ev["worker_seconds"][-1] if len(ev["cost"]) else 0.0)


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
        inputs = self.make_problem_inputs()
        result = _run(inputs, self.make_searcher(), recorder, self.seed, self.budget)
        assert recorder.seen, f"{self._who()} proposed nothing"
        space = inputs[0].space
        kind = type(space.arch(0))  # sss: Arch; tss: Cell
        for arch in recorder.seen:
            assert type(arch) is kind, (
                f"{self._who()} proposed {arch!r}, not a {kind.__name__} of the {space.name} space"
            )
            assert space.parse(space.format(arch)) == arch
            assert 0 <= space.index_of(arch) < space.size
        assert result.n_asked == len(recorder.seen)
        ev = result.events
        trials = ev["trial"][np.isin(ev["kind"], ("ask", "drop", "evaluate", "partial"))]
        assert np.array_equal(np.sort(trials), np.arange(result.n_asked)), (
            f"{self._who()}: trial ids are not 0, 1, 2, ... once each"
        )

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

    def test_copes_with_pending_trials(self) -> None:
        """Asked again before earlier trials are told; told out of order; a repeated
        architecture pending twice; each trial told exactly once."""
        inputs = self.make_problem_inputs()
        searcher = validate_searcher(self.make_searcher())
        searcher.setup(_context(inputs, self.seed, self.budget))
        batch: list[Trial] = []
        for _ in range(8):
            trial = searcher.ask()
            if trial is None or trial is WAIT:
                break
            batch.append(trial)
        assert len({t.id for t in batch}) == len(batch), (
            f"{self._who()}: pending trials share an id: {batch}"
        )
        assert list(searcher.pending) == batch
        for k, trial in enumerate(reversed(batch)):  # out of order, some dropped
            searcher.tell(trial, None if k % 3 == 2 else 60.0 + k)
        assert searcher.pending == ()
        if batch:
            again = searcher.ask()
            twice = None if again is WAIT else searcher.ask()
            if isinstance(again, Trial) and isinstance(twice, Trial):
                twin = Trial(twice.id, again.arch)  # the same architecture, another id
                searcher.tell(again, 70.0)
                try:
                    searcher.tell(again, 70.0)
                except ValueError as exc:
                    assert "already told" in str(exc)
                else:
                    raise AssertionError(f"{self._who()}: a trial was told twice, silently")
                if twin.arch != twice.arch:
                    try:
                        searcher.tell(twin, 70.0)
                    except ValueError:
                        pass
                    else:
                        raise AssertionError(f"{self._who()}: tell() took a mismatched trial")
                searcher.tell(twice, 71.0)

    def test_pending_trials_give_identical_traces(self) -> None:
        inputs = self.make_problem_inputs()
        k = PENDING_WORKERS
        a = _run(inputs, self.make_searcher(), None, self.seed, self.budget, workers=k)
        b = _run(inputs, self.make_searcher(), None, self.seed, self.budget, workers=k)
        assert _same_events(a, b), f"{self._who()}: two runs with {k} workers and one seed differ"
        _check_budget(a, self.budget, self._who())
        ev = a.events
        evaluated = ev["trial"][np.isin(ev["kind"], (EVALUATE, PARTIAL))]
        assert len(np.unique(evaluated)) == len(evaluated), (
            f"{self._who()}: a trial was evaluated twice"
        )
        told = np.isin(ev["kind"], (EVALUATE, PARTIAL))
        assert np.all(ev["end"][told] >= ev["start"][told])

    def test_recommends_only_what_it_evaluated_at_full_fidelity(self) -> None:
        inputs = self.make_problem_inputs()
        for workers in (1, PENDING_WORKERS):
            result = _run(
                inputs, self.make_searcher(), None, self.seed, self.budget, workers=workers
            )
            ev = result.events
            full = set(ev["index"][ev["kind"] == EVALUATE].tolist())
            recommended = set(ev["index"][ev["kind"] == "recommend"].tolist())
            assert recommended <= full, (
                f"{self._who()} recommended {sorted(recommended - full)}, never evaluated at "
                "full fidelity"
            )
            assert result.best_index == -1 or result.best_index in full

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

    def test_answers_true_or_false(self) -> None:
        recorder = _Recording(self.make_filter())
        result = _run(
            self.make_problem_inputs(), self.make_searcher(), recorder, self.seed, self.budget
        )
        for arch, answer in zip(recorder.seen, recorder.answers, strict=True):
            assert isinstance(answer, (bool, np.bool_)), (
                f"{self._who()}.keep({arch}) returned {answer!r}, not True or False"
            )
        assert result.n_evaluations == sum(bool(a) for a in recorder.answers) or (
            result.status == "budget"
        )

    def test_pending_trials_give_identical_traces(self) -> None:
        inputs = self.make_problem_inputs()
        k = PENDING_WORKERS
        a = _run(
            inputs, self.make_searcher(), self.make_filter(), self.seed, self.budget, workers=k
        )
        b = _run(
            inputs, self.make_searcher(), self.make_filter(), self.seed, self.budget, workers=k
        )
        assert _same_events(a, b), f"{self._who()}: two runs with {k} workers and one seed differ"
        _check_budget(a, self.budget, self._who())

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


def check_searcher(
    factory: Callable[[], Searcher],
    inputs: Inputs | None = None,
    budget: float = DEFAULT_BUDGET,
) -> None:
    """Run every searcher check on instances from ``factory`` with runs of ``budget``
    simulated seconds (a smaller one for a searcher whose own computation grows with the
    number of trials); AssertionError on failure."""

    class _Contract(SearcherContract):
        def make_searcher(self) -> Searcher:
            return factory()

        def make_problem_inputs(self) -> Inputs:
            return inputs if inputs is not None else default_inputs()

    contract = _Contract()
    contract.budget = budget
    _run_all(contract)


def check_filter(factory: Callable[[], Filter], inputs: Inputs | None = None) -> None:
    """Run every filter check on instances from ``factory``; AssertionError on failure."""

    class _Contract(FilterContract):
        def make_filter(self) -> Filter:
            return factory()

        def make_problem_inputs(self) -> Inputs:
            return inputs if inputs is not None else default_inputs()

    _run_all(_Contract())
