"""Slides that hold at any size, in print and in PowerPoint (issue 24).

One report holds an item of every kind the app can add (``tests/slide_items.py``:
built with the pages' own computations and figure builders, with the long caveats
of a real-shaped log). Its deck is measured in headless Chromium at 1280x720,
1920x1080 and an A4 landscape print viewport; its PDF and its PowerPoint export
are read back.
"""

import re
import shutil
import subprocess

import pytest

from tests.conftest import visitor_tab
from tests.e2e.helpers import ARTIFACTS, SHOTS
from tests.e2e.slide_geometry import MEASURE_JS
from tests.slide_items import build_items
from ulr import report

VIEWPORTS = [("1280x720", 1280, 720, "screen"), ("1920x1080", 1920, 1080, "screen"),
             ("A4 landscape print", 1123, 794, "print")]
MIN_CHART = 0.45


STALE = ("The dataset “shop04” changed after this result was saved (new rows were added); "
         "the numbers may no longer match it.")


def _crowded(items) -> report.ReportItem:
    """The longest title and takeaway an item may have, five long caveats, a stale dataset."""
    ope = next(it for it in items if it.title.startswith("Off-policy") and it.caveats)
    words = ("Off-policy estimates of the target policy: softmax of a linear click model fit "
             "on part of the log, judged on two loggers with balanced and weighted IPS ")
    return report.ReportItem.from_result(
        (words * 3)[:report.MAX_TITLE], fig=ope.fig(), dataset="shop04",
        takeaway=(ope.takeaway + " ") * 4, evidence=ope.evidence, settings=ope.settings,
        caveats=[f"{c} {c}"[:380] for c in ope.caveats] * 2)


@pytest.fixture(scope="module")
def items(tmp_path_factory):
    built = build_items(tmp_path_factory.mktemp("slide_items"))
    return built + [_crowded(built)]


def _words(text: str) -> str:
    return " ".join(text.split())


def test_every_slide_holds_at_every_size_and_in_print(items, warm_context, tmp_path):
    path = tmp_path / "deck.html"
    deck = report.build_deck(items, title="Every kind of result", status={items[-1].id: STALE})
    path.write_text(deck, encoding="utf-8")
    with visitor_tab(warm_context, width=1280, height=720, timeout_ms=30_000) as page:
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready]")
        for name, w, h, media in VIEWPORTS:
            page.set_viewport_size({"width": w, "height": h})
            page.emulate_media(media=media)
            page.evaluate("() => window.ulrLayout()")  # returns once every chart is redrawn
            slides = page.evaluate(MEASURE_JS)
            assert len(slides) > len(items) + 1  # cover, items, at least one appendix slide
            for s in slides:
                assert s["problems"] == [], f"{name}, slide {s['slide']}: {s['problems']}"
                assert s["chart"] is None or s["chart"] >= MIN_CHART, (name, s)
            charts = [s for s in slides if s["chart"] is not None]
            assert len(charts) == sum(it.figure is not None for it in items)
            if media == "screen" and SHOTS:  # for people to look at: the most crowded slide
                page.evaluate(f"window.ulrShow({len(items)})")
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / f"slides_crowded_{name}.png"))
        # caveats that do not fit are counted on their slide and listed in the appendix
        page.emulate_media(media="screen")
        crowded = next(i for i, it in enumerate(items, start=2)
                       if report.slide_caveats(it)[1])
        page.evaluate(f"window.ulrShow({crowded - 1})")
        assert "more caveat" in page.locator(".slide.active .caveats").inner_text()
        appendix = _words(page.locator(".slide.appendix").first.text_content())
        for c in items[crowded - 2].caveats:
            assert _words(c) in appendix


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)")
def test_pdf_has_a_page_per_slide_with_every_title_and_takeaway(items, tmp_path):
    pdf = tmp_path / "deck.pdf"
    pdf.write_bytes(report.build_pdf(items, title="Every kind of result"))
    n_slides = report.build_deck(items).count('<section class="slide')
    assert len(re.findall(rb"/Type\s*/Page[^s]", pdf.read_bytes())) == n_slides
    text = _words(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True,
                                 text=True, check=True).stdout)
    for it in items:
        assert _words(it.title) in text and _words(it.takeaway) in text, it.title


def test_pptx_has_a_slide_per_item_with_its_chart_and_every_caveat_in_the_notes(items,
                                                                                 tmp_path):
    from pptx import Presentation
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    from ulr.report.powerpoint import build_pptx

    path = tmp_path / "deck.pptx"
    path.write_bytes(build_pptx(items, title="Every kind of result"))
    prs = Presentation(str(path))
    from ulr.report.deck import _appendix_pages
    n_appendix = len(_appendix_pages(items))
    slides = list(prs.slides)  # a cover, the items, the caveats appendix (as the HTML deck)
    assert len(slides) == 1 + len(items) + n_appendix
    cover = " ".join(sh.text_frame.text for sh in slides[0].shapes if sh.has_text_frame)
    assert "Every kind of result" in cover and f"{len(items)} results" in cover
    appendix = " ".join(sh.text_frame.text for s in slides[1 + len(items):] for sh in s.shapes
                        if sh.has_text_frame)
    for it in items:
        if len(it.caveats) > len(report.slide_caveats(it)[0]):
            assert all(_words(c) in _words(appendix) for c in it.caveats), it.title
    for it, slide in zip(items, slides[1:]):
        kinds = [sh.shape_type for sh in slide.shapes]
        if it.figure is not None:
            assert MSO_SHAPE_TYPE.PICTURE in kinds, it.title
            pic = next(sh for sh in slide.shapes if sh.shape_type == MSO_SHAPE_TYPE.PICTURE)
            assert pic.height >= prs.slide_height / 2 and pic.image.size[0] >= 2400
        else:
            assert any(sh.has_table for sh in slide.shapes), it.title
        boxes = sorted((sh.top, sh.top + sh.height, sh.left + sh.width) for sh in slide.shapes)
        assert all(b <= prs.slide_height and r <= prs.slide_width for _, b, r in boxes)
        assert all(b <= t2 for (_, b, _), (t2, _, _) in zip(boxes, boxes[1:])), it.title
        text = " ".join(sh.text_frame.text for sh in slide.shapes if sh.has_text_frame)
        assert _words(it.title) in _words(text)
        notes = _words(slide.notes_slide.notes_text_frame.text)
        for c in it.caveats:
            assert _words(c) in notes
        assert "Evidence:" in notes and "Settings" in notes
        assert "null" not in notes and "0484665070689734" not in notes  # readable settings
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        pytest.skip("LibreOffice is not installed here (CI installs it)")
    out = tmp_path / "pdf"
    p = subprocess.run([soffice, f"-env:UserInstallation={(tmp_path / 'lo').as_uri()}",
                        "--headless", "--convert-to", "pdf", "--outdir", str(out), str(path)],
                       capture_output=True, text=True, timeout=180)
    converted = out / "deck.pdf"
    assert p.returncode == 0 and converted.exists(), p.stderr
    assert len(re.findall(rb"/Type\s*/Page[^s]", converted.read_bytes())) == len(slides)
