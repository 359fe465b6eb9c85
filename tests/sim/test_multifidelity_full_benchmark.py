"""Multi-fidelity runs on a real-format full-fidelity benchmark (written by
nasfilter.testing.nats_full_archive, with per-epoch times that vary), charged as the
reference nats_bench API reports the times: retrain and resume checked by hand."""

from __future__ import annotations

import nats_bench
import numpy as np
import pytest

from nasfilter.bench.fidelity import Fidelity
from nasfilter.bench.fullbench import convert_full
from nasfilter.bench.nats_api.curves import BenchmarkCurves
from nasfilter.bench.nats_api.derive import compact_table
from nasfilter.runs.runner import run_search
from nasfilter.sim.problem import Budget, Problem
from nasfilter.testing.nats_full_archive import write_varied_archive
from tests.paths import NATS_SSS_FIXTURE
from tests.sim.test_multifidelity_protocol import Script

FIXTURE = NATS_SSS_FIXTURE
INDICES = (9, 100)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("mf")
    archive = write_varied_archive(root, FIXTURE / "000284.pickle.pbz2", INDICES,
                                   np.random.default_rng(4), constant_times=False,
                                   compresslevel=1)
    out = convert_full(archive, root / "full", True, progress=False)
    reference = nats_bench.create(str(archive), "sss", fast_mode=True, verbose=False)
    return compact_table(out, "cifar10"), BenchmarkCurves(out, "cifar10"), reference


def _info(reference, index: int, iepoch: int, seed: int) -> dict:
    return reference.get_more_info(index, "cifar10-valid", iepoch, "12", is_random=seed)


def _run(bench, charging: str):
    table, curves, _ = bench
    problem = Problem(table, np.random.default_rng(2), Budget(1e7), curves=curves,
                      charging=charging)
    steps = [(9, Fidelity(2)), (9, Fidelity(5)), (100, Fidelity(1)), (9, None)]
    return run_search(Script(steps), problem, seed=2)


def test_retrain_charges_simulate_train_eval(bench) -> None:
    ev = _run(bench, "retrain").events
    reference = bench[2]
    for k, iepoch in enumerate((1, 4, 0)):
        info = _info(reference, int(ev["index"][k]), iepoch, int(ev["seed"][k]))
        assert ev["cost"][k] == pytest.approx(info["train-all-time"] + info["valid-per-time"])
        assert ev["accuracy"][k] == info["valid-accuracy"]
    # the full evaluation is the table's, as for every searcher: its per-architecture cost
    # (12 x the mean epoch's training + validation), the seed's final accuracy
    table = bench[0]
    assert ev["kind"][3] == "evaluate"
    assert ev["cost"][3] == pytest.approx(table.eval_cost[9])
    assert ev["accuracy"][3] == _info(reference, 9, 11, int(ev["seed"][3]))["valid-accuracy"]


def test_resume_pays_the_epochs_beyond_the_checkpoint(bench) -> None:
    result = _run(bench, "resume")
    ev, reference = result.events, bench[2]
    seed = int(ev["seed"][0])
    assert ev["seed"][[0, 1, 3]].tolist() == [seed] * 3  # 9 continues its first seed

    def train_all(iepoch: int) -> float:
        return _info(reference, 9, iepoch, seed)["train-all-time"]

    def valid_of(iepoch: int) -> float:  # epoch iepoch's validation alone
        before = _info(reference, 9, iepoch - 1, seed)["valid-all-time"] if iepoch else 0.0
        return _info(reference, 9, iepoch, seed)["valid-all-time"] - before

    first = _info(reference, 9, 1, seed)
    assert ev["cost"][0] == pytest.approx(first["train-all-time"] + first["valid-per-time"])
    assert ev["cost"][1] == pytest.approx(train_all(4) - train_all(1) + valid_of(4))
    assert ev["cost"][3] == pytest.approx(train_all(11) - train_all(4) + valid_of(11))
    assert ev["kind"][3] == "evaluate" and result.n_evaluations == 1
    assert ev["accuracy"][3] == _info(reference, 9, 11, seed)["valid-accuracy"]
