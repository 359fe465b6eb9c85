"""A self-contained HTML report: figures embedded as base64 PNG data URIs, tables, provenance.

The page needs no network and no other file: its Content-Security-Policy forbids every
fetch except ``data:`` images, so a browser that opens it cannot reach anything. Written
with the standard library only (``html.escape``); no template engine, no script.
"""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nasfilter.files import atomic_write
from nasfilter.render.drawing import FigureFiles

CONTENT_SECURITY_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem;
       padding: 0 1rem; color: #222; background: #fff; line-height: 1.45; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
.banner { background: #fff3cd; border: 1px solid #e0c36c; padding: 0.6rem 0.8rem; }
figure { margin: 1.5rem 0; } figure img { max-width: 100%; height: auto;
       border: 1px solid #ddd; } figcaption { font-size: 0.9rem; color: #444; }
table { border-collapse: collapse; font-size: 0.9rem; margin: 0.5rem 0; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: right; }
td { white-space: nowrap; } td:first-child { white-space: normal; min-width: 10rem; }
th:first-child, td:first-child { text-align: left; } .scroll { overflow-x: auto; }
dl.provenance { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; }
dl.provenance dt { font-weight: 600; } dl.provenance dd { margin: 0; }
footer { margin-top: 3rem; font-size: 0.8rem; color: #777; }
"""


@dataclass(frozen=True)
class ReportTable:
    """A table of already formatted cells; ``rows`` have one cell per column. Without
    rows only the title and the caption are shown (a section that says why it is empty)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""

    def __post_init__(self) -> None:
        if not self.columns:
            raise ValueError(f"table {self.title!r} needs at least one column")
        for k, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(
                    f"table {self.title!r}: row {k} has {len(row)} cells, "
                    f"expected {len(self.columns)}"
                )


@dataclass(frozen=True)
class ReportFigure:
    """A saved figure with the caption shown under it."""

    files: FigureFiles
    caption: str = ""


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _data_uri(png: Path) -> str:
    data = png.read_bytes()
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError(f"{str(png)!r} is not a PNG file")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _figure_html(fig: ReportFigure) -> str:
    files = fig.files
    title_lines = files.title.split("\n")
    caption = "<br>".join(_esc(line) for line in title_lines)
    if fig.caption:
        caption += f"<br>{_esc(fig.caption)}"
    caption += (
        f"<br>Files: <code>{_esc(files.png.name)}</code>, <code>{_esc(files.svg.name)}</code>"
    )
    return (
        f'<figure id="figure-{_esc(files.stem)}">\n'
        f'<img class="figure" id="img-{_esc(files.stem)}" alt="{_esc(files.title)}" '
        f'src="{_data_uri(files.png)}">\n'
        f"<figcaption>{caption}</figcaption>\n</figure>"
    )


def _table_html(table: ReportTable) -> str:
    head = "".join(f"<th>{_esc(c)}</th>" for c in table.columns)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>" for row in table.rows
    )
    caption = f"<p>{_esc(table.caption)}</p>" if table.caption else ""
    if not table.rows:
        return f"<h2>{_esc(table.title)}</h2>\n{caption}"
    return (
        f"<h2>{_esc(table.title)}</h2>\n{caption}\n"
        f'<div class="scroll"><table class="metrics">\n<thead><tr>{head}</tr></thead>\n'
        f"<tbody>\n{body}\n</tbody>\n</table></div>"
    )


def render_report(
    title: str,
    figures: Sequence[ReportFigure],
    tables: Sequence[ReportTable] = (),
    provenance: Mapping[str, str] | None = None,
    banner: str = "",
    notes: Sequence[str] = (),
    footer: str = "",
) -> str:
    """The report page as one HTML string; figures' PNG files are read and embedded."""
    if not title.strip():
        raise ValueError("a report needs a non-empty title")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_esc(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{_esc(title)}</h1>",
    ]
    if banner:
        parts.append(f'<p class="banner">{_esc(banner)}</p>')
    if provenance:
        items = "\n".join(
            f"<dt>{_esc(key)}</dt><dd>{_esc(value)}</dd>" for key, value in provenance.items()
        )
        parts.append(f'<h2>Provenance</h2>\n<dl class="provenance">\n{items}\n</dl>')
    for note in notes:
        parts.append(f"<p>{_esc(note)}</p>")
    for table in tables:
        parts.append(_table_html(table))
    if figures:
        parts.append("<h2>Figures</h2>")
        parts.extend(_figure_html(fig) for fig in figures)
    if footer:
        parts.append(f"<footer>{_esc(footer)}</footer>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def write_report(
    path: str | os.PathLike[str],
    title: str,
    figures: Sequence[ReportFigure],
    tables: Sequence[ReportTable] = (),
    provenance: Mapping[str, str] | None = None,
    banner: str = "",
    notes: Sequence[str] = (),
    footer: str = "",
) -> Path:
    """Render the report and write it to ``path`` atomically (temp file, then rename)."""
    text = render_report(title, figures, tables, provenance, banner, notes, footer)
    target = Path(path)
    with atomic_write(target, "w") as fh:
        fh.write(text)
    return target
