"""Run the benchmark modules, each in a fresh interpreter, and print one JSON object per line.

``python -m benchmarks [--limit SECONDS] [bench_x ...]``: every ``bench_*`` module (or the
ones named), in name order. Each module runs in its own process
(``python -m benchmarks.one benchmarks.bench_x``), so that what one module leaves behind
(imported libraries, a large heap the garbage collector walks, warmed caches, threads)
cannot speed up or slow down the next one's timings, and a module that crashes is reported
as one failed row while the others still run. A module still running after ``--limit``
seconds of wall time (default :data:`DEFAULT_LIMIT_S`) is stopped with every process it
started (its own process group) and reported as one failed row; the others still run.
Exit status 1 if any row failed, 2 for bad arguments.
"""

from __future__ import annotations

import json
import math
import os
import pkgutil
import signal
import subprocess
import sys
import threading

import benchmarks
from benchmarks.one import error_row

# Wall seconds one module may run: the slowest (bench_multifidelity) takes about 42 minutes
# on 2 cores under a load of 3-4, so an hour and a half leaves it room on a loaded machine.
DEFAULT_LIMIT_S = 5400.0


def module_names(only: set[str]) -> list[str]:
    """The benchmark modules to run, in name order; ValueError naming an unknown one."""
    names = sorted(
        info.name
        for info in pkgutil.iter_modules(benchmarks.__path__)
        if info.name.startswith("bench_")
    )
    unknown = sorted(only - set(names))
    if unknown:
        raise ValueError(f"no benchmark module {', '.join(unknown)}; there are {', '.join(names)}")
    return [n for n in names if not only or n in only]


def _stop_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the process group of ``proc`` (it and every worker it spawned), if alive."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # already gone, workers included
        pass


def run_module(module: str, limit_s: float = DEFAULT_LIMIT_S) -> bool:
    """Run the benchmark module ``module`` (a dotted name, ``benchmarks.bench_x``) in a fresh
    interpreter, relaying its rows (and its standard error) as they come; True if every row
    passed and the process exited cleanly within ``limit_s`` wall seconds. A module over
    its limit, or interrupted (Ctrl-C), is stopped with every process it started."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.one", module],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, so that its workers stop with it
    )
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        _stop_group(proc)

    timer = threading.Timer(limit_s, expire)
    timer.daemon = True
    timer.start()
    assert proc.stdout is not None
    passed, rows = True, 0
    try:
        for line in proc.stdout:
            print(line, end="", flush=True)
            try:
                row = json.loads(line)
            except ValueError:  # a stray print of the module: relayed, not judged
                continue
            if isinstance(row, dict) and "passed" in row:
                rows += 1
                passed &= bool(row["passed"])
        code = proc.wait()
    except BaseException:  # Ctrl-C or an error here: leave no benchmark process behind
        _stop_group(proc)
        proc.wait()
        raise
    finally:
        timer.cancel()
    _stop_group(proc)  # workers the module left running after it exited
    if timed_out.is_set():
        error = f"stopped after the limit of {limit_s:g} s wall, after {rows} rows"
        print(json.dumps(error_row(module, error)), flush=True)
        return False
    if code != 0 and passed:  # the module's own error row says why, if it got to write one
        print(json.dumps(error_row(module, f"exited with status {code} after {rows} rows")))
        passed = False
    return passed


def parse_limit(text: str) -> float:
    """``--limit``'s value: wall seconds, a finite number > 0; ValueError naming it."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"--limit must be a number of seconds > 0, got {text!r}")
    return value


def main(argv: list[str]) -> int:
    args, limit_s = list(argv), DEFAULT_LIMIT_S
    try:
        if "--limit" in args:
            at = args.index("--limit")
            if at + 1 == len(args):
                raise ValueError("--limit needs a number of seconds")
            limit_s = parse_limit(args[at + 1])
            del args[at : at + 2]
        names = module_names(set(args))
    except ValueError as exc:
        print(f"python -m benchmarks: {exc}", file=sys.stderr)
        return 2
    failed = False
    for name in names:
        failed |= not run_module(f"benchmarks.{name}", limit_s)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
