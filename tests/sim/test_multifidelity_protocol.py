"""The multi-fidelity protocol: trials at a fidelity, WAIT, the runner's charging and events.

Expected costs are computed by hand from the table's per-epoch times (train_time,
valid_time) of the embedded surrogate, whose SYNTHETIC hp-12 curves end exactly at the
table's valid_acc.
"""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.bench.fidelity import Fidelity, NoCurvesError
from nasfilter.bench.spaces.sss import Arch
from nasfilter.bench.surrogate import embedded_table
from nasfilter.bench.surrogate_curves import valid_curves
from nasfilter.runs.results import run_summary
from nasfilter.runs.runner import make_problem, run_search
from nasfilter.searchers.base import Searcher
from nasfilter.sim.problem import Budget, Problem
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext
from nasfilter.sim.trial import WAIT, Proposal, Trial, Wait
from tests.tables import random_table

TABLE = embedded_table("cifar10")
A, B = 284, 1000


class Script(Searcher):
    """Proposes a fixed list of (index, fidelity) one at a time, WAITing for each outcome."""

    name = "script"

    def __init__(self, steps: list[tuple[int, Fidelity | None]], wait: bool = True) -> None:
        self.steps = steps
        self.wait = wait

    def reset(self) -> None:
        self.todo = list(self.steps)
        self.told: list[tuple[Trial, float | None]] = []

    def propose(self) -> Proposal | Wait | None:
        if self.wait and self.pending:
            return WAIT
        if not self.todo:
            return None
        index, fidelity = self.todo.pop(0)
        return Proposal(Arch.from_index(index), fidelity)

    def observe(self, trial: Trial, accuracy: float | None) -> None:
        self.told.append((trial, accuracy))


def _run(steps, charging: str = "retrain", seed: int = 0, **kw):
    problem = Problem(TABLE, np.random.default_rng(seed), Budget(1e7), charging=charging)
    searcher = Script(steps)
    result = run_search(searcher, problem, seed=seed, **kw)
    return result, searcher


def test_full_fidelity_is_a_full_evaluation_on_the_same_seed_stream() -> None:
    steps = [(A, None), (B, None), (A, None)]
    plain, _ = _run(steps)
    full, _ = _run([(i, Fidelity(12, "12")) for i, _ in steps])
    for key in ("kind", "index", "accuracy", "seed", "cost", "end"):
        assert np.array_equal(plain.events[key], full.events[key]), key
    assert full.n_evaluations == 3 and set(full.events["kind"]) == {"evaluate"}
    # and evaluate_at(iepoch 11) on a fresh problem gives the same accuracy and cost
    one = Problem(TABLE, np.random.default_rng(4), Budget(1e7))
    other = Problem(TABLE, np.random.default_rng(4), Budget(1e7))
    assert one.evaluate(A) == other.evaluate_at(A, 11)
    assert one.worker_seconds == pytest.approx(other.worker_seconds)
    assert one.worker_seconds == pytest.approx(12 * TABLE.train_time[A] + TABLE.valid_time[A])


def test_retrain_charges_each_evaluation_from_scratch() -> None:
    result, searcher = _run([(A, Fidelity(1)), (A, Fidelity(3)), (A, None)])
    ev = result.events
    t, v = TABLE.train_time[A], TABLE.valid_time[A]
    assert ev["kind"].tolist() == ["partial", "partial", "evaluate"]
    assert ev["cost"] == pytest.approx([t + v, 3 * t + v, 12 * t + v])
    assert ev["hp"][:2].tolist() == [12, 12] and ev["epochs"][:2].tolist() == [1, 3]
    assert result.n_evaluations == 1
    assert result.evaluation_seconds == pytest.approx(12 * t + v)
    assert result.worker_seconds == pytest.approx(16 * t + 3 * v)
    slots = [(777, 888, 999).index(s) for s in ev["seed"]]
    curves = valid_curves("cifar10", "12")
    told = [acc for _, acc in searcher.told]
    assert told[:2] == [curves[A, slots[0], 0], curves[A, slots[1], 2]]
    assert told[2] == TABLE.valid_acc[A, slots[2]]
    assert [t.fidelity for t, _ in searcher.told] == [Fidelity(1), Fidelity(3), None]


def test_resume_pays_only_the_epochs_beyond_the_last_trained() -> None:
    steps = [(A, Fidelity(1)), (A, Fidelity(3)), (B, Fidelity(2)), (A, None), (A, Fidelity(2))]
    result, searcher = _run(steps, charging="resume")
    ev = result.events
    t, v = TABLE.train_time[A], TABLE.valid_time[A]
    tb, vb = TABLE.train_time[B], TABLE.valid_time[B]
    assert ev["kind"].tolist() == ["partial", "partial", "partial", "evaluate", "partial"]
    # 1 epoch; +2 epochs; B from scratch; +9 epochs; a checkpoint already trained: validation
    assert ev["cost"] == pytest.approx([t + v, 2 * t + v, 2 * tb + vb, 9 * t + v, v])
    seeds = ev["seed"][ev["index"] == A]
    assert len(set(seeds.tolist())) == 1  # every evaluation of A continues its first seed
    slot = (777, 888, 999).index(int(seeds[0]))
    curves = valid_curves("cifar10", "12")
    told = [acc for _, acc in searcher.told]
    assert told[1] == curves[A, slot, 2] and told[4] == curves[A, slot, 1]
    assert told[3] == TABLE.valid_acc[A, slot]  # the curve's last epoch is the table's
    assert result.n_evaluations == 1


def test_partial_evaluations_are_not_observations_of_the_front() -> None:
    # B trained 12 epochs of hp 90 scores high, but only A had a full evaluation
    result, _ = _run([(B, Fidelity(90, "90")), (A, None)])
    assert result.best_index == A
    assert result.evaluated.tolist() == [A]


def test_wait_with_nothing_running_names_the_searcher() -> None:
    class Waits(Script):
        name = "waits"

        def propose(self) -> Wait:
            return WAIT

    problem = make_problem(TABLE, Budget(1e5), 0)
    with pytest.raises(ValueError, match=r"Waits.*WAIT with no trial running"):
        run_search(Waits([]), problem)


def test_wait_lets_other_workers_idle_until_an_outcome() -> None:
    result, _ = _run([(A, Fidelity(1)), (B, Fidelity(1))], workers=4)
    ev = result.events
    assert ev["start"][1] == pytest.approx(ev["end"][0])  # B started when A was told


def test_promotions_do_not_count_as_repeats() -> None:
    steps = [(A, Fidelity(e)) for e in (1, 2, 4, 8)] + [(A, None)]
    result, _ = _run(steps, max_repeats=1)
    assert result.status == "searcher-done" and result.n_evaluations == 1
    again, _ = _run([(A, Fidelity(2)), (A, Fidelity(2))], max_repeats=1)
    assert again.status == "converged"  # the same (architecture, fidelity) twice


def test_fidelities_come_from_the_context() -> None:
    problem = make_problem(TABLE, Budget(1e5), 0)
    context = SearchContext(np.random.default_rng(0), ProxyHandle(problem))
    assert context.fidelity_hps() == ["01", "12", "90"]
    assert (context.max_epochs(), context.max_epochs("90")) == (12, 90)
    with pytest.raises(ValueError, match=r"hp '200' is not a training setting.*'90'"):
        context.max_epochs("200")
    compact = make_problem(random_table(), Budget(1e5), 0)
    with pytest.raises(NoCurvesError, match="nasfilter convert"):
        SearchContext(np.random.default_rng(0), ProxyHandle(compact)).max_epochs()


def test_bad_fidelities_name_the_valid_range() -> None:
    with pytest.raises(ValueError, match=r"epochs must be an integer in 1\.\.12"):
        _run([(A, Fidelity(13))])
    with pytest.raises(ValueError, match=r"hp '7' is not a training setting"):
        _run([(A, Fidelity(3, "7"))])
    with pytest.raises(NoCurvesError, match="nasfilter convert"):
        Problem(random_table(), np.random.default_rng(0), Budget(1e5), charging="resume")
    with pytest.raises(ValueError, match=r"charging must be one of \['retrain', 'resume'\]"):
        Problem(TABLE, np.random.default_rng(0), Budget(1e5), charging="checkpoint")

    class BadFidelity(Script):
        def propose(self) -> Proposal:
            return Proposal(Arch.from_index(A), 4)  # type: ignore[arg-type]

    with pytest.raises(ValueError, match=r"expected an Arch or None, a Proposal"):
        run_search(BadFidelity([]), make_problem(TABLE, Budget(1e5), 0))


def test_stored_summary_counts_every_trial_and_full_evaluations_only() -> None:
    result, _ = _run([(A, Fidelity(1)), (B, Fidelity(4)), (A, None)])
    summary = run_summary(result.events)
    assert summary["n_asked"] == result.n_asked == 3
    assert summary["n_evaluations"] == 1 and summary["best_index"] == A
    t, v = TABLE.train_time[A], TABLE.valid_time[A]
    assert summary["evaluation_seconds"] == pytest.approx(12 * t + v)
