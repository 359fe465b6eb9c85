"""Building the embedded synthetic table from scratch (uncached), per dataset."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from benchmarks import median_seconds, result
from nasfilter.bench.datasets import DATASETS
from nasfilter.bench.surrogate import build_table


def run() -> Iterator[dict[str, Any]]:
    for name in DATASETS:
        seconds = median_seconds(lambda n=name: build_table(n), repeat=5)
        yield result(
            f"surrogate.build_table[{name}]",
            seconds,
            "s",
            "< 0.3 s (uncached, 32768 rows)",
            seconds < 0.3,
        )
