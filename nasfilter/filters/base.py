"""The filter interface: decide which proposed architectures are worth an accuracy query.

A filter sits between a searcher's ``ask`` and the problem's ``evaluate``; neither side
knows about the other. :meth:`Filter.setup` hands it, once per run, its own generator and a
metered :class:`~nasfilter.sim.proxy_handle.ProxyHandle` (``self.rng``, ``self.proxy``: utilization
and throughput, each query charged to the simulated clock); it cannot reach accuracy. Its
one entry point, :meth:`Filter.keep`, says whether one proposed architecture is evaluated.
A dropped proposal is told to the searcher as ``None``.

A new filter is one small class::

    class FastOnly(Filter):
        name = "fast-only"
        needs_proxy = True

        def keep(self, arch):
            return self.proxy.query(arch).throughput > 1e5

A filter's parameters are its ``__init__`` arguments, each stored as the attribute of the
same name; :meth:`~nasfilter.sim.plugin.Plugin.config` reports them.

A filter written for the earlier interface (``select(candidates, proxy) -> list``) is
refused at :meth:`Filter.setup` with a message that says how to migrate
(:data:`MIGRATE_FILTER`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

from nasfilter.bench.spaces.sss import Arch
from nasfilter.sim.plugin import Plugin
from nasfilter.sim.proxy_handle import SearchContext

MIGRATE_FILTER = (
    "replace select(self, candidates, proxy) -> list with keep(self, arch) -> bool, which "
    "judges one architecture and queries self.proxy (docs/tutorial-filter.md, 'Migrating "
    "from select')"
)


class Filter(Plugin):
    """Base class of every filter. Subclasses implement :meth:`keep`.

    Class attributes:
        name: a short name used in results.
        needs_proxy: True when the filter queries the proxy (class or instance attribute).
    """

    name: ClassVar[str] = "filter"
    kind: ClassVar[str] = "filter"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every subclass's ``keep`` refuses a non-Arch argument, and a call before
        :meth:`setup`, with the library's own message (so every plugin gets them)."""
        super().__init_subclass__(**kwargs)
        keep = cls.__dict__.get("keep")
        if keep is not None and not getattr(keep, "_checked", False):
            cls.keep = _checked_keep(keep)  # type: ignore[method-assign,assignment]

    def setup(self, context: SearchContext) -> None:
        """Start a fresh run: check the filter (:func:`validate_filter`), store the generator
        and proxy, then call :meth:`reset`."""
        validate_filter(self)
        super().setup(context)

    def keep(self, arch: Arch) -> bool:
        """True to evaluate ``arch``, False to drop it (it is told to the searcher as None).

        Called once per proposal, in ask order; may query ``self.proxy`` (charged)."""
        raise NotImplementedError(f"{type(self).__name__} must implement keep(arch) -> bool")

    def keep_index(self, arch: Arch, index: int) -> bool:
        """:meth:`keep` of ``arch``, whose NATS index ``index`` the caller already knows (the
        runner's loop, after setup). Default: ``keep(arch)``. A filter may override it with
        a look-up by index; it must answer, and change its state, exactly as ``keep``
        would, and the runner uses it only when the class that defines ``keep`` defines it
        too (:func:`index_keep`)."""
        return self.keep(arch)


def _checked_keep(keep: Callable[[Any, Arch], bool]) -> Callable[[Any, Arch], bool]:
    """``keep`` behind the argument and setup checks of :meth:`Filter.__init_subclass__`."""

    @functools.wraps(keep)
    def checked(self: Filter, arch: Arch) -> bool:
        if type(arch) is not Arch:
            raise ValueError(
                f"{self!r}.keep() takes one Arch (nasfilter.bench.spaces.sss.as_arch(index or "
                f"'8:16:24:32:40') makes one), got {type(arch).__name__} {arch!r}"
            )
        try:
            return keep(self, arch)
        except AttributeError:
            if "proxy" not in vars(self):  # per-run state is missing: setup was never called
                raise RuntimeError(
                    f"{type(self).__name__}: call setup(SearchContext(rng, proxy)) before keep()"
                ) from None
            raise

    checked._checked = True  # type: ignore[attr-defined]
    return checked


def _unchecked(flt: Filter) -> Callable[[Arch], bool]:
    """``flt.keep`` without the argument and setup checks of :func:`_checked_keep` (for a
    caller that passes the Arch that ``ask`` checked, after setup)."""
    keep = type(flt).keep
    inner = getattr(keep, "__wrapped__", None)
    if getattr(keep, "_checked", False) and callable(inner):
        bound: Callable[[Arch], bool] = inner.__get__(flt, type(flt))
        return bound
    return flt.keep


def index_keep(flt: Filter) -> Callable[[Arch, int], bool]:
    """``keep_index(arch, index)`` of ``flt`` for the runner's loop, after setup: its own
    :meth:`Filter.keep_index` when the class that defines ``keep`` also defines it (a
    subclass that overrides only ``keep`` is not bypassed), else ``keep(arch)`` without its
    argument checks."""
    cls = type(flt)
    owner = next(c for c in cls.__mro__ if "keep" in c.__dict__)
    if "keep_index" in owner.__dict__ and owner is not Filter:
        fast: Callable[[Arch, int], bool] = flt.keep_index
        return fast
    keep = _unchecked(flt)

    def by_arch(arch: Arch, index: int) -> bool:
        return keep(arch)

    return by_arch


def validate_filter(filter: object) -> Filter:
    """``filter`` itself when it is a usable :class:`Filter`; ValueError otherwise: not a
    Filter, no :meth:`~Filter.keep`, or only ``select`` (the earlier interface, with how to
    migrate)."""
    if not isinstance(filter, Filter):
        raise ValueError(f"filter must be a Filter instance or None, got {filter!r}")
    cls = type(filter)
    if cls.keep is Filter.keep:
        if callable(getattr(cls, "select", None)):
            raise ValueError(
                f"{cls.__name__} defines select(candidates, proxy), the earlier filter "
                f"interface, which nasfilter no longer runs. To migrate, {MIGRATE_FILTER}"
            )
        raise ValueError(f"{cls.__name__} must implement keep(arch) -> bool")
    return filter


__all__ = ["MIGRATE_FILTER", "Filter", "index_keep", "validate_filter"]
