"""timm models by name, built on the meta device (no weights, nothing downloaded).

A name may carry timm's pretrained tag (``resnet50.a1_in1k``); the architecture is the part
before the first dot. Unknown names raise :class:`UnknownModelError` listing close matches.
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Any

from nasfilter.bench.layer_table import LayerTable
from nasfilter.survey.analysis import AnalysisError, ModelProfile, profile_model
from nasfilter.survey.fold import fold
from nasfilter.survey.meta_build import meta_without_init
from nasfilter.survey.timm_import import import_timm
from nasfilter.survey.timm_index import _default_size, timm_index
from nasfilter.survey.timm_init import timm_inits_skipped

__all__ = ["_default_size"]  # re-exported: the default input size of an architecture


class UnknownModelError(LookupError):
    """A model name timm does not know (the message lists close matches)."""


def architecture(name: str) -> str:
    """The architecture part of a timm model name (``resnet50.a1_in1k`` -> ``resnet50``)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"model name must be a non-empty string, got {name!r}")
    return name.strip().split(".", 1)[0]


def _known(folder: Path | None = None) -> frozenset[str]:
    """timm's architecture names: from the index in the cache ``folder`` when given (timm
    not imported, :mod:`nasfilter.survey.timm_index`), else from timm itself."""
    if folder is not None:
        return timm_index(folder).names
    return _timm_names()


@functools.lru_cache(maxsize=1)
def _timm_names() -> frozenset[str]:
    return frozenset(import_timm().list_models())


def timm_architectures(folder: Path | None = None) -> list[str]:
    """Every architecture name the installed timm can build, sorted (``folder``: as
    :func:`check_names`)."""
    return sorted(_known(folder))


def check_names(names: list[str], folder: Path | None = None) -> list[str]:
    """The architectures of ``names``; UnknownModelError listing each unknown one and matches.

    A name is reported as given (``'../../x'``, not its empty architecture part). With a
    versioned cache ``folder``, the names are read from its timm index (no timm import)."""
    known = _known(folder)
    archs = [architecture(n) for n in names]
    unknown = [(n.strip(), a) for n, a in zip(names, archs, strict=True) if a not in known]
    if unknown:
        parts = []
        for given, a in unknown:
            close = difflib.get_close_matches(a, sorted(known), n=3, cutoff=0.6) if a else []
            hint = f" (close: {', '.join(close)})" if close else " (no close match)"
            parts.append(f"{given!r}{hint}")
        raise UnknownModelError(
            f'unknown timm model(s): {"; ".join(parts)}; `python -c "import timm; '
            f'print(timm.list_models())"` lists them all'
        )
    return archs


def build_timm_model(name: str, img_size: int | None = None) -> Any:
    """The timm model ``name`` on the meta device, for ``img_size`` pixels where it matters.

    Models whose structure depends on the input size (position embeddings, window sizes)
    are built with ``img_size`` when it differs from their default; convolutional networks
    ignore the size.
    """

    timm = import_timm()
    arch = check_names([name])[0]
    with meta_without_init(), timm_inits_skipped():
        if img_size is not None and _default_size(timm, arch) != img_size:
            try:
                return timm.create_model(arch, pretrained=False, img_size=img_size)
            except TypeError:
                pass  # the constructor takes no img_size: the model is size-agnostic
        return timm.create_model(arch, pretrained=False)


def timm_profile(name: str, img_size: int) -> ModelProfile:
    """The :class:`ModelProfile` of timm's ``name`` for a square ``img_size`` RGB input."""
    if isinstance(img_size, bool) or not isinstance(img_size, int) or img_size < 8:
        raise ValueError(f"img_size must be an integer >= 8 pixels, got {img_size!r}")
    arch = architecture(name)
    try:
        model = build_timm_model(arch, img_size)
    except UnknownModelError:
        raise
    except Exception as exc:
        raise AnalysisError(
            f"timm model {arch!r} cannot be built at {img_size} px: {type(exc).__name__}: {exc}"
        ) from exc
    return profile_model(model, (3, img_size, img_size), name=arch)


def timm_layer_table(name: str, img_size: int) -> LayerTable:
    """The fused per-image :class:`LayerTable` (B = 1) of timm's ``name`` at ``img_size`` px."""
    return timm_profile(name, img_size).table


def timm_folded_profile(name: str, img_size: int, f: int) -> ModelProfile:
    """The profile of timm's ``name`` folded by ``f`` (:func:`nasfilter.survey.fold.fold`),
    per folded input: 3·f channels of ``img_size`` px, standing for f images."""
    arch = architecture(name)
    model = build_timm_model(arch, img_size)
    folded = fold(model, f, (3, img_size, img_size))
    return profile_model(folded, (3 * f, img_size, img_size), name=arch)
