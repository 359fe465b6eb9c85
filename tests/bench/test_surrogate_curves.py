"""The SYNTHETIC learning curves of the embedded surrogate, and nats_api over them."""

from __future__ import annotations

import random

import numpy as np
import pytest

from nasfilter.bench.nats_api import NeedsFullBenchmarkError, create
from nasfilter.bench.spaces.sss import N_ARCHS
from nasfilter.bench.surrogate import embedded_table
from nasfilter.bench.surrogate_curves import (
    CURVE_CALIBRATIONS,
    build_curves,
    final_accuracy,
    valid_curves,
)

DATASETS = ("cifar10", "cifar100", "ImageNet16-120")


pytestmark = pytest.mark.usefixtures("restore_random")  # tests/conftest.py


@pytest.mark.parametrize("dataset", DATASETS)
def test_hp12_curves_end_exactly_at_the_table(dataset: str) -> None:
    curves = valid_curves(dataset, "12")
    table = embedded_table(dataset)
    assert curves.shape == (N_ARCHS, 3, 12) and curves.dtype == np.float64
    assert np.array_equal(curves[:, :, -1], table.valid_acc)  # bit for bit
    assert not curves.flags.writeable
    assert curves.min() >= 0.0 and curves.max() <= 100.0


def test_shapes_of_every_setting_and_determinism() -> None:
    assert valid_curves("cifar10", "90").shape == (N_ARCHS, 1, 90)
    assert valid_curves("cifar10", "01").shape == (N_ARCHS, 1, 1)
    again = build_curves("cifar100", "12")  # afresh, uncached
    assert np.array_equal(again, valid_curves("cifar100", "12"))
    state = np.random.get_state()[1].copy()  # global numpy state untouched
    build_curves("ImageNet16-120", "90")
    assert np.array_equal(np.random.get_state()[1], state)
    with pytest.raises(ValueError, match=r"hp '24'.*\['01', '12', '90'\]"):
        valid_curves("cifar10", "24")


@pytest.mark.parametrize("dataset", DATASETS)
def test_curves_rise_and_noise_shrinks(dataset: str) -> None:
    c = valid_curves(dataset, "90")[:, 0, :]
    mean = c.mean(axis=0)
    # the mean curve rises from near the start level to the final mean
    assert mean[0] < mean[10] < mean[45] < mean[-1]
    # the epoch noise around the architecture's final value shrinks towards the end
    assert np.std(c[:, 80] - c[:, -1]) < np.std(c[:, 20] - c[:, -1])


def test_hp90_final_follows_the_hp90_test_accuracy() -> None:
    # hp-90 x-valid = test + delta + noise: cifar10-valid sits ~2.55 points under cifar10's test
    table = embedded_table("cifar10")
    diff = final_accuracy("cifar10", "90")[:, 0] - table.test_acc
    cal = CURVE_CALIBRATIONS["cifar10"]
    assert abs(diff.mean() - cal.delta_90) < 0.02 and abs(diff.std() - cal.sd_90) < 0.02


@pytest.mark.parametrize("dataset", DATASETS)
def test_early_epochs_rank_worse_than_late_ones(dataset: str) -> None:
    from scipy.stats import spearmanr

    c = valid_curves(dataset, "12")[:, 0, :]
    rho = [spearmanr(c[:, e], c[:, -1])[0] for e in (0, 5, 10)]
    assert rho[0] < rho[1] < rho[2] < 1.0
    assert rho[0] > 0.0  # early epochs still carry some signal


def test_facade_answers_iepoch_and_every_setting() -> None:
    api = create("synthetic", "sss", fast_mode=True, verbose=False)
    table = embedded_table("cifar10")
    for hp, iepoch, epochs in (("12", 3, 12), ("90", 40, 90), ("01", None, 1)):
        random.seed(11)
        acc, lat, cost, _ = api.simulate_train_eval(284, "cifar10", iepoch=iepoch, hp=hp)
        random.seed(11)
        seeds = [777, 888, 999] if hp == "12" else [777]
        seed = random.choice(seeds)
        epoch = epochs - 1 if iepoch is None else iepoch
        assert acc == valid_curves("cifar10", hp)[284, seeds.index(seed), epoch]
        # hand computation: (k + 1) epochs of training plus one validation
        assert cost == pytest.approx((epoch + 1) * table.train_time[284] + table.valid_time[284])
        assert lat == table.latency[284]
    info = api.get_more_info(5, "cifar100", iepoch=7, hp="12", is_random=888)
    assert info["valid-accuracy"] == valid_curves("cifar100", "12")[5, 1, 7]
    assert info["train-all-time"] == pytest.approx(8 * embedded_table("cifar100").train_time[5])
    assert set(api.avaliable_hps) == {"01", "12", "90"}


def test_facade_bad_input_names_the_range() -> None:
    api = create("synthetic", "sss", fast_mode=True, verbose=False)
    with pytest.raises(ValueError, match=r"iepoch=12 < 12.*0\.\.11"):
        api.simulate_train_eval(0, "cifar10", iepoch=12)
    with pytest.raises(ValueError, match=r"iepoch=-1"):
        api.simulate_train_eval(0, "cifar10", iepoch=-1, hp="90")
    with pytest.raises(KeyError, match="'24'"):
        api.simulate_train_eval(0, "cifar10", hp="24")
    with pytest.raises(ValueError, match=r"seed \(888\) from \[777\]"):
        api.get_more_info(0, "cifar10-valid", hp="90", is_random=888)
    with pytest.raises(KeyError, match="'cifar10-x'"):
        api.get_more_info(0, "cifar10-x", hp="01", is_random=777)
    with pytest.raises(NeedsFullBenchmarkError):  # the final record's hp-01 runs
        api.get_more_info(0, "cifar10", hp="01", is_random=777)
    with pytest.raises(NeedsFullBenchmarkError, match="one seed"):  # no seed means at hp 90
        api.get_more_info(0, "cifar10-valid", hp="90", is_random=False)
    info = api.get_more_info(0, "cifar10-valid", hp="12", is_random=False)  # the table's seeds
    table = embedded_table("cifar10")
    assert info["valid-accuracy"] == sum(table.valid_acc[0].tolist()) / 3
    assert info["train-loss"] is None  # losses are not modelled: None, never a number


def test_successive_halving_loop_runs_on_the_synthetic_curves() -> None:
    from nasfilter.bench.nats_api.loops import seeded, successive_halving

    api = create("synthetic", "sss", fast_mode=True, verbose=False)
    with seeded(3):
        first = successive_halving(api, "cifar10", 5000.0)
    with seeded(3):
        again = successive_halving(api, "cifar10", 5000.0)
    assert first == again and first[-1][2] >= 5000.0  # deterministic, spends the budget
    # epoch-1 evaluations (27 of them) come first, each far cheaper than a full one
    costs = np.diff([0.0] + [total for _, _, total in first[:27]])
    full = 12 * embedded_table("cifar10").train_time.min()
    assert len(first) > 27 and costs.max() < full
