"""A check that a run touches no global random state (Python's, numpy's legacy, torch's
when imported).

Every random draw of a run must come from the ``numpy.random.Generator`` it is given; the
plugin contract suites (:mod:`nasfilter.testing.contracts`) run this check on every plugin.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from typing import Any

import numpy as np


def _torch() -> Any:
    """torch when this process has imported it, else None. The check never imports torch
    itself: importing it would make every later experiment spawn its workers instead of
    forking them (:func:`nasfilter.runs.worker_process.fork_blocker`), and a plugin that uses torch
    has imported it before its check runs."""
    return sys.modules.get("torch")


def _global_states() -> dict[str, Any]:
    states: dict[str, Any] = {
        "random": random.getstate(),
        "numpy.random": np.random.get_state(legacy=False),
    }
    torch = _torch()
    if torch is not None:
        states["torch"] = torch.random.get_rng_state().clone()
    return states


def _changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    changed = []
    if before["random"] != after["random"]:
        changed.append("random")
    b, a = before["numpy.random"], after["numpy.random"]
    if b["bit_generator"] != a["bit_generator"] or any(
        not np.array_equal(np.asarray(b["state"][k]), np.asarray(a["state"][k])) for k in b["state"]
    ):
        changed.append("numpy.random")
    if "torch" in before and not bool((before["torch"] == after["torch"]).all()):
        changed.append("torch")
    return changed


def _seed_functions() -> list[tuple[Any, str, str]]:
    """(owner, attribute, label) of every function that re-seeds a global generator."""
    found: list[tuple[Any, str, str]] = [
        (random, "seed", "random"),
        (np.random, "seed", "numpy.random"),
    ]
    torch = _torch()
    if torch is not None:
        found += [(torch, "manual_seed", "torch"), (torch.random, "manual_seed", "torch")]
    return found


def _torch_imported_and_used(before: dict[str, Any]) -> list[str]:
    """``["torch"]`` when the run imported torch (it was not imported before) and left its
    global generator other than a fresh one: seeded, or drawn from."""
    torch = _torch()
    if "torch" in before or torch is None:
        return []
    fresh = torch.Generator()  # seeded as the global generator is at import
    state = torch.random.get_rng_state()
    if torch.initial_seed() != fresh.initial_seed() or not bool((state == fresh.get_state()).all()):
        return ["torch"]
    return []


def check_no_global_random_state(run: Callable[[], object], who: str) -> None:
    """``run()`` must leave the global generators of random, numpy and torch untouched.

    A draw shows as a changed state; a re-seeding is caught by watching the seed functions
    during the run (it might restore the very state it found). A run that imports torch
    itself must leave its generator as import made it. The check itself never draws from,
    nor seeds, a global generator, and never imports torch.
    """
    seeded: list[str] = []
    patches = []
    for owner, attr, label in _seed_functions():
        original = getattr(owner, attr)

        def watch(*args: Any, _f: Any = original, _label: str = label, **kwargs: Any) -> Any:
            seeded.append(_label)
            return _f(*args, **kwargs)

        patches.append((owner, attr, original))
        setattr(owner, attr, watch)
    try:
        before = _global_states()
        run()
        changed = _changed(before, _global_states()) + _torch_imported_and_used(before)
    finally:
        for owner, attr, original in patches:
            setattr(owner, attr, original)
    touched = sorted(set(changed) | set(seeded))
    assert not touched, (
        f"{who} touched global random state ({', '.join(touched)}); draw only from the "
        "Generator passed in setup (self.rng)"
    )


# ------------------------------------------------------------------------------ searchers
