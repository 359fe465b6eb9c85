"""Zero-cost proxies: scores of an untrained network, computed before any training.

Not to be confused with :mod:`nasfilter.bench.proxy` (the hardware signal table). See
docs/cheap-signals.md.
"""

from __future__ import annotations

from nasfilter.zerocost import proxies as _builtins  # noqa: F401  (registers the built-ins)
from nasfilter.zerocost.base import (
    ZeroCostProxy,
    check_finite,
    get_proxy,
    known_proxies,
    parse_proxies,
    register_proxy,
)
from nasfilter.zerocost.probe import Probe

__all__ = [
    "Probe",
    "ZeroCostProxy",
    "check_finite",
    "get_proxy",
    "known_proxies",
    "parse_proxies",
    "register_proxy",
]
