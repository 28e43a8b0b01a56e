"""The long report: ONE self-contained, offline HTML file with every result."""

from __future__ import annotations

from pathlib import Path

from ulr import __version__
from ulr.errors import UlrError
from ulr.report.item import as_items, now_text
from ulr.report.parts import draw_figures, esc, figure_html, head, table_html, truth_html
from ulr.report.render import write_bytes
from ulr.quantity import timestamp

MAX_TABLE_ROWS_HTML = 1000



def build_html(items, *, title: str = "ulr report", generated: str | None = None,
               max_table_rows: int = MAX_TABLE_ROWS_HTML, status: dict | None = None) -> str:
    """One self-contained, offline HTML report.

    Parameters
    ----------
    items : list of :class:`~ulr.report.item.ReportItem` or their session-state dicts, in order.
    title : report heading (HTML-escaped).
    generated : date-time shown as the report's creation time (default: now).
    max_table_rows : rows of each table shown inline (the ZIP has them all).
    status : ``{item id: sentence}`` for items whose dataset changed or was
        deleted (:func:`ulr.report.saved.dataset_status`); shown on the item.

    Returns
    -------
    str
        The HTML document. plotly.js (``plotly.offline.get_plotlyjs()``) is
        inlined once in the head; every figure is a ``<div>`` plus one
        ``Plotly.newPlot`` call, so charts stay interactive offline. All user
        text (titles, notes, settings, table cells, dataset names) is escaped.
        A Content-Security-Policy forbids any network request.
    """
    items = as_items(items)
    if not isinstance(title, str) or not title.strip():
        raise UlrError("the report needs a non-empty title.")
    if int(max_table_rows) < 1:
        raise UlrError("max_table_rows must be at least 1.")
    draw_figures(items)  # kept with the saved reports

    generated = generated or now_text()
    toc = "".join(f'<li><a href="#item-{i}">{esc(it.title)}</a> '
                  f'<span class="muted">({esc(it.kind)})</span></li>'
                  for i, it in enumerate(items, start=1))
    sections = []
    for i, it in enumerate(items, start=1):
        parts = [f'<section class="item" id="item-{i}">',
                 f"<h2>{i}. {esc(it.title)}</h2>",
                 f'<div class="meta">Dataset <b>{esc(it.origin)}</b> · created '
                 f'{esc(timestamp(it.created) or "—")} · ulr {esc(it.version or "—")}</div>']
        if it.note.strip():
            parts.append(f'<div class="note">{esc(it.note)}</div>')
        if it.figure is not None:
            parts.append(f'<div class="chart-wrap">{figure_html(it, f"ulr-fig-{i}")}</div>')
        df = it.frame()
        if df is not None:
            parts.append(table_html(df, int(max_table_rows)))
        parts.append(truth_html(it, (status or {}).get(it.id)))
        parts.append("</section>")
        sections.append("".join(parts))
    if not items:
        sections.append('<p class="muted">This report has no items.</p>')
    body = (f'<header class="report"><h1>{esc(title)}</h1>'
            f'<div class="muted">Generated {esc(timestamp(generated))} by ulr '
            f'{esc(__version__)} · '
            f"{len(items)} item{'s' if len(items) != 1 else ''}</div></header>"
            + (f'<nav class="toc"><ol>{toc}</ol></nav>' if items else "")
            + "".join(sections)
            + '<footer>Charts are interactive (zoom, hover, legend toggles) and this file '
              "needs no network.</footer>")
    return (head(title, "report.css", generator=True)
            + f"<body><main>{body}</main></body>\n</html>\n")


def write_html(path, items, *, title: str = "ulr report", status: dict | None = None) -> Path:
    """Write :func:`build_html` to ``path`` (UTF-8, atomically) and return the path."""
    return write_bytes(path, build_html(items, title=title, status=status).encode("utf-8"))

