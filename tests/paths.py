"""Paths every test folder shares, wherever a test file sits under tests/."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
# The official NATS-Bench size-space fixture archive (three architectures' records).
NATS_SSS_FIXTURE = DATA / "nats-sss" / "NATS-sss-v1_0-50262-simple"


def load_script(name: str) -> ModuleType:
    """The module of ``scripts/<name>.py`` (scripts are not a package), loaded afresh."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
