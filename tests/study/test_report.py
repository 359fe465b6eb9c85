"""The HTML report: self-contained, escaped, every figure embedded byte for byte."""

from __future__ import annotations

import base64
from html.parser import HTMLParser
from pathlib import Path

import pytest

from nasfilter.render.html_page import (
    CONTENT_SECURITY_POLICY,
    ReportFigure,
    ReportTable,
    render_report,
    write_report,
)
from nasfilter.study import plots

CTX = plots.FigureContext("table <b>&</b>", 'oracle "x"')


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> list[plots.FigureFiles]:
    folder = tmp_path_factory.mktemp("figs")
    return [
        plots.save_figure(plots.metrics_table_figure(["m"], [[str(k)]], CTX), folder, f"t{k}")
        for k in range(2)
    ]


def test_report_embeds_each_png_and_escapes_text(
    figures: list[plots.FigureFiles], tmp_path: Path
) -> None:
    table = ReportTable("Final <metrics>", ("method", "HV"), (("a<b", "0.5"),), caption="c&d")
    path = write_report(
        tmp_path / "sub" / "report.html",
        "Study <1>",
        [ReportFigure(f, caption="cap <x>") for f in figures],
        tables=[table],
        provenance={"table": CTX.table_label},
        banner="SYNTHETIC",
    )
    page = path.read_text("utf-8")
    parser = _Collector()
    parser.feed(page)
    text = "".join(parser.text)
    for expected in ("Study <1>", "Final <metrics>", "a<b", "c&d", "table <b>&</b>", "cap <x>"):
        assert expected in text  # survived as text, not markup
    assert "<b>&" not in page
    imgs = [attrs for tag, attrs in parser.tags if tag == "img"]
    assert len(imgs) == len(figures)
    for attrs, fig in zip(imgs, figures, strict=True):
        src = attrs["src"]
        assert src is not None and src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]) == fig.png.read_bytes()
        assert attrs["id"] == f"img-{fig.stem}"
        assert attrs["alt"] == fig.title
    # Nothing to fetch: no external URL anywhere, and a policy that forbids fetching.
    assert "http://" not in page and "https://" not in page and "<script" not in page
    metas = [a for t, a in parser.tags if t == "meta" and a.get("http-equiv")]
    assert metas[0]["content"] == CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY


def test_report_rejects_bad_input(tmp_path: Path, figures: list[plots.FigureFiles]) -> None:
    with pytest.raises(ValueError, match="row 0 has 1 cells, expected 2"):
        ReportTable("t", ("a", "b"), (("x",),))
    with pytest.raises(ValueError, match="non-empty title"):
        render_report(" ", [])
    not_png = tmp_path / "fake.png"
    not_png.write_bytes(b"GIF89a")
    fake = plots.FigureFiles("fake", not_png, not_png.with_suffix(".svg"), "t")
    with pytest.raises(ValueError, match="is not a PNG file"):
        render_report("r", [ReportFigure(fake)])
