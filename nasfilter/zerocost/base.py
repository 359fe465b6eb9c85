"""The zero-cost proxy interface: one small class per proxy, a registry, and the NaN rule.

A proxy scores one untrained network. It receives a :class:`~nasfilter.zerocost.probe.Probe`
(the architecture, dataset and seed, with the network and the shared gradient pass built on
demand) and returns one float, larger = predicted better::

    class WidthOnly(ZeroCostProxy):
        name = "width"
        needs_data = False

        def score(self, probe):
            return float(sum(p.numel() for p in probe.network().parameters()))

    register_proxy(WidthOnly)

**NaN rule.** A score is NaN only where the proxy's formula is undefined for the network
(each built-in proxy says where, in its docstring; on tss that is a *disconnected* cell, whose
output is identically zero). A NaN or infinite score is never ranked: :func:`check_finite`
refuses it by proxy name and architecture, wherever scores would be ranked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from nasfilter.zerocost.probe import Probe


class ZeroCostProxy:
    """Base class of every zero-cost proxy. Subclasses set ``name`` and implement :meth:`score`.

    Class attributes:
        name: the proxy's name (lower case; the key of its array in a score file).
        needs_data: True when the score reads a data batch (then computed on the stand-in).
        reference: the paper (and reference implementation) it follows.
    """

    name: ClassVar[str] = "proxy"
    needs_data: ClassVar[bool] = True
    reference: ClassVar[str] = ""

    def score(self, probe: Probe) -> float:
        """The score of ``probe``'s network (float; NaN only where documented)."""
        raise NotImplementedError(f"{type(self).__name__} must implement score(probe) -> float")

    def __repr__(self) -> str:
        return f"<zero-cost proxy {self.name}>"


_REGISTRY: dict[str, type[ZeroCostProxy]] = {}


def register_proxy(cls: type[ZeroCostProxy]) -> type[ZeroCostProxy]:
    """Add ``cls`` to the registry under ``cls.name`` (usable as a decorator).

    ValueError for a class that is not a :class:`ZeroCostProxy` or whose name is taken by another
    class."""
    if not (isinstance(cls, type) and issubclass(cls, ZeroCostProxy)):
        raise ValueError(f"register_proxy takes a ZeroCostProxy subclass, got {cls!r}")
    name = cls.name
    if not isinstance(name, str) or not name or name != name.strip().lower() or "," in name:
        raise ValueError(f"a proxy name is a non-empty lower-case word, got {name!r}")
    if name in _REGISTRY and _REGISTRY[name] is not cls:
        raise ValueError(f"a proxy named {name!r} is already registered ({_REGISTRY[name]!r})")
    _REGISTRY[name] = cls
    return cls


def known_proxies() -> tuple[str, ...]:
    """The names of every registered proxy, built-in ones first."""
    return tuple(_REGISTRY)


def get_proxy(name: str | ZeroCostProxy) -> ZeroCostProxy:
    """The proxy called ``name`` (an instance passes through); ValueError listing the known."""
    if isinstance(name, ZeroCostProxy):
        return name
    key = name.strip().lower() if isinstance(name, str) else None
    if key is None or key not in _REGISTRY:
        raise ValueError(
            f"unknown zero-cost proxy {name!r}; known proxies: {', '.join(known_proxies())}"
        )
    return _REGISTRY[key]()


def parse_proxies(names: str | list[str] | tuple[str, ...] | None) -> list[ZeroCostProxy]:
    """Proxies from names (a comma-separated string or a list; None = every registered one)."""
    if names is None:
        return [get_proxy(n) for n in known_proxies()]
    items = names.split(",") if isinstance(names, str) else list(names)
    out = [get_proxy(n) for n in items if not isinstance(n, str) or n.strip()]
    if not out:
        raise ValueError(f"no proxy given; known proxies: {', '.join(known_proxies())}")
    seen = [p.name for p in out]
    dupes = sorted({n for n in seen if seen.count(n) > 1})
    if dupes:
        raise ValueError(f"proxy {dupes[0]!r} is given twice")
    return out


def check_finite(name: str, scores: np.ndarray, archs: np.ndarray | None = None) -> np.ndarray:
    """``scores`` as float64 when every one is finite; else ValueError naming the proxy, how
    many are NaN/infinite and the first architectures (``archs`` labels them; else positions)."""
    values = np.asarray(scores, dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        where = np.flatnonzero(bad)
        labels = where if archs is None else np.asarray(archs)[where]
        raise ValueError(
            f"proxy {name!r} has {int(bad.sum())} NaN or infinite scores (architectures "
            f"{labels[:5].tolist()}{' ...' if bad.sum() > 5 else ''}); a NaN score cannot be "
            "ranked: drop those architectures first (on tss these are the disconnected cells)"
        )
    return values


__all__ = [
    "ZeroCostProxy",
    "check_finite",
    "get_proxy",
    "known_proxies",
    "parse_proxies",
    "register_proxy",
]
