"""Charts drawn once per item version and kept with the saved reports (ulr.report.drawn,
issue 54): the exports are the same with and without the kept drawings, and a changed
item is drawn afresh."""

import io
import zipfile

import plotly.graph_objects as go
import pytest

from ulr import report
from ulr.report import drawn, render
from ulr.report.item import ReportItem
from tests.report.items import make_items

GENERATED = "2026-01-02T03:04:05"
needs_chromium = pytest.mark.skipif(report.static_export_problem() is not None,
                                    reason="kaleido or system Chromium missing")


def _fresh(build):
    """``build()`` with nothing kept: every chart drawn afresh (the reference)."""
    with drawn.enabled(False):
        return build()


def _item(y, title="Theta"):
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=y, name="em"))
    return ReportItem.from_result(title, fig=fig, dataset="sample")


def test_html_report_and_deck_are_the_same_text_with_and_without_kept_drawings():
    drawn.clear()
    items = list(make_items())
    for build in (lambda: report.build_html(items, title="R", generated=GENERATED),
                  lambda: report.build_deck(items, title="R", generated=GENERATED),
                  lambda: report.build_deck(items, title="R", generated=GENERATED,
                                            embedded=True, paper=True)):
        reference = _fresh(build)
        assert build() == reference  # drawn now, and kept
        assert build() == reference  # from what was kept
    # each chart has its own div id in a document, as drawn afresh
    doc = report.build_html(items, title="R", generated=GENERATED)
    assert doc.count('id="ulr-fig-1"') == 1 and doc.count('id="ulr-fig-2"') == 1
    assert "ulr0drawn0chart0div0id" not in doc


def test_a_changed_item_is_drawn_afresh():
    drawn.clear()
    old = _item([0.5, 0.25, 0.125])
    before = report.build_deck([old], title="R", generated=GENERATED)
    assert "0.125" in before
    new = ReportItem.from_dict({**old.to_dict(), "figure": _item([0.9, 0.6, 0.3]).figure})
    assert new.id == old.id  # the same item, a new version of its chart
    after = report.build_deck([new], title="R", generated=GENERATED)
    assert after == _fresh(lambda: report.build_deck([new], title="R", generated=GENERATED))
    assert after != before and "0.3" in after and "0.125" not in after
    # the title names the chart's download: an edited title is drawn afresh too
    renamed = ReportItem.from_dict({**new.to_dict(), "title": "Examination by position"})
    from ulr.text import file_slug
    before_rename = report.build_html([new], title="R", generated=GENERATED)
    html = report.build_html([renamed], title="R", generated=GENERATED)
    named = '"filename": "{}"'
    assert named.format(file_slug("Theta", 60)) in before_rename
    assert named.format(file_slug("Examination by position", 60)) in html
    assert named.format(file_slug("Theta", 60)) not in html
    assert html == _fresh(lambda: report.build_html([renamed], title="R",
                                                    generated=GENERATED))
    # the same object for the page while the version is the same, another for a new one
    assert report.shown_figure(new) is report.shown_figure(ReportItem.from_dict(new.to_dict()))
    assert report.shown_figure(new) is not report.shown_figure(old)
    assert report.shown_figure(new).to_json() == report.export_figure(new).to_json()


def _store(db=None) -> None:
    from ulr.data import catalog
    with catalog.catalog(db, write=True):
        pass  # the store exists (the app or a load makes it)


def test_kept_drawings_are_read_from_the_store_and_the_oldest_dropped(monkeypatch, tmp_path):
    from pathlib import Path
    db = str(tmp_path / "store.duckdb")
    calls = []
    drawn.clear()
    drawn.kept("t", ["x"], lambda missing: [b"x"], db=db)
    assert not Path(db).exists()  # no store is made for drawings
    _store(db)

    def draw(missing):
        calls.append(list(missing))
        return [f"drawing {i}".encode() for i in missing]

    drawn.clear()
    assert drawn.kept("t", ["a", "b"], draw, db=db) == [b"drawing 0", b"drawing 1"]
    drawn.clear()  # a new process: only the store has them
    assert drawn.kept("t", ["b", "c", "a"], draw, db=db) == [b"drawing 1", b"drawing 1",
                                                              b"drawing 0"]
    assert calls == [[0, 1], [1]]  # only "c" drawn the second time
    monkeypatch.setattr(drawn, "KEPT_ENTRIES", 2)
    drawn.clear()
    drawn.kept("t", ["d"], draw, db=db)
    from ulr.data import catalog
    with catalog.catalog(db) as con:
        assert con.execute("SELECT count(*) FROM ulr_report_drawn").fetchone()[0] == 2


def _unzipped(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: z.read(n) for n in z.namelist()}


@needs_chromium
def test_powerpoint_is_the_same_with_and_without_kept_pictures_and_starts_no_browser_again(
        monkeypatch):
    from ulr.report.powerpoint import build_pptx
    _store()
    drawn.clear()
    items = list(make_items())
    reference = _fresh(lambda: build_pptx(items, title="R", generated=GENERATED))
    first = build_pptx(items, title="R", generated=GENERATED)
    assert _unzipped(first) == _unzipped(reference)  # every part, pictures included
    drawn.clear()  # a new process: the pictures come from the store

    def no_browser(*a, **k):
        raise AssertionError("the browser was started again")
    monkeypatch.setattr(render, "_render", no_browser)
    again = build_pptx(items, title="R", generated=GENERATED)
    assert _unzipped(again) == _unzipped(reference)
    # single-chart pictures are kept too (the Report page's PNG and PDF buttons)
    monkeypatch.undo()
    png = report.to_image(items[0], format="png", width=300, height=200, scale=1)
    monkeypatch.setattr(render, "_render", no_browser)
    assert report.to_image(items[0], format="png", width=300, height=200, scale=1) == png
    monkeypatch.undo()
    assert png == _fresh(lambda: report.to_image(items[0], format="png", width=300,
                                                 height=200, scale=1))


@needs_chromium
def test_pdf_is_kept_and_its_text_is_the_same_as_printed_afresh(monkeypatch):
    import re
    _store()  # the store exists (the app or a load makes it): the PDF is kept there
    drawn.clear()
    items = [_item([0.5, 0.25, 0.125])]
    first = report.build_pdf(items, title="R", generated=GENERATED)
    reference = _fresh(lambda: report.build_pdf(items, title="R", generated=GENERATED))

    def undated(pdf: bytes) -> bytes:  # Chromium stamps the print time
        return re.sub(rb"/(CreationDate|ModDate) \(D:[^)]*\)", b"", pdf)
    assert first[:5] == b"%PDF-" and undated(first) == undated(reference)
    monkeypatch.setattr(render, "html_to_pdf", lambda *a, **k: pytest.fail("printed again"))
    assert report.build_pdf(items, title="R", generated=GENERATED) == first
    drawn.clear()
    assert report.build_pdf(items, title="R") == first  # kept: it says when it was made


def test_a_table_is_read_once_per_version_and_every_caller_gets_its_own_copy():
    import pandas as pd
    drawn.clear()
    a, _ = make_items()
    reference = _fresh(a.frame)
    first = a.frame()
    pd.testing.assert_frame_equal(first, reference, check_exact=True)
    first.iloc[0, 0] = "changed by a caller"
    pd.testing.assert_frame_equal(a.frame(), reference, check_exact=True)
    other = ReportItem.from_dict({**a.to_dict(), "table": pd.DataFrame({"x": [1]}).to_json(
        orient="split")})
    assert list(other.frame().columns) == ["x"]  # a new table version is read afresh


def test_an_export_waits_for_a_drawing_another_thread_is_making_and_draws_it_once(tmp_path):
    import threading
    import time
    drawn.clear()
    db = str(tmp_path / "store.duckdb")
    _store(db)
    calls, started = [], threading.Event()

    def slow(missing):
        calls.append(list(missing))
        started.set()
        time.sleep(0.5)
        return [f"drawing {i}".encode() for i in missing]

    out = {}
    t = threading.Thread(target=lambda: out.setdefault("bg", drawn.kept("w", ["a", "b"], slow,
                                                                        db=db)))
    t.start()
    started.wait(5)
    # "a" and "b" are being drawn by the other thread: waited for; "c" drawn here
    assert drawn.kept("w", ["c", "b", "a"], slow, db=db) == [b"drawing 0", b"drawing 1",
                                                              b"drawing 0"]
    t.join()
    assert out["bg"] == [b"drawing 0", b"drawing 1"]
    assert calls == [[0, 1], [0]]  # each key drawn once

    def failing(missing):
        calls.append(("failed", list(missing)))
        started.set()
        time.sleep(0.3)
        raise RuntimeError("the other thread's browser crashed")

    drawn.clear()
    started.clear()
    t = threading.Thread(target=lambda: pytest.raises(RuntimeError, drawn.kept, "w2", ["x"],
                                                      failing, db=db))
    t.start()
    started.wait(5)
    # the other thread failed: the waiting export draws it itself
    assert drawn.kept("w2", ["x"], slow, db=db) == [b"drawing 0"]
    t.join()


def test_deck_charts_kept_after_a_save_are_read_from_the_store_and_a_deck_writes_none(
        monkeypatch):
    from ulr.data import catalog
    from ulr.report import parts
    _store()
    drawn.clear()
    items = list(make_items())
    reference = _fresh(lambda: report.build_deck(items, title="R", generated=GENERATED))
    stamp = catalog._stamp(catalog.store_path(None))
    assert report.build_deck(items, title="R", generated=GENERATED) == reference
    assert catalog._stamp(catalog.store_path(None)) == stamp  # the deck wrote nothing
    drawn.clear()
    # what the drawing after a save keeps (ulr.report.ahead)
    assert parts.draw_figures(items, slide=True, height="100%", keep=True) == sum(
        1 for it in items if it.figure is not None)
    drawn.clear()  # a new process: the charts' HTML comes from the store
    monkeypatch.setattr(parts, "_figure_html", lambda *a, **k: pytest.fail("drawn again"))
    assert report.build_deck(items, title="R", generated=GENERATED) == reference


@needs_chromium
def test_pictures_of_one_browser_page_are_the_same_as_each_rendered_in_a_page_of_its_own():
    # kaleido reloads its page after each chart; ulr's session does not for PNG (render._Kaleido)
    from ulr.report.browser import find_browser
    items = list(make_items())
    figs = [report.slide_figure(it, width=600).update_layout(width=600, height=300).to_dict()
            for it in items if it.figure is not None]
    figs.append(_item([0.9, 0.1, 0.5]).figure_dict())
    opts = [{"format": "png", "scale": 1.0, "width": 600, "height": 300}] * len(figs)
    together = render._render(figs, opts, find_browser(), 60.0)
    alone = [render._render([f], [o], find_browser(), 60.0)[0] for f, o in zip(figs, opts)]
    assert len(together) >= 2 and together == alone


@needs_chromium
def test_charts_are_drawn_after_a_save_without_the_save_waiting_and_the_export_reuses_them(
        monkeypatch, tmp_path):
    from ulr.report import ahead, saved
    from ulr.report.powerpoint import build_pptx
    monkeypatch.setenv("ULR_DRAW_AHEAD", "1")
    db = str(tmp_path / "store.duckdb")
    # the exports read kept drawings from the store the app uses (ULR_DB): save there too
    monkeypatch.setenv("ULR_DB", db)
    drawn.clear()
    items = list(make_items())
    rid = saved.create("R", actor=saved.OPERATOR, db=db).id
    drawing = []
    real = render._render
    monkeypatch.setattr(render, "_render", lambda *a: drawing.append(1) or real(*a))
    for it in items:
        saved.add_item(rid, it, actor=saved.OPERATOR, db=db)
    assert not drawing  # the save returned before anything was drawn
    assert ahead.idle(120)
    assert len(drawing) == 1  # the saves in a row: one browser session
    kept = saved.items(rid, actor=saved.OPERATOR, db=db)
    reference = _fresh(lambda: build_pptx(kept, title="R", generated=GENERATED))
    deck = _fresh(lambda: report.build_deck(kept, title="R", generated=GENERATED))
    drawn.clear()  # a new process: the pictures and the deck's charts come from the store

    def no_browser(*a, **k):
        raise AssertionError("the browser was started again")
    monkeypatch.setattr(render, "_render", no_browser)
    from ulr.report import parts
    monkeypatch.setattr(parts, "_figure_html", lambda *a, **k: pytest.fail("drawn again"))
    assert _unzipped(build_pptx(kept, title="R", generated=GENERATED)) == _unzipped(reference)
    assert report.build_deck(kept, title="R", generated=GENERATED) == deck
    monkeypatch.setenv("ULR_DRAW_AHEAD", "0")
    assert ahead.schedule(rid, db=db, items=lambda: []) is False  # off: nothing drawn after a save


def test_a_drawing_after_a_save_that_dies_loses_nothing(monkeypatch, tmp_path):
    from ulr.report import ahead, saved
    monkeypatch.setenv("ULR_DRAW_AHEAD", "1")
    monkeypatch.setattr(ahead, "on", lambda: True)  # also where no browser is installed
    db = str(tmp_path / "store.duckdb")
    drawn.clear()
    items = list(make_items())
    rid = saved.create("R", actor=saved.OPERATOR, db=db).id

    def killed(*a, **k):
        raise RuntimeError("the browser was killed")
    monkeypatch.setattr(render, "_render", killed)
    monkeypatch.setattr(render, "image_browser", lambda *a, **k: "/usr/bin/chromium")
    for it in items:
        saved.add_item(rid, it, actor=saved.OPERATOR, db=db)
    assert ahead.idle(60)
    # every item saved, nothing kept for the pictures: the export draws them
    assert [i.to_dict() for i in saved.items(rid, actor=saved.OPERATOR, db=db)] == [
        i.to_dict() for i in items]
    from ulr.data import catalog
    with catalog.catalog(db) as con:
        assert not con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = "
                               "'ulr_report_drawn'").fetchone() or con.execute(
            "SELECT count(*) FROM ulr_report_drawn WHERE kind = 'pptx_png'").fetchone()[0] == 0


def _undated(pdf: bytes) -> bytes:
    """A PDF without the print time Chromium stamps on it."""
    import re
    return re.sub(rb"/(CreationDate|ModDate) \(D:[^)]*\)", b"", pdf)


def _pdf_pages(pdf: bytes) -> int:
    """The pages of a PDF Chromium printed (its page objects are not compressed)."""
    import re
    return len(re.findall(rb"/Type\s*/Page[^s]", pdf))


@needs_chromium
def test_the_pdf_prints_each_chart_as_an_svg_picture_without_plotlyjs_one_page_a_slide(
        monkeypatch):
    import base64
    import re

    from plotly.offline import get_plotlyjs

    from ulr.report import deck
    from ulr.report.browser import find_browser
    drawn.clear()
    long = "A caveat long enough to leave the slide for the appendix. " * 8
    items = list(make_items()) + [
        ReportItem.from_result("Only a note", note="no chart here", dataset="sample"),
        ReportItem.from_dict({**_item([0.9, 0.6, 0.3], title="Third").to_dict(),
                              "caveats": [long, long]})]
    charts = [i for i, it in enumerate(items) if it.figure is not None]
    printed, drawing = [], []
    real_print, real_render = render.html_to_pdf, render._render
    monkeypatch.setattr(render, "html_to_pdf",
                        lambda html, **k: printed.append(html) or real_print(html, **k))
    monkeypatch.setattr(render, "_render",
                        lambda d, o, *a: drawing.append(o) or real_render(d, o, *a))
    positions, group = deck.print_pictures(items)
    assert positions == charts
    kept = render.kept_images([group], browser=find_browser())[0]  # as drawn after a save
    assert len(drawing) == 1 and [o["format"] for o in drawing[0]] == ["svg"] * len(charts)
    pdf = report.build_pdf(items, title="R", generated=GENERATED)
    assert len(drawing) == 1  # the export drew nothing: the pictures were kept
    (html,) = printed
    assert get_plotlyjs()[:2000] not in html and "Plotly.newPlot" not in html
    assert html.count("<script") == 1  # the deck's own script only
    # one SVG picture per chart, in each chart's box, in the order of the slides
    boxes = re.findall(r'<div class="chart">(.*?)</div>', html)
    assert len(boxes) == len(charts)
    pictures = [re.fullmatch(r'<img class="chart-picture" alt="[^"]*" style="[^"]*" '
                             r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)">', b)
                for b in boxes]
    assert all(pictures)
    svgs = [base64.b64decode(m.group(1)) for m in pictures]
    assert all(s.lstrip().startswith(b"<svg") for s in svgs)
    assert svgs == kept  # kept, in order
    # one page per slide (cover, items, the appendix), vector: no raster picture
    slides = html.count('<section class="slide')
    assert slides == len(items) + 2
    assert slides == report.build_deck(items, title="R").count('<section class="slide')
    assert pdf[:5] == b"%PDF-" and _pdf_pages(pdf) == slides
    assert b"/Subtype /Image" not in pdf
    # Present and the slides HTML keep their live charts
    live = report.build_deck(items, title="R", generated=GENERATED)
    assert live.count(get_plotlyjs()) == 1 and live.count("Plotly.newPlot") == len(charts)
    # with the pictures not kept yet (a first export right after the saves), the PDF is
    # printed with live charts at once: no browser is started to draw the pictures first
    first = _fresh(lambda: report.build_pdf(items, title="R", generated=GENERATED))
    assert len(drawing) == 1 and len(printed) == 2
    assert printed[1].count("Plotly.newPlot") == len(charts)
    assert first[:5] == b"%PDF-" and _pdf_pages(first) == slides


@needs_chromium
def test_the_pdf_pictures_are_drawn_with_the_slide_pictures_after_a_save_and_kept(
        monkeypatch, tmp_path):
    from ulr.report import powerpoint
    db = str(tmp_path / "store.duckdb")
    _store(db)
    drawn.clear()
    items = list(make_items()) + [_item([0.9, 0.6, 0.3], title="Third")]
    drawing = []
    real = render._render
    monkeypatch.setattr(render, "_render", lambda d, o, *a: drawing.append(o) or real(d, o, *a))
    assert powerpoint.draw_pictures(items, db=db) == 3  # what ulr.report.ahead draws
    # the slide pictures and the PDF's pictures in one browser session
    assert len(drawing) == 1 and [o["format"] for o in drawing[0]] == ["png"] * 3 + ["svg"] * 3
    drawn.clear()  # a new process: the pictures come from the store

    def no_browser(*a, **k):
        raise AssertionError("the browser was started again")
    monkeypatch.setattr(render, "_render", no_browser)
    pdf = report.build_pdf(items, title="R", generated=GENERATED, db=db)
    # the kept PDF is found by its pictures' keys, not their bytes (plotly draws each
    # SVG's element ids at random): found with its pictures gone from the store
    from ulr.data import catalog
    with catalog.catalog(db, write=True) as con:
        con.execute("DELETE FROM ulr_report_drawn WHERE kind = 'pdf_svg'")
    drawn.clear()
    monkeypatch.setattr(render, "html_to_pdf", lambda *a, **k: pytest.fail("printed again"))
    assert report.build_pdf(items, title="R", generated=GENERATED, db=db) == pdf
    monkeypatch.undo()
    # nothing kept: printed with live charts, the same pages (docs/benchmarks.md)
    live = _fresh(lambda: report.build_pdf(items, title="R", generated=GENERATED))
    assert _undated(pdf) != _undated(live) and _pdf_pages(pdf) == _pdf_pages(live)


def test_peek_each_reads_what_is_kept_and_draws_nothing(tmp_path):
    """The Report page's pictures (issue 54): each key's kept bytes, from this process or the
    store, None where none is kept; nothing drawn, and peek is all or nothing."""
    db = str(tmp_path / "store.duckdb")
    _store(db)
    drawn.clear()
    try:
        drawn.kept("t", ["a"], lambda missing: [b"in the store"], db=db)
        drawn.clear()  # a new process: only the store has "a"
        drawn.kept("t", ["b"], lambda missing: [b"in this process"], db=db, keep=False)
        assert drawn.peek_each("t", ["a", "b", "c"], db=db) == [
            b"in the store", b"in this process", None]
        assert drawn.peek("t", ["a", "b", "c"], db=db) is None
        assert drawn.peek("t", ["b", "a"], db=db) == [b"in this process", b"in the store"]
        with drawn.enabled(False):
            assert drawn.peek_each("t", ["a"], db=db) is None
    finally:
        drawn.clear()
