"""Run one benchmark module in this process: ``python -m benchmarks.one benchmarks.bench_x``.

Prints one JSON object per row of the module's ``run()``; if the module raises, the
traceback goes to standard error, one failed row naming the error is printed, and the exit
status is 1 (``python -m benchmarks`` runs every module this way, each in its own process).
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback
from typing import Any


def error_row(name: str, error: str) -> dict[str, Any]:
    """The failed row that stands for a module that did not finish."""
    return {"name": name, "error": error, "passed": False}


def main(name: str) -> int:
    """Run the module ``name`` (dotted: ``benchmarks.bench_x``); the exit status."""
    try:
        module = importlib.import_module(name)
        for row in module.run():
            print(json.dumps(row), flush=True)
    except Exception as exc:  # reported as a row; the harness goes on with the next module
        traceback.print_exc()
        print(json.dumps(error_row(name, repr(exc))), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m benchmarks.one benchmarks.bench_NAME")
    sys.exit(main(sys.argv[1]))
