"""Problem.evaluate_at: evaluations at a chosen epoch and setting, charged as NATS-Bench."""

from __future__ import annotations

import random
from pathlib import Path

import nats_bench
import numpy as np
import pytest

from nasfilter.bench.convert import convert_archive
from nasfilter.bench.fidelity import NoCurvesError, SyntheticCurves, curves_for
from nasfilter.bench.fullbench import convert_full
from nasfilter.bench.nats_api import create
from nasfilter.bench.nats_api.curves import BenchmarkCurves
from nasfilter.bench.nats_api.derive import compact_table
from nasfilter.bench.surrogate import embedded_table
from nasfilter.bench.surrogate_curves import valid_curves
from nasfilter.sim.problem import Budget, BudgetExhausted, Problem
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE
FIXTURE_INDICES = (0, 11, 284)


pytestmark = pytest.mark.usefixtures("restore_random")  # tests/conftest.py


@pytest.fixture(scope="module")
def full_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(convert_full(FIXTURE, tmp_path_factory.mktemp("fb") / "full", True,
                             progress=False))


@pytest.fixture(scope="module")
def reference() -> nats_bench.api_size.NATSsize:
    return nats_bench.create(str(FIXTURE), "sss", fast_mode=True, verbose=False)


def _problem(table, seed: int = 0, seconds: float = 1e6, **kw) -> Problem:
    return Problem(table, np.random.default_rng(seed), Budget(seconds=seconds), **kw)


def test_synthetic_evaluation_by_hand() -> None:
    table = embedded_table("cifar10")
    problem = _problem(table, seed=3)
    slots = np.random.default_rng(3).integers(3, size=2)  # the run's draws, one per call
    acc = problem.evaluate_at(284, 4)  # 5 epochs of hp 12
    assert acc == valid_curves("cifar10", "12")[284, slots[0], 4]
    cost = 5 * table.train_time[284] + table.valid_time[284]
    assert problem.clock == pytest.approx(cost) and problem.worker_seconds == problem.clock
    acc90 = problem.evaluate_at(7, 89, hp="90")  # one seed at hp 90; still one draw
    assert acc90 == valid_curves("cifar10", "90")[7, 0, 89]
    cost90 = 90 * table.train_time[7] + table.valid_time[7]
    assert problem.fidelity_seconds == pytest.approx(cost + cost90)
    first, second = problem.fidelity_evaluations
    seed = (777, 888, 999)[slots[0]]
    assert (first.arch, first.hp, first.iepoch, first.seed) == (284, "12", 4, seed)
    assert (second.hp, second.iepoch, second.seed, second.start) == ("90", 89, 777, first.end)
    # not full evaluations: logged as partial events with their fidelity (hp 12 at 5
    # epochs, hp 90 at 90), but the full-evaluation counters are untouched
    ev = problem.log.arrays()
    assert ev["kind"].tolist() == ["partial", "partial"] and problem.n_evaluations == 0
    assert ev["hp"].tolist() == [12, 90] and ev["epochs"].tolist() == [5, 90]
    assert ev["accuracy"].tolist() == [acc, acc90] and ev["seed"].tolist() == [seed, 777]
    assert problem.evaluation_seconds == 0.0


def test_synthetic_charges_as_the_facade() -> None:
    api = create("synthetic", "sss", fast_mode=True, verbose=False)
    curves = SyntheticCurves("ImageNet16-120")
    for hp, iepoch in (("01", 0), ("12", 0), ("12", 6), ("90", 30)):
        random.seed(2)
        acc, _, cost, _ = api.simulate_train_eval(99, "ImageNet16-120", iepoch=iepoch, hp=hp)
        random.seed(2)
        seed = random.choice(curves.seeds(99, hp))
        assert curves.evaluation(99, hp, seed, iepoch) == (acc, cost)


def test_full_benchmark_matches_nats_bench(full_path: Path, reference) -> None:
    for dataset in ("cifar10", "cifar100", "ImageNet16-120"):
        curves = BenchmarkCurves(full_path, dataset)
        record = "cifar10-valid" if dataset == "cifar10" else dataset
        for index in FIXTURE_INDICES:
            for hp, iepoch in (("01", 0), ("12", 0), ("12", 5), ("12", 11), ("90", 44)):
                for seed in curves.seeds(index, hp):
                    info = reference.get_more_info(index, record, iepoch, hp, is_random=seed)
                    expected = (info["valid-accuracy"],
                                info["train-all-time"] + info["valid-per-time"])
                    assert curves.evaluation(index, hp, seed, iepoch) == expected  # bit for bit


def test_problem_charges_simulate_train_eval(full_path: Path, reference) -> None:
    table = compact_table(full_path, "cifar100")
    own = curves_for(table)  # the curves of the folder it was derived from come along
    assert isinstance(own, BenchmarkCurves) and own.dataset == "cifar100"
    assert own.evaluation(0, "12", 777, 2) == BenchmarkCurves(full_path, "cifar100").evaluation(
        0, "12", 777, 2)
    problem = _problem(table, seed=1, curves=BenchmarkCurves(full_path, "cifar100"))
    total = 0.0
    for index, hp, iepoch in ((0, "12", 2), (11, "90", 60), (284, "01", 0), (284, "12", 11)):
        acc = problem.evaluate_at(index, iepoch, hp=hp)
        _, _, cost, _ = reference.simulate_train_eval(index, "cifar100", iepoch=iepoch, hp=hp)
        last = problem.fidelity_evaluations[-1]
        assert last.cost == cost  # the fixture's times are the same for every seed
        info = reference.get_more_info(index, "cifar100", iepoch, hp, is_random=last.seed)
        assert acc == info["valid-accuracy"]
        total += cost
    assert problem.worker_seconds == pytest.approx(total)
    assert problem.clock == problem.worker_seconds


def test_compact_table_without_curves_names_the_conversion() -> None:
    table = convert_archive(FIXTURE, "cifar10", allow_partial=True, progress=False)
    problem = _problem(table)
    with pytest.raises(NoCurvesError, match=r"no learning curves.*nasfilter convert .* -o"):
        problem.evaluate_at(0, 3)
    assert problem.worker_seconds == 0.0
    problem.evaluate(0)  # the single-fidelity path still works
    assert problem.n_evaluations == 1


def test_bad_epoch_setting_and_curves() -> None:
    problem = _problem(embedded_table("cifar10"))
    with pytest.raises(ValueError, match=r"iepoch=12 is out of range.*0\.\.11"):
        problem.evaluate_at(0, 12)
    with pytest.raises(ValueError, match=r"iepoch=-1.*hp 90 trains 90 epochs.*0\.\.89"):
        problem.evaluate_at(0, -1, hp="90")
    with pytest.raises(ValueError, match=r"iepoch=2\.0"):
        problem.evaluate_at(0, 2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"hp '200'.*\['01', '12', '90'\]"):
        problem.evaluate_at(0, 0, hp="200")
    assert problem.worker_seconds == 0.0 and problem.fidelity_evaluations == []
    assert problem.evaluate_at(0, np.int64(11)) == problem.fidelity_evaluations[0].accuracy
    with pytest.raises(ValueError, match=r"dataset 'cifar100' but the table is of 'cifar10'"):
        _problem(embedded_table("cifar10"), curves=SyntheticCurves("cifar100"))
    with pytest.raises(ValueError, match="curves must be learning curves"):
        _problem(embedded_table("cifar10"), curves=object())  # type: ignore[arg-type]


def test_budget_and_workers() -> None:
    table = embedded_table("cifar10")
    problem = _problem(table, seconds=50.0)
    _, end = problem.start_evaluation_at(1, 11, worker=2, trial=5)
    assert problem.clock == 0.0 and end == problem.worker_seconds  # the clock waits
    first = problem.fidelity_evaluations[0]
    assert (first.worker, first.trial) == (2, 5)
    while not problem.exhausted:
        problem.evaluate_at(1, 0)
    with pytest.raises(BudgetExhausted):
        problem.evaluate_at(1, 0)


def test_single_fidelity_runs_do_not_change() -> None:
    table = embedded_table("cifar10")
    plain = _problem(table, seed=9)
    with_curves = _problem(table, seed=9, curves=SyntheticCurves("cifar10"))
    for index in (3, 3, 100, 32767, 5):
        assert plain.evaluate(index) == with_curves.evaluate(index)
    # (str: the events' NaN throughputs never compare equal)
    assert str(plain.events) == str(with_curves.events) and len(plain.events) == 5


@pytest.mark.slow
def test_written_archive_with_uneven_seeds_and_varying_times(tmp_path: Path) -> None:
    from nasfilter.testing.nats_full_archive import write_varied_archive

    indices = [0, 1, 9, 100, 4000, 32767]
    archive = write_varied_archive(tmp_path, FIXTURE / "000284.pickle.pbz2", indices,
                                   np.random.default_rng(4), constant_times=False,
                                   compresslevel=1)
    out = convert_full(archive, tmp_path / "full", True, progress=False)
    ref = nats_bench.create(str(archive), "sss", fast_mode=True, verbose=False)
    curves = BenchmarkCurves(out, "cifar10")
    problem = _problem(compact_table(out, "cifar10"), seed=6, curves=curves)
    counts = {len(curves.seeds(i, "12")) for i in indices}
    assert min(counts) < 3 and max(counts) > 1  # the seed lists are uneven
    for index in indices:
        for hp, iepoch in (("12", 3), ("90", 70), ("01", 0)):
            seeds = curves.seeds(index, hp)
            meta = ref.query_meta_info_by_index(index, hp)
            assert seeds == sorted(meta.get_dataset_seeds("cifar10-valid"))
            answers = {curves.evaluation(index, hp, s, iepoch) for s in seeds}
            random.seed(index)
            acc, _, cost, _ = ref.simulate_train_eval(index, "cifar10", iepoch=iepoch, hp=hp)
            assert (acc, cost) in answers  # whichever seed nats_bench drew
            for _ in range(4):
                problem.evaluate_at(index, iepoch, hp=hp)
                last = problem.fidelity_evaluations[-1]
                assert last.seed in seeds  # a missing seed is never drawn
                assert (last.accuracy, last.cost) == curves.evaluation(index, hp, last.seed,
                                                                       iepoch)
