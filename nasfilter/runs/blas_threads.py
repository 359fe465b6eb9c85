"""BLAS thread counts of a forked worker process, from the environment.

OpenBLAS reads ``OPENBLAS_NUM_THREADS`` (or ``OMP_NUM_THREADS``) once, when it is loaded; a
worker forked from a process that loaded it earlier inherits that process's count, so the
variables set for it (``nasfilter demo`` asks for one thread per worker) would not apply,
and idle BLAS threads spinning beside the other workers cost CPU. :func:`apply_thread_env`
sets the count of every OpenBLAS library loaded in this process (numpy's and scipy's) to
what the environment asks, as a freshly started process would read it. Linux only (the
loaded libraries are read from ``/proc/self/maps``); elsewhere, or for a library without
the setter, it does nothing.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")  # OpenBLAS's order
_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def requested_threads() -> int | None:
    """The BLAS thread count the environment asks for (:data:`THREAD_VARIABLES`, the first
    set to a positive integer), or None."""
    for name in THREAD_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def loaded_openblas() -> list[str]:
    """Paths of the OpenBLAS libraries mapped into this process (empty where
    ``/proc/self/maps`` cannot be read)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    paths = (line.split(maxsplit=5)[-1] for line in maps.splitlines() if "openblas" in line)
    return list(dict.fromkeys(p for p in paths if p.startswith("/") and ".so" in p))


def apply_thread_env() -> int:
    """Set every loaded OpenBLAS library's thread count to :func:`requested_threads`;
    the number of libraries set (0 when nothing is asked, or none is loaded)."""
    n = requested_threads()
    if n is None:
        return 0
    done = 0
    for path in loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, s) for s in _SETTERS if hasattr(lib, s)), None)
        if setter is not None:
            setter(ctypes.c_int(n))
            done += 1
    return done


__all__ = ["THREAD_VARIABLES", "apply_thread_env", "loaded_openblas", "requested_threads"]
