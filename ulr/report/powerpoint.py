"""A report as a PowerPoint deck (.pptx): one slide per item, the rest in the speaker notes.

Each slide holds the item's title, its takeaway, the caveats that fit
(:func:`ulr.report.slide_caveats`, then "+N more"), the chart drawn for the
slide (:func:`ulr.report.slide_figure`) as a high-resolution PNG rendered by
kaleido through the system Chromium (:func:`ulr.report.to_images`), or its
table, and the evidence line. The speaker notes carry every caveat, the
evidence, the dataset and the settings (:func:`ulr.report.settings_lines`).

The slide is 16:9 (13.33 x 7.5 in); its budget mirrors the HTML deck's: title at
most two lines (then smaller type), takeaway two lines, caveats at most 0.85 in,
the chart at least half the slide's height.
"""

from __future__ import annotations

import io

from ulr import report
from ulr.errors import UlrError
from ulr.report import drawn
from ulr.report.deck import _appendix_pages, wrapped_lines
from ulr.report.item import now_text
from ulr.quantity import timestamp
from ulr.report.parts import display_table

WIDTH_IN, HEIGHT_IN = 13.333, 7.5
MARGIN_IN = 0.45
PX_PER_IN = 96          # the HTML deck's design pixels: 1280 px across 13.33 in
IMAGE_SCALE = 2.5       # 1 in of chart = 240 image pixels
TABLE_ROWS, TABLE_COLS = 10, 8
CELL_CHARS = 60         # a longer table cell ends in an ellipsis on the slide
_DARK_BLUE = (0x0B, 0x3D, 0x66)


def _lines(text: str, size_pt: float, width_in: float) -> int:
    """Lines ``text`` takes at ``size_pt`` in a box ``width_in`` wide (average glyph 0.52 em)."""
    return wrapped_lines(text, max(1, int(width_in * 72 / (size_pt * 0.52))))


def _fit(lines, sizes, width_in: float, max_in: float, leading: float = 1.2) -> tuple:
    """``(size, height in inches)``: the largest of ``sizes`` at which the text lines fit
    ``max_in`` (then at most two lines where that is possible: long text shrinks)."""
    def height(s):
        return sum(_lines(x, s, width_in) for x in lines) * s * leading / 72 + 0.08
    for s in sizes:
        if height(s) <= max_in:
            return s, height(s)
    return sizes[-1], max_in
def _textbox(slide, left, top, width, height, paragraphs, size, *, bold=False, color=None):
    """A word-wrapped text box; ``paragraphs`` is a list of text lines."""
    from pptx.enum.text import MSO_AUTO_SIZE
    from pptx.util import Inches, Pt

    box = slide.shapes.add_textbox(Inches(left), Inches(top), Inches(width), Inches(height))
    tf = box.text_frame
    tf.word_wrap = True
    tf.auto_size = MSO_AUTO_SIZE.TEXT_TO_FIT_SHAPE  # PowerPoint shrinks further if need be
    for m in ("margin_left", "margin_right", "margin_top", "margin_bottom"):
        setattr(tf, m, Inches(0.02))
    for i, text in enumerate(paragraphs):
        p = tf.paragraphs[0] if i == 0 else tf.add_paragraph()
        run = p.add_run()
        run.text = text
        run.font.size = Pt(size)
        run.font.bold = bold
        if color:
            from pptx.dml.color import RGBColor
            run.font.color.rgb = RGBColor(*color)
    return box


def _takeaway(it) -> str:
    """The takeaway, after the item's verdict when it has one (hook for a verdict model)."""
    verdict = getattr(it, "verdict", None) or {}
    level = verdict.get("level", "") if isinstance(verdict, dict) else str(verdict)
    return f"{level.upper()}: {it.takeaway}" if level else it.takeaway


def _notes(it, status: str | None) -> str:
    """Speaker notes: every caveat, the data status, evidence, dataset and settings."""
    out = []
    if it.takeaway:
        out.append(f"Takeaway: {it.takeaway}")
    if status:
        out.append(f"Data status: {status}")
    if it.caveats:
        out.append("Caveats:")
        out += [f"- {c}" for c in it.caveats]
    out.append(f"Evidence: {report.evidence_text(it.evidence)}")
    out.append(f"Dataset: {it.origin} · created {timestamp(it.created) or '—'} · "
               f"ulr {it.version or '—'}")
    if it.note.strip():
        out.append(f"Note: {it.note}")
    out.append("Settings:" if it.settings else "Settings: none recorded")
    out += [f"- {line}" for line in report.settings_lines(it.settings)]
    return "\n".join(out)


def _table(slide, df, left, top, width, height) -> None:
    """The first rows and columns of ``df`` as a native table that stays in its box.

    Long cells end in an ellipsis (the notes' report, the HTML and the ZIP have
    them whole); columns are as wide as their text; rows that would not fit are
    left out and counted under the table.
    """
    from pptx.util import Inches, Pt

    shown = display_table(df.iloc[:TABLE_ROWS, :TABLE_COLS]).astype(str)
    shown = shown.map(lambda v: v if len(v) <= CELL_CHARS else v[:CELL_CHARS - 1] + "…")
    cols = list(shown.columns)
    chars = [max([len(str(c))] + [len(v) for v in shown[c]]) for c in cols]
    chars = [max(c, 7) + 2 for c in chars]
    widths = [width * c / sum(chars) for c in chars]
    size = 12 if len(cols) <= 4 else 10
    line_in = size * 1.3 / 72

    def row_h(values):
        return max(_lines(v, size, wd - 0.1) for v, wd in zip(values, widths)) * line_in + 0.1

    heights = [row_h([str(c) for c in cols])]
    for row in shown.itertuples(index=False, name=None):
        if sum(heights) + row_h(row) > height - 0.35:
            break
        heights.append(row_h(row))
    n = len(heights) - 1
    shape = slide.shapes.add_table(n + 1, len(cols), Inches(left), Inches(top), Inches(width),
                                   Inches(sum(heights)))
    for j, wd in enumerate(widths):
        shape.table.columns[j].width = Inches(wd)
    for i, hgt in enumerate(heights):
        shape.table.rows[i].height = Inches(hgt)
    for j, c in enumerate(cols):
        shape.table.cell(0, j).text = str(c)
    for i, row in enumerate(shown.head(n).itertuples(index=False, name=None), start=1):
        for j, v in enumerate(row):
            shape.table.cell(i, j).text = v
    for cell in (shape.table.cell(i, j) for i in range(n + 1) for j in range(len(cols))):
        for p in cell.text_frame.paragraphs:
            for r in p.runs:
                r.font.size = Pt(size)
    if n < len(df) or len(cols) < len(df.columns):
        _textbox(slide, left, top + sum(heights) + 0.05, width, 0.3,
                 [f"First {n} of {len(df):,} rows and {len(cols)} of {len(df.columns)} "
                  "columns; the HTML report and the ZIP have them all."], 10)


def _layout(it, status, appendix: int | None = None):
    """Sizes and positions (inches) of one slide's boxes, top to bottom.

    The text boxes have fixed ceilings (title 0.95 in, takeaway 0.8 in, caveats
    0.85 in) and their type shrinks to stay under them, so the chart or table
    always gets more than half of the slide's 7.5 in.
    """
    w = WIDTH_IN - 2 * MARGIN_IN
    y = 0.3
    size, h = _fit([it.title], (32, 28, 24, 20, 18, 16, 14), w, 0.95)
    boxes = {"title": (y, h, size)}
    y += h + 0.05
    if it.takeaway or getattr(it, "verdict", ""):
        size, h = _fit([_takeaway(it)], (20, 18, 16, 14, 12, 11, 10, 9), w, 0.8, 1.25)
        boxes["takeaway"] = (y, h, size)
        y += h + 0.05
    shown, hidden = report.slide_caveats(it)
    lines = ([f"Data status: {status}"] if status else []) + [f"• {c}" for c in shown]
    if hidden:
        where = f"appendix, slide {appendix}" if appendix else "appendix"
        lines.append(f"+{len(hidden)} more caveat{'s' if len(hidden) != 1 else ''} ({where})")
    if lines:
        size, h = _fit(lines, (13, 12, 11, 10, 9, 8), w - 0.1, 0.85, 1.25)
        boxes["caveats"] = (y, h, size, lines)
        y += h + 0.08
    boxes["body"] = (y, HEIGHT_IN - 0.45 - y)
    boxes["evidence"] = (HEIGHT_IN - 0.4, 0.3, 11)
    return w, boxes


def _cover(slide, title: str, n: int, generated: str) -> None:
    """The cover, as the HTML deck's: the report's title, how many results, when and by what."""
    from ulr import __version__
    w = WIDTH_IN - 2 * MARGIN_IN
    size, h = _fit([title], (40, 36, 32, 28, 24), w, 1.9)
    _textbox(slide, MARGIN_IN, 2.2, w, h, [title], size, bold=True)
    _textbox(slide, MARGIN_IN, 2.3 + h, w, 0.5, [f"{n} result{'s' if n != 1 else ''}"], 20,
             bold=True, color=_DARK_BLUE)
    _textbox(slide, MARGIN_IN, HEIGHT_IN - 0.9, w, 0.4,
             [f"Generated {timestamp(generated)} by ulr {__version__}"], 12,
             color=(0x55, 0x55, 0x55))


def _appendix(slide, page, part: int | None) -> None:
    """An appendix slide: every caveat of the items whose slide could not show them all."""
    w = WIDTH_IN - 2 * MARGIN_IN
    head = "Appendix: every caveat" + (f" ({part})" if part else "")
    _textbox(slide, MARGIN_IN, 0.3, w, 0.7, [head], 28, bold=True)
    lines = []
    for i, it in page:
        lines.append(f"Slide {i + 1}: {it.title}")
        lines += [f"• {c}" for c in it.caveats]
    size, h = _fit(lines, (14, 13, 12, 11, 10, 9, 8), w - 0.1, HEIGHT_IN - 1.5, 1.25)
    _textbox(slide, MARGIN_IN, 1.1, w, h, lines, size)
    slide.notes_slide.notes_text_frame.text = "\n".join(lines)


def _picture_group(items, status: dict):
    """Each slide's layout (:func:`_layout`), the positions of the items with a chart, and
    their pictures as :func:`ulr.report.render.kept_images` draws them: ``(kind, keys,
    spec)``, each chart's PNG drawn at its box's size (the picture is not stretched), kept
    per item version and size."""
    pages = _appendix_pages(items)  # as in the HTML deck: cover, items, appendix
    where = {i: len(items) + 2 + p for p, page in enumerate(pages) for i, _ in page}
    layouts = [_layout(it, status.get(it.id), where.get(i + 1)) for i, it in enumerate(items)]
    charts = [(i, it) for i, it in enumerate(items) if it.figure is not None]
    sizes = [(int(layouts[i][0] * PX_PER_IN), int(layouts[i][1]["body"][1] * PX_PER_IN))
             for i, _ in charts]
    keys = [drawn.digest(drawn.code(), "pptx_png", drawn.figure_key(it), w, h, IMAGE_SCALE)
            for (_, it), (w, h) in zip(charts, sizes)]

    def spec(j):
        (_, it), (w, h) = charts[j], sizes[j]
        fig = report.slide_figure(it, width=w).update_layout(width=w, height=h)
        return fig.to_plotly_json(), {"format": "png", "scale": float(IMAGE_SCALE),
                                      "width": w, "height": h}
    return layouts, [i for i, _ in charts], ("pptx_png", keys, spec)


def _pictures(items, status: dict, browser: str, db=None) -> tuple[list, dict]:
    """Each slide's layout and, by slide, the PNG of its chart (:func:`_picture_group`):
    charts not kept are rendered in one browser session."""
    layouts, positions, group = _picture_group(items, status)
    pngs = report.render.kept_images([group], browser=browser, db=db)[0]
    return layouts, dict(zip(positions, pngs))


def draw_pictures(items, *, status: dict | None = None, browser: str | None = None,
                  db=None) -> int:
    """Draw and keep the slide pictures :func:`build_pptx` of ``items`` would use and the
    charts :func:`ulr.report.render.build_pdf` prints (the drawing after a save,
    :mod:`ulr.report.ahead`), in one browser session; returns how many charts they are."""
    from ulr.report.deck import print_pictures
    items = report.as_items(items)
    _, positions, group = _picture_group(items, status or {})
    pdf_group = print_pictures(items, status)[1]
    report.render.kept_images([group, pdf_group], browser=report.image_browser(browser),
                              db=db)
    return len(positions)


def build_pptx(items, *, title: str = "ulr report", status: dict | None = None,
               browser: str | None = None, generated: str | None = None) -> bytes:
    """The report as a .pptx: a cover, one slide per item (see the module docstring) and,
    as in the HTML deck, appendix slides with every caveat a slide could not show.

    Charts are rendered in one browser session (:func:`ulr.report.to_images`).

    Raises
    ------
    UlrError
        When python-pptx, kaleido or Chromium is missing, or a chart fails to render.
    """
    try:
        from pptx import Presentation
        from pptx.dml.color import RGBColor
        from pptx.util import Inches
    except ImportError:
        raise UlrError("PowerPoint export needs the python-pptx package (pip install "
                       "python-pptx), which is not installed.") from None
    items = report.as_items(items)
    if not isinstance(title, str) or not title.strip():
        raise UlrError("the report needs a non-empty title.")
    generated = generated or now_text()
    status = status or {}
    pages = _appendix_pages(items)  # as in the HTML deck: cover, items, appendix
    layouts, images = _pictures(items, status, report.image_browser(browser))
    prs = Presentation()
    prs.slide_width, prs.slide_height = Inches(WIDTH_IN), Inches(HEIGHT_IN)
    prs.core_properties.title = title
    blank = prs.slide_layouts[6]
    _cover(prs.slides.add_slide(blank), title, len(items), generated)
    for i, it in enumerate(items):
        w, boxes = layouts[i]
        slide = prs.slides.add_slide(blank)
        y, h, size = boxes["title"]
        _textbox(slide, MARGIN_IN, y, w, h, [it.title], size, bold=True)
        if "takeaway" in boxes:
            y, h, size = boxes["takeaway"]
            _textbox(slide, MARGIN_IN, y, w, h, [_takeaway(it)], size, bold=True,
                     color=_DARK_BLUE)
        if "caveats" in boxes:
            y, h, size, lines = boxes["caveats"]
            box = _textbox(slide, MARGIN_IN, y, w, h, lines, size)
            box.fill.solid()
            box.fill.fore_color.rgb = RGBColor(0xFF, 0xF8, 0xE1)
        y, h = boxes["body"]
        if i in images:
            slide.shapes.add_picture(io.BytesIO(images[i]), Inches(MARGIN_IN), Inches(y),
                                     Inches(w), Inches(h))
        elif it.table is not None:
            _table(slide, it.frame(), MARGIN_IN, y, w, h)
        elif it.note.strip():
            _textbox(slide, MARGIN_IN, y, w, h, it.note.splitlines() or [it.note], 16)
        y, h, size = boxes["evidence"]
        _textbox(slide, MARGIN_IN, y, w, h,
                 [f"Evidence: {report.evidence_text(it.evidence)} · dataset "
                  f"{it.origin}"], size, color=(0x55, 0x55, 0x55))
        slide.notes_slide.notes_text_frame.text = _notes(it, status.get(it.id))
    for p, page in enumerate(pages):
        _appendix(prs.slides.add_slide(blank), page, p + 1 if len(pages) > 1 else None)
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()
