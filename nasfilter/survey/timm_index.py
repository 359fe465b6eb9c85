"""What a survey needs to know of the installed timm, without importing it.

Importing timm (and with it torch and torchvision) costs several CPU seconds, more than a
whole survey from cached layer tables. A cached survey needs only three facts of timm: its
version (the cache is keyed by it), the names of its architectures (to check the requested
ones) and each architecture's default input size. :func:`timm_version` reads the version
from the installed package's metadata; :func:`timm_index` reads the names and sizes from
``timm-index.json`` in the versioned cache folder, which the first survey there writes
(importing timm once). The file is keyed by the timm version like the profiles beside it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
from dataclasses import dataclass
from pathlib import Path

from nasfilter.files import atomic_write
from nasfilter.survey.timm_import import import_timm

INDEX_FILE = "timm-index.json"


def default_cache_root() -> Path:
    """``$NASFILTER_CACHE/survey``, else ``~/.cache/nasfilter/survey``."""
    base = os.environ.get("NASFILTER_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "nasfilter") / "survey"


@functools.lru_cache(maxsize=1)
def timm_version() -> str:
    """The installed timm's version, from its package metadata (timm is not imported).

    Raises ImportError naming the survey extra when timm is not installed."""
    try:
        return importlib.metadata.version("timm")
    except importlib.metadata.PackageNotFoundError:
        return str(import_timm().__version__)  # ImportError with the install route


@dataclass(frozen=True)
class TimmIndex:
    """timm's architecture names and their default input sizes (pixels; None: no default)."""

    version: str
    sizes: dict[str, int | None]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.sizes)


def _default_size(timm: object, arch: str) -> int | None:
    """The default input size (pixels) of timm's ``arch``, from its pretrained config."""
    try:
        cfg = timm.models.get_pretrained_cfg(arch)  # type: ignore[attr-defined]
    except Exception:
        return None
    size = getattr(cfg, "input_size", None) if cfg is not None else None
    return int(size[-1]) if size else None


def build_index() -> TimmIndex:
    """The index of the installed timm, read from timm itself (imports it)."""
    timm = import_timm()
    names = sorted(timm.list_models())
    return TimmIndex(str(timm.__version__), {n: _default_size(timm, n) for n in names})


def _read_index(folder: Path) -> TimmIndex | None:
    """The index kept in ``folder`` for the installed timm; None when missing or unreadable."""
    version = timm_version()
    try:
        data = json.loads((folder / INDEX_FILE).read_text(encoding="utf-8"))
        if data.get("timm_version") == version and isinstance(data.get("sizes"), dict):
            return TimmIndex(version, {str(k): v for k, v in data["sizes"].items()})
    except (OSError, ValueError, AttributeError):
        pass  # missing or damaged (AttributeError: JSON that is not an object)
    return None


def has_index(folder: Path) -> bool:
    """Whether ``folder`` holds a readable index of the installed timm (timm not imported)."""
    return _read_index(folder) is not None


@functools.lru_cache(maxsize=8)
def timm_index(folder: Path) -> TimmIndex:
    """The index kept in ``folder`` (a versioned cache folder), written there when missing
    or unreadable (then timm is imported once)."""
    path = folder / INDEX_FILE
    version = timm_version()
    cached = _read_index(folder)
    if cached is not None:
        return cached
    index = build_index()
    with atomic_write(path, "w") as fh:
        json.dump({"timm_version": version, "sizes": index.sizes}, fh, sort_keys=True)
    return index
