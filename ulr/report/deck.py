"""The slide deck: a self-contained, offline HTML deck, one result per slide."""

from __future__ import annotations

from ulr import __version__
from ulr.errors import UlrError
from ulr.report.item import ReportItem, as_items, now_text
from ulr.quantity import timestamp
from ulr.report.parts import (asset, caveats_html, draw_figures, esc, evidence_text,
                              figure_html, head, table_html, verdict_badge)
from ulr.report.figures import slide_figure


# Every slide is laid out at a design height of 720 px (its width follows the
# screen's shape) and zoomed to the window, so what fits at 1280x720 fits at any
# size. The budget, top to bottom: title (2 lines, then smaller type), takeaway
# (2 lines), caveats (at most 100 px), the chart (at least 360 px: half the
# slide), the evidence line. Print: one slide per A4 landscape page.
SLIDE_CAVEAT_CHARS = 240   # two caveats share a slide only when they are this short together
SLIDE_CAVEAT_MAX = 420     # a first caveat longer than this goes to the appendix too
SLIDE_TABLE_ROWS = 12
APPENDIX_CHARS = 1400      # caveat text per appendix slide



def slide_caveats(item: ReportItem) -> tuple[list[str], list[str]]:
    """The caveats a slide shows, and those left to its notes and the appendix.

    The first caveat is shown (unless it is longer than ``SLIDE_CAVEAT_MAX``
    characters), the second too when both together stay under
    ``SLIDE_CAVEAT_CHARS``; the rest are counted on the slide ("+N more").
    """
    cav = list(item.caveats)
    n = 0 if not cav or len(cav[0]) > SLIDE_CAVEAT_MAX else 1
    if n and len(cav) > 1 and len(cav[0]) + len(cav[1]) <= SLIDE_CAVEAT_CHARS:
        n = 2
    return cav[:n], cav[n:]


def _more_text(hidden: int, appendix: int | None) -> str:
    if not hidden:
        return ""
    where = f"appendix, slide {appendix}" if appendix else "appendix"
    return f"+{hidden} more caveat{'s' if hidden != 1 else ''} ({where})"


def _appendix_pages(items) -> list[list[tuple[int, ReportItem]]]:
    """Items whose caveats do not all fit on their slide, split into appendix slides."""
    pages, cur, used = [], [], 0
    for i, it in enumerate(items, start=1):
        if not slide_caveats(it)[1]:
            continue
        size = sum(len(c) for c in it.caveats) + 80
        if cur and used + size > APPENDIX_CHARS:
            pages.append(cur)
            cur, used = [], 0
        cur.append((i, it))
        used += size
    return pages + ([cur] if cur else [])


#: a printed slide's content box in design pixels (deck.css, ``@media print``: the slide
#: is 1018 x 719 px with padding 20 px 44 px 12 px), and the least height of its chart
PRINT_BOX = (930, 687)
PRINT_CHART_MIN = 360


def wrapped_lines(text: str, per_line: int) -> int:
    """Lines ``text`` takes when its words wrap at ``per_line`` characters (the deck's
    print budget here and the PowerPoint slides' boxes, :mod:`ulr.report.powerpoint`)."""
    n, line = 0, 0
    for word in str(text).split():
        if line and line + 1 + len(word) > per_line:
            n, line = n + 1, len(word)
        else:
            line += len(word) + (1 if line else 0)
    return n + 1


def _lines(text: str, px: float, width: float) -> int:
    """Lines ``text`` takes in type of ``px`` pixels in a box ``width`` pixels wide
    (an average glyph of 0.52 em, as :mod:`ulr.report.powerpoint` estimates)."""
    return wrapped_lines(text, max(1, int(width / (px * 0.52))))


def print_chart_size(it: ReportItem, status: str | None = None) -> tuple[int, int]:
    """``(width, height)`` in design pixels of the chart's box on the item's printed slide.

    The slide's content box (:data:`PRINT_BOX`) less the heights deck.css gives the
    title (36 px type, 1.15 leading, at most 84 px), the takeaway (22 px, 1.3, at most
    58 px), the caveats box (17 px, 1.3, at most 100 px) and the evidence line (14 px,
    1.35, at most 38 px), each with its margin; at least :data:`PRINT_CHART_MIN`. An
    estimate (deck.js shrinks long text to fit): the picture printed from it is fitted
    into the box as laid out, never stretched.
    """
    w, h = PRINT_BOX
    used = min(84.0, _lines(it.title, 36, w) * 36 * 1.15) + 6
    if it.takeaway or it.verdict:
        badge = f"{it.verdict['level']}   " if it.verdict else ""
        used += min(58.0, _lines(badge + it.takeaway, 22, w) * 22 * 1.3) + 6
    if status or it.caveats:
        shown, hidden = slide_caveats(it)
        box = 0.0
        if status:
            box += _lines(status, 17, w - 40) * 17 * 1.3 + 12
        if it.caveats:
            box += 8 + 17 * 0.9 * 1.3 + sum(_lines(c, 17, w - 60) * 17 * 1.3 for c in shown)
            box += 17 * 1.3 if hidden else 0
        used += min(100.0, box) + 6
    evidence = f"Evidence: {evidence_text(it.evidence)} · dataset {it.origin}"
    used += min(38.0, _lines(evidence, 14, w) * 14 * 1.35) + 6
    return w, int(max(PRINT_CHART_MIN, h - used))


def print_pictures(items, status: dict | None = None):
    """What the printed deck (:func:`~ulr.report.render.build_pdf`) draws its charts from:
    ``(positions, (kind, keys, spec))``: the positions of ``items`` with a chart, and
    for each the key it is kept under (:mod:`ulr.report.drawn`: its version and its
    printed size, :func:`print_chart_size`) and ``spec(j)``: the slide version of its
    chart (:func:`~ulr.report.figures.slide_figure`) at that size and the SVG options
    (:func:`ulr.report.render.kept_images` renders those not kept)."""
    from ulr.report import drawn
    items = as_items(items)
    status = status or {}
    positions = [i for i, it in enumerate(items) if it.figure is not None]
    sizes = [print_chart_size(items[i], status.get(items[i].id)) for i in positions]
    keys = [drawn.digest(drawn.code(), "pdf_svg", drawn.figure_key(items[i]), w, h)
            for i, (w, h) in zip(positions, sizes)]

    def spec(j):
        (w, h), it = sizes[j], items[positions[j]]
        fig = slide_figure(it, width=w).update_layout(width=w, height=h)
        return fig.to_plotly_json(), {"format": "svg", "scale": 1.0, "width": w, "height": h}
    return positions, ("pdf_svg", keys, spec)


def kept_pictures(items, status: dict | None = None, *, db=None) -> dict:
    """``{item id: SVG text}``: the printed deck's picture of each item's chart
    (:func:`print_pictures`) where one is kept with the saved report (drawn after a save,
    :mod:`ulr.report.ahead`), read without drawing and without waiting for a drawing in
    progress. The Report page shows these as pictures, not live charts: a Plotly chart
    costs the browser far more to draw (issue 54: the Report page with 12 items fully
    drawn under 3 s); items without a kept picture keep their live chart."""
    from ulr.report import drawn
    items = as_items(items)
    positions, (kind, keys, _) = print_pictures(items, status)
    got = drawn.peek_each(kind, keys, db=db) or [None] * len(keys)
    return {items[i].id: svg.decode("utf-8") for i, svg in zip(positions, got)
            if svg is not None}


def picture_html(it: ReportItem, svg: bytes) -> str:
    """A chart printed as a kept SVG picture: an ``<img>`` filling the chart's box, fitted
    into it without stretching (the deck's stylesheet, and so Present, is unchanged)."""
    import base64
    return (f'<img class="chart-picture" alt="{esc(it.title)}" style="position: absolute; '
            'inset: 0; width: 100%; height: 100%; object-fit: contain" '
            f'src="data:image/svg+xml;base64,{base64.b64encode(svg).decode("ascii")}">')


def _slide_html(i: int, it: ReportItem, status: str | None, appendix: int | None,
                max_table_rows: int, picture: bytes | None = None) -> str:
    """One item's slide: title, takeaway (verdict badge), caveats, chart/table/note, evidence."""
    parts = [f'<section class="slide" id="slide-{i}"><h1>{esc(it.title)}</h1>']
    if it.takeaway or it.verdict:
        parts.append(f'<p class="takeaway">{verdict_badge(it)}{esc(it.takeaway)}</p>')
    shown, hidden = slide_caveats(it)
    if status or it.caveats:
        box = [f'<div class="stale" role="alert">{esc(status)}</div>'] if status else []
        if it.caveats:
            box.append(caveats_html(shown, _more_text(len(hidden), appendix)))
        parts.append(f'<div class="box">{"".join(box)}</div>')
    if it.figure is not None:
        chart = picture_html(it, picture) if picture is not None else \
            figure_html(it, f"ulr-slide-{i}", slide=True, height="100%")
        parts.append(f'<div class="chart">{chart}</div>')
    elif it.table is not None:
        df = it.frame()
        parts.append(table_html(df.head(max_table_rows), max_table_rows))
        parts.append(f'<p class="muted rows" data-total="{len(df)}"></p>')
    elif it.note.strip():
        parts.append(f'<div class="note">{esc(it.note)}</div>')
    parts.append(f'<div class="evidence">Evidence: {esc(evidence_text(it.evidence))}'
                 f' · dataset {esc(it.origin)}</div>')
    if hidden:
        lis = "".join(f"<li>{esc(c)}</li>" for c in it.caveats)
        parts.append(f'<aside class="notes"><ul>{lis}</ul></aside>')
    return "".join(parts) + "</section>"


def build_deck(items, *, title: str = "ulr report", generated: str | None = None,
               status: dict | None = None, max_table_rows: int = SLIDE_TABLE_ROWS,
               embedded: bool = False, paper: bool = False,
               pictures: dict | None = None) -> str:
    """A self-contained, offline HTML slide deck: a cover, one item per slide, an appendix.

    Each slide has a fixed budget at its design size of 720 px high (zoomed to
    the window, so 1280x720 and 1920x1080 look alike): the item's title (two
    lines, then smaller type), its takeaway (with a verdict badge when the item
    has one), the caveats that fit (:func:`slide_caveats`; "+N more" points to
    the appendix slides that list every caveat of those items), the chart drawn
    for the slide (:func:`~ulr.report.figures.slide_figure`, no toolbar), at least half the slide's
    height, or a table or note, and the evidence line. Settings are left to the
    long report. ArrowLeft/ArrowRight (also PageUp/PageDown, Home, End) and the
    buttons move between slides; ``#N`` in the address opens slide N. Printing
    (or :func:`~ulr.report.render.build_pdf`) puts one slide per A4 landscape page. As in
    :func:`~ulr.report.document.build_html`, plotly.js is inline once and a Content-Security-Policy
    forbids every network request. ``embedded`` (the app's Present page) also
    listens to the arrow keys of the page around the frame; ``paper`` lays the
    slides out at their A4 landscape print size whatever the window (for
    :func:`~ulr.report.render.build_pdf`, so that text and charts are fitted to the page they print on).
    ``pictures`` (``{item position: SVG bytes}``, :func:`print_pictures`) shows those
    charts as pictures instead of live charts; when it is given and every chart is one
    (none, in a deck without charts), the deck has no plotly.js (the PDF's print, issue 54).
    """
    items = as_items(items)
    if not isinstance(title, str) or not title.strip():
        raise UlrError("the report needs a non-empty title.")
    generated = generated or now_text()
    slides = [f'<section class="slide cover"><h1>{esc(title)}</h1>'
              f'<p class="takeaway">{len(items)} result{"s" if len(items) != 1 else ""}</p>'
              f'<p class="evidence">Generated {esc(timestamp(generated))} by ulr '
              f'{esc(__version__)}</p>'
              "</section>"]
    pages = _appendix_pages(items)
    first_appendix = len(items) + 2
    printed, pictures = pictures is not None, pictures or {}
    live = [i for i, it in enumerate(items) if it.figure is not None and i not in pictures]
    if live:
        draw_figures([items[i] for i in live], slide=True, height="100%")  # kept
    where = {i: first_appendix + p for p, page in enumerate(pages) for i, _ in page}
    for i, it in enumerate(items, start=1):
        slides.append(_slide_html(i, it, (status or {}).get(it.id), where.get(i),
                                  int(max_table_rows), pictures.get(i - 1)))
    for p, page in enumerate(pages):
        body = "".join(f"<h2>Slide {i + 1}: {esc(it.title)}</h2><ul>"
                       + "".join(f"<li>{esc(c)}</li>" for c in it.caveats) + "</ul>"
                       for i, it in page)
        slides.append(f'<section class="slide appendix" id="appendix-{p + 1}">'
                      f"<h1>Appendix: every caveat{f' ({p + 1})' if len(pages) > 1 else ''}"
                      f'</h1><div class="appendix-body">{body}</div></section>')
    nav = ('<nav class="controls"><button id="prev" aria-label="Previous slide">&#8592;</button>'
           '<span id="counter"></span>'
           '<button id="next" aria-label="Next slide">&#8594;</button></nav>')
    return (head(title, "deck.css", plotly=bool(live) or not printed)
            + f'<body{" data-embedded" if embedded else ""}{" data-paper" if paper else ""}>'
              f'<div class="deck">'
              f'{"".join(slides)}</div>{nav}<script>{asset("deck.js")}</script></body>\n</html>\n')

