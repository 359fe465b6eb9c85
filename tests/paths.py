"""Paths every test folder shares, wherever a test file sits under tests/."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
# The official NATS-Bench size-space fixture archive (three architectures' records).
NATS_SSS_FIXTURE = DATA / "nats-sss" / "NATS-sss-v1_0-50262-simple"
