"""The HTML report opened in a real headless Chromium: every figure must load and render.

Chromium comes from Debian's ``chromium`` package (``apt-get update && apt-get install -y
chromium``). Without it these tests FAIL with that command; they are never skipped.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nasfilter.render.html_page import ReportFigure, ReportTable, write_report
from nasfilter.study import plots
from tests.chromium import INSTALL_COMMAND, Chromium, ChromiumMissing, find_chromium

# Per image: loaded, decoded, natural size, and its box in page coordinates.
IMAGE_STATUS_JS = """
(async () => {
  const imgs = Array.from(document.images);
  const decoded = await Promise.all(imgs.map(i => i.decode().then(() => true, () => false)));
  return imgs.map((img, k) => {
    const r = img.getBoundingClientRect();
    return {id: img.id, complete: img.complete, decoded: decoded[k],
            naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight,
            x: r.left + window.scrollX, y: r.top + window.scrollY,
            width: r.width, height: r.height};
  });
})()
"""


def n_colours(pixels: np.ndarray) -> int:
    """Distinct RGB colours in an (H, W, 3) uint8 array."""
    packed = pixels.astype(np.uint32)
    return len(np.unique((packed[..., 0] << 16) | (packed[..., 1] << 8) | packed[..., 2]))


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (read independently of any image library)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    try:
        find_chromium()
    except ChromiumMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    with Chromium(width=1200, height=900) as chrome:
        yield chrome


def _make_report(folder: Path) -> tuple[Path, list[plots.FigureFiles]]:
    """A report with one figure of each kind, from small random arrays."""
    rng = np.random.default_rng(5)
    n = 600
    util = rng.uniform(0.01, 0.6, n)
    thr = rng.uniform(1e4, 5e5, n)
    acc = rng.uniform(80, 94, n)
    front = np.zeros(n, dtype=bool)
    front[rng.choice(n, 12, replace=False)] = True
    true_front = rng.choice(n, 10, replace=False)
    ctx = plots.FigureContext("SYNTHETIC test table <&>", "test oracle")
    times = np.linspace(0, 1000, 20)
    figs = [
        plots.save_figure(
            plots.fig3_utilization_space(util, thr, acc, front, 0.25, ctx), folder, "fig3"
        ),
        plots.save_figure(
            plots.fig5_filtering_front(acc, thr, true_front, true_front[:6], ctx), folder, "fig5"
        ),
        plots.save_figure(
            plots.fig6_seed_fronts(acc, thr, true_front, {0: true_front[:3], 1: [1, 2]}, ctx),
            folder,
            "fig6",
        ),
        plots.save_figure(
            plots.comparison_curves(times, {"a": rng.uniform(0, 1, (3, 20))}, ctx),
            folder,
            "comparison",
        ),
        plots.save_figure(
            plots.reach_curves(
                times,
                {
                    "reaches": (np.linspace(0.5, 1.0, 20), np.full(20, 0.01)),
                    "never": (np.linspace(0.2, 0.9, 20), np.full(20, 0.02)),
                },
                ctx,
            ),
            folder,
            "hv_reach",
        ),
        plots.save_figure(
            plots.metrics_table_figure(["method", "HV"], [["a", "0.5 ± 0.1"]], ctx),
            folder,
            "metrics",
        ),
    ]
    table = ReportTable("Final metrics", ("method", "HV"), (("a", "0.5 ± 0.1"),))
    report = write_report(
        folder / "report.html",
        "Browser test report",
        [ReportFigure(f) for f in figs],
        tables=[table],
        provenance={"table": ctx.table_label, "oracle": ctx.oracle_label},
        banner="SYNTHETIC",
    )
    return report, figs


@pytest.mark.browser
def test_report_renders_every_figure(browser: Chromium, tmp_path: Path) -> None:
    report, figs = _make_report(tmp_path)
    _assert_every_figure_renders(browser, report, figs, tmp_path)


@pytest.mark.browser
def test_survey_report_renders_every_figure(browser: Chromium, tmp_path: Path) -> None:
    """The CNN survey's report (Fig. 1, 2a, 2b) on real timm models and real measurements."""
    from nasfilter.bench.timm_data import read_benchmark, shipped_benchmark
    from nasfilter.oracle.devices import get_device
    from nasfilter.survey.output import write_survey
    from nasfilter.survey.survey import SurveySettings, run_survey

    settings = SurveySettings(
        device=get_device("rtx3090"),
        measured=read_benchmark(shipped_benchmark("rtx3090", "nhwc")),
        measured_label="rtx3090 nhwc",
        models=[("resnet18", 224), ("mobilenetv2_100", 224), ("efficientnet_b0", 224)],
        cache_root=tmp_path / "cache",
    )
    result = run_survey(settings)
    out = tmp_path / "survey"
    out.mkdir()
    write_survey(result, out)
    figs = [
        plots.FigureFiles(stem, out / f"{stem}.png", out / f"{stem}.svg", stem)
        for stem in ("fig1", "fig2a", "fig2b")
    ]
    _assert_every_figure_renders(browser, out / "report.html", figs, tmp_path)


@pytest.mark.browser
def test_runs_report_renders_every_figure(browser: Chromium, tmp_path: Path) -> None:
    """``nasfilter report`` on a database of a plugin searcher's runs and random search's."""
    from nasfilter.cli import main

    repo = Path(__file__).parent.resolve().parent.parent
    db, out = tmp_path / "r.db", tmp_path / "report"
    plugin = f"{repo}/examples/custom_searcher.py:LocalSearch[patience=20]"
    assert main(["run", "--searchers", f"{plugin},random", "--seeds", "0-1", "--budget", "8000",
                 "--table", "synthetic", "--oracle", "roofline", "--db", str(db),
                 "--no-progress", "--jobs", "1"]) == 0  # fmt: skip
    assert main(["report", "--db", str(db), "--out", str(out)]) == 0
    stems = sorted(p.stem for p in out.glob("*.png"))
    stems = ["c1_hv", *(s for s in stems if s != "c1_hv")]  # the report's order
    figs = [plots.FigureFiles(s, out / f"{s}.png", out / f"{s}.svg", s) for s in stems]
    assert len(figs) == 3
    _assert_every_figure_renders(browser, out / "report.html", figs, tmp_path)


def _assert_every_figure_renders(
    browser: Chromium, report: Path, figs: list[plots.FigureFiles], tmp_path: Path
) -> None:
    from PIL import Image

    browser.open(report)
    status = browser.evaluate(IMAGE_STATUS_JS)
    assert [s["id"] for s in status] == [f"img-{f.stem}" for f in figs]
    for s, f in zip(status, figs, strict=True):
        assert s["complete"] and s["decoded"], f"{f.stem} did not load: {s}"
        # The natural size the browser decoded is the PNG's own size, read from its header.
        assert (s["naturalWidth"], s["naturalHeight"]) == png_size(f.png.read_bytes()), s
        assert s["width"] > 100 and s["height"] > 50, f"{f.stem} laid out too small: {s}"
    # Self-contained: the page fetched nothing but itself and data: URIs.
    schemes = {url.split(":", 1)[0] for url in browser.requested_urls()}
    assert schemes <= {"file", "data"}, browser.requested_urls()

    shot = browser.screenshot_full_page()
    (tmp_path / "screenshot.png").write_bytes(shot)
    image = Image.open(io.BytesIO(shot)).convert("RGB")
    width, height = png_size(shot)
    assert image.size == (width, height)
    assert width >= 1000 and height > sum(s["height"] for s in status)
    pixels = np.asarray(image)
    assert n_colours(pixels) > 50, "the screenshot is blank"
    for s in status:
        x0, y0 = round(s["x"]), round(s["y"])
        crop = pixels[y0 + 2 : y0 + round(s["height"]) - 2, x0 + 2 : x0 + round(s["width"]) - 2]
        assert crop.size, s
        colours = n_colours(crop)
        assert colours > 16, f"{s['id']} painted as a blank box ({colours} colours)"
        # A drawn figure is mostly white background with dark ink: not a uniform grey box.
        assert crop.mean() > 150 and crop.min() < 80, s["id"]


@pytest.mark.browser
def test_broken_image_is_detected(browser: Chromium, tmp_path: Path) -> None:
    """The check above can fail: a corrupt data URI reports no natural size."""
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img id="bad" src="data:image/png;base64,iVBORw0KGgoAAAA">'
        "</body></html>",
        encoding="utf-8",
    )
    browser.open(page)
    (status,) = browser.evaluate(IMAGE_STATUS_JS)
    assert status["id"] == "bad"
    assert not status["decoded"]
    assert status["naturalWidth"] == 0


def test_missing_chromium_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NASFILTER_CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(ChromiumMissing, match="apt-get install -y chromium") as info:
        find_chromium()
    assert INSTALL_COMMAND in str(info.value)


ORACLE_TABLE_JS = """
(() => {
  const h = Array.from(document.querySelectorAll('h2'))
    .find(e => e.textContent.includes('Oracles side by side'));
  if (!h) return null;
  let el = h.nextElementSibling;
  while (el && !el.querySelector('table') && el.tagName !== 'TABLE') el = el.nextElementSibling;
  const table = el.tagName === 'TABLE' ? el : el.querySelector('table');
  const r = table.getBoundingClientRect();
  return {rows: Array.from(table.querySelectorAll('tbody tr, tr'))
            .map(tr => Array.from(tr.cells).map(c => c.textContent)),
          width: r.width, height: r.height};
})()
"""


@pytest.mark.browser
def test_reproduce_report_shows_both_oracles_side_by_side(
    browser: Chromium, tmp_path: Path
) -> None:
    from nasfilter.study.reproduce import FILTERING, REINFORCE_MNAS, reproduce

    out = tmp_path / "study"
    summary = reproduce(
        out, seeds=[0], budget=2000.0, quiet=True, methods=[FILTERING, REINFORCE_MNAS]
    )
    browser.open(out / "report.html")
    got = browser.evaluate(ORACLE_TABLE_JS)
    assert got is not None, "no 'Oracles side by side' section"
    assert got["width"] > 300 and got["height"] > 40  # laid out, not hidden
    body = [row for row in got["rows"] if row and not row[0].startswith("oracle")]
    labels = [r["label"] for r in summary["oracles"]["oracles"]]
    assert [row[0] for row in body] == labels
    # the run's oracle (the default, calibrated) first, the plain roofline baseline beside it
    assert labels[0].startswith("calibrated v100") and labels[1].startswith("roofline v100")
    for row, rec in zip(body, summary["oracles"]["oracles"], strict=True):
        assert row[2] == str(rec["front_size"])
