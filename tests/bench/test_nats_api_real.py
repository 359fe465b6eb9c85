"""nasfilter.bench.nats_api on the shipped real table: it answers only what it holds (NATS-Bench's
hp-90 x-valid accuracy, seed 777, on the search records; costs; modelled times) and refuses
every other setting, split or record by name, with the conversion that provides it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.nats_api import MissingRecordError, NeedsFullBenchmarkError, create
from nasfilter.bench.sss_real import real_table

DATA = Path(__file__).parent.parents[1] / "nasfilter" / "data" / "nats_sss_real"


pytestmark = pytest.mark.usefixtures("restore_random")  # tests/conftest.py


@pytest.fixture(scope="module")
def api() -> Any:
    return create("real", "sss", fast_mode=True, verbose=False)


@pytest.fixture(scope="module")
def npz_api(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("real") / "real-cifar10.npz"
    real_table("cifar10").save(path)
    return create(str(path), "sss", fast_mode=True, verbose=False)


def _shipped(name: str) -> np.ndarray:
    """The shipped accuracies, read directly (not through nasfilter)."""
    return np.load(DATA / f"{name}_accs.npy")


def test_real_table_answers_hp90_validation_as_nats_bench(api: Any) -> None:
    acc = _shipped("cifar10")[1224]
    times = real_table("cifar10")
    random.seed(4)
    got, latency, cost, _ = api.simulate_train_eval(1224, "cifar10", hp="90")
    random.seed(4)
    random.choice([777])  # nats_bench's one draw over the sorted seed list
    assert got == acc and latency == times.latency[1224]
    # nats_bench's hp-90 cost: 90 epochs of training plus one validation (modelled seconds)
    assert cost == pytest.approx(90 * times.train_time[1224] + times.valid_time[1224])
    info = api.get_more_info(1224, "cifar10-valid", hp="90", is_random=False)
    assert info["valid-accuracy"] == acc and "test-accuracy" not in info
    c100 = api.simulate_train_eval(7, "cifar100", hp="90")[0]
    assert c100 == _shipped("cifar100")[7]
    best = api.find_best("cifar10", "valid", hp="90", enforce_all=False)
    assert best == (1224, acc)  # only 1224 is loaded in fast mode
    assert "real NATS-Bench accuracies" in repr(api) and "modelled times" in repr(api)


@pytest.mark.parametrize("which", ["api", "npz_api"])
def test_real_table_refuses_what_it_does_not_hold(which: str,
                                                  request: pytest.FixtureRequest) -> None:
    api = request.getfixturevalue(which)
    calls = {
        "hp '12'": lambda: api.simulate_train_eval(1224, "cifar10", hp="12"),
        "hp '01'": lambda: api.get_more_info(1224, "cifar10-valid", hp="01"),
        "record 'cifar10'": lambda: api.get_more_info(1224, "cifar10", hp="90"),
        "record 'cifar10' ": lambda: api.find_best("cifar10", "ori-test", hp="90"),
        "ori-test at hp 90": lambda: api.find_best("cifar10-valid", "ori-test", hp="90",
                                                   enforce_all=False),
        "at hp 90, epoch 40": lambda: api.simulate_train_eval(1224, "cifar10",
                                                                      iepoch=40, hp="90"),
        "hp '12' ": lambda: api.get_cost_info(1224, "cifar10-valid", hp="12"),
    }
    if which == "npz_api":  # one dataset's table
        calls["record 'cifar100'"] = lambda: api.simulate_train_eval(0, "cifar100", hp="90")
    for what, call in calls.items():
        with pytest.raises(NeedsFullBenchmarkError) as err:
            call()
        text = str(err.value)
        assert what.strip() in text and "nasfilter convert" in text, text
        assert "hp-90 x-valid accuracy per seed on 'cifar10-valid'" in text, text  # what it holds
    with pytest.raises(KeyError):  # still nats_bench's exception type for a missing record
        api.get_more_info(1224, "cifar10", hp="90")
    with pytest.raises(MissingRecordError):
        api.statistics("cifar10", "12")


def test_compact_cost_info_carries_the_time_keys(api: Any) -> None:
    times = real_table("cifar10")
    cost = api.get_cost_info(1224, "cifar10-valid", hp="90")
    assert list(cost) == ["flops", "params", "latency", "T-train@epoch", "T-train@total",
                          "T-x-valid@epoch", "T-x-valid@total"]
    assert cost["T-train@total"] == pytest.approx(90 * times.train_time[1224])
    assert cost["T-x-valid@epoch"] == times.valid_time[1224]
    # the 'cifar10' record's network is the same (FLOPs, params); its times are not held
    assert list(api.get_cost_info(1224, "cifar10", hp="90")) == ["flops", "params", "latency"]


def test_missing_members_answer_or_say_why(api: Any) -> None:
    info = api.query_meta_info_by_index(1224, "90")
    assert info.get_dataset_names() == ["cifar10-valid", "cifar100", "ImageNet16-120"]
    assert info.get_dataset_seeds("cifar10-valid") == [777]
    assert info.get_metrics("cifar10-valid", "x-valid")["accuracy"] == _shipped("cifar10")[1224]
    runs = api.query_by_index(1224, "cifar10-valid", hp="90")
    assert list(runs) == [777]
    assert runs[777].get_eval("x-valid")["accuracy"] == _shipped("cifar10")[1224]
    with pytest.raises(ValueError, match="invalid dataset-name : cifar10 "):
        api.query_by_index(1224, "cifar10", hp="90")
    with pytest.raises(NotImplementedError, match="no trained weights ship"):
        api.get_net_param(1224, "cifar10-valid", None, hp="90")
    with pytest.raises(NotImplementedError, match="no trained weights ship"):
        runs[777].get_net_param()


def test_create_refuses_what_is_not_a_benchmark() -> None:
    for value in (5, 2.5, True, b"x"):
        with pytest.raises(ValueError, match=rf"file_path_or_dict={value!r}.*'real', 'synthetic'"):
            create(value, "sss")
    for value in ("", "  "):
        with pytest.raises(ValueError, match="empty path"):
            create(value, "sss")


@pytest.mark.parametrize("name", ["real", "synthetic"])
def test_arch_takes_integers_only(name: str) -> None:
    api = create(name, "sss", fast_mode=True, verbose=False)
    for bad in (1.5, 3.0, True, np.float64(2.0), "3"):
        with pytest.raises(TypeError, match="an index is an integer"):
            api.arch(bad)
    assert api.arch(np.int64(284)) == api.arch(284) == "8:8:40:32:40"
    assert api.arch(np.int32(0)) == "8:8:8:8:8"


def test_iepoch_takes_integers_only() -> None:
    api = create("synthetic", "sss", fast_mode=True, verbose=False)
    for bad, error in ((11.5, KeyError), (2.5, KeyError), (True, ValueError), (3.0, TypeError),
                       ("3", TypeError)):
        with pytest.raises(error, match="iepoch="):
            api.simulate_train_eval(0, "cifar10", iepoch=bad)
    random.seed(1)
    by_numpy = api.simulate_train_eval(0, "cifar10", iepoch=np.int64(5))
    random.seed(1)
    assert by_numpy[:3] == api.simulate_train_eval(0, "cifar10", iepoch=5)[:3]
