"""The slide deck: a self-contained, offline HTML deck, one result per slide."""

from __future__ import annotations

from ulr import __version__
from ulr.errors import UlrError
from ulr.report.item import ReportItem, as_items, now_text
from ulr.quantity import timestamp
from ulr.report.parts import (asset, caveats_html, draw_figures, esc, evidence_text,
                              figure_html, head, table_html, verdict_badge)


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


def _slide_html(i: int, it: ReportItem, status: str | None, appendix: int | None,
                max_table_rows: int) -> str:
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
        chart = figure_html(it, f"ulr-slide-{i}", slide=True, height="100%")
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
               embedded: bool = False, paper: bool = False) -> str:
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
    draw_figures(items, slide=True, height="100%")  # kept with the saved reports
    where = {i: first_appendix + p for p, page in enumerate(pages) for i, _ in page}
    for i, it in enumerate(items, start=1):
        slides.append(_slide_html(i, it, (status or {}).get(it.id), where.get(i),
                                  int(max_table_rows)))
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
    return (head(title, "deck.css")
            + f'<body{" data-embedded" if embedded else ""}{" data-paper" if paper else ""}>'
              f'<div class="deck">'
              f'{"".join(slides)}</div>{nav}<script>{asset("deck.js")}</script></body>\n</html>\n')

