"""timm's own weight initialisation skipped for models built on the meta device.

A timm constructor ends by initialising its weights: ``named_apply(_init_weights, self)``,
``efficientnet_init_weights(self)``, ``self.init_weights()``, ``self.apply(self._init_weights)``.
On the meta device each of these walks every module and calls ``trunc_normal_``,
``kaiming_normal_`` and the like, which change no shape and store nothing (their in-place
ops are skipped already, :mod:`nasfilter.survey.meta_build`): about a tenth of building a
timm CNN. :func:`timm_inits_skipped` is a context in which those functions return at once
when every tensor they would initialise is on the meta device; for a module on a real
device they run as before. Only names that initialise weights are patched (:data:`TREE` and
:data:`OWN`), in the timm modules already imported, and restored on exit.

Every table equals the one built with timm's initialisation run
(``tests/survey/test_survey_meta_build.py``).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from typing import Any

# Functions and methods that initialise a whole module tree; the value: the position (and
# keyword) of the module argument (methods: 0, ``self``).
TREE: dict[str, tuple[int, str]] = {
    "named_apply": (1, "module"),
    "efficientnet_init_weights": (0, "model"),
    "init_weights": (0, "self"),
    "fix_init_weight": (0, "self"),
}
# Functions and methods that initialise one module (``self.apply(self._init_weights)``,
# ``module.apply(_init_weights)``); the value: the position of that module for a method
# (after ``self``) and for a function.
OWN: dict[str, tuple[int, int]] = {"_init_weights": (1, 0), "_init_weight_goog": (1, 0)}
# The names patched as module-level functions too (the others only as methods).
_FUNCTIONS = frozenset({"named_apply", "efficientnet_init_weights", *OWN})


def _tensors_meta(module: Any, tree: bool) -> bool:
    """Whether every parameter and buffer of ``module`` (its own, or its whole tree) is meta."""
    modules = module.modules() if tree else (module,)
    for m in modules:
        for group in (m._parameters, m._buffers):
            for t in group.values():
                if t is not None and not t.is_meta:
                    return False
    return True


def _target(args: tuple[Any, ...], kwargs: dict[str, Any], pos: int, key: str) -> Any:
    return args[pos] if len(args) > pos else kwargs.get(key)


def _skipping(original: Callable[..., Any], name: str, method: bool) -> Callable[..., Any]:
    """``original``, returning at once when what it initialises is all on the meta device."""
    from torch import nn

    tree = name in TREE
    pos, key = TREE[name] if tree else (OWN[name][0 if method else 1], "module")
    returns_module = name == "named_apply"

    @functools.wraps(original)
    def skip(*args: Any, **kwargs: Any) -> Any:
        target = _target(args, kwargs, pos, key)
        if isinstance(target, nn.Module) and _tensors_meta(target, tree):
            return target if returns_module else None
        return original(*args, **kwargs)

    skip.__nasfilter_meta_skip__ = True  # type: ignore[attr-defined]
    return skip


def _patches() -> list[tuple[Any, str, Any, Any]]:
    """(owner, name, original, replacement) for every init function of the imported timm
    modules: module-level functions and the methods of the classes they define."""
    names = set(TREE) | set(OWN)
    found: list[tuple[Any, str, Any, Any]] = []
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("timm."):
            continue
        for attr, value in list(vars(module).items()):
            if attr in _FUNCTIONS and inspect.isfunction(value):
                found.append((module, attr, value, None))
            elif inspect.isclass(value) and value.__module__ == module_name:
                found.extend(
                    (value, name, value.__dict__[name], None)
                    for name in names
                    if inspect.isfunction(value.__dict__.get(name))
                )
    return [
        (owner, name, original, _skipping(original, name, inspect.isclass(owner)))
        for owner, name, original, _ in found
        if not getattr(original, "__nasfilter_meta_skip__", False)
    ]


_CACHE: dict[int, list[tuple[Any, str, Any, Any]]] = {}


@contextlib.contextmanager
def timm_inits_skipped() -> Iterator[None]:
    """Within: timm's weight initialisation returns at once for meta modules (see above).

    The patches are found once per set of imported timm modules, and applied on entry."""
    key = sum(1 for name in sys.modules if name.startswith("timm."))
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = _patches()
    applied = []
    for owner, name, original, replacement in _CACHE[key]:
        if owner.__dict__.get(name) is original:
            setattr(owner, name, replacement)
            applied.append((owner, name, original))
    try:
        yield
    finally:
        for owner, name, original in reversed(applied):
            setattr(owner, name, original)
