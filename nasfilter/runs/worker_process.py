"""A worker process's life: whether it is forked or spawned (:func:`pool_context`), what
it does first (:func:`worker_init`), and how it ends when its parent dies."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from multiprocessing.context import BaseContext

from nasfilter.runs.blas_threads import apply_thread_env

PARENT_POLL_SECONDS = 0.5  # how often a worker checks that its parent is still alive


def _exit_when_orphaned(parent: int, poll: float) -> None:
    """Exit this worker soon after its parent process dies (runs in a daemon thread).

    A worker whose parent was killed (SIGKILL, out of memory) would otherwise block for
    ever writing its result to a pipe it also holds the read end of, and leak.
    """
    while os.getppid() == parent:
        time.sleep(poll)
    os._exit(1)


def worker_init() -> None:
    """What each worker process does first (a pool's initializer)."""
    # Ctrl-C goes to the whole process group; only the parent handles it, so that it can
    # stop handing out work and leave the database consistent.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    apply_thread_env()  # a forked worker takes the BLAS thread count asked of it, too
    threading.Thread(
        target=_exit_when_orphaned,
        args=(os.getppid(), PARENT_POLL_SECONDS),
        name="nasfilter-orphan-watch",
        daemon=True,
    ).start()


FORK_UNSAFE = ("torch", "onnxruntime", "ray", "tensorflow")  # modules that rule out a fork


def fork_blocker() -> str | None:
    """Why :func:`pool_context` will not fork here (None when it forks)."""
    if sys.platform != "linux":
        return f"fork is unsafe on {sys.platform}"
    if threading.active_count() != 1:
        n = threading.active_count()
        return f"{n} threads run in this process, and a fork copies their locks"
    loaded = [name for name in FORK_UNSAFE if name in sys.modules]
    if loaded:
        return f"{loaded[0]} was imported, and its thread pool can hang a forked worker"
    return None


def pool_context() -> BaseContext:
    """How :func:`~nasfilter.runs.experiment.run_grids` starts its own workers: forked on
    Linux from a process running no other Python thread, so that they begin with this
    process's imports and the inputs it loaded while planning (about 1.3 CPU s less each than
    a fresh interpreter); spawned elsewhere, or while a thread runs (a progress bar's monitor,
    say), which a fork could copy in the middle of holding a lock. Runs are pure functions of
    (spec, seed), so either way gives the same results. A process that has imported a library
    running its own native thread pool (:data:`FORK_UNSAFE`: torch, say, whose forked
    children can hang in it) spawns too. :func:`fork_blocker` says why it spawns; a spawned
    worker imports the main script again, which
    :func:`nasfilter.runs.worker_start.main_reimport` checks."""
    if fork_blocker() is None:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


class WorkerDied(RuntimeError):
    """A worker process died (killed, or out of memory); completed runs are kept."""


def default_jobs() -> int:
    """Worker processes to use by default: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)
