"""Fixtures shared by every test folder (tests/<subpackage>/ mirrors nasfilter/<subpackage>/).

Shared paths live in :mod:`tests.paths`, table and proxy builders in :mod:`tests.tables`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest


@pytest.fixture
def restore_random() -> Iterator[None]:
    """Put Python's global ``random`` state back after the test: the nats_bench-compatible API
    draws from it exactly as nats_bench does (``pytestmark = usefixtures("restore_random")``)."""
    state = random.getstate()
    yield
    random.setstate(state)
