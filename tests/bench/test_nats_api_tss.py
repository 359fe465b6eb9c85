"""``create('real', 'tss')`` against the real ``nats_bench`` API on the official tss fixture
(architectures 0, 11, 284): the same call gives the same value wherever the shipped data holds
it (float32 as shipped: equal after rounding the reference to float32), and everything else is
refused by name. Whole-space values are checked against ``shared/data/nats-tss-real``."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.nats_api import MissingRecordError, NeedsFullBenchmarkError, create
from tests.tss_shared import FIXTURE_ARCHS, nats_tss_api, shared_tss

HELD = ("cifar10-valid", "cifar100", "ImageNet16-120")
F32 = 1e-6  # relative: a float32 value against nats_bench's float64


@pytest.fixture(autouse=True)
def _restore_random() -> Iterator[None]:
    state = random.getstate()
    yield
    random.setstate(state)


@pytest.fixture(scope="module")
def api() -> Any:
    return create("real", "tss", fast_mode=True, verbose=False)


@pytest.fixture(scope="module")
def ref() -> Any:
    return nats_tss_api()


def _f32(value: Any) -> float:
    return float(np.float32(value))


def test_arch_strings_and_indices_equal_nats_bench(api: Any, ref: Any) -> None:
    assert api.meta_archs == list(ref.meta_archs)
    assert len(api) == len(ref) == 15625
    for index in (0, 11, 284, 9999, 15624):
        text = ref.meta_archs[index]
        assert api.arch(index) == ref.arch(index) == api[index]
        assert api.query_index_by_arch(text) == ref.query_index_by_arch(text) == index
        assert api.query_index_by_arch(index) == index
    for bad in ("|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|", "8:16:24:32:40"):
        assert api.query_index_by_arch(bad) == ref.query_index_by_arch(bad) == -1
    assert (api.is_topology, api.is_size, api.full_epochs_in_paper) == (True, False, 200)
    assert api.search_space_name == ref.search_space_name == "topology"
    assert api.full_train_epochs == ref.full_train_epochs == 200


@pytest.mark.parametrize("index", FIXTURE_ARCHS)
@pytest.mark.parametrize("record", HELD)
def test_hp200_per_seed_and_seed_mean_equal_nats_bench(api: Any, ref: Any, index: int,
                                                       record: str) -> None:
    seeds = ref.query_meta_info_by_index(index, "200").get_dataset_seeds(record)
    assert api.query_meta_info_by_index(index, "200").get_dataset_seeds(record) == seeds
    for seed in seeds:
        want = ref.get_more_info(index, record, hp="200", is_random=seed)
        got = api.get_more_info(index, record, hp="200", is_random=seed)
        assert got["valid-accuracy"] == _f32(want["valid-accuracy"])
        assert got["train-all-time"] == pytest.approx(want["train-all-time"], rel=F32)
        assert got["train-per-time"] == pytest.approx(want["train-per-time"], rel=F32)
    want = ref.get_more_info(index, record, hp="200", is_random=False)
    got = api.get_more_info(index, record, hp="200", is_random=False)
    assert got["valid-accuracy"] == pytest.approx(want["valid-accuracy"], rel=F32)
    assert got["train-all-time"] == pytest.approx(want["train-all-time"], rel=F32)
    assert got.get("comment") == want.get("comment")


@pytest.mark.parametrize("index", FIXTURE_ARCHS)
@pytest.mark.parametrize("record", HELD)
def test_hp12_seed_mean_and_training_time_equal_nats_bench(api: Any, ref: Any, index: int,
                                                           record: str) -> None:
    want = ref.get_more_info(index, record, hp="12", is_random=False)
    got = api.get_more_info(index, record, hp="12", is_random=False)
    assert got["valid-accuracy"] == _f32(want["valid-accuracy"])
    # 12 measured epochs: 86.65 s for architecture 0 on cifar10-valid
    assert got["train-all-time"] == pytest.approx(want["train-all-time"], rel=F32)
    with pytest.raises(NeedsFullBenchmarkError, match="seed 777"):
        api.get_more_info(index, record, hp="12", is_random=777)


@pytest.mark.parametrize("index", FIXTURE_ARCHS)
@pytest.mark.parametrize("record", (*HELD, "cifar10"))
@pytest.mark.parametrize("hp", ("12", "200"))
def test_cost_info_equals_nats_bench(api: Any, ref: Any, index: int, record: str,
                                     hp: str) -> None:
    want = ref.get_cost_info(index, record, hp=hp)
    got = api.get_cost_info(index, record, hp=hp)
    for key in ("flops", "params", "latency"):
        assert got[key] == _f32(want[key]), key
    assert api.get_latency(index, record, hp=hp) == _f32(ref.get_latency(index, record, hp=hp))
    if record != "cifar10":
        for key in ("T-train@epoch", "T-train@total"):
            assert got[key] == pytest.approx(want[key], rel=F32), key
    with pytest.raises(MissingRecordError, match="T-x-valid@total"):
        got["T-x-valid@total"]


@pytest.mark.parametrize("dataset", ("cifar10", "cifar100", "ImageNet16-120"))
def test_simulate_train_eval_hp200_draws_the_seed_nats_bench_draws(api: Any, ref: Any,
                                                                    dataset: str) -> None:
    record = "cifar10-valid" if dataset == "cifar10" else dataset
    for index in FIXTURE_ARCHS:
        random.seed(index)
        want = ref.simulate_train_eval(index, dataset, hp="200", account_time=False)
        after_ref = random.random()
        random.seed(index)
        got = api.simulate_train_eval(index, dataset, hp="200", account_time=False)
        assert random.random() == after_ref  # the same draws from Python's random
        assert got[0] == _f32(want[0]) and got[1] == _f32(want[1])
        # time cost: the real 200 epochs of training plus one modelled x-valid pass
        modelled = api.get_more_info(index, record, hp="200", is_random=False)["valid-per-time"]
        train = ref.get_more_info(index, record, hp="200", is_random=False)["train-all-time"]
        assert got[2] - modelled == pytest.approx(train, rel=F32)


def test_simulate_train_eval_hp12_is_the_seed_mean_without_a_draw(api: Any, ref: Any) -> None:
    api.reset_time()
    random.seed(3)
    first = random.random()
    random.seed(3)
    acc, latency, cost, total = api.simulate_train_eval(11, "cifar100", hp="12")
    assert random.random() == first  # no seed drawn: hp 12 holds the seed mean only
    want = ref.get_more_info(11, "cifar100", hp="12", is_random=False)
    assert acc == _f32(want["valid-accuracy"])
    assert latency == _f32(ref.get_latency(11, "cifar100", hp="12"))
    assert cost == total == api.used_time
    assert cost > want["train-all-time"] * (1 - F32)


def test_net_config_and_seeds_equal_nats_bench(api: Any, ref: Any) -> None:
    for index in FIXTURE_ARCHS:
        for record in (*HELD, "cifar10"):
            assert api.get_net_config(index, record) == ref.get_net_config(index, record)
    info = api.query_by_index(11, "cifar100", hp="200")
    assert sorted(info) == sorted(ref.query_by_index(11, "cifar100", hp="200"))


def test_whole_space_equals_the_shared_reference(api: Any) -> None:
    valid = shared_tss("cifar100_hp200_valid_acc")
    hp12 = shared_tss("ImageNet16-120_hp12_valid_acc")
    rng = np.random.default_rng(0)
    for index in rng.choice(15625, 40, replace=False).tolist():
        for column, seed in enumerate((777, 888, 999)):
            value = valid[index, column]
            if np.isnan(value):
                with pytest.raises(ValueError, match="can not find random seed"):
                    api.get_more_info(index, "cifar100", hp="200", is_random=seed)
            else:
                got = api.get_more_info(index, "cifar100", hp="200", is_random=seed)
                assert got["valid-accuracy"] == float(value)
        got = api.get_more_info(index, "ImageNet16-120", hp="12", is_random=False)
        assert got["valid-accuracy"] == float(hp12[index])


def test_values_it_does_not_hold_are_refused_by_name(api: Any) -> None:
    info = api.get_more_info(0, "cifar10-valid", hp="200", is_random=False)
    for key in ("test-accuracy", "train-loss", "valid-loss", "train-accuracy"):
        assert key not in info
        with pytest.raises(MissingRecordError, match=rf"'{key}': not held.*test accuracies"):
            info[key]
    with pytest.raises(NeedsFullBenchmarkError, match="only the last epoch, 199"):
        api.get_more_info(0, "cifar100", iepoch=10, hp="200", is_random=False)
    with pytest.raises(MissingRecordError, match="record 'cifar10'"):
        api.get_more_info(0, "cifar10", hp="200", is_random=False)
    run = api.query_by_index(0, "cifar100", hp="200")[777]
    with pytest.raises(NeedsFullBenchmarkError, match=r"ori-test.*not public"):
        run.get_eval("ori-test")
    with pytest.raises(NotImplementedError, match="no trained weights"):
        api.get_net_param(0, "cifar100", 777, hp="200")


def test_bad_input_names_the_value_and_the_choices(api: Any) -> None:
    with pytest.raises(ValueError, match=r"15625.*0\.\.15624"):
        api.get_more_info(15625, "cifar100")
    with pytest.raises(ValueError, match=r"\[0, 15624\], got 15625"):
        api.arch(15625)
    with pytest.raises(ValueError, match=r"'conv'; allowed: none, skip_connect"):
        api.get_cost_info("|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|", "cifar100")
    with pytest.raises(ValueError, match="node 3 has 2 incoming edges, expected 3"):
        api.simulate_train_eval("|none~0|+|none~0|none~1|+|none~0|none~1|", "cifar100")
    with pytest.raises(ValueError, match="architecture of the sss space"):
        api.get_more_info("8:16:24:32:40", "cifar100")
    with pytest.raises(KeyError, match=r"hp='90'.*\['12', '200'\]"):
        api.get_more_info(0, "cifar100", hp="90")
    with pytest.raises(ValueError, match="Invalid dataset name"):
        api.simulate_train_eval(0, "cifar10-valid")


def test_create_tss_sources(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    monkeypatch.setenv("NASFILTER_NATS_TSS_BENCHMARK", str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match=r"create\(None, 'tss'\) opens the full benchmark at "
                       r"the default place.*nowhere.*nasfilter convert .*NATS-tss-v1_0-3ffb9-"
                       r"simple.*create\('real', 'tss'\)"):
        create(None, "tss")
    with pytest.raises(ValueError, match=r"size search space.*create\('real', 'tss'\)"):
        create("synthetic", "topology")
    with pytest.raises(ValueError, match=r"not a converted tss benchmark folder.*nasfilter "
                       r"convert .*NATS-tss-v1_0-3ffb9-simple.*create\('real', 'tss'\)"):
        create(str(tmp_path), "tss")
    assert create("real", "topology", verbose=False).is_topology


def test_a_compact_table_of_a_tss_archive_is_refused_naming_the_ways(
        tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from nasfilter.cli import main
    from tests.tss_shared import TSS_FIXTURE

    code = main(["convert", str(TSS_FIXTURE), "--dataset", "cifar10", "--allow-partial",
                 "-o", str(tmp_path / "t.npz")])
    err = capsys.readouterr().err
    assert code == 2 and "topology-space (tss) archive" in err and "--space tss" in err
    assert not (tmp_path / "t.npz").exists()


@pytest.mark.parametrize("hp", ("12", "200"))
@pytest.mark.parametrize("dataset", ("cifar10", "cifar100", "ImageNet16-120"))
def test_find_best_over_the_loaded_archs_equals_nats_bench(hp: str, dataset: str) -> None:
    import nats_bench

    from tests.tss_shared import TSS_FIXTURE

    ours = create("real", "tss", fast_mode=True, verbose=False)
    ref = nats_bench.create(str(TSS_FIXTURE), "tss", fast_mode=True, verbose=False)
    record = "cifar10-valid" if dataset == "cifar10" else dataset
    for api in (ours, ref):
        for index in FIXTURE_ARCHS:
            api.get_cost_info(index, record, hp=hp)  # loads it (fast mode)
    for limit in (None, 0.5):  # params (M): 0.5 leaves out architecture 11 (0.8 M)
        got = ours.find_best(dataset, "valid", param_max=limit, hp=hp, enforce_all=False)
        want = ref.find_best(dataset, "valid", param_max=limit, hp=hp, enforce_all=False)
        assert got[0] == want[0]
        assert got[1] == pytest.approx(want[1], rel=F32)
    with pytest.raises(NeedsFullBenchmarkError, match=r"not public|record 'cifar10'"):
        ours.find_best(dataset, "test", hp=hp)
    with pytest.raises(NeedsFullBenchmarkError, match="losses and test accuracies"):
        ours.query_info_str_by_arch(11, hp)
