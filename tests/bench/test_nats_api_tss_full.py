"""``nasfilter convert`` of a tss archive (the official fixture, full fidelity) and
``create(OUT, 'tss')`` against the real ``nats_bench`` API on the same archive: the same
calls give the same values, errors and draws from Python's ``random``; losses and training
accuracies are kept as float32 (documented), so they are equal after rounding to float32."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasfilter.bench.nats_api import create
from nasfilter.cli import main
from tests.tss_shared import FIXTURE_ARCHS, TSS_FIXTURE, nats_tss_api

RECORDS = ("cifar10-valid", "cifar10", "cifar100", "ImageNet16-120")
SSS_FIXTURE = Path(__file__).parent.parent / "data" / "nats-sss" / "NATS-sss-v1_0-50262-simple"


@pytest.fixture(autouse=True)
def _restore_random() -> Iterator[None]:
    state = random.getstate()
    yield
    random.setstate(state)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tss") / "full"
    assert main(["convert", str(TSS_FIXTURE), "-o", str(out), "--allow-partial", "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def api(folder: Path) -> Any:
    return create(str(folder), "tss", fast_mode=True, verbose=False)


def _answer(one: Any, *args: Any) -> Any:
    """``one.get_more_info(*args)``, or the type of what it raises."""
    try:
        return one.get_more_info(*args)
    except Exception as exc:  # the same exception type is part of the semantics
        return type(exc)


def _same(want: Any, got: Any) -> None:
    if isinstance(want, type) or isinstance(got, type):
        assert want is got
        return
    assert list(want) == list(got)
    for key, value in want.items():
        if key.endswith("-loss") or key == "train-accuracy":  # stored as float32
            assert got[key] == pytest.approx(value, rel=1e-6), key
        else:
            assert got[key] == value, key


@pytest.mark.parametrize("record", RECORDS)
@pytest.mark.parametrize("hp", ("12", "200"))
def test_get_more_info_equals_nats_bench_at_every_epoch_and_seed(api: Any, record: str,
                                                                  hp: str) -> None:
    ref = nats_tss_api()
    epochs = (None, 0, 5, 11) if hp == "12" else (None, 0, 5, 11, 150, 199)
    for index in FIXTURE_ARCHS:
        for iepoch in epochs:
            for seed in (False, 111, 777, 888, 999, 5):
                want = _answer(ref, index, record, iepoch, hp, seed)
                got = _answer(api, index, record, iepoch, hp, seed)
                _same(want, got)
        assert api.get_cost_info(index, record, hp) == ref.get_cost_info(index, record, hp)
        assert api.get_latency(index, record, hp) == ref.get_latency(index, record, hp)
        assert api.get_net_config(index, record) == ref.get_net_config(index, record)
        seeds = ref.query_meta_info_by_index(index, hp).get_dataset_seeds(record)
        assert api.query_meta_info_by_index(index, hp).get_dataset_seeds(record) == seeds


@pytest.mark.parametrize("dataset", ("cifar10", "cifar100", "ImageNet16-120"))
@pytest.mark.parametrize("hp", ("12", "200"))
def test_simulate_train_eval_follows_nats_benchs_trajectory(api: Any, dataset: str,
                                                            hp: str) -> None:
    ref = nats_tss_api()
    for iepoch in (None, 3, 11):  # hp 200 at epoch 3: x-valid not evaluated, the fallback
        runs = []
        for one in (ref, api):
            random.seed(7)
            one.reset_time()
            calls = [one.simulate_train_eval(i, dataset, iepoch=iepoch, hp=hp)
                     for i in (0, 11, 284, 11, 0, 284)]
            runs.append((calls, random.random()))
        assert runs[1] == runs[0]


def test_names_find_best_and_spaces(api: Any, folder: Path, tmp_path: Path) -> None:
    ref = nats_tss_api()
    assert (api.is_topology, api.full_epochs_in_paper, len(api)) == (True, 200, 15625)
    assert api.search_space_name == ref.search_space_name and api.meta_archs == ref.meta_archs
    for index in (0, 11, 284, 15624):
        text = ref.meta_archs[index]
        assert api.arch(index) == ref.arch(index)
        assert api.query_index_by_arch(text) == ref.query_index_by_arch(text) == index
        assert api.get_unique_str(text) == api.get_unique_str(index) == ref.get_unique_str(index)
    for dataset, metric in (("cifar10", "valid"), ("cifar10", "test"), ("cifar100", "test")):
        for hp in ("12", "200"):
            got = api.find_best(dataset, metric, hp=hp, enforce_all=False)
            assert got == ref.find_best(dataset, metric, hp=hp, enforce_all=False)
    assert api.statistics("cifar100", "200") == {3: 3}
    with pytest.raises(ValueError, match=r"converted tss benchmark.*create\(.*'tss'\)"):
        create(str(folder), "sss")
    sss = tmp_path / "sss"
    assert main(["convert", str(SSS_FIXTURE), "-o", str(sss), "--allow-partial", "--quiet"]) == 0
    with pytest.raises(ValueError, match=r"converted sss benchmark.*create\(.*'sss'\)"):
        create(str(sss), "tss")


def test_the_converted_accuracies_are_the_archives(api: Any) -> None:
    """Independent of nats_bench's code: the archive's own record (read with the
    allow-listed unpickler) gives the x-valid accuracy of seed 888 at the last epoch."""
    from nasfilter.bench.archive_pickle import load_archive_pickle

    record = load_archive_pickle(str(TSS_FIXTURE / "000284.pickle.pbz2"))
    run = record["200"]["all_results"][("cifar100", 888)]
    info = api.get_more_info(284, "cifar100", hp="200", is_random=888)
    assert info["valid-accuracy"] == run["eval_acc1es"]["x-valid@199"]
    assert info["test-accuracy"] == run["eval_acc1es"]["x-test@199"]
    assert np.isclose(info["train-all-time"], sum(run["train_times"].values()), rtol=1e-12)
