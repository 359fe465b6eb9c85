"""Run the benchmark modules, each in a fresh interpreter, and print one JSON object per line.

``python -m benchmarks [bench_x ...]``: every ``bench_*`` module (or the ones named), in
name order. Each module runs in its own process
(``python -m benchmarks.one benchmarks.bench_x``), so that what one module leaves behind
(imported libraries, a large heap the garbage collector walks, warmed caches, threads)
cannot speed up or slow down the next one's timings, and a module that crashes is reported
as one failed row while the others still run. Exit status 1 if any row failed.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import benchmarks
from benchmarks.one import error_row


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


def run_module(module: str) -> bool:
    """Run the benchmark module ``module`` (a dotted name, ``benchmarks.bench_x``) in a fresh
    interpreter, relaying its rows (and its standard error) as they come; True if every row
    passed and the process exited cleanly."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.one", module], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    passed, rows = True, 0
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
    if code != 0 and passed:  # the module's own error row says why, if it got to write one
        print(json.dumps(error_row(module, f"exited with status {code} after {rows} rows")))
        passed = False
    return passed


def main(argv: list[str]) -> int:
    try:
        names = module_names(set(argv))
    except ValueError as exc:
        print(f"python -m benchmarks: {exc}", file=sys.stderr)
        return 2
    failed = False
    for name in names:
        failed |= not run_module(f"benchmarks.{name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
