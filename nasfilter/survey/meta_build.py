"""Building torch modules on the meta device without their weight initialisation.

On the meta device a tensor has a shape and no storage, so initialising it (``normal_``,
``kaiming_uniform_``, ``zero_``, a module's ``reset_parameters``) does nothing but cost
time: about half of building a timm model. :func:`meta_without_init` is a context that
builds on the meta device (``torch.get_default_device()`` says meta inside it) and skips
that work:

- one torch-function mode, ``torch.device("meta")``'s own class, returns the target of every
  in-place op (a name ending in ``_``) on a meta tensor at once, and builds ``torch.zeros``
  and ``torch.ones`` as ``torch.empty`` (their meta kernels are Python), deciding what to do
  once per function;
- the ``reset_parameters`` (and ``reset_running_stats``) of torch's convolutions, linear
  layers and norms return at once for a module whose own tensors are on the meta device
  (only initialisation happens there; no shape depends on it). Modules elsewhere are
  untouched, so a model built on a real device in another thread is initialised in full.

The tables of a model built this way equal those of one built with plain
``torch.device("meta")`` (``tests/survey/test_survey_meta_rules.py``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

# Per function, what the mode does with it (decided once per function): pass it through,
# give a constructor the meta device, skip an in-place op on a meta tensor.
_PASS, _CONSTRUCT, _IN_PLACE = 0, 1, 2
_ACTIONS: dict[Any, int] = {}


def _action(func: Any, constructors: Any) -> int:
    try:
        known = _ACTIONS.get(func)
    except TypeError:  # an unhashable callable
        known = None
    if known is None:
        name = getattr(func, "__name__", "")
        if func in constructors:
            known = _CONSTRUCT
        elif name.endswith("_") and not name.endswith("__"):
            known = _IN_PLACE
        else:
            known = _PASS
        with contextlib.suppress(TypeError):
            _ACTIONS[func] = known
    return known


def _skipped(func: Any, args: Any, kwargs: Any) -> Any:
    """The tensor an in-place op (``normal_``, ``kaiming_uniform_`` ...) would initialise
    when it is on the meta device (there it does nothing but cost time), else None."""
    import torch

    target = args[0] if args else (kwargs or {}).get("tensor")  # torch.nn.init: by keyword
    if isinstance(target, torch.Tensor) and target.is_meta:
        return target
    return None


@functools.lru_cache(maxsize=1)
def _mode_class() -> Any:
    """``DeviceContext`` with the skipping added (None with a torch that lacks the class).

    On the meta device a tensor's values do not exist, so ``torch.zeros`` and ``torch.ones``
    (whose meta kernels are Python) become ``torch.empty`` with the same arguments."""
    try:
        import torch
        from torch.utils._device import DeviceContext, _device_constructors
    except ImportError:  # pragma: no cover - another torch layout
        return None
    constructors = _device_constructors()
    as_empty = {torch.zeros: torch.empty, torch.ones: torch.empty}

    class MetaNoInit(DeviceContext):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            action = _action(func, constructors)
            if action == _CONSTRUCT:
                kwargs = kwargs or {}
                if kwargs.get("device") is None:
                    kwargs["device"] = self.device
                    if self.device.type == "meta" and "names" not in kwargs:
                        func = as_empty.get(func, func)
            elif action == _IN_PLACE:
                target = _skipped(func, args, kwargs)
                if target is not None:
                    return target
            return func(*args, **(kwargs or {}))

    return MetaNoInit


def _on_meta(module: Any) -> bool:
    """Whether ``module``'s own parameters and buffers are all on the meta device."""
    own = [*module._parameters.values(), *module._buffers.values()]
    return all(t is None or t.is_meta for t in own)


def _resets() -> list[tuple[type, str]]:
    """(class, method) pairs whose only work is initialising a module's own tensors."""
    from torch import nn

    norm_base = nn.modules.batchnorm._NormBase
    return [
        (nn.modules.conv._ConvNd, "reset_parameters"),
        (nn.Linear, "reset_parameters"),
        (norm_base, "reset_parameters"),
        (norm_base, "reset_running_stats"),
        (nn.LayerNorm, "reset_parameters"),
        (nn.GroupNorm, "reset_parameters"),
    ]


def _meta_skipping(method: Any) -> Any:
    @functools.wraps(method)
    def reset(self: Any) -> None:
        if not _on_meta(self):
            method(self)

    reset.__nasfilter_meta_skip__ = True  # type: ignore[attr-defined]
    return reset


@contextlib.contextmanager
def _resets_skipped() -> Iterator[None]:
    """Within: the resets of :func:`_resets` return at once for meta modules."""
    saved = []
    for cls, attr in _resets():
        method = cls.__dict__.get(attr)
        if method is None or getattr(method, "__nasfilter_meta_skip__", False):
            continue  # inherited (patched on its base) or already patched by an outer context
        saved.append((cls, attr, method))
        setattr(cls, attr, _meta_skipping(method))
    try:
        yield
    finally:
        for cls, attr, method in reversed(saved):
            setattr(cls, attr, method)


@contextlib.contextmanager
def meta_without_init() -> Iterator[None]:
    """Build modules on the meta device, skipping their initialisation (module docstring)."""
    import torch

    cls = _mode_class()
    with contextlib.ExitStack() as stack:
        if cls is not None:
            stack.enter_context(cls(torch.device("meta")))
        else:  # pragma: no cover - only without torch.utils._device
            stack.enter_context(torch.device("meta"))
            stack.enter_context(_skip_mode())
        stack.enter_context(_resets_skipped())
        yield


def _skip_mode() -> Any:  # pragma: no cover - only without torch.utils._device
    from torch.overrides import TorchFunctionMode

    class SkipInit(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            target = _skipped(func, args, kwargs) if _action(func, ()) == _IN_PLACE else None
            return func(*args, **(kwargs or {})) if target is None else target

    return SkipInit()
