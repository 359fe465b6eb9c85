"""Survey figures kept for re-use: a figure is drawn once per content, then copied.

Drawing the survey's three figures as PNG and SVG (and importing matplotlib to do it) takes
longer than the rest of a survey from cached tables. A figure depends only on the survey's
rows and summary, the drawing code and matplotlib, so :func:`figure_key` hashes exactly
these (SHA-256 of the rows and summary as JSON, the source files of the drawing modules, the
matplotlib version); under that key :func:`keep` stores the PNG, the SVG and the title, and
:func:`restore` copies them into a survey's folder. Any change to a row, the summary, the
drawing code or matplotlib gives another key, so a stale figure is never restored.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nasfilter.drawing import FigureFiles
from nasfilter.files import atomic_write

# The modules whose code draws a survey figure (relative to the nasfilter package).
_DRAWING_SOURCES = ("survey/plots.py", "survey/output.py", "plots.py", "drawing.py")
_PACKAGE = Path(__file__).resolve().parent.parent


def figure_key(rows: Sequence[dict[str, Any]], summary: dict[str, Any]) -> str:
    """The hex SHA-256 of what a survey figure is drawn from (module docstring)."""
    digest = hashlib.sha256()
    digest.update(json.dumps([rows, summary], sort_keys=True, default=str).encode())
    for name in _DRAWING_SOURCES:
        digest.update((_PACKAGE / name).read_bytes())
    try:
        digest.update(importlib.metadata.version("matplotlib").encode())
    except importlib.metadata.PackageNotFoundError:
        digest.update(b"no matplotlib")
    return digest.hexdigest()


def _paths(folder: Path, key: str, stem: str) -> tuple[Path, Path, Path]:
    base = folder / f"{key[:32]}-{stem}"
    return base.with_suffix(".png"), base.with_suffix(".svg"), base.with_suffix(".txt")


def restore(folder: Path, key: str, stem: str, out: Path) -> FigureFiles | None:
    """Copy the kept figure ``stem`` of ``key`` into ``out``; None when none is kept."""
    png, svg, title = _paths(folder, key, stem)
    try:
        data = (png.read_bytes(), svg.read_bytes(), title.read_text(encoding="utf-8"))
    except OSError:
        return None
    targets = (out / f"{stem}.png", out / f"{stem}.svg")
    for target, content in zip(targets, data[:2], strict=True):
        with atomic_write(target, "wb") as fh:
            fh.write(content)
    return FigureFiles(stem=stem, png=targets[0], svg=targets[1], title=data[2])


def keep(folder: Path, key: str, files: FigureFiles) -> None:
    """Keep the figure just saved as ``files`` under ``key`` (its title last: the marker
    that the PNG and SVG are whole)."""
    png, svg, title = _paths(folder, key, files.stem)
    for source, target in ((files.png, png), (files.svg, svg)):
        with atomic_write(target, "wb") as fh:
            fh.write(source.read_bytes())
    with atomic_write(title, "w") as fh:
        fh.write(files.title)
