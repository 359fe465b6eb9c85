"""The zero-cost scores shipped as package data: SHA-256 pinned and checked at load, the
coverage the docs state, and the documented NaN rule."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from nasfilter.zerocost import scorefile
from nasfilter.zerocost.nets import is_connected
from nasfilter.zerocost.scorefile import DATA_DIR, SHA256, packaged_scores


def test_every_shipped_file_matches_its_pin_and_sha256sums() -> None:
    sums = dict(
        reversed(line.split("  ")) for line in (DATA_DIR / "SHA256SUMS").read_text().splitlines()
    )
    assert sums == SHA256 and SHA256
    for name, digest in SHA256.items():
        assert hashlib.sha256((DATA_DIR / name).read_bytes()).hexdigest() == digest


def test_shipped_tss_cifar10_scores_hold_what_the_docs_say() -> None:
    f = packaged_scores("tss", "cifar10")
    assert (f.space, f.dataset, f.seed, f.stand_in) == ("tss", "cifar10", 0, "gaussian")
    order = np.random.default_rng(33).permutation(15625)
    n_full = int(f.computed["snip"].sum())
    assert n_full >= 50
    for name in f.proxies:  # every proxy covers the same prefix of the seeded order at least
        assert f.computed[name][order[:n_full]].all(), name
        assert f.values[name].dtype == np.float32
    assert f.computed["synflow"].sum() >= n_full
    done = np.flatnonzero(f.computed["synflow"])
    nan = np.isnan(f.values["synflow"][done])
    connected = np.array([is_connected("tss", int(a)) for a in done])
    assert (nan == ~connected).all()  # synflow is NaN exactly on the disconnected cells


def test_an_altered_shipped_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = next(iter(SHA256))
    data = bytearray((DATA_DIR / name).read_bytes())
    data[-1] ^= 1
    (tmp_path / name).write_bytes(bytes(data))
    monkeypatch.setattr(scorefile, "DATA_DIR", tmp_path)
    packaged_scores.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"not the released .*refuses an altered file"):
            packaged_scores(*name.removesuffix(".npz").split("-", 1))
    finally:
        packaged_scores.cache_clear()


def test_no_shipped_scores_for_a_dataset_lists_the_shipped_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # independent of what ships: a pin table of two tss files and no sss one
    pins = {"tss-cifar10.npz": SHA256["tss-cifar10.npz"], "tss-cifar100.npz": "0" * 64}
    monkeypatch.setattr(scorefile, "SHA256", pins)
    packaged_scores.cache_clear()  # a file of sss/cifar10 loaded earlier is not reused
    with pytest.raises(
        ValueError, match="no zero-cost scores ship for sss/cifar10; shipped: tss-cifar10, "
        "tss-cifar100 "
    ):  # fmt: skip
        packaged_scores("sss", "cifar10")


@pytest.mark.parametrize(
    ("space", "dataset", "covered"),
    [
        ("tss", "cifar100", 15625),
        ("tss", "ImageNet16-120", 15625),
        ("sss", "cifar10", 32768),
        ("sss", "cifar100", 32768),
        ("sss", "ImageNet16-120", 32768),
    ],
)
def test_shipped_synflow_files(space: str, dataset: str, covered: int) -> None:
    # synflow, float32, on a prefix of the fixed seeded order of the space (the whole space
    # but for the sss ImageNet16-120 sample) and NaN elsewhere; NaN among the computed exactly
    # on the disconnected cells (tss; no sss network is disconnected); the first and the last
    # computed scores recomputed here match bit for bit
    pytest.importorskip("torch")
    pytest.importorskip("xautodl")
    from nasfilter.zerocost import parse_proxies
    from nasfilter.zerocost.compute import score_arch

    f = packaged_scores(space, dataset)
    assert f.proxies == ("synflow",) and f.values["synflow"].dtype == np.float32
    size = f.values["synflow"].size
    order = np.random.default_rng(33).permutation(size)
    n = int(f.computed["synflow"].sum())
    assert n == covered and f.computed["synflow"][order[:n]].all()
    assert np.isnan(f.values["synflow"][order[n:]]).all()
    done = order[:n]
    nan = np.isnan(f.values["synflow"][done])
    assert (nan == ~np.array([is_connected(space, int(a)) for a in done])).all()
    for a in (int(done[0]), int(done[n - 1])):
        got = score_arch(space, a, dataset, parse_proxies("synflow"))["synflow"][0]
        assert np.array_equal(np.float32(got), f.values["synflow"][a], equal_nan=True), a
