"""The study's default settings, defined once (a leaf module: it imports nothing of nasfilter).

The command line, the experiment runner and ``reproduce`` import these, so a default
changes in one place.
"""

from __future__ import annotations

DEFAULT_BUDGET = 110_000.0  # simulated seconds per run, the study's budget (docs/facts.md §4)
DEFAULT_TICKS = 100  # points of a metric curve, evenly spaced in simulated time
DEFAULT_SEEDS = tuple(range(9))  # the study's nine seeds
