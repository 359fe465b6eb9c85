"""A forked worker takes the BLAS thread count its environment asks for."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nasfilter.runs.blas_threads import requested_threads

# Prints each loaded OpenBLAS's thread count as loaded, then after apply_thread_env with 2, 1.
SCRIPT = """
import ctypes, json, os
import numpy, scipy.linalg
from nasfilter.runs.blas_threads import apply_thread_env, loaded_openblas
getters = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
           "openblas_get_num_threads64_", "openblas_get_num_threads")
def counts():
    out = []
    for path in loaded_openblas():
        lib = ctypes.CDLL(path)
        out += [getattr(lib, g)() for g in getters if hasattr(lib, g)][:1]
    return out
before = counts()
os.environ["OPENBLAS_NUM_THREADS"] = "2"
n_set = apply_thread_env()
two = counts()
os.environ["OPENBLAS_NUM_THREADS"] = "1"
apply_thread_env()
print(json.dumps([before, n_set, two, counts()]))
"""


@pytest.mark.subprocess
def test_the_loaded_openblas_libraries_take_the_requested_count() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["OPENBLAS_NUM_THREADS"] = "1"  # loaded with one thread
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True
    )
    before, n_set, two, one = json.loads(done.stdout)
    if not before:
        pytest.skip("no OpenBLAS with a thread-count getter is loaded here")
    assert before == [1] * len(before)
    assert n_set == len(before)
    assert two == [min(2, os.cpu_count() or 1)] * len(before)  # OpenBLAS caps it at the CPUs
    assert one == [1] * len(before)


def test_requested_threads_reads_openblas_then_omp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert requested_threads() is None
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert requested_threads() == 2
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert requested_threads() == 1
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "many")  # not a count: the next variable
    assert requested_threads() == 2
