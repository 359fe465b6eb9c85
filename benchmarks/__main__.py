"""Run every benchmark module and print one JSON object per line."""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
import traceback

import benchmarks


def main(argv: list[str]) -> int:
    only = set(argv)
    failed = False
    for info in sorted(pkgutil.iter_modules(benchmarks.__path__), key=lambda m: m.name):
        if not info.name.startswith("bench_") or (only and info.name not in only):
            continue
        try:
            module = importlib.import_module(f"benchmarks.{info.name}")
            for row in module.run():
                print(json.dumps(row), flush=True)
                failed |= not row["passed"]
        except Exception as exc:  # report and go on with the other benchmarks
            traceback.print_exc()
            print(json.dumps({"name": info.name, "error": repr(exc), "passed": False}), flush=True)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
