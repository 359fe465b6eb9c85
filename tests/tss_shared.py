"""Where the tests find ``shared/data`` (beside the repository or above it) and the tss fixture."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TSS_FIXTURE = Path(__file__).parent / "data" / "nats-tss" / "NATS-tss-v1_0-3ffb9-simple"
FIXTURE_ARCHS = (0, 11, 284)


def shared_data() -> Path:
    """The ``shared/data`` folder every developer and CI have beside the project."""
    for parent in [REPO, *REPO.parents]:
        candidate = parent / "shared" / "data" / "nats-tss-real"
        if candidate.is_dir():
            return candidate.parent
    raise AssertionError("shared/data/nats-tss-real is not beside the repository or above it")


def shared_tss(name: str) -> np.ndarray:
    """One array of shared/data/nats-tss-real, read with plain numpy (not nasfilter)."""
    return np.load(shared_data() / "nats-tss-real" / f"{name}.npy", allow_pickle=False)


@functools.cache
def nats_tss_api() -> Any:
    """The real ``nats_bench`` API on the official tss fixture."""
    import nats_bench

    return nats_bench.create(str(TSS_FIXTURE), "tss", fast_mode=True, verbose=False)
