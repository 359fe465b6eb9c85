"""nasfilter.bench.nats_api against the real nats_bench API, member by member and loop by loop.

Both APIs read the same archive (the official fixture, and a varied archive written here
with curves that differ per epoch and seed, uneven seeds and per-epoch times that vary);
return values are compared exactly (type and value), except losses and training
accuracies, stored as float32; Python's ``random`` state is compared after every call.
"""

from __future__ import annotations

import contextlib
import io
import random
import warnings
from pathlib import Path
from typing import Any

import nats_bench
import numpy as np
import pytest

from nasfilter.bench.fullbench import convert_full
from nasfilter.bench.nats_api import SYNTHETIC_LABEL as LABEL
from nasfilter.bench.nats_api import create
from nasfilter.bench.nats_api.loops import LOOPS, seeded
from nasfilter.bench.spaces.sss import all_channels
from nasfilter.testing.nats_full_archive import write_varied_archive
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE
SMALL = (8, 16, 24)  # the written archive holds every architecture of these channels
SMALL_INDICES = np.flatnonzero((all_channels() <= 24).all(axis=1)).tolist()
RECORDS = ("cifar10-valid", "cifar10", "cifar100", "ImageNet16-120")
DATASETS = ("cifar10", "cifar100", "ImageNet16-120")
HPS = ("01", "12", "90")
LOSSY = ("loss", "train-accuracy")
# The tests on the varied archive are slow (the archive is written, converted and read by
# both APIs); make test-fast keeps the same members' checks on the official fixture.
VARIED = pytest.param("varied_apis", marks=pytest.mark.slow)


pytestmark = pytest.mark.usefixtures("restore_random")  # tests/conftest.py


@pytest.fixture(scope="module")
def fixture_apis(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    out = convert_full(FIXTURE, tmp_path_factory.mktemp("fx") / "full", True, progress=False)
    ours = create(str(out), "sss", fast_mode=True, verbose=False)
    ref = nats_bench.create(str(FIXTURE), "sss", fast_mode=True, verbose=False)
    return ours, ref


@pytest.fixture(scope="module")
def varied_apis(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    root = tmp_path_factory.mktemp("varied")
    archive = write_varied_archive(root, FIXTURE / "000011.pickle.pbz2", SMALL_INDICES,
                                   np.random.default_rng(1717), constant_times=False,
                                   compresslevel=1)
    out = convert_full(archive, root / "full", True, progress=False)
    ours = create(str(out), "sss", fast_mode=True, verbose=False)
    ref = nats_bench.create(str(archive), "sss", fast_mode=True, verbose=False)
    return ours, ref


def same(a: Any, b: Any, key: str = "") -> None:
    """a equals b: the same type and value (float32 tolerance for losses, train acc)."""
    if isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b), (key, list(a), list(b))
        for k in b:
            same(a[k], b[k], str(k))
    elif isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same(x, y, key)
    elif isinstance(b, str) and isinstance(a, str) and a.endswith(LABEL):
        assert a == f"{b}\n{LABEL}"  # an archive written by nasfilter: labelled SYNTHETIC
    elif any(word in key for word in LOSSY):
        assert a == pytest.approx(b, rel=3e-7), key
    else:
        assert type(a) is type(b) and a == b, (key, a, b)


def same_train(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Training metrics: losses and accuracies float32-close, the rest exact."""
    assert list(a) == list(b)
    for key in b:
        same(a[key], b[key], f"train-{key}" if key in ("loss", "accuracy") else key)


def both(ours: Any, ref: Any, member: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``member`` on both from the same random state; compare results, errors, states."""
    start = random.getstate()
    outcomes = []
    for api in (ours, ref):
        random.setstate(start)
        try:
            outcomes.append(("ok", getattr(api, member)(*args, **kwargs)))
        except Exception as exc:  # compare the exception types
            outcomes.append(("error", type(exc)))
        outcomes[-1] += (random.getstate(),)
    (kind_a, value_a, state_a), (kind_b, value_b, state_b) = outcomes
    assert kind_a == kind_b, (member, args, kwargs, value_a, value_b)
    if kind_a == "ok":
        same(value_a, value_b)
    else:
        assert value_a is value_b or issubclass(value_a, value_b), (value_a, value_b)
    assert state_a == state_b, (member, args, kwargs)
    return value_a


@pytest.mark.parametrize("hp", HPS)
def test_get_more_info_on_the_fixture(fixture_apis: tuple[Any, Any], hp: str) -> None:
    for index in (0, 11, 284):
        for record in RECORDS:
            for iepoch in (None, 0, int(hp) // 2, int(hp) - 1):
                for is_random in (True, False, 777):
                    both(*fixture_apis, "get_more_info", index, record, iepoch=iepoch, hp=hp,
                         is_random=is_random)


@pytest.mark.slow  # the varied archive: written, converted and read by both APIs
@pytest.mark.parametrize("hp", HPS)
def test_get_more_info_on_a_varied_archive(varied_apis: tuple[Any, Any], hp: str) -> None:
    for index in SMALL_INDICES[::40]:
        for record in RECORDS:
            for iepoch in (None, 0, int(hp) // 3, int(hp) - 1):
                for is_random in (True, False, 777, 888):
                    both(*varied_apis, "get_more_info", index, record, iepoch=iepoch, hp=hp,
                         is_random=is_random)


@pytest.mark.parametrize("apis", ["fixture_apis", VARIED])
def test_simulate_train_eval_and_the_clock(apis: str, request: pytest.FixtureRequest) -> None:
    ours, ref = request.getfixturevalue(apis)
    indices = (0, 11, 284) if apis == "fixture_apis" else SMALL_INDICES[::25]
    both(ours, ref, "reset_time")
    for index in indices:
        arch = ours.arch(index)
        for dataset in DATASETS:
            for hp in HPS:
                for iepoch in (None, 0, int(hp) - 1):
                    both(ours, ref, "simulate_train_eval", arch, dataset, iepoch=iepoch, hp=hp)
            both(ours, ref, "simulate_train_eval", index, dataset, account_time=False)
    assert ours.used_time == ref.used_time and type(ours.used_time) is type(ref.used_time)
    both(ours, ref, "reset_time")
    assert ours.used_time == ref.used_time == 0


@pytest.mark.parametrize("apis", ["fixture_apis", VARIED])
def test_costs_configs_and_text(apis: str, request: pytest.FixtureRequest) -> None:
    ours, ref = request.getfixturevalue(apis)
    indices = (0, 11, 284) if apis == "fixture_apis" else SMALL_INDICES[::30]
    for index in indices:
        for record in RECORDS:
            both(ours, ref, "get_net_config", index, record)
            for hp in HPS:
                both(ours, ref, "get_cost_info", index, record, hp=hp)
                both(ours, ref, "get_latency", index, record, hp=hp)
        for hp in HPS:
            both(ours, ref, "query_info_str_by_arch", index, hp)
            both(ours, ref, "query_by_arch", ours.arch(index), hp)
    synthetic = apis == "varied_apis"
    assert ours.query_info_str_by_arch(indices[0], "12").endswith(LABEL) is synthetic
    assert ("SYNTHETIC" in repr(ours)) is synthetic


def test_shows_print_the_same(fixture_apis: tuple[Any, Any]) -> None:
    ours, ref = fixture_apis
    for index in (0, 284, 40000):
        printed = []
        for api in (ours, ref):
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                api.show(index)
            printed.append(buffer.getvalue())
        assert printed[0] == printed[1] and printed[0]


def test_index_queries_and_structure(fixture_apis: tuple[Any, Any]) -> None:
    ours, ref = fixture_apis

    class Tostr:
        def tostr(self) -> str:
            return "8:8:40:32:40"

    for arch in (0, 284, 32767, "8:8:8:16:32", "8:8:8:16:33", Tostr(), np.int64(284), 2.0,
                 -1, 32768):
        both(ours, ref, "query_index_by_arch", arch)
    assert ours.query_index_by_arch(np.int64(284)) == -1  # as nats_bench
    for index in (0, 5, 32767, -1, 32768):
        both(ours, ref, "arch", index)
    assert len(ours) == len(ref) == 32768 and ours[12] == ref[12]
    assert ours.meta_archs == ref.meta_archs and ours.archstr2index == ref.archstr2index
    for name in ("full_train_epochs", "full_epochs_in_paper", "search_space_name", "fast_mode",
                 "is_size", "is_topology"):
        assert getattr(ours, name) == getattr(ref, name), name
    for _ in range(5):
        both(ours, ref, "random")


def test_loading_statistics_and_repr(fixture_apis: tuple[Any, Any]) -> None:
    ours, ref = fixture_apis
    for index in (0, 11, 284):  # nats_bench's reload(None, i) needs $TORCH_HOME: give the root
        ours.reload(None, index)
        ref.reload(ref.archive_dir, index)
    for api in (ours, ref):
        with pytest.raises(AssertionError, match="invalid data path"):  # no record
            api.reload(getattr(api, "archive_dir", None) or None, 5)
    assert ours.evaluated_indexes == ref.evaluated_indexes == {0, 11, 284}
    assert sorted(ours.avaliable_hps) == sorted(ref.avaliable_hps)
    assert repr(ours).split(", file=")[0] == repr(ref).split(", file=")[0]
    for record in (*RECORDS, "cifar10-test"):
        for hp in ("12", "90", 12, "01"):
            both(ours, ref, "statistics", record, hp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index, hp in ((0, None), (0, "12"), (0, "200"), (7, None)):
            both(ours, ref, "clear_params", index, hp)


def test_find_best(fixture_apis: tuple[Any, Any]) -> None:
    ours, ref = fixture_apis
    for index in (0, 11, 284):
        ours.reload(None, index)
        ref.reload(ref.archive_dir, index)
    for dataset in ("cifar10", "cifar100", "ImageNet16-120", "cifar10-valid"):
        for metric in ("valid", "test", "x-valid", "ori-test"):
            for hp in ("12", "90"):
                for flop_max in (None, 10.0):
                    both(ours, ref, "find_best", dataset, metric, flop_max=flop_max, hp=hp,
                         enforce_all=False)
        mine = ours.find_best(dataset, "train", hp="90", enforce_all=False)
        theirs = ref.find_best(dataset, "train", hp="90", enforce_all=False)
        assert mine[0] == theirs[0] and mine[1] == pytest.approx(theirs[1], rel=3e-7)  # float32
    both(ours, ref, "find_best", "cifar10", "valid", enforce_all=True)  # missing: AssertionError


def test_bad_input_raises_what_nats_bench_raises(fixture_apis: tuple[Any, Any]) -> None:
    ours, ref = fixture_apis
    cases = [
        ("simulate_train_eval", (0, "cifar10-valid"), {}),  # not a search dataset
        ("simulate_train_eval", (0, "cifar10"), {"iepoch": 12}),
        ("simulate_train_eval", (0, "cifar10"), {"iepoch": -1}),
        ("simulate_train_eval", (0, "cifar10"), {"hp": "200"}),
        ("simulate_train_eval", ("8:8:8:8:9", "cifar10"), {}),
        ("simulate_train_eval", (5, "cifar10"), {}),  # no record
        ("get_more_info", (0, "mnist"), {}),
        ("get_more_info", (0, "cifar10"), {"is_random": 111}),
        ("get_more_info", (0, "cifar10"), {"is_random": 1.5}),
        ("get_more_info", (0, "cifar10"), {"hp": "90", "iepoch": 90}),
        ("get_cost_info", (0, "cifar10"), {"hp": "200"}),
        ("query_info_str_by_arch", (0, 12), {}),
    ]
    for member, args, kwargs in cases:
        both(ours, ref, member, *args, **kwargs)
    with pytest.raises(ValueError, match=r"iepoch=12 < 12: hp 12 has epochs 0\.\.11"):
        ours.simulate_train_eval(0, "cifar10", iepoch=12)
    with pytest.raises(AssertionError, match=r"architecture 5 .* has no record"):
        ours.simulate_train_eval(5, "cifar10")


def test_one_random_choice_per_evaluation(fixture_apis: tuple[Any, Any]) -> None:
    ours, _ = fixture_apis
    random.seed(3)
    ours.simulate_train_eval(0, "cifar10", hp="90")  # a one-seed setting still draws
    after = random.getstate()
    random.seed(3)
    random.choice([777])
    assert random.getstate() == after


@pytest.mark.slow  # on the varied archive
@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_search_loops_follow_the_same_trajectory(
    varied_apis: tuple[Any, Any], loop: str, dataset: str
) -> None:
    ours, ref = varied_apis
    budget = {"cifar10": 3000.0, "cifar100": 4000.0, "ImageNet16-120": 6000.0}[dataset]
    for seed in (0, 1, 2):
        runs = []
        for api in (ours, ref):
            with seeded(seed):
                trajectory = LOOPS[loop](api, dataset, budget, channels=SMALL)
                runs.append((trajectory, random.getstate()))
        assert len(runs[0][0]) > 10
        assert runs[0] == runs[1]  # architectures, accuracies, totals, and the final state


def test_flops_that_differ_between_seeds_take_seed_888s(tmp_path: Path) -> None:
    """nats_bench 1.6's legacy fix: inconsistent FLOPs/params across seeds -> seed 888's."""
    import bz2
    import pickle
    import shutil

    archive = tmp_path / "NATS-sss-v1_0-50262-simple"
    shutil.copytree(FIXTURE, archive)
    path = archive / "000284.pickle.pbz2"
    with bz2.open(path, "rb") as fh:
        record = pickle.load(fh)
    for k, seed in enumerate((777, 888, 999)):
        run = record["12"]["all_results"][("cifar100", seed)]
        run["flop"] = run["flop"] + k * 0.5
        run["params"] = run["params"] * (1 + k / 10)
    with bz2.open(path, "wb") as fh:
        pickle.dump(record, fh, protocol=4)
    out = convert_full(archive, tmp_path / "full", True, progress=False)
    ours = create(str(out), "sss", fast_mode=True, verbose=False)
    ref = nats_bench.create(str(archive), "sss", fast_mode=True, verbose=False)
    cost = both(ours, ref, "get_cost_info", 284, "cifar100")
    assert cost["flops"] == record["12"]["all_results"][("cifar100", 888)]["flop"]
    both(ours, ref, "query_info_str_by_arch", 284, "12")


def test_non_integer_indices_and_epochs_raise_as_nats_bench(fixture_apis: tuple[Any, Any]) -> None:
    ours, ref = fixture_apis
    for index in (1.5, 3.0, np.float64(2.0), np.int64(3), np.int32(0)):
        both(ours, ref, "arch", index)
    with pytest.raises(TypeError, match="an index is an integer"):
        ours.arch(True)  # the one difference: nats_bench reads True as index 1
    for iepoch in (11.5, 2.5, True, False, 5.0, np.float64(5.0), "3"):
        both(ours, ref, "simulate_train_eval", 284, "cifar10", iepoch=iepoch)
        both(ours, ref, "get_more_info", 284, "cifar10-valid", iepoch=iepoch, is_random=False)
    answers = []
    for api in (ours, ref):  # a numpy integer is an epoch (nats_bench's sums turn numpy)
        random.seed(6)
        answers.append([float(x) for x in api.simulate_train_eval(284, "cifar10",
                                                                  iepoch=np.int64(5))[:3]])
    assert answers[0] == answers[1]
    random.seed(2)  # a cached True must not be served for 1, nor 1 for True
    ours.simulate_train_eval(0, "cifar10", iepoch=1)
    with pytest.raises(ValueError, match="iepoch=True"):
        ours.simulate_train_eval(0, "cifar10", iepoch=True)


def test_arch_results_queries_match_nats_bench(fixture_apis: tuple[Any, Any]) -> None:
    ours, ref = fixture_apis
    for hp in ("12", "90"):
        mine, theirs = ours.query_meta_info_by_index(284, hp), ref.query_meta_info_by_index(284, hp)
        assert mine.get_dataset_names() == theirs.get_dataset_names()
        for record in theirs.get_dataset_names():
            assert mine.get_dataset_seeds(record) == theirs.get_dataset_seeds(record)
            same(mine.get_compute_costs(record), theirs.get_compute_costs(record))
            same_train(mine.get_metrics(record, "train"), theirs.get_metrics(record, "train"))
            runs, ref_runs = mine.query(record), theirs.query(record)
            assert list(runs) == list(ref_runs)
            for seed, run in runs.items():
                same_train(run.get_train(3 if hp == "12" else 40), ref_runs[seed].get_train(
                    3 if hp == "12" else 40))
                for name in ref_runs[seed].get_eval_set():
                    same(run.get_eval(name), ref_runs[seed].get_eval(name))
    for args in ((284, "cifar100", "12"), (284, "mnist", "12"), (284, None, "200"),
                 (5, None, "12")):
        outcome = []
        for api in (ours, ref):
            try:
                answer = api.query_by_index(*args)
                outcome.append(sorted(answer) if isinstance(answer, dict) else "info")
            except Exception as exc:  # compare the exception types
                outcome.append(type(exc))
        assert outcome[0] == outcome[1] or issubclass(outcome[0], outcome[1]), (args, outcome)
    assert ref.get_net_param(284, "cifar10", None) == {777: None, 888: None, 999: None}
    with pytest.raises(NotImplementedError, match="no trained weights ship"):
        ours.get_net_param(284, "cifar10", None)  # why, rather than weights of None


def test_compact_cost_info_has_nats_bench_time_keys(tmp_path: Path) -> None:
    from nasfilter.bench.convert import convert_archive

    path = tmp_path / "c100.npz"
    convert_archive(FIXTURE, "cifar100", allow_partial=True, progress=False).save(path)
    ours = create(str(path), "sss", fast_mode=True, verbose=False)
    ref = nats_bench.create(str(FIXTURE), "sss", fast_mode=True, verbose=False)
    for index in (0, 11, 284):
        mine, theirs = ours.get_cost_info(index, "cifar100"), ref.get_cost_info(index, "cifar100")
        assert list(mine) == [k for k in theirs if not k.startswith("T-x-test")
                              and not k.startswith("T-ori-test")]
        for key in mine:
            assert mine[key] == pytest.approx(theirs[key], rel=1e-6), key
