"""The real tss tables: NATS-Bench's protocol on the shipped data, checked against nats_bench."""

from __future__ import annotations

import numpy as np
import pytest

from nasfilter.bench.lookup import load_table
from nasfilter.bench.proxy import ProxyTable
from nasfilter.bench.spaces import TSS
from nasfilter.bench.surrogate import embedded_table
from nasfilter.bench.tss_real import VALID_PASS_RATIO, tss_table
from nasfilter.runs.runner import run_search
from nasfilter.searchers.model_based_mf import ModelBasedMF
from nasfilter.searchers.random_search import RandomSearch
from nasfilter.sim.clock import Budget
from nasfilter.sim.problem import Problem
from tests.tss_shared import FIXTURE_ARCHS, nats_tss_api, shared_tss

RECORD = {"cifar10": "cifar10-valid", "cifar100": "cifar100", "ImageNet16-120": "ImageNet16-120"}


def test_valid_pass_model_is_the_fixture_ratio() -> None:
    api = nats_tss_api()
    for dataset, record in RECORD.items():
        costs = [api.get_cost_info(i, record, hp="200") for i in FIXTURE_ARCHS]
        ratio = sum(c["T-x-valid@epoch"] for c in costs) / sum(c["T-train@epoch"] for c in costs)
        assert VALID_PASS_RATIO[dataset] == pytest.approx(ratio, rel=1e-12)


@pytest.mark.parametrize("dataset", list(RECORD))
def test_an_hp12_evaluation_observes_and_charges_nats_benchs_hp12_record(dataset: str) -> None:
    api, table = nats_tss_api(), load_table("tss-real", dataset)
    assert table.space is TSS and table.eval_epochs == 12
    for index in FIXTURE_ARCHS:
        hp12 = api.get_more_info(index, RECORD[dataset], hp="12", is_random=False)
        assert table.valid_acc[index, 0] == np.float32(hp12["valid-accuracy"])
        # 12 measured epochs: the hp-12 record's own training time (float32 source)
        charged = table.eval_cost[index] - table.valid_time[index]
        assert charged == pytest.approx(hp12["train-all-time"], rel=1e-6)
        valid_pass = api.get_cost_info(index, RECORD[dataset], hp="200")["T-x-valid@epoch"]
        assert table.valid_time[index] == pytest.approx(valid_pass, rel=0.3)  # modelled


def test_the_hp200_table_draws_existing_unflagged_seeds_and_charges_200_epochs() -> None:
    api, table = nats_tss_api(), load_table("tss-real-hp200", "cifar10")
    assert table.eval_epochs == 200 and table.seeds == (777, 888, 999)
    for index in FIXTURE_ARCHS:
        for column, seed in enumerate(table.seeds):
            info = api.get_more_info(index, "cifar10-valid", hp="200", is_random=seed)
            assert table.valid_acc[index, column] == np.float32(info["valid-accuracy"])
        total = api.get_cost_info(index, "cifar10-valid", hp="200")["T-train@total"]
        assert table.eval_cost[index] - table.valid_time[index] == pytest.approx(total, rel=1e-6)
    problem = Problem(table, np.random.default_rng(3), Budget(400_000))
    run_search(RandomSearch(), problem, seed=3)
    raw = shared_tss("cifar10-valid_hp200_valid_acc")
    flags = shared_tss("hp200_seed_record_params_mismatch")
    events = [e for e in problem.events if e.kind == "evaluate"]
    assert len(events) > 100
    for event in events:
        column = (777, 888, 999).index(event.seed)
        assert not np.isnan(raw[event.arch, column]) and not flags[event.arch, column]
        assert event.accuracy == float(raw[event.arch, column])


def test_flagged_seed_records_are_excluded_from_observation_and_score() -> None:
    raw = shared_tss("ImageNet16-120_hp200_valid_acc").astype(np.float64)
    flags = shared_tss("hp200_seed_record_params_mismatch")
    flagged = np.flatnonzero(flags.any(axis=1))
    assert len(flagged) == 204 and not flags[:, 1].any()
    table = tss_table("ImageNet16-120", "tss-real-hp200")
    for index in flagged[:20]:
        kept = raw[index][~flags[index] & ~np.isnan(raw[index])]
        assert table.test_acc[index] == pytest.approx(kept.mean(), rel=1e-12)
        assert np.isnan(table.valid_acc[index][flags[index]]).all()
    clean = np.flatnonzero(~flags.any(axis=1))[:50]
    np.testing.assert_allclose(table.test_acc[clean], np.nanmean(raw[clean], axis=1), rtol=1e-12)
    assert tss_table("ImageNet16-120").test_acc.tobytes() == table.test_acc.tobytes()


def test_a_random_search_on_tss_observes_real_hp12_values() -> None:
    table = load_table("tss-real", "cifar100")
    problem = Problem(table, np.random.default_rng(0), Budget(40_000))
    record = run_search(RandomSearch(), problem, seed=0)
    assert record.status == "budget"
    hp12 = shared_tss("cifar100_hp12_valid_acc")
    events = [e for e in problem.events if e.kind == "evaluate"]
    assert events and all(e.accuracy == float(hp12[e.arch]) for e in events)
    assert problem.worker_seconds <= 40_000 + max(e.cost for e in events)
    assert sum(e.cost for e in events) == pytest.approx(problem.worker_seconds)


def test_other_space_proxies_and_sss_only_searchers_are_refused_naming_both() -> None:
    table = tss_table("cifar10")
    sss = np.ones(32768)
    proxy = ProxyTable(sss, sss, "sss proxy")
    with pytest.raises(ValueError, match=r"proxy 'sss proxy' is of the sss space .* tss space"):
        Problem(table, np.random.default_rng(0), Budget(100), proxy=proxy)
    tss_proxy = ProxyTable(np.ones(15625), np.ones(15625), "tss proxy", space=TSS)
    with pytest.raises(ValueError, match=r"proxy 'tss proxy' is of the tss space .* sss space"):
        Problem(embedded_table("cifar10"), np.random.default_rng(0), Budget(100), proxy=tss_proxy)
    problem = Problem(table, np.random.default_rng(0), Budget(1000))
    with pytest.raises(ValueError, match=r"handles the sss space.*not the tss space"):
        run_search(ModelBasedMF(), problem, seed=0)  # screens below hp 12: sss only
