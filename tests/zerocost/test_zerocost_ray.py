"""Zero-cost scores fanned out over a local Ray instance equal the local ones."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("xautodl")
ray = pytest.importorskip("ray")

from nasfilter.zerocost.compute import compute, read_cache  # noqa: E402


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.ray
def test_ray_scores_equal_local_scores_and_fill_the_cache(local_ray: None, tmp_path: Path) -> None:
    archs = list(range(0, 15625, 1500))  # 11 archs: two chunks of 8
    names = ["params", "flops"]
    remote = compute("tss", "ImageNet16-120", archs, names, cache=tmp_path, executor="ray")
    local = compute("tss", "ImageNet16-120", archs, names)
    for name in names:
        np.testing.assert_array_equal(remote.values[name], local.values[name])
    cached = read_cache(next(tmp_path.glob("*.jsonl")))
    assert sorted(cached) == sorted((a, n) for a in archs for n in names)
