"""A folder of cached model profiles, so a survey re-run analyses nothing twice.

One ``.prof`` file per (architecture, image size) under
``<root>/timm-<timm version>-a<ANALYSIS>``: a first line of JSON (the layer names and kinds,
``params``, ``fvcore_macs`` and the input shape), then the
:class:`~nasfilter.bench.layer_table.LayerTable` arrays as little-endian float64,
``len(ARRAY_FIELDS)``
rows of one value per layer. A model that cannot be analysed is cached too, as a JSON line
with its error message, so that it is reported, not retried. A cached survey reads a
thousand such files; one read and one JSON parse each is about a tenth of what an ``.npz``
(a zip archive of ``.npy`` members) costs. ``ANALYSIS`` changes whenever the fusion rules or
this file format change.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import numpy as np

from nasfilter.bench.layer_table import ARRAY_FIELDS, LayerTable
from nasfilter.files import atomic_write
from nasfilter.runs.worker_start import main_hidden
from nasfilter.survey.analysis import ModelProfile
from nasfilter.survey.fold import FOLD_RULES
from nasfilter.survey.schedule import work_order
from nasfilter.survey.timm_import import import_timm
from nasfilter.survey.timm_index import default_cache_root, has_index, timm_version
from nasfilter.survey.timm_models import timm_folded_profile, timm_profile

ANALYSIS = 5
__all__ = ["default_cache_root"]  # re-exported: where the cache lives by default


def cache_folder(root: str | os.PathLike[str] | None = None) -> Path:
    """The versioned folder for the installed timm and this analysis (timm not imported)."""
    version = timm_version()
    return Path(root if root is not None else default_cache_root()) / f"timm-{version}-a{ANALYSIS}"


def _file(folder: Path, arch: str, img_size: int, fold: int = 1) -> Path:
    suffix = f"@f{fold}r{FOLD_RULES}" if fold > 1 else ""
    return folder / f"{arch}@{img_size}{suffix}.prof"


def save_profile(folder: Path, profile: ModelProfile, fold: int = 1) -> None:
    """Write ``profile`` (atomically) into ``folder``; ``fold``: of the folded model."""
    t = profile.table
    head = {
        "names": list(t.names),
        "kinds": list(t.kinds),
        "params": profile.params,
        "fvcore_macs": profile.fvcore_macs,
        "input_shape": list(profile.input_shape),
    }
    fields = np.stack([getattr(t, a)[0].astype("<f8") for a in ARRAY_FIELDS])
    with atomic_write(_file(folder, profile.name, profile.input_shape[1], fold), "wb") as fh:
        fh.write(json.dumps(head).encode() + b"\n" + fields.tobytes())


def save_error(folder: Path, arch: str, img_size: int, message: str, fold: int = 1) -> None:
    """Remember that ``arch`` at ``img_size`` (folded by ``fold``) cannot be analysed, and why."""
    with atomic_write(_file(folder, arch, img_size, fold), "wb") as fh:
        fh.write(json.dumps({"error": message}).encode() + b"\n")


def load(folder: Path, arch: str, img_size: int, fold: int = 1) -> ModelProfile | str | None:
    """The cached profile, the cached error message, or None when not cached (or damaged:
    then it is analysed again).

    A folded model's profile is per folded input (f images, C·f channels)."""
    try:
        data = _file(folder, arch, img_size, fold).read_bytes()
        line, _, body = data.partition(b"\n")
        head = json.loads(line)
        if "error" in head:
            return str(head["error"])
        n = len(head["names"])
        fields = np.frombuffer(body, dtype="<f8").reshape(len(ARRAY_FIELDS), n)
        table = LayerTable(
            names=tuple(head["names"]),
            kinds=tuple(head["kinds"]),
            present=np.ones((1, n), dtype=bool),
            **{a: fields[k : k + 1].astype(np.float64) for k, a in enumerate(ARRAY_FIELDS)},
        )
        c, h, w = (int(d) for d in head["input_shape"])
        return ModelProfile(
            arch, (c, h, w), table, float(head["params"]), float(head["fvcore_macs"])
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None  # damaged (a partial copy, another format): analysed again


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused (it runs again after): building and tracing a
    model allocates tens of thousands of objects, which would trigger it over and over."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _work(args: tuple[str, str, int, int]) -> tuple[str, int, str | None]:
    folder, arch, img_size, fold = args
    try:
        with _gc_paused():
            if fold > 1:
                profile = timm_folded_profile(arch, img_size, fold)
            else:
                profile = timm_profile(arch, img_size)
    except Exception as exc:  # reported per model, never fatal for the survey
        message = f"{type(exc).__name__}: {exc}"
        save_error(Path(folder), arch, img_size, message, fold)
        return arch, img_size, message
    save_profile(Path(folder), profile, fold)
    return arch, img_size, None


def worker_pool(jobs: int) -> ProcessPoolExecutor:
    """A pool of ``jobs`` fresh (spawned) worker processes for :func:`_work`.

    Never forked: a fork of a process that has already run torch inherits its thread pools'
    locks in whatever state they were, and a worker can then wait in a torch operator
    forever. Each spawned worker imports torch and timm itself (a few seconds, in parallel),
    then freezes what it imported out of the garbage collector's reach (:func:`_start_worker`).
    """
    import multiprocessing

    return ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
    )


def _start_worker() -> None:
    """A worker's start: ignore Ctrl-C, import timm (and torch), then ``gc.freeze()`` the
    imported objects, so that no later collection walks them again.

    Ctrl-C reaches every process of the terminal's group; the survey's process stops handing
    out items and waits for the workers to finish theirs (each writes its file whole), so a
    worker is not interrupted mid-item or mid-import (which printed its traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import_timm()
    gc.freeze()


class Workers:
    """Up to ``n`` spawned workers (:func:`worker_pool`), started on first use, shared by
    every analysis of one survey (its models, then their folded models), shut down on exit.

    :meth:`start` starts them at once (each imports torch and timm as it starts), so that
    this process can do something else meanwhile, e.g. build the timm index (importing them
    too) on an empty cache. On exit (Ctrl-C included: workers ignore it) they finish the
    items they hold, at most two each, and exit."""

    def __init__(self, n: int) -> None:
        if n < 0:
            raise ValueError(f"workers must be >= 0, got {n}")
        self.n = n
        self._pool: ProcessPoolExecutor | None = None

    def pool(self) -> ProcessPoolExecutor:
        """The pool, started now if it was not (requires ``n`` >= 1)."""
        if self.n < 1:
            raise ValueError("no workers to start (n = 0)")
        if self._pool is None:
            self._pool = worker_pool(self.n)
        return self._pool

    def start(self) -> None:
        """Spawn all ``n`` workers now (none when ``n`` is 0)."""
        if self.n < 1 or self._pool is not None:
            return
        pool = self.pool()
        with main_hidden():  # an unguarded script is not run again in each worker
            for _ in range(self.n):  # one submit spawns one worker while none is idle
                pool.submit(_ready)

    def start_if_cold(self, folder: Path) -> None:
        """:meth:`start` when ``folder`` holds no timm index yet (an empty cache: the survey's
        process then builds the index, importing torch and timm, while the workers import
        them too, instead of before they start)."""
        if not has_index(folder):
            self.start()

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=exc is not None)
            self._pool = None


def _ready() -> None:
    """A warm-up item: the worker that runs it has started (imported torch and timm)."""


def _analyse(
    todo: list[tuple[str, str, int, int]],
    jobs: int,
    progress: Callable[[int, int], None] | None,
    workers: Workers | None = None,
) -> None:
    """Run :func:`_work` on every item of ``todo`` in ``jobs`` processes: this one and
    ``jobs - 1`` spawned workers (those of ``workers`` when given, else a pool of its own).

    This process has torch and timm imported already (or imports them once), so it analyses
    too instead of waiting: it takes items from the back of the list (in
    :func:`~nasfilter.survey.schedule.work_order`) while a thread of it, :class:`_Feeder`,
    hands the workers items from the front, two in flight each, so that a worker never waits
    for this process to finish an item of its own. ``progress(k, n)`` per item."""
    order = work_order(todo, [arch for _, arch, _, _ in todo])
    lock, ticks = threading.Lock(), itertools.count(1)

    def tick() -> None:
        with lock:
            k = next(ticks)
            if progress:
                progress(k, len(order))

    if jobs == 1:
        for item in order:
            _work(item)
            tick()
        return
    with contextlib.ExitStack() as stack:
        if workers is None or workers.n < 1:
            workers = stack.enter_context(Workers(jobs - 1))
        stack.enter_context(main_hidden())
        _share(deque(order), workers, tick)


def _share(
    pending: deque[tuple[str, str, int, int]], workers: Workers, tick: Callable[[], None]
) -> None:
    """:func:`_analyse`'s two ends: the workers from the front, this process from the back;
    returns when every item is done, raises what a worker raised (a broken pool included)."""
    feeder = _Feeder(workers, pending, tick)
    feeder.start()
    try:
        while feeder.error is None:
            try:
                item = pending.pop()  # atomic: the feeder takes from the other end
            except IndexError:
                break
            _work(item)
            tick()
    finally:
        pending.clear()  # on an error or Ctrl-C here: the feeder hands out nothing more
        feeder.join()
    if feeder.error is not None:
        raise feeder.error


class _Feeder(threading.Thread):
    """Hands the workers' pool items from the front of ``pending``, two in flight a worker,
    until none is left; the first exception a worker raised (a crash included) is kept in
    :attr:`error`, and ``pending`` is then emptied. Returns once no item is in flight."""

    def __init__(
        self, workers: Workers, pending: deque[tuple[str, str, int, int]], tick: Callable[[], None]
    ) -> None:
        super().__init__(name="nasfilter-survey-feeder", daemon=True)
        self.pool, self.depth = workers.pool(), 2 * workers.n
        self.pending, self.tick = pending, tick
        self.error: BaseException | None = None

    def run(self) -> None:
        inflight: set[Future[Any]] = set()
        try:
            while True:
                while len(inflight) < self.depth:
                    try:
                        item = self.pending.popleft()
                    except IndexError:
                        break
                    inflight.add(self.pool.submit(_work, item))
                if not inflight:
                    return
                done, inflight = wait(inflight, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()  # a worker's exception or crash is raised here
                    self.tick()
        except BaseException as exc:  # handed to the survey's thread, which raises it
            self.error = exc
            self.pending.clear()
            wait(inflight)


def profile_all(
    pairs: Sequence[tuple[str, int]],
    folder: Path,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    fold: int = 1,
    workers: Workers | None = None,
) -> dict[tuple[str, int], ModelProfile | str]:
    """Profiles (or error messages) of every (architecture, img_size), from the cache or new.

    New ones are analysed in ``jobs`` processes (this one and ``jobs - 1`` spawned workers,
    :func:`_analyse`; those of ``workers`` when given) and cached in ``folder``. With
    ``fold`` > 1, of the folded models (:func:`nasfilter.survey.fold.fold`).
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[tuple[str, int], ModelProfile | str] = {}
    todo = []
    for arch, size in dict.fromkeys(pairs):
        cached = load(folder, arch, size, fold)
        if cached is None:
            todo.append((str(folder), arch, size, fold))
        else:
            out[(arch, size)] = cached
    if todo:
        _analyse(todo, min(jobs, len(todo)), progress, workers)
        for _, arch, size, _ in todo:
            loaded = load(folder, arch, size, fold)
            assert loaded is not None
            out[(arch, size)] = loaded
    return out
