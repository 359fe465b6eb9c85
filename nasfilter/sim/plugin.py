"""The one base of searchers and filters: per-run setup, and ``config()`` read from ``__init__``.

A plugin stores each ``__init__`` argument as an attribute of the same name (as
scikit-learn's estimators do); :meth:`Plugin.config` then reads its parameters from the
signature, so no plugin lists them by hand::

    class Patient(Searcher):
        def __init__(self, patience: int = 35) -> None:
            self.patience = check_positive_int(patience, "patience")

    Patient(5).config() == {"patience": 5}

The registry reads the same signature (:func:`nasfilter.registry.init_parameters`) to list
a plugin's settings in error messages, so the two never disagree.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from nasfilter.bench.spaces import Space
from nasfilter.registry import init_parameters
from nasfilter.sim.proxy_handle import ProxyHandle, SearchContext


class Plugin:
    """Base of :class:`~nasfilter.searchers.base.Searcher` and
    :class:`~nasfilter.filters.base.Filter`.

    Class attributes:
        name: a short name used in results.
        needs_proxy: True when the plugin queries the proxy (a class or an instance
            attribute); a run without a proxy then fails before it starts.
        uses_utilization: True when the plugin reads the proxy's utilization, the study's
            hardware signal (a class or an instance attribute); a plugin that queries the
            proxy for throughput only (an objective, not a signal) leaves it False.
        uses_zerocost: True when the plugin reads a zero-cost proxy's scores (a class or an
            instance attribute).
        kind: what the plugin is, for messages ("searcher", "filter").
        spaces: the names of the search spaces the plugin handles (sss only unless it says
            more); a run on a table of another space is refused before it starts. A plugin
            that reads the space only as ``self.space`` (size, digits, ``arch(index)``)
            handles every space.
    """

    name: ClassVar[str] = "plugin"
    kind: ClassVar[str] = "plugin"
    needs_proxy: bool = False
    uses_utilization: bool = False
    uses_zerocost: bool = False
    spaces: ClassVar[tuple[str, ...]] = ("sss",)
    _config_keys: ClassVar[tuple[str, ...]] = ()

    rng: np.random.Generator
    proxy: ProxyHandle
    space: Space

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Read the parameters ``config()`` reports from ``__init__`` once, at definition;
        TypeError for an ``__init__`` taking ``*args`` or ``**kwargs`` (no names to read)."""
        super().__init_subclass__(**kwargs)
        params = init_parameters(cls) or []
        varying = [p.name for p in params if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if varying:
            raise TypeError(
                f"{cls.__qualname__}.__init__ takes *{varying[0]}: config() reports a "
                f"{cls.kind}'s parameters by their names in __init__, so name each one "
                "(def __init__(self, patience: int = 35)) and store it as self.patience"
            )
        cls._config_keys = tuple(p.name for p in params)

    def setup(self, context: SearchContext) -> None:
        """Start a fresh run: check the plugin, store the generator and proxy, then call
        :meth:`reset`."""
        space = context.proxy.space
        if space.name not in self.spaces:
            raise ValueError(
                f"{self.kind} {self.name!r} handles the {' and '.join(self.spaces)} space(s), "
                f"not the {space.name} space ({space.title}) of this run's table; choose a "
                f"{self.kind} that handles {space.name}, or a table of the "
                f"{' or '.join(self.spaces)} space"
            )
        self.space = space
        if self.needs_proxy:
            context.proxy.require(f"{self.kind} {self.name!r}")
        self.config()  # a parameter without its attribute fails here, before the run
        self.rng = context.rng
        self.proxy = context.proxy
        self.reset()

    def reset(self) -> None:
        """Clear all per-run state. Called by :meth:`setup`; override when there is state."""

    def config(self) -> dict[str, Any]:
        """The plugin's parameters, recorded with its results: ``{name: value}`` for every
        ``__init__`` parameter, read from the attribute of the same name.

        Raises AttributeError naming the parameter when ``__init__`` did not store it."""
        out: dict[str, Any] = {}
        for key in self._config_keys:
            try:
                out[key] = getattr(self, key)
            except AttributeError:
                raise AttributeError(
                    f"{type(self).__name__}.config() reads each __init__ parameter from the "
                    f"attribute of the same name, but {type(self).__name__} has no attribute "
                    f"{key!r}: store it in __init__ (self.{key} = {key}), or override config()"
                ) from None
        return out

    def __repr__(self) -> str:
        try:
            params = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        except AttributeError:  # repr appears in error messages: it must not raise itself
            params = "..."
        return f"{type(self).__name__}({params})"


__all__ = ["Plugin"]
