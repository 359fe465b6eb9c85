"""nasfilter.bench.nats_api on compact tables and the SYNTHETIC surrogate; create()'s paths."""

from __future__ import annotations

import random
from pathlib import Path

import nats_bench
import pytest

from nasfilter.bench.convert import convert_archive
from nasfilter.bench.fullbench import convert_full
from nasfilter.bench.nats_api import ENV_VAR, NeedsFullBenchmarkError, create
from nasfilter.bench.surrogate import embedded_table
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE


pytestmark = pytest.mark.usefixtures("restore_random")  # tests/conftest.py


@pytest.fixture(scope="module")
def compact_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("compact") / "cifar10.npz"
    convert_archive(FIXTURE, "cifar10", allow_partial=True, progress=False).save(path)
    return path


def test_compact_table_answers_a_search_as_nats_bench(compact_path: Path) -> None:
    ours = create(str(compact_path), "sss", fast_mode=True, verbose=False)
    ref = nats_bench.create(str(FIXTURE), "sss", fast_mode=True, verbose=False)
    for index in (0, 11, 284):
        random.seed(index)
        acc, lat, cost, _ = ours.simulate_train_eval(index, "cifar10")
        state = random.getstate()
        random.seed(index)
        ref_acc, ref_lat, ref_cost, _ = ref.simulate_train_eval(index, "cifar10")
        assert random.getstate() == state  # the same single draw
        assert (acc, lat) == (ref_acc, ref_lat)  # the table keeps these bit for bit
        assert cost == pytest.approx(ref_cost, rel=1e-12)  # per-epoch time x 12
    info = ours.get_more_info(284, "cifar10", hp="90", is_random=False)
    ref_info = ref.get_more_info(284, "cifar10", hp="90", is_random=False)
    assert info["test-accuracy"] == ref_info["test-accuracy"]
    assert info["train-loss"] is None  # not kept in a compact table: None, never a number


def test_compact_table_names_the_conversion_for_the_rest(compact_path: Path) -> None:
    api = create(str(compact_path), "sss", fast_mode=True, verbose=False)
    for call in (
        lambda: api.simulate_train_eval(0, "cifar10", iepoch=5),
        lambda: api.simulate_train_eval(0, "cifar10", hp="90"),
        lambda: api.get_more_info(0, "cifar10", hp="90", is_random=True),
    ):
        with pytest.raises(NeedsFullBenchmarkError, match=r"nasfilter convert .* \(no --dataset\)"):
            call()
    with pytest.raises(KeyError, match="'01'"):
        api.simulate_train_eval(0, "cifar10", hp="01")
    with pytest.raises(KeyError, match="'cifar100'"):
        api.simulate_train_eval(0, "cifar100")


def test_synthetic_surrogate_is_labelled_and_answers_searches() -> None:
    api = create("synthetic", "sss", verbose=False)
    assert "SYNTHETIC" in repr(api) and len(api.evaluated_indexes) == 32768
    table = embedded_table("cifar100")
    random.seed(5)
    acc, lat, cost, total = api.simulate_train_eval("64:64:64:64:64", "cifar100")
    random.seed(5)
    seed = random.choice(list(table.seeds))  # the one draw, over the sorted seed list
    assert acc == table.valid_acc[32767, table.seeds.index(seed)]
    assert lat == table.latency[32767] and total == cost == api.used_time
    assert cost == pytest.approx(12 * table.train_time[32767] + table.valid_time[32767])
    assert api.get_cost_info(0, "cifar10")["flops"] == embedded_table("cifar10").macs[0]
    with pytest.raises(NeedsFullBenchmarkError):  # the text shows losses, not kept
        api.query_info_str_by_arch(0, "12")


def test_create_paths_and_spaces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="size search space"):
        create("synthetic", "tss")
    with pytest.raises(ValueError, match="invalid search space : xyz"):
        create("synthetic", "xyz")
    with pytest.raises(ValueError, match=r"not nats_bench dicts.*nasfilter convert"):
        create({"meta_archs": []}, "sss")
    with pytest.raises(ValueError, match=r"is a NATS-Bench archive.*nasfilter convert"):
        create(str(FIXTURE), "sss")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    archive = tmp_path / "torch" / "NATS-sss-v1_0-50262-simple"
    with pytest.raises(ValueError, match=r"does not exist; nats_bench's default archive") as err:
        create(None, "sss")
    # both ways forward: convert nats_bench's default archive, or the shipped real table
    assert f"nasfilter convert {archive} -o {tmp_path / 'nowhere'}" in str(err.value)
    assert "is not there either" in str(err.value) and "create('real', 'sss')" in str(err.value)
    archive.mkdir(parents=True)
    with pytest.raises(ValueError, match=r"default archive .* is there\. Either convert"):
        create(None, "sss")
    out = convert_full(FIXTURE, tmp_path / "full", True, progress=False)
    monkeypatch.setenv(ENV_VAR, str(out))
    api = create(None, "size", fast_mode=False, verbose=False)
    assert api.evaluated_indexes == {0, 11, 284}  # fast_mode=False: every record loaded
    assert "SYNTHETIC" not in repr(api)


def test_verbose_prints_one_creation_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create("synthetic", "sss", fast_mode=True, verbose=True)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "Create NATS-Bench (size) done" in out[0] and "SYNTHETIC" in out[0]
