"""The pieces every HTML export shares: head (CSP, CSS, plotly.js once), escaping,
the caveats box, takeaway/status/evidence/settings block, tables and charts.

The CSS and the deck's script are package files (``ulr/report/assets``), read
with :mod:`importlib.resources`.
"""

from __future__ import annotations

import functools
import html
from importlib import resources

import numpy as np
import pandas as pd
import plotly.io as pio

from ulr import __version__, text, theme
from ulr.report.figures import export_figure
from ulr.report.item import ReportItem, count_text


@functools.cache
def asset(name: str) -> str:
    """The text of the package file ``ulr/report/assets/<name>``."""
    return resources.files("ulr.report").joinpath("assets", name).read_text(encoding="utf-8")


def css(name: str) -> str:
    """A stylesheet of the assets with the app's font filled in."""
    return asset(name).replace("__FONT__", theme.FONT)


# No network: scripts/styles inline only, images from data:/blob: only (plotly's
# own "download as png" button), nothing may connect anywhere.
_CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
        "style-src 'unsafe-inline'; img-src data: blob:; font-src data:; "
        "connect-src 'none'; frame-src 'none'; form-action 'none'; base-uri 'none'")


def verdict_badge(it: ReportItem) -> str:
    """The item's verdict level as a small badge (empty without a verdict)."""
    if not it.verdict:
        return ""
    level = it.verdict["level"]
    return (f'<span class="verdict verdict-{esc(level)}" title="docs/verdicts.md">'
            f'{esc(level.capitalize())}</span> ')


def esc(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


SETTING_ITEMS = 4      # a list setting shows its first items, then how many there are
SETTING_CHARS = 120    # longer setting text is shortened with an ellipsis


def _setting_value(v, depth: int = 0) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return text.plain(v) if np.isfinite(v) else text.MISSING
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return v if len(v) <= SETTING_CHARS else v[:SETTING_CHARS - 1].rstrip() + "…"
    if isinstance(v, (list, tuple)):
        head = ", ".join(_setting_value(x, depth + 1) for x in v[:SETTING_ITEMS])
        more = f", … ({len(v)} values)" if len(v) > SETTING_ITEMS else ""
        return f"[{head}{more}]"
    if isinstance(v, dict):
        joined = ", ".join(f"{text.words(k)}: {_setting_value(x, depth + 1)}"
                           for k, x in v.items())
        return _setting_value(joined if depth == 0 else "{" + joined + "}")
    return _setting_value(str(v))


def setting_text(v) -> str:
    """A setting's value as people read it.

    Numbers to 3 significant digits (θ = 1.0484665 reads 1.05), ``None`` as
    "none", booleans as yes/no, lists shortened to their first
    ``SETTING_ITEMS`` values and their count, text longer than
    ``SETTING_CHARS`` characters ends in an ellipsis. Exports that keep every
    digit (the ZIP's index.csv) use the raw JSON instead.
    """
    return _setting_value(v)


def settings_lines(settings: dict) -> list[str]:
    """``["theta = [1, 1.05, …]", ...]``: each setting as one readable line."""
    return [f"{text.words(k)} = {setting_text(v)}" for k, v in (settings or {}).items()]


def _settings_html(settings: dict) -> str:
    if not settings:
        return '<p class="muted">No settings recorded.</p>'
    rows = "".join(f"<tr><th>{esc(text.words(k))}</th><td>{esc(_setting_value(v))}</td></tr>"
                   for k, v in settings.items())
    return f'<table class="settings"><tbody>{rows}</tbody></table>'


def evidence_text(evidence: dict) -> str:
    """"12,000 rows · 48 clicks · 300 queries" (what the result rests on); a count that
    was not recorded (``None``: no session column mapped, ...) is left out."""
    parts = [f"{count_text(v)} {text.words(k)}" for k, v in (evidence or {}).items()
             if not text.missing(v)]
    return " · ".join(parts) if parts else "not recorded"


def caveats_html(caveats, more: str = "") -> str:
    """The caveats box, word for word (escaped); ``more`` ends it (e.g. "+2 more")."""
    lis = "".join(f"<li>{esc(c)}</li>" for c in caveats)
    tail = f'<p class="more">{esc(more)}</p>' if more else ""
    return f'<div class="caveats"><b>Caveats</b><ul>{lis}</ul>{tail}</div>'


def head(title: str, stylesheet: str, *, generator: bool = False, plotly: bool = True) -> str:
    """The document head of every HTML export: CSP (no network), title, the asset
    ``stylesheet`` (e.g. ``"deck.css"``), plotly.js once (unless ``plotly`` is False: a
    deck whose charts are all pictures, printed to PDF)."""
    from plotly.offline import get_plotlyjs

    gen = f'<meta name="generator" content="ulr {esc(__version__)}">\n' if generator else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"{gen}<title>{esc(title)}</title>\n"
            f"<style>{css(stylesheet)}</style>\n"
            + (f'<script type="text/javascript">{get_plotlyjs()}</script>\n' if plotly else "")
            + "</head>\n")


def truth_html(it: ReportItem, status: str | None, *, settings: bool = True) -> str:
    """Takeaway, caveats (word for word), data status, evidence and settings of an item."""
    parts = []
    if it.takeaway:
        parts.append(f'<p class="takeaway">{verdict_badge(it)}{esc(it.takeaway)}</p>')
    if status:
        parts.append(f'<div class="stale" role="alert">{esc(status)}</div>')
    if it.caveats:
        parts.append(caveats_html(it.caveats))
    parts.append(f'<div class="evidence"><b>Evidence:</b> {esc(evidence_text(it.evidence))}'
                 "</div>")
    if settings:
        parts.append(f'<div class="settings-wrap"><b>Settings</b>'
                     f"{_settings_html(it.settings)}</div>")
    return "".join(parts)


_NAME_COLUMNS = {"metric", "estimator", "method", "model", "ranker", "system", "algorithm"}


def display_table(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` as people read it on a slide or page: numbers through the one formatter
    (one precision per column), missing cells empty, column names and ulr's own names of
    metrics, estimators, methods and models in words (``p_value`` → "p value",
    ``local_auc`` → "local auc"); the user's own values are kept as they are."""
    shown = theme.format_table(df)
    shown = shown.map(lambda v: "" if v is None or (isinstance(v, float) and not np.isfinite(v))
                      else v)
    for c in _NAME_COLUMNS & set(shown.columns):  # ulr's own short names (local_auc, ...)
        shown[c] = [text.words(v) if isinstance(v, str) else v for v in shown[c]]
    shown.columns = [text.words(c) for c in shown.columns]
    return shown


def _cell(v, numeric: bool) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    return esc(v)


def table_html(df: pd.DataFrame, max_rows: int) -> str:
    """Escaped HTML table; numeric columns right-aligned. At most ``max_rows`` rows."""
    n = len(df)
    raw = df.head(max_rows)
    numeric = [pd.api.types.is_numeric_dtype(raw[c]) and not pd.api.types.is_bool_dtype(
        raw[c]) for c in raw.columns]
    shown = display_table(raw)  # one number of decimals per column, names in words
    head = "".join(('<th class="num">' if isnum else "<th>") + f"{esc(c)}</th>"
                   for c, isnum in zip(shown.columns, numeric))
    cls = ['<td class="num">' if isnum else "<td>" for isnum in numeric]
    body = "".join(  # display only, capped at max_rows rows
        "<tr>" + "".join(f"{cls[j]}{_cell(v, numeric[j])}</td>" for j, v in enumerate(row))
        + "</tr>" for row in shown.itertuples(index=False, name=None))
    more = (f'<p class="muted">First {max_rows:,} of {n:,} rows; the ZIP export has them '
            "all.</p>" if n > max_rows else "")
    return (f'<div class="tablewrap"><table class="data"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>{more}")


_DIV = "ulr0drawn0chart0div0id"  # stands for the div id in a kept drawing


def figure_html(item: ReportItem, div_id: str, *, slide: bool = False,
                 height: str = "480px") -> str:
    """The item's chart as a ``<div>`` and its ``Plotly.newPlot`` call, drawn once per item
    version (:func:`ulr.report.drawn.memo`: the same text as drawing it afresh)."""
    from ulr.report import drawn
    safe_name = text.file_slug(item.title, 60) or "chart"  # cut between words
    key = _figure_html_key(item, safe_name, slide, height)
    return drawn.memo("figure_html", key, lambda: _figure_html(
        item, _DIV, slide=slide, height=height, safe_name=safe_name)).replace(_DIV, div_id)


def _figure_html_key(item: ReportItem, safe_name: str, slide: bool, height: str) -> str:
    from ulr.report import drawn
    return drawn.digest(drawn.code(), drawn.figure_key(item), safe_name, slide, height)


def draw_figures(items, *, slide: bool = False, height: str = "480px", db=None,
                 keep: bool = False) -> int:
    """:func:`figure_html` of every item with a chart, found with one read of the store
    (:func:`ulr.report.drawn.kept`) where the drawing after a save (:mod:`ulr.report.ahead`,
    ``keep=True``) kept them: a deck or report built in a new process draws none of them
    again. Decks and reports themselves keep nothing in the store (``keep=False``): a
    write would make every cached read of the catalog miss on the next page view.
    Returns how many charts."""
    from ulr.report import drawn
    charts = [it for it in items if it.figure is not None]
    if not charts or not drawn.active():
        return 0
    names = [text.file_slug(it.title, 60) or "chart" for it in charts]
    keys = [_figure_html_key(it, n, slide, height) for it, n in zip(charts, names)]
    kept = drawn.kept("figure_html_bytes", keys, lambda missing: [
        _figure_html(charts[j], _DIV, slide=slide, height=height,
                     safe_name=names[j]).encode("utf-8") for j in missing], db=db, keep=keep)
    for k, v in zip(keys, kept):  # where figure_html finds them
        drawn.put("figure_html", k, v.decode("utf-8"))
    return len(charts)


def _figure_html(item: ReportItem, div_id: str, *, slide: bool, height: str,
                 safe_name: str) -> str:
    fig = export_figure(item, slide=slide)
    config = {"responsive": True, "displaylogo": False,
              "toImageButtonOptions": {"format": "png", "filename": safe_name, "scale": 2}}
    if slide:  # a slide shows the chart, not plotly's toolbar (on screen or in print)
        config = {"responsive": True, "displayModeBar": False}
    return pio.to_html(fig, full_html=False, include_plotlyjs=False, include_mathjax=False,
                       div_id=div_id, config=config, default_width="100%",
                       default_height=height, validate=False)

