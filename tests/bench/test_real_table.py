"""The real table: shipped NATS-Bench accuracies (checked against the real nats_bench API and
the released checksums), modelled times, its labels, and its place as the default table."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench import sss_real as rt
from nasfilter.bench import surrogate
from nasfilter.bench.costs import network_costs
from nasfilter.bench.datasets import get_dataset
from nasfilter.bench.lookup import load_table
from nasfilter.bench.table import BenchmarkTable
from nasfilter.runs.experiment import RunSpec
from nasfilter.runs.inputs import spec_table
from tests.paths import NATS_SSS_FIXTURE

FIXTURE = NATS_SSS_FIXTURE
DATASETS = ("cifar10", "cifar100", "ImageNet16-120")
# The SHA-256 the data's README lists for each released file.
RELEASED = {
    "cifar10_accs.npy": "fb28ab473ad084d0360626c58f750e92e237ac4fe253e5a2cc42bab8c9c6c745",
    "cifar100_accs.npy": "10669ea2ccd27c5532503ea4ca98eff1ea60ae400596232af52780db6cabccca",
    "ImageNet16-120_accs.npy": "1902b051be94e395e3349c617d5c904220b2d5cb32e5bc6d43aac2a82b6db7bb",
}


def test_shipped_files_have_the_released_checksums_and_license() -> None:
    folder = rt.data_folder()
    for name, digest in RELEASED.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest
    assert "MIT License" in (folder / "LICENSE-lightonai.txt").read_text()
    assert (
        "lightonai/contrastive-embeddings-for-neural-architectures"
        in (folder / "README.md").read_text()
    )


@pytest.mark.parametrize("dataset", DATASETS)
def test_accuracies_equal_the_real_nats_bench_api(dataset: str) -> None:
    """Bit for bit: get_more_info(i, search record, hp 90, seed 777)["valid-accuracy"]."""
    import nats_bench

    api = nats_bench.create(str(FIXTURE), "sss", fast_mode=True, verbose=False)
    table = load_table(None, dataset)
    record = get_dataset(dataset).search_record
    for index in (0, 11, 284):
        info = api.get_more_info(index, record, hp="90", is_random=777)
        assert table.valid_acc[index, 0] == info["valid-accuracy"]
        assert table.test_acc[index] == info["valid-accuracy"]  # it also scores runs


def test_widest_network_matches_the_published_validation_figures() -> None:
    """64:64:64:64:64: 90.712 / 70.30 / 44.733, the figures NATS-Bench's paper reports."""
    got = [load_table("real", d).test_acc[32767] for d in DATASETS]
    assert got == pytest.approx([90.712, 70.30, 44.733], abs=5e-4)


@pytest.mark.parametrize("dataset", DATASETS)
def test_times_are_the_surrogates_model_and_costs_are_exact(dataset: str) -> None:
    table, model = rt.real_table(dataset), surrogate.embedded_table(dataset)
    for column in ("train_time", "valid_time", "latency"):
        np.testing.assert_array_equal(getattr(table, column), getattr(model, column))
    costs = network_costs(dataset)
    np.testing.assert_array_equal(table.macs, costs.macs)
    np.testing.assert_array_equal(table.params, costs.params)
    i = 284  # an evaluation charges 12 training epochs and one validation
    assert table.eval_cost[i] == pytest.approx(12 * model.train_time[i] + model.valid_time[i])
    assert table.is_complete and table.seeds == (777,)


def test_labels_say_what_is_real_and_what_is_modelled() -> None:
    table = load_table(None, "cifar100")
    assert not table.synthetic and "SYNTHETIC" not in table.label
    assert table.label == (
        "real NATS-Bench accuracies (hp-90 x-valid, seed 777); modelled times, cifar100"
    )
    assert table.score_label == "real validation accuracy after 90 epochs, seed 777"
    rec = table.record(0)
    assert rec["observed"] == rec["scored"] == "valid@90"
    assert "valid_acc_hp12" not in rec and "test_acc_hp90" not in rec
    prov = table.provenance
    assert "seed 777" in prov.extra["real_detail"] and "cifar100" in prov.extra["real_detail"]
    assert "12 training epochs" in prov.extra["modelled_detail"]
    assert surrogate.embedded_table("cifar100").score_label == "test accuracy after 90 epochs"


def test_a_tampered_file_is_refused_naming_it_and_both_checksums(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    shutil.copytree(rt.data_folder(), folder)
    path = folder / "cifar100_accs.npy"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1  # one bit of the last accuracy
    path.write_bytes(bytes(raw))
    actual = hashlib.sha256(bytes(raw)).hexdigest()
    with pytest.raises(rt.ChecksumError) as info:
        rt.build_real_table("cifar100", folder)
    message = str(info.value)
    assert str(path) in message and actual in message
    assert RELEASED["cifar100_accs.npy"] in message
    assert rt.build_real_table("cifar10", folder).n_present == 32768  # the others still load
    (folder / "cifar10_accs.npy").unlink()
    with pytest.raises(ValueError, match="cannot read the real accuracies of cifar10"):
        rt.build_real_table("cifar10", folder)


def test_the_default_and_the_names() -> None:
    for dataset in DATASETS:
        assert load_table(None, dataset) is rt.real_table(dataset)
        assert load_table(" Real ", dataset) is rt.real_table(dataset)
        assert load_table("synthetic", dataset) is surrogate.embedded_table(dataset)
    real = spec_table(RunSpec("random", table=None))  # a spec's table, cached per process
    assert real is spec_table(RunSpec("random", table="real"))
    assert spec_table(RunSpec("random", table="synthetic")).synthetic


def test_run_specs_name_their_table(tmp_path: Path) -> None:
    assert RunSpec("random").table == "real"
    assert RunSpec("random", table="SYNTHETIC").table == "synthetic"
    path = rt.real_table("cifar10").save(tmp_path / "t.npz")
    assert RunSpec("random", table=str(path)).table == str(path.resolve())
    assert RunSpec.from_key(RunSpec("random").key()) == RunSpec("random")
    # A key stored before the named tables existed: no table meant the surrogate.
    old = json.loads(RunSpec("random").key()) | {"table": None}
    assert RunSpec.from_key(json.dumps(old)).table == "synthetic"


def test_a_saved_real_table_keeps_its_labels(tmp_path: Path) -> None:
    table = rt.real_table("ImageNet16-120")
    back = BenchmarkTable.load(table.save(tmp_path / "t.npz"))
    assert back.provenance == table.provenance and back.label == table.label
    np.testing.assert_array_equal(back.test_acc, table.test_acc)


# The surrogate held against the real accuracies (docs/surrogate.md): Spearman of its test@90,
# true front sizes (real, surrogate, shared) with the calibrated V100 oracle.
SURROGATE_VS_REAL = {
    "cifar10": (0.929, (62, 67, 16)),
    "cifar100": (0.834, (66, 43, 10)),
    "ImageNet16-120": (0.940, (65, 62, 18)),
}


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_surrogate_against_reality_as_documented(dataset: str) -> None:
    import moocore
    from scipy import stats

    from nasfilter.oracle import proxy_table

    real, model = load_table("real", dataset), load_table("synthetic", dataset)
    log_thr = np.log10(proxy_table("calibrated", "v100", dataset).throughput)

    def front(acc: np.ndarray) -> set[int]:
        points = np.stack([acc, log_thr], axis=1)
        mask = moocore.is_nondominated(points, maximise=True, keep_weakly=True)
        return set(np.flatnonzero(mask).tolist())

    rho, sizes = SURROGATE_VS_REAL[dataset]
    assert stats.spearmanr(model.test_acc, real.test_acc).statistic == pytest.approx(rho, abs=5e-4)
    ours, theirs = front(real.test_acc), front(model.test_acc)
    assert (len(ours), len(theirs), len(ours & theirs)) == sizes
    docs = Path(__file__).resolve().parents[2] / "docs" / "surrogate.md"
    assert "| 0.929 | 0.834 | 0.940 |" in docs.read_text()


def test_the_real_table_through_the_nats_format_keeps_its_labels(tmp_path: Path) -> None:
    """Written as a NATS archive and converted back, it is not passed off as NATS's own
    archive: the label still says the times are modelled and what the columns hold."""
    from nasfilter.bench.convert import convert_archive
    from nasfilter.testing.nats_archive import write_nats_archive

    table = rt.real_table("cifar10")
    folder = write_nats_archive(table, tmp_path, FIXTURE / "000000.pickle.pbz2", indices=[284])
    back = convert_archive(folder, "cifar10", allow_partial=True, progress=False)
    assert not back.synthetic and back.label.startswith(table.provenance.label)
    assert (back.provenance.observed, back.provenance.scored) == ("valid@90", "valid@90")
    assert back.test_acc[284] == table.test_acc[284]
