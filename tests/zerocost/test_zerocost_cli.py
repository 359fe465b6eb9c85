"""``nasfilter zero-cost`` and the score files: export, resume after an interruption, the
refusals of a file of another space/dataset/version, the shipped scores' SHA-256 check."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("xautodl")

from nasfilter.cli import main
from nasfilter.zerocost import ZeroCostProxy, parse_proxies, register_proxy
from nasfilter.zerocost.base import _REGISTRY
from nasfilter.zerocost.compute import cache_path, compute, read_cache
from nasfilter.zerocost.scorefile import load_scores

CALLS: list[int] = []


class Counting(ZeroCostProxy):
    """A data-free test proxy that records each architecture it scores."""

    name = "counting"
    needs_data = False

    def score(self, probe: object) -> float:
        CALLS.append(probe.index)  # type: ignore[attr-defined]
        return float(probe.index) * 0.5  # type: ignore[attr-defined]


@pytest.fixture
def counting() -> object:
    register_proxy(Counting)
    CALLS.clear()
    yield Counting
    _REGISTRY.pop("counting")


def test_cli_exports_one_array_per_proxy_indexed_by_architecture(tmp_path: Path) -> None:
    out = tmp_path / "z.npz"
    code = main(
        [
            "zero-cost",
            "--space",
            "tss",
            "--dataset",
            "ImageNet16-120",
            "--archs",
            "3,17",
            "--proxies",
            "params,flops",
            "--export",
            str(out),
            "--quiet",
            "--json",
        ]
    )
    assert code == 0
    f = load_scores(out, "tss", "ImageNet16-120")
    assert f.proxies == ("params", "flops") and f.values["params"].shape == (15625,)
    assert f.values["params"].dtype == np.float32 and f.stand_in == "gaussian"
    assert np.flatnonzero(f.computed["flops"]).tolist() == [3, 17]
    assert (
        np.isnan(f.values["params"][[0, 4]]).all()
        and np.isfinite(f.values["params"][[3, 17]]).all()
    )
    archs, ranked = f.ranked("params")
    assert archs.tolist() == [3, 17] and ranked.dtype == np.float64


def test_score_file_of_another_space_dataset_or_version_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "z.npz"
    assert (
        main(
            [
                "zero-cost",
                "--space",
                "sss",
                "--dataset",
                "cifar10",
                "--archs",
                "0,",
                "--proxies",
                "params",
                "--export",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    with pytest.raises(ValueError, match="scores of the sss space, not tss"):
        load_scores(out, "tss")
    with pytest.raises(ValueError, match="for dataset cifar10, not cifar100"):
        load_scores(out, "sss", "cifar100")
    with np.load(out) as z:
        arrays = dict(z)
    meta = json.loads(str(arrays["meta"]))
    meta["version"] = 0
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "old.npz", **arrays)
    with pytest.raises(ValueError, match="version 0; this nasfilter computes version 1"):
        load_scores(tmp_path / "old.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"junk\.npz' is not a zero-cost score file"):
        load_scores(tmp_path / "junk.npz")


def test_an_interrupted_run_resumes_from_the_cache(tmp_path: Path, counting: object) -> None:
    archs = [5, 6, 7, 8]

    def stop_after_two(done: int, total: int) -> None:
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        compute("tss", "cifar10", archs, ["counting"], cache=tmp_path, progress=stop_after_two)
    assert CALLS == [5, 6]
    path = cache_path(tmp_path, *_space_ds(), 0)
    with path.open("a", encoding="utf-8") as handle:  # a write torn by the interruption
        handle.write('{"arch": 7, "proxy": "coun')
    scores = compute("tss", "cifar10", archs, ["counting"], cache=tmp_path)
    assert CALLS == [5, 6, 7, 8]  # 5 and 6 came from the cache, the torn 7 was recomputed
    assert scores.values["counting"][archs].tolist() == [2.5, 3.0, 3.5, 4.0]
    assert sorted(read_cache(path)) == [(a, "counting") for a in archs]


def _space_ds() -> tuple[object, object]:
    from nasfilter.bench.datasets import get_dataset
    from nasfilter.bench.spaces import TSS

    return TSS, get_dataset("cifar10")


def test_a_damaged_cache_line_is_named(tmp_path: Path) -> None:
    path = cache_path(tmp_path, *_space_ds(), 0)  # type: ignore[arg-type]
    path.write_text('garbage\n{"arch": 1, "proxy": "params", "score": 1, "seconds": 0}\n')
    with pytest.raises(ValueError, match="line 1 is damaged"):
        compute("tss", "cifar10", [1], ["params"], cache=tmp_path)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--proxies", "snipp"], "--proxies: unknown zero-cost proxy 'snipp'; known proxies"),
        (["--archs", "0"], "--archs N must be in [1, 15625], got 0"),
        (["--archs", "99999"], "--archs N must be in [1, 15625], got 99999"),
        (["--archs", "8:8:8:8:8"], "--archs: '8:8:8:8:8' is an architecture of the sss space"),
        (["--export", "z.txt"], "--export must name a .npz file"),
    ],
)
def test_bad_cli_input_is_named(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["zero-cost", "--space", "tss", "--export", str(tmp_path / "z.npz")]
    assert main(base + argv) == 2
    assert message in capsys.readouterr().err


def test_parse_proxies_defaults_to_every_registered_one() -> None:
    names = [p.name for p in parse_proxies(None)]
    assert names[:10] == [
        "synflow",
        "snip",
        "grasp",
        "grad_norm",
        "fisher",
        "jacob_cov",
        "naswot",
        "zen",
        "params",
        "flops",
    ]


@pytest.fixture
def fake_shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    """A shipped tss/ImageNet16-120 file (seed 0) whose params are 1000 + index: values no
    computation gives (the real ones are < 2 M), so a reused score is told from a fresh one."""
    import hashlib

    from nasfilter.bench.datasets import get_dataset
    from nasfilter.bench.spaces import get_space
    from nasfilter.zerocost import scorefile
    from nasfilter.zerocost.compute import Scores

    fake = (1000.0 + np.arange(15625)).astype(np.float32)
    scores = Scores(get_space("tss"), get_dataset("ImageNet16-120"), 0)
    scores.values["params"] = fake
    scores.computed["params"] = np.ones(15625, dtype=bool)
    scores.seconds["params"] = np.full(15625, 0.25, dtype=np.float32)
    path = scorefile.save_scores(scores, tmp_path / "ship" / "tss-ImageNet16-120.npz")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setattr(scorefile, "DATA_DIR", path.parent)
    monkeypatch.setattr(scorefile, "SHA256", {"tss-ImageNet16-120.npz": digest})
    scorefile.packaged_scores.cache_clear()
    yield fake
    scorefile.packaged_scores.cache_clear()


def test_cli_reuses_shipped_scores_unless_archs_asks_for_fresh_ones(
    tmp_path: Path, fake_shipped: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["zero-cost", "--space", "tss", "--dataset", "ImageNet16-120", "--proxies", "params"]
    out = tmp_path / "reused.npz"
    assert main([*base, "--export", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "reused    params 15625 archs from package data" in text
    f = load_scores(out, "tss", "ImageNet16-120")
    assert f.values["params"][[0, 17, 15624]].tolist() == [1000.0, 1017.0, 16624.0]
    assert f.computed["params"].all() and f.seconds["params"][5] == 0.25
    fresh = tmp_path / "fresh.npz"
    assert main([*base, "--archs", "3,17", "--export", str(fresh), "--quiet", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["from_package_data"] == {}
    g = load_scores(fresh, "tss", "ImageNet16-120")
    assert 0.05 < g.values["params"][17] < 2.0  # computed afresh: the network's real count


def test_shipped_table_matches_space_dataset_seed_and_proxy(fake_shipped: np.ndarray) -> None:
    from nasfilter.zerocost.scorefile import shipped_table

    table, counts = shipped_table("tss", "ImageNet16-120", 0, ["params", "synflow"])
    assert counts == {"params": 15625} and table[4, "params"] == (1004.0, 0.25)
    assert shipped_table("tss", "ImageNet16-120", 1, ["params"]) == ({}, {})  # another seed
    assert shipped_table("tss", "cifar100", 0, ["params"]) == ({}, {})  # none ships
    assert shipped_table("tss", "ImageNet16-120", 0, ["snip"]) == ({}, {})
