"""Where the tests find ``shared/data`` (beside the repository or above it) and the tss fixture."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
TSS_FIXTURE = Path(__file__).parent / "data" / "nats-tss" / "NATS-tss-v1_0-3ffb9-simple"
FIXTURE_ARCHS = (0, 11, 284)


def shared_data() -> Path:
    """The ``shared/data`` folder every developer and CI have beside the project (or
    ``$NASFILTER_SHARED_DATA``). Without it, the cross-checks against that independent source
    are skipped by name: a clone elsewhere has no second copy to compare with."""
    given = os.environ.get("NASFILTER_SHARED_DATA")
    roots = [Path(given)] if given else []
    roots += [parent / "shared" / "data" for parent in [REPO, *REPO.parents]]
    for root in roots:
        if (root / "nats-tss-real").is_dir():
            return root
    pytest.skip("the independent reference shared/data/nats-tss-real is not beside this checkout")


def shared_tss(name: str) -> np.ndarray:
    """One array of shared/data/nats-tss-real, read with plain numpy (not nasfilter)."""
    return np.load(shared_data() / "nats-tss-real" / f"{name}.npy", allow_pickle=False)


@functools.cache
def nats_tss_api() -> Any:
    """The real ``nats_bench`` API on the official tss fixture."""
    import nats_bench

    return nats_bench.create(str(TSS_FIXTURE), "tss", fast_mode=True, verbose=False)


def moocore_hv_ratio(acc: np.ndarray, log_thr: np.ndarray, evaluated: list[int]) -> float:
    """HV ratio by moocore, normalized as nasfilter documents it (ideal -> 1, nadir less
    DEFAULT_MARGIN of the range -> 0, over every architecture; reference the origin)."""
    import moocore

    from nasfilter.pareto import DEFAULT_MARGIN

    pts = np.stack([acc, log_thr], axis=1)
    ideal, nadir = pts.max(axis=0), pts.min(axis=0)
    lower = nadir - DEFAULT_MARGIN * (ideal - nadir)
    scaled = (pts - lower) / (ideal - lower)
    whole = moocore.hypervolume(scaled, ref=[0.0, 0.0], maximise=True)
    mine = moocore.hypervolume(scaled[evaluated], ref=[0.0, 0.0], maximise=True)
    return float(mine / whole)
