"""nasfilter.bench.nats_api against nats_bench on the same archive, the same loops, one run.

The archive is written once in NATS's own format by ``write_varied_archive`` (SYNTHETIC
numbers, real record structure: every setting, record, seed and epoch) and cached under
``bench-data/``: by default every architecture whose channels are in {8, 16, 24, 32} (1024
architectures, so both APIs see a dense space the loops can search), or all 32768 with
``NASFILTER_BENCH_FULL=1`` (writing takes a while). It is converted with ``convert_full``.

Measured, side by side:

- the seconds spent in ``create`` plus inside every API call during a 20,000 s CIFAR-10 search
  (random search, regularized evolution, REINFORCE, successive halving; identical
  trajectories required; nasfilter's median of three runs, each from a fresh ``create``):
  ratio nats_bench / nasfilter, goal >= 100;
- the converted benchmark's size on disk against the archive's (goal <= 0.5);
- opening it (``create``), goal <= 5 ms;
- the resident memory of a fresh process after a random search on each API (goal < 200 MB
  for nasfilter).

The topology space, side by side on the official tss fixture (architectures 0, 11, 284;
``create('real', 'tss')`` against ``nats_bench.create(fixture, 'tss')``):

- ``create`` plus every call of a 20,000 s CIFAR-10 random search over the fixture's
  architectures at hp 200 (the same seeds drawn, the same accuracies after float32 rounding,
  required), goal >= 100;
- one ``simulate_train_eval`` call (hp 200, median of 2000), reported beside it.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import median_seconds, result
from nasfilter.bench.fullbench import convert_full
from nasfilter.bench.nats_api import create
from nasfilter.bench.nats_api.loops import LOOPS, seeded
from nasfilter.bench.spaces.sss import all_channels
from nasfilter.testing.nats_full_archive import write_varied_archive

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "nats-sss" / "NATS-sss-v1_0-50262-simple"
TSS_FIXTURE = REPO / "tests" / "data" / "nats-tss" / "NATS-tss-v1_0-3ffb9-simple"
TSS_ARCHS = (0, 11, 284)
TEMPLATE = FIXTURE / "000284.pickle.pbz2"
BENCH_DATA = REPO / "bench-data"
FULL = os.environ.get("NASFILTER_BENCH_FULL") == "1"
CHANNELS = (8, 16, 24, 32, 40, 48, 56, 64) if FULL else (8, 16, 24, 32)
DATASET, BUDGET = "cifar10", 20000.0
SPEED_GOAL, SIZE_GOAL, OPEN_GOAL_S, RSS_GOAL_MB = 100.0, 0.5, 0.005, 200.0
REPEAT = 3  # nasfilter runs per loop (median), each from a fresh create


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _data() -> tuple[Path, Path, float | None]:
    """(archive, converted folder, conversion seconds or None if cached)."""
    home = BENCH_DATA / f"nats-full-varied-{len(CHANNELS)}ch-v1"
    archive, converted = home / "NATS-sss-v1_0-50262-simple", home / "full"
    if not archive.is_dir():
        BENCH_DATA.mkdir(exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=BENCH_DATA))
        try:
            mask = np.isin(all_channels(), CHANNELS).all(axis=1)
            write_varied_archive(partial, TEMPLATE, np.flatnonzero(mask).tolist(),
                                 np.random.default_rng(2026))
            partial.rename(home)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    seconds = None
    if not converted.is_dir():
        start = time.perf_counter()
        convert_full(archive, converted, allow_partial=not FULL, progress=False)
        seconds = time.perf_counter() - start
    return archive, converted, seconds


class _Timed:
    """An API whose method calls add their wall seconds to ``seconds``."""

    def __init__(self, api: Any, seconds: float) -> None:
        self._api = api
        self.seconds = seconds

    def __getattr__(self, name: str) -> Any:
        member = getattr(self._api, name)
        if not callable(member):
            return member

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return member(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


def _search(make_api: Any, loop: str, seed: int) -> tuple[float, Any]:
    """Seconds spent in ``create`` and in the API's calls during one search (the loop's own
    work, drawing architectures and updating its model, is not counted)."""
    with seeded(seed):
        start = time.perf_counter()
        api = _Timed(make_api(), 0.0)
        api.seconds = time.perf_counter() - start
        trajectory = LOOPS[loop](api, DATASET, BUDGET, channels=CHANNELS)
        return api.seconds, trajectory


_RSS = """
{make}
from nasfilter.bench.nats_api.loops import random_search, seeded
with seeded(0):
    random_search(api, "cifar10", 20000.0, channels={channels})
print([l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1])
"""


def _rss_mb(make: str) -> float:
    code = _RSS.format(make=make, channels=CHANNELS)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env, timeout=600)
    return int(out.stdout.split()[-1]) / 1024


def _tss_search(make_api: Any, seed: int) -> tuple[float, list[tuple[int, float]]]:
    """Seconds in ``create`` and in the calls of a 20,000 s random search over the fixture's
    architectures (hp 200, CIFAR-10); the trajectory as (index, float32 accuracy)."""
    trajectory: list[tuple[int, float]] = []
    with seeded(seed):
        start = time.perf_counter()
        api = _Timed(make_api(), 0.0)
        api.seconds = time.perf_counter() - start
        while api.used_time < BUDGET:
            index = random.choice(TSS_ARCHS)
            acc = api.simulate_train_eval(index, DATASET, hp="200")[0]
            trajectory.append((index, float(np.float32(acc))))
        return api.seconds, trajectory


def tss_rows() -> Iterator[dict[str, Any]]:
    """The tss rows: ``create('real', 'tss')`` against nats_bench on the official fixture."""
    import nats_bench

    def ours() -> Any:
        return create("real", "tss", fast_mode=True, verbose=False)

    def theirs() -> Any:
        return nats_bench.create(str(TSS_FIXTURE), "tss", fast_mode=True, verbose=False)

    runs = [_tss_search(ours, 0) for _ in range(REPEAT)]
    t_ours, traj_ours = sorted(t for t, _ in runs)[REPEAT // 2], runs[0][1]
    t_ref, traj_ref = _tss_search(theirs, 0)
    ratio = t_ref / t_ours
    yield result("tss nats_api 20000 s random search (fixture, hp 200): create + API calls",
                 t_ours, "s", f"nats_bench / nasfilter >= {SPEED_GOAL:g}, identical "
                 "trajectories", ratio >= SPEED_GOAL and traj_ours == traj_ref, ratio=ratio,
                 nats_bench_s=t_ref, evaluations=len(traj_ours),
                 identical=traj_ours == traj_ref)
    api, ref = ours(), theirs()
    with seeded(1):
        call = median_seconds(lambda: api.simulate_train_eval(11, DATASET, hp="200"),
                              repeat=5, number=400)
        ref_call = median_seconds(lambda: ref.simulate_train_eval(11, DATASET, hp="200"),
                                  repeat=5, number=400)
    yield result("tss simulate_train_eval call (fixture, hp 200)", call, "s", "informational",
                 True, ratio=ref_call / call, nats_bench_s=ref_call)


def run() -> Iterator[dict[str, Any]]:
    import nats_bench

    yield from tss_rows()

    archive, converted, convert_s = _data()
    n_archs = len(list(archive.glob("0*.pickle.pbz2")))
    if convert_s is not None:
        yield result("convert_full seconds per 1000 architectures", 1000 * convert_s / n_archs,
                     "s", "informational", True, n_archs=n_archs)

    def ours() -> Any:
        return create(str(converted), "sss", fast_mode=True, verbose=False)

    def theirs() -> Any:
        return nats_bench.create(str(archive), "sss", fast_mode=True, verbose=False)

    for loop in sorted(LOOPS):
        runs = [_search(ours, loop, 0) for _ in range(REPEAT)]  # cheap: median of a few
        t_ours, traj_ours = sorted(t for t, _ in runs)[REPEAT // 2], runs[0][1]
        t_ref, traj_ref = _search(theirs, loop, 0)  # seconds long: one run
        ratio = t_ref / t_ours
        yield result(f"nats_api {loop} 20000 s search: create + API calls", t_ours, "s",
                     f"nats_bench / nasfilter >= {SPEED_GOAL:g}, identical trajectories",
                     ratio >= SPEED_GOAL and traj_ours == traj_ref, ratio=ratio,
                     nats_bench_s=t_ref, evaluations=len(traj_ours),
                     identical=traj_ours == traj_ref, archive_archs=n_archs)
    size_ratio = _folder_bytes(converted) / _folder_bytes(archive)
    yield result("full benchmark size / archive size", size_ratio, "ratio",
                 f"<= {SIZE_GOAL}", size_ratio <= SIZE_GOAL,
                 converted_mb=_folder_bytes(converted) / 2**20,
                 archive_mb=_folder_bytes(archive) / 2**20)
    open_s = median_seconds(lambda: ours().get_latency(0, "cifar10"), repeat=7)
    ref_open_s = median_seconds(lambda: theirs().get_latency(0, "cifar10"), repeat=3)
    yield result("create + first query", open_s, "s", f"<= {OPEN_GOAL_S * 1000:g} ms",
                 open_s <= OPEN_GOAL_S, ratio=ref_open_s / open_s, nats_bench_s=ref_open_s)
    rss = _rss_mb(f"from nasfilter.bench.nats_api import create\napi = create({str(converted)!r}, "
                  "'sss', fast_mode=True, verbose=False)")
    ref_rss = _rss_mb(f"import nats_bench\napi = nats_bench.create({str(archive)!r}, 'sss', "
                      "fast_mode=True, verbose=False)")
    yield result("resident memory after a 20000 s random search", rss, "MB",
                 f"< {RSS_GOAL_MB:g} MB", rss < RSS_GOAL_MB, ratio=ref_rss / rss,
                 nats_bench_mb=ref_rss)
