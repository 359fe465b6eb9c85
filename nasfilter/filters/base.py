"""The filter interface: decide which proposed architectures are worth an accuracy query.

A filter sits between a searcher's ``ask`` and the problem's ``evaluate``; neither side
knows about the other. :meth:`Filter.setup` hands it, once per run, its own generator and a
metered :class:`~nasfilter.metered.ProxyHandle` (``self.rng``, ``self.proxy``: utilization
and throughput, each query charged to the simulated clock); it cannot reach accuracy. Its
one entry point, :meth:`Filter.keep`, says whether one proposed architecture is evaluated.
A dropped proposal is told to the searcher as ``None``.

A new filter is one small class::

    class FastOnly(Filter):
        name = "fast-only"
        needs_proxy = True

        def keep(self, arch):
            return self.proxy.query(arch).throughput > 1e5

Filters written for the earlier interface (``select(candidates, proxy) -> list``) keep
working through :class:`LegacyFilter`, which the runner applies with a ``FutureWarning``
saying how to migrate (:func:`as_single_filter`).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from nasfilter.metered import ProxyHandle, SearchContext
from nasfilter.space import Arch

MIGRATE_FILTER = (
    "replace select(self, candidates, proxy) -> list with keep(self, arch) -> bool, which "
    "judges one architecture and queries self.proxy (docs/tutorial-filter.md, 'Migrating "
    "from select')"
)


class Filter:
    """Base class of every filter. Subclasses implement :meth:`keep`.

    Class attributes:
        name: a short name used in results.
        needs_proxy: True when the filter queries the proxy (class or instance attribute).
    """

    name: ClassVar[str] = "filter"
    needs_proxy: bool = False

    rng: np.random.Generator
    proxy: ProxyHandle

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every subclass's ``keep`` refuses a non-Arch argument, and a call before
        :meth:`setup`, with the library's own message (so every plugin gets them)."""
        super().__init_subclass__(**kwargs)
        keep = cls.__dict__.get("keep")
        if keep is not None and not getattr(keep, "_checked", False):
            cls.keep = _checked_keep(keep)  # type: ignore[method-assign,assignment]

    def setup(self, context: SearchContext) -> None:
        """Start a fresh run: store the generator and proxy, then call :meth:`reset`."""
        if self.needs_proxy:
            context.proxy.require(f"filter {self.name!r}")
        self.rng = context.rng
        self.proxy = context.proxy
        self.reset()

    def reset(self) -> None:
        """Clear all per-run state. Called by :meth:`setup`; override when there is state."""

    def keep(self, arch: Arch) -> bool:
        """True to evaluate ``arch``, False to drop it (it is told to the searcher as None).

        Called once per proposal, in ask order; may query ``self.proxy`` (charged)."""
        raise NotImplementedError(f"{type(self).__name__} must implement keep(arch) -> bool")

    def config(self) -> dict[str, Any]:
        """The filter's parameters, recorded with its results (JSON-serialisable)."""
        return {}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({params})"


def _checked_keep(keep: Callable[[Any, Arch], bool]) -> Callable[[Any, Arch], bool]:
    """``keep`` behind the argument and setup checks of :meth:`Filter.__init_subclass__`."""

    @functools.wraps(keep)
    def checked(self: Filter, arch: Arch) -> bool:
        if type(arch) is not Arch:
            raise ValueError(
                f"{self!r}.keep() takes one Arch (nasfilter.space.as_arch(index or "
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


def is_legacy_filter(filter: Filter) -> bool:
    """True when ``filter``'s class defines ``select`` and not ``keep`` (the earlier API)."""
    cls = type(filter)
    return callable(getattr(cls, "select", None)) and cls.keep is Filter.keep


class LegacyFilter(Filter):
    """Runs a filter written for ``select(candidates, proxy) -> list[Arch]``.

    ``keep(arch)`` calls the wrapped ``select([arch], proxy)`` and checks that the answer
    is ``[]`` or ``[arch]``. Port it (:data:`MIGRATE_FILTER`).
    """

    def __init__(self, inner: Filter) -> None:
        if not isinstance(inner, Filter):
            raise ValueError(f"LegacyFilter wraps a Filter, got {inner!r}")
        self.inner = inner
        self.needs_proxy = inner.needs_proxy

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    def setup(self, context: SearchContext) -> None:
        self.inner.setup(context)
        super().setup(context)

    def keep(self, arch: Arch) -> bool:
        select: Any = getattr(self.inner, "select")  # noqa: B009 (not on Filter any more)
        kept = select([arch], self.proxy)
        if not isinstance(kept, list) or kept not in ([], [arch]):
            raise ValueError(
                f"{self.inner!r}.select([{arch}]) returned {kept!r}; expected a sub-list of "
                "its candidates"
            )
        return bool(kept)

    def config(self) -> dict[str, Any]:
        return self.inner.config()

    def __repr__(self) -> str:
        return repr(self.inner)


def as_single_filter(filter: Filter) -> Filter:
    """``filter`` itself, or a :class:`LegacyFilter` around one written for ``select``
    (with a ``FutureWarning`` saying how to migrate). ValueError for anything else."""
    if not isinstance(filter, Filter):
        raise ValueError(f"filter must be a Filter instance or None, got {filter!r}")
    if isinstance(filter, LegacyFilter):
        return filter
    if is_legacy_filter(filter):
        warnings.warn(
            f"{type(filter).__name__} defines select(candidates, proxy), the earlier filter "
            f"interface; it runs through LegacyFilter for now. To migrate, {MIGRATE_FILTER}",
            FutureWarning,
            stacklevel=3,
        )
        return LegacyFilter(filter)
    if type(filter).keep is Filter.keep:
        raise ValueError(f"{type(filter).__name__} must implement keep(arch) -> bool")
    return filter
