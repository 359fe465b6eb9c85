"""Survey figures kept for re-use: a figure is drawn once per content, then copied.

Drawing the survey's three figures as PNG and SVG (and importing matplotlib to do it) takes
longer than the rest of a survey from cached tables. A figure depends only on the survey's
rows and summary, the drawing code and matplotlib, so :func:`figure_key` hashes exactly
these (SHA-256 of the rows and summary as JSON, the source files of the drawing modules, the
matplotlib version); under that key :func:`keep` stores the PNG, the SVG and the title, and
:func:`restore` copies them into a survey's folder. Any change to a row, the summary, the
drawing code or matplotlib gives another key, so a stale figure is never restored.

The key is known only once the rows are; whether they will be found here can be guessed
before (e.g. to start a drawing process early, or not at all): :func:`remember` notes which
key a survey's inputs (:func:`inputs_key`) gave, :func:`expects_kept` whether that key's
figures are all kept. A wrong guess costs time, never a stale figure.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nasfilter.files import atomic_write
from nasfilter.render.drawing import FigureFiles

# The modules whose code draws a survey figure (relative to the nasfilter package).
_DRAWING_SOURCES = (
    "survey/plots.py",
    "survey/figures.py",
    "survey/output.py",
    "study/plots.py",
    "render/drawing.py",
)
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


def inputs_key(settings: str, tables: Path) -> str:
    """A hex SHA-256 of what a survey's rows are computed from, known before them: its
    ``settings`` (their text), the folder of its cached ``tables`` and the size and time of
    every file of the nasfilter package (its code and data)."""
    digest = hashlib.sha256(f"{settings}\n{tables}\n".encode())
    for path in sorted(_PACKAGE.rglob("*")):
        if "__pycache__" not in path.parts and path.is_file():
            st = path.stat()
            digest.update(f"{path.relative_to(_PACKAGE)} {st.st_size} {st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _inputs_file(folder: Path, inputs: str) -> Path:
    return folder / f"inputs-{inputs[:32]}.txt"


def remember(folder: Path, inputs: str, key: str) -> None:
    """Note that the survey inputs ``inputs`` gave the figure key ``key``."""
    target = _inputs_file(folder, inputs)
    try:
        if target.read_text(encoding="utf-8") == key:
            return
    except OSError:
        pass
    with atomic_write(target, "w") as fh:
        fh.write(key)


def expects_kept(folder: Path, inputs: str, stems: Sequence[str]) -> bool:
    """Whether the key the inputs ``inputs`` gave last time has every figure of ``stems``
    kept (:func:`keep`), so that a survey of these inputs will probably draw none."""
    try:
        key = _inputs_file(folder, inputs).read_text(encoding="utf-8")
    except OSError:
        return False
    return bool(key) and all(_paths(folder, key, stem)[2].is_file() for stem in stems)
