"""Score many architectures: a resumable cache, a local loop and a Ray fan-out.

The cache is a folder holding one append-only JSON-lines file per (space, dataset, seed,
score version): one line ``{"arch": i, "proxy": name, "score": x, "seconds": t}`` per score,
flushed as it is computed. A run that is interrupted loses at most the line being written
(a torn last line is ignored when read); the next run skips every (arch, proxy) already there.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from nasfilter.bench.datasets import Dataset, get_dataset
from nasfilter.bench.spaces import Space, get_space
from nasfilter.zerocost.base import ZeroCostProxy, get_proxy, parse_proxies
from nasfilter.zerocost.nets import check_seed
from nasfilter.zerocost.probe import Probe

VERSION = 1  # the definition of the built-in scores; bump whenever one of them changes


def score_arch(
    space: str | Space,
    arch: object,
    dataset: str | Dataset,
    proxies: Sequence[ZeroCostProxy],
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Each proxy's score of one architecture and the CPU seconds it took: ``{name: (score,
    seconds)}``. A pure function of (space, arch, dataset, seed): torch's global generator is
    left untouched (weights come from a forked, seeded generator; data from numpy)."""
    probe = Probe(space, arch, dataset, seed)
    out: dict[str, tuple[float, float]] = {}
    for proxy in proxies:
        start = time.process_time()
        value = float(proxy.score(probe))
        out[proxy.name] = (value, time.process_time() - start)
    return out


def cache_path(folder: str | Path, space: Space, dataset: Dataset, seed: int) -> Path:
    """The cache file of (space, dataset, seed) at the current :data:`VERSION` in ``folder``."""
    return Path(folder) / f"zerocost-{space.name}-{dataset.name}-seed{seed}-v{VERSION}.jsonl"


def read_cache(path: Path) -> dict[tuple[int, str], tuple[float, float]]:
    """``{(arch, proxy): (score, seconds)}`` of a cache file (empty if absent); a torn last
    line (an interrupted write) is skipped, a damaged line elsewhere is an error naming it."""
    out: dict[tuple[int, str], tuple[float, float]] = {}
    if not path.exists():
        return out
    lines = path.read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out[int(row["arch"]), str(row["proxy"])] = (float(row["score"]), float(row["seconds"]))
        except (ValueError, KeyError, TypeError) as exc:
            if number >= len(lines) - 1:  # the last line, torn by an interruption
                continue
            raise ValueError(f"zero-cost cache {path} line {number} is damaged: {exc}") from None
    return out


@dataclass
class Scores:
    """Scores of one (space, dataset, seed): each proxy's float32 (space.size,) array, NaN
    where not computed or undefined (``computed`` says which), and CPU seconds per arch."""

    space: Space
    dataset: Dataset
    seed: int
    values: dict[str, np.ndarray] = field(default_factory=dict)
    computed: dict[str, np.ndarray] = field(default_factory=dict)
    seconds: dict[str, np.ndarray] = field(default_factory=dict)


def _collect(
    table: dict[tuple[int, str], tuple[float, float]],
    names: Iterable[str],
    space: Space,
    dataset: Dataset,
    seed: int,
    archs: np.ndarray,
) -> Scores:
    scores = Scores(space, dataset, seed)
    for name in names:
        values = np.full(space.size, np.nan, dtype=np.float32)
        seconds = np.full(space.size, np.nan, dtype=np.float32)
        done = np.zeros(space.size, dtype=bool)
        for a in archs.tolist():
            if (a, name) in table:
                values[a], seconds[a] = table[a, name]
                done[a] = True
        scores.values[name], scores.seconds[name], scores.computed[name] = values, seconds, done
    return scores


class _Writer:
    """Appends score lines to the cache file (or nowhere), flushing each one."""

    def __init__(self, path: Path | None) -> None:
        self.handle: TextIO | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            _drop_torn_tail(path)
            self.handle = path.open("a", encoding="utf-8")

    def write(self, arch: int, name: str, score: float, seconds: float) -> None:
        if self.handle is not None:
            row = {"arch": arch, "proxy": name, "score": score, "seconds": round(seconds, 6)}
            self.handle.write(json.dumps(row) + "\n")
            self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def _drop_torn_tail(path: Path) -> None:
    """Cut a torn last line (no final newline: an interrupted write) off ``path``."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def compute(
    space: str | Space,
    dataset: str | Dataset,
    archs: Sequence[int] | np.ndarray,
    proxies: str | Sequence[str | ZeroCostProxy] | None = None,
    seed: int = 0,
    cache: str | Path | None = None,
    executor: str = "local",
    progress: Callable[[int, int], None] | None = None,
    deadline: float | None = None,
    ray_init: dict[str, Any] | None = None,
    reuse: Mapping[tuple[int, str], tuple[float, float]] | None = None,
) -> Scores:
    """Score ``archs`` with ``proxies`` (None = every registered one), resuming from ``cache``.

    ``reuse`` holds scores already known, ``{(arch, proxy): (score, seconds)}`` (the shipped
    package data, :func:`nasfilter.zerocost.scorefile.shipped_table`): they are taken as they
    are, neither recomputed nor written to the cache.

    ``executor`` is "local" (this process) or "ray" (one task per chunk of architectures,
    built-in proxies only: a task rebuilds them by name). ``deadline`` (a ``time.time()``) stops
    a local run after the architecture in progress; what was computed is in the cache and in
    the result. ``progress(done, total)`` is called after each architecture.
    """
    sp, ds, seed = get_space(space), get_dataset(dataset), check_seed(seed)
    chosen = (
        parse_proxies(proxies)
        if proxies is None or isinstance(proxies, str)
        else [get_proxy(p) for p in proxies]
    )
    if not chosen:
        raise ValueError("no proxy given")
    order = np.asarray(list(dict.fromkeys(sp.check_index(a) for a in archs)), dtype=np.int64)
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
    path = None if cache is None else cache_path(cache, sp, ds, seed)
    table = read_cache(path) if path is not None else {}
    table.update(reuse or {})
    names = [p.name for p in chosen]
    todo = [a for a in order.tolist() if any((a, n) not in table for n in names)]
    writer = _Writer(path)
    try:
        if executor == "ray":
            _ray_compute(sp, ds, seed, chosen, todo, table, writer, ray_init, progress)
        else:
            for done, a in enumerate(todo, start=1):
                missing = [p for p in chosen if (a, p.name) not in table]
                for name, (value, secs) in score_arch(sp, a, ds, missing, seed).items():
                    table[a, name] = (value, secs)
                    writer.write(a, name, value, secs)
                if progress is not None:
                    progress(done, len(todo))
                if deadline is not None and time.time() >= deadline:
                    break
    finally:
        writer.close()
    return _collect(table, names, sp, ds, seed, order)


def score_chunk(
    space: str, dataset: str, names: list[str], archs: list[int], seed: int
) -> list[tuple[int, str, float, float]]:
    """Rows ``(arch, proxy, score, seconds)`` of a chunk (what a Ray task runs)."""
    proxies = [get_proxy(n) for n in names]
    rows = []
    for a in archs:
        for name, (value, secs) in score_arch(space, a, dataset, proxies, seed).items():
            rows.append((a, name, value, secs))
    return rows


def _ray_compute(
    sp: Space,
    ds: Dataset,
    seed: int,
    chosen: list[ZeroCostProxy],
    todo: list[int],
    table: dict[tuple[int, str], tuple[float, float]],
    writer: _Writer,
    ray_init: dict[str, Any] | None,
    progress: Callable[[int, int], None] | None,
) -> None:
    try:
        import ray
    except ImportError as exc:
        raise ValueError(
            f"--ray needs Ray ({exc}): install the ray extra, `pip install nasfilter[ray]`"
        ) from None
    names = [p.name for p in chosen]
    for p in chosen:
        if type(p) is not type(get_proxy(p.name)):
            raise ValueError(
                f"proxy {p.name!r} is not registered: Ray tasks rebuild proxies by name"
            )
    started = not ray.is_initialized()
    if started:
        ray.init(**(ray_init or {}), include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(score_chunk).options(num_cpus=1)
        chunks = [todo[i : i + 8] for i in range(0, len(todo), 8)]
        pending = [task.remote(sp.name, ds.name, names, c, seed) for c in chunks]
        done = 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for a, name, value, secs in ray.get(ready[0]):
                table[a, name] = (value, secs)
                writer.write(a, name, value, secs)
            done += 1
            if progress is not None:
                progress(done, len(chunks))
    finally:
        if started:
            ray.shutdown()
