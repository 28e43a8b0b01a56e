"""Reports: collected results exported as one offline HTML file, a ZIP of CSVs, images.

A :class:`ReportItem` is one result (a chart and/or a table) with its title,
note, dataset, settings, creation date and software version. It round-trips
through the plain dict the pages keep in ``st.session_state["report_items"]``
(``pages/_ui.add_to_report``): the figure as plotly JSON, the table as
``DataFrame.to_json(orient="split")``.

- :func:`build_html` writes ONE self-contained HTML file: plotly.js inline
  exactly once, every chart interactive, every text HTML-escaped, no URL the
  browser would fetch (a Content-Security-Policy forbids any network load), so
  it opens with no network.
- :func:`build_zip` writes the tables as CSV, each through
  :func:`ulr.export.safe_csv_bytes` (spreadsheet formula injection).
- :func:`to_images` renders charts as PNG/PDF/SVG through kaleido driving the
  system Chromium (never a downloaded browser); :func:`static_export_problem`
  says why that is unavailable, or None.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import html
import importlib.util
import io
import json
import os
import re
import shutil
import signal
import tempfile
import threading
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from ulr import __version__, theme
from ulr.errors import UlrError, check
from ulr.export import safe_csv_bytes

MAX_TITLE = 300
MAX_NOTE = 20_000
MAX_TABLE_ROWS_HTML = 1000
IMAGE_FORMATS = ("png", "pdf", "svg")
_MIME = {"png": "image/png", "pdf": "application/pdf", "svg": "image/svg+xml"}

# Where the system browser lives: the BROWSER_PATH override (choreographer's own
# convention) first, then Debian/Ubuntu locations, then PATH.
SYSTEM_BROWSERS = ("/usr/bin/chromium", "/usr/bin/chromium-browser",
                   "/usr/bin/google-chrome-stable", "/usr/bin/google-chrome")
_BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")


# --------------------------------------------------------------------------- items


def _now() -> str:
    return _dt.datetime.now().isoformat(timespec="seconds")


@dataclass
class ReportItem:
    """One collected result.

    Parameters
    ----------
    title : non-empty heading (at most 300 characters).
    note : free text shown under the heading.
    figure : plotly figure as JSON text (``fig.to_json()``), or None.
    table : table as ``DataFrame.to_json(orient="split")``, or None.
    settings : JSON-able dict of the settings that produced the result.
    dataset : name of the dataset the result came from.
    created : ISO 8601 date-time of creation.
    version : ulr version that produced the result.
    id : stable identifier (the Report page keys its widgets on it).
    caveats : the warnings the page showed next to the result, word for word.
    evidence : what the result rests on, e.g. ``{"rows": .., "clicks": .., "queries": ..}``.
    takeaway : one line in plain words (pre-filled from the result, editable).
    verdict : the result's :class:`ulr.verdict.Verdict` as a dict (docs/verdicts.md), or
        None; its level is shown as a badge beside the takeaway.

    An item holds a chart, a table, both, or neither (a plain note, e.g. a
    report section that could not run). Raises ``ValueError`` on bad fields.
    """

    title: str
    note: str = ""
    figure: str | None = None
    table: str | None = None
    settings: dict = field(default_factory=dict)
    dataset: str = ""
    created: str = field(default_factory=_now)
    version: str = __version__
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    caveats: list = field(default_factory=list)
    evidence: dict = field(default_factory=dict)
    takeaway: str = ""
    content_hash: str = ""
    verdict: dict | None = None

    def __post_init__(self):
        if not isinstance(self.title, str) or not self.title.strip():
            raise ValueError("a report item needs a non-empty title.")
        if len(self.title) > MAX_TITLE:
            raise ValueError(f"a report item title may have at most {MAX_TITLE} characters.")
        if self.note is None:
            self.note = ""
        if not isinstance(self.note, str):
            raise ValueError("a report item note must be text.")
        if len(self.note) > MAX_NOTE:
            raise ValueError(f"a report item note may have at most {MAX_NOTE} characters.")
        if self.takeaway is None:
            self.takeaway = ""
        if not isinstance(self.takeaway, str) or len(self.takeaway) > MAX_TITLE * 2:
            raise ValueError(f"a report item takeaway must be text of at most {MAX_TITLE * 2} "
                             "characters.")
        self.caveats = [str(c) for c in (self.caveats or [])]
        if self.evidence is None:
            self.evidence = {}
        if not isinstance(self.evidence, dict):
            raise ValueError("report item evidence must be a dict.")
        for name in ("dataset", "created", "version", "id", "content_hash"):
            v = getattr(self, name)
            if v is None:
                setattr(self, name, "")
            elif not isinstance(v, str):
                raise ValueError(f"report item field {name!r} must be text.")
        if self.figure is not None:
            fig = _loads(self.figure, "figure")
            if not isinstance(fig, dict) or not isinstance(fig.get("data", []), list):
                raise ValueError("a report item figure must be plotly figure JSON "
                                 "(an object with a 'data' list).")
        if self.table is not None:
            tab = _loads(self.table, "table")
            if not (isinstance(tab, dict) and isinstance(tab.get("columns"), list)
                    and isinstance(tab.get("data"), list)):
                raise ValueError("a report item table must be DataFrame JSON in 'split' "
                                 "orientation (an object with 'columns' and 'data').")
        if self.verdict is not None:
            from ulr.verdict import Verdict
            if isinstance(self.verdict, Verdict):
                self.verdict = self.verdict.to_dict()
            if not isinstance(self.verdict, dict):
                raise ValueError("a report item verdict must be a dict.")
            try:
                self.verdict = Verdict.from_dict(self.verdict).to_dict()
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"a report item verdict is not a verdict: {exc}") from None
        if self.settings is None:
            self.settings = {}
        if not isinstance(self.settings, dict):
            raise ValueError("report item settings must be a dict.")
        try:
            json.dumps(self.settings)
        except (TypeError, ValueError):
            raise ValueError("report item settings must be JSON-able.") from None

    # -- construction and conversion

    @classmethod
    def from_result(cls, title: str, *, fig: go.Figure | None = None,
                    table: pd.DataFrame | None = None, settings: dict | None = None,
                    dataset: str = "", note: str = "", caveats=None, evidence=None,
                    takeaway: str = "", content_hash: str = "",
                    verdict=None) -> "ReportItem":
        """Item from a live figure and DataFrame (what the CLI and pages produce).

        An empty ``takeaway`` is pre-filled from ``verdict`` (a
        :class:`ulr.verdict.Verdict` or its dict), else by :func:`default_takeaway`.
        """
        if verdict is not None and not isinstance(verdict, dict):
            verdict = verdict.to_dict()
        if not takeaway and verdict:
            takeaway = verdict["takeaway"]
        return cls(title=title, note=note,
                   figure=None if fig is None else fig.to_json(),
                   table=None if table is None else table.to_json(orient="split"),
                   settings=json.loads(json.dumps(settings or {}, default=str)),
                   dataset=dataset, caveats=[str(c) for c in (caveats or [])],
                   evidence=json.loads(json.dumps(evidence or {}, default=str)),
                   takeaway=takeaway or default_takeaway(title, table, evidence),
                   content_hash=content_hash or "", verdict=verdict)

    @classmethod
    def from_dict(cls, d: dict) -> "ReportItem":
        """Item from the session-state dict; unknown keys are ignored."""
        if isinstance(d, ReportItem):
            return d
        if not isinstance(d, dict):
            raise ValueError("a report item must be a dict.")
        known = {k: d[k] for k in ("title", "note", "figure", "table", "settings", "dataset",
                                   "created", "version", "id", "caveats", "evidence",
                                   "takeaway", "content_hash", "verdict") if k in d}
        if "title" not in known:
            raise ValueError("a report item needs a title.")
        return cls(**known)

    def to_dict(self) -> dict:
        return {"title": self.title, "note": self.note, "figure": self.figure,
                "table": self.table, "settings": dict(self.settings), "dataset": self.dataset,
                "created": self.created, "version": self.version, "id": self.id,
                "caveats": list(self.caveats), "evidence": dict(self.evidence),
                "takeaway": self.takeaway, "content_hash": self.content_hash,
                "verdict": self.verdict}

    def fig(self) -> go.Figure | None:
        """The chart as a plotly figure (None if the item has none)."""
        if self.figure is None:
            return None
        return pio.from_json(self.figure, skip_invalid=True)

    def frame(self) -> pd.DataFrame | None:
        """The table; a meaningful index comes back as leading column(s)."""
        if self.table is None:
            return None
        # dtype=False: keep JSON types (text stays text, "007" stays "007").
        df = pd.read_json(io.StringIO(self.table), orient="split", dtype=False)
        idx = df.index
        default = pd.api.types.is_integer_dtype(idx) and bool(
            (idx.to_numpy() == np.arange(len(idx))).all())
        return df.reset_index(drop=default)

    @property
    def kind(self) -> str:
        if self.figure is not None and self.table is not None:
            return "chart and table"
        if self.figure is not None:
            return "chart"
        if self.table is not None:
            return "table"
        return "note"


def _loads(text, what: str):
    if not isinstance(text, str):
        raise ValueError(f"a report item {what} must be JSON text.")
    try:
        return json.loads(text)
    except ValueError:
        raise ValueError(f"a report item {what} is not valid JSON.") from None


_VALUE_COLS = ("value", "estimate", "ctr", "theta", "improvement (best on validation)")
_LABEL_COLS = ("ranker", "estimator", "method", "model", "policy", "position", "learner")


def default_takeaway(title: str, table: pd.DataFrame | None = None,
                     evidence: dict | None = None) -> str:
    """A one-line plain-words summary of a result, to pre-fill the editable takeaway.

    With a table that has a label column (ranker, estimator, method, ...) and a
    value column (value, estimate, ctr, theta, ...) it names the highest and the
    lowest row; otherwise it states what the result rests on.
    """
    ev = evidence or {}
    rests = ", ".join(f"{_fmt_count(ev[k])} {k}" for k in ("rows", "clicks", "queries",
                                                           "sessions") if ev.get(k) is not None)
    if isinstance(table, pd.DataFrame) and len(table) >= 2:
        vcol = next((c for c in _VALUE_COLS if c in table.columns
                     and pd.api.types.is_numeric_dtype(table[c])), None)
        lcol = next((c for c in _LABEL_COLS if c in table.columns), None)
        if vcol and lcol and "metric" not in table.columns and table[vcol].notna().any():
            t = table.dropna(subset=[vcol])
            ih, il = t[vcol].idxmax(), t[vcol].idxmin()
            vals = t[vcol].to_numpy(dtype=float)
            if vcol == "ctr":
                d = theme.sig_decimals(vals * 100, 2)
                fmt = lambda v: f"{theme.format_number(v * 100, d)}%"  # noqa: E731
            else:
                d = theme.sig_decimals(vals)
                fmt = lambda v: theme.format_number(v, d)  # noqa: E731
            out = (f"{theme.metric_label(vcol)} is highest for {lcol} {t[lcol][ih]} "
                   f"({fmt(t[vcol][ih])}) and lowest for {lcol} {t[lcol][il]} "
                   f"({fmt(t[vcol][il])})")
            out = out[:1].upper() + out[1:]
            return out + (f"; based on {rests}." if rests else ".")
    return f"{title}" + (f", based on {rests}." if rests else ".")


def _fmt_count(v) -> str:
    try:
        return f"{int(v):,}" if float(v).is_integer() else f"{float(v):,.3g}"
    except (TypeError, ValueError):
        return str(v)


def as_items(items) -> list[ReportItem]:
    """Validate a list of :class:`ReportItem` or session-state dicts."""
    if items is None:
        return []
    out = []
    for i, it in enumerate(items, start=1):
        try:
            out.append(ReportItem.from_dict(it))
        except ValueError as exc:
            raise UlrError(f"report item {i} is broken: {exc}") from None
    return out


# --------------------------------------------------------------------------- HTML

_CSS = """
:root { --fg: #222; --muted: #666; --line: #e3e6ea; --accent: #1f77b4; }
* { box-sizing: border-box; }
body { font-family: %(font)s; color: var(--fg); margin: 0; background: #fff;
       line-height: 1.45; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 28px 64px; }
header.report h1 { margin: 0 0 4px; font-size: 28px; }
.muted { color: var(--muted); font-size: 13px; }
nav.toc ol { padding-left: 22px; margin: 8px 0 0; }
nav.toc a { color: var(--accent); text-decoration: none; }
section.item { border-top: 1px solid var(--line); margin-top: 28px; padding-top: 18px;
               break-inside: avoid; page-break-inside: avoid; }
section.item h2 { font-size: 21px; margin: 0 0 4px; }
.meta { color: var(--muted); font-size: 13px; margin-bottom: 8px; }
.note { white-space: pre-wrap; margin: 8px 0 12px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left;
         vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f4f6f9; }
.tablewrap { overflow-x: auto; max-height: 520px; overflow-y: auto; }
details summary { cursor: pointer; color: var(--muted); font-size: 13px; margin: 6px 0; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
.takeaway { font-size: 17px; font-weight: 600; margin: 8px 0; }
.verdict { font-size: 0.7em; padding: 1px 8px; border-radius: 9px; vertical-align: middle;
  border: 1px solid currentColor; font-weight: 600; }
.verdict-reliable { color: #1b7f3b; } .verdict-directional { color: #8a6d00; }
.verdict-inconclusive { color: #555; } .verdict-invalid { color: #b00020; }
.caveats { background: #fff8e1; border-left: 4px solid #E69F00; padding: 6px 12px;
           margin: 8px 0; }
.caveats ul { margin: 4px 0; padding-left: 20px; }
.stale { background: #fdecea; border-left: 4px solid #D55E00; padding: 6px 12px; margin: 8px 0; }
.evidence, .settings-wrap { font-size: 13px; margin: 6px 0; }
table.settings { font-size: 12px; }
@media print { .tablewrap { max-height: none; overflow: visible; } main { padding: 0; } }
"""

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
    return (f'<span class="verdict verdict-{_esc(level)}" title="docs/verdicts.md">'
            f'{_esc(level.capitalize())}</span> ')


def _esc(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


SETTING_ITEMS = 4      # a list setting shows its first items, then how many there are
SETTING_CHARS = 120    # longer setting text is shortened with an ellipsis


def _setting_value(v, depth: int = 0) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return format(v, ".3g") if np.isfinite(v) else str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return v if len(v) <= SETTING_CHARS else v[:SETTING_CHARS - 1].rstrip() + "…"
    if isinstance(v, (list, tuple)):
        head = ", ".join(_setting_value(x, depth + 1) for x in v[:SETTING_ITEMS])
        more = f", … ({len(v)} values)" if len(v) > SETTING_ITEMS else ""
        return f"[{head}{more}]"
    if isinstance(v, dict):
        text = ", ".join(f"{k}: {_setting_value(x, depth + 1)}" for k, x in v.items())
        return _setting_value(text if depth == 0 else "{" + text + "}")
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
    return [f"{k} = {setting_text(v)}" for k, v in (settings or {}).items()]


def _settings_html(settings: dict) -> str:
    if not settings:
        return '<p class="muted">No settings recorded.</p>'
    rows = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(_setting_value(v))}</td></tr>"
                   for k, v in settings.items())
    return f'<table class="settings"><tbody>{rows}</tbody></table>'


def evidence_text(evidence: dict) -> str:
    """"12,000 rows · 48 clicks · 300 queries" (what the result rests on)."""
    if not evidence:
        return "not recorded"
    return " · ".join(f"{_fmt_count(v)} {k}" for k, v in evidence.items())


def _caveats_html(caveats, more: str = "") -> str:
    """The caveats box, word for word (escaped); ``more`` ends it (e.g. "+2 more")."""
    lis = "".join(f"<li>{_esc(c)}</li>" for c in caveats)
    tail = f'<p class="more">{_esc(more)}</p>' if more else ""
    return f'<div class="caveats"><b>Caveats</b><ul>{lis}</ul>{tail}</div>'


def _head(title: str, css: str, *, generator: bool = False) -> str:
    """The document head of every HTML export: CSP (no network), title, CSS, plotly.js once."""
    from plotly.offline import get_plotlyjs

    gen = f'<meta name="generator" content="ulr {_esc(__version__)}">\n' if generator else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"{gen}<title>{_esc(title)}</title>\n"
            f"<style>{css % {'font': theme.FONT}}</style>\n"
            f'<script type="text/javascript">{get_plotlyjs()}</script>\n'
            "</head>\n")


def _truth_html(it: ReportItem, status: str | None, *, settings: bool = True) -> str:
    """Takeaway, caveats (word for word), data status, evidence and settings of an item."""
    parts = []
    if it.takeaway:
        parts.append(f'<p class="takeaway">{verdict_badge(it)}{_esc(it.takeaway)}</p>')
    if status:
        parts.append(f'<div class="stale" role="alert">{_esc(status)}</div>')
    if it.caveats:
        parts.append(_caveats_html(it.caveats))
    parts.append(f'<div class="evidence"><b>Evidence:</b> {_esc(evidence_text(it.evidence))}'
                 "</div>")
    if settings:
        parts.append(f'<div class="settings-wrap"><b>Settings</b>'
                     f"{_settings_html(it.settings)}</div>")
    return "".join(parts)


def _cell(v, numeric: bool) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    return _esc(v)


def _table_html(df: pd.DataFrame, max_rows: int) -> str:
    """Escaped HTML table; numeric columns right-aligned. At most ``max_rows`` rows."""
    n = len(df)
    raw = df.head(max_rows)
    numeric = [pd.api.types.is_numeric_dtype(raw[c]) and not pd.api.types.is_bool_dtype(
        raw[c]) for c in raw.columns]
    shown = theme.format_table(raw)  # one number of decimals per column
    head = "".join(('<th class="num">' if isnum else "<th>") + f"{_esc(c)}</th>"
                   for c, isnum in zip(shown.columns, numeric))
    cls = ['<td class="num">' if isnum else "<td>" for isnum in numeric]
    body = "".join(  # display only, capped at max_rows rows
        "<tr>" + "".join(f"{cls[j]}{_cell(v, numeric[j])}</td>" for j, v in enumerate(row))
        + "</tr>" for row in shown.itertuples(index=False, name=None))
    more = (f'<p class="muted">First {max_rows:,} of {n:,} rows; the ZIP export has them '
            "all.</p>" if n > max_rows else "")
    return (f'<div class="tablewrap"><table class="data"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>{more}")


def export_figure(item, *, slide: bool = False) -> go.Figure:
    """The item's figure as exported: ulr template, distinct percent ticks.

    ``item`` is a :class:`ReportItem`, a plotly figure, its JSON or dict. With
    ``slide`` it is :func:`slide_figure`'s presentation version.
    """
    if slide:
        return slide_figure(item)
    d = _figure_dict(item)
    fig = go.Figure(pio.from_json(json.dumps(d, default=str), skip_invalid=True))
    if "template" not in (d.get("layout") or {}):
        fig.update_layout(template="ulr")  # same look as the app
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)  # axis titles never overlap the tick labels
    theme.fix_percent_axes(fig)
    return fig


# The chart area of a slide, in the deck's design pixels (a slide is 720 px high).
SLIDE_CHART = (1180, 400)


def _wrap(text: str, chars: int, lines: int = 3) -> str:
    """``text`` broken with ``<br>`` at spaces into lines of at most ``chars`` characters."""
    out = []
    for part in str(text).split("<br>"):
        line = ""
        for word in part.split():
            if line and len(line) + 1 + len(word) > chars:
                out.append(line)
                line = word
            else:
                line = f"{line} {word}".strip()
        out.append(line)
    return "<br>".join(out[:lines] if len(out) <= lines else out[:lines - 1]
                       + [" ".join(out[lines - 1:])])


def _subplots(fig: go.Figure) -> list[tuple]:
    """``[(x axis name, y axis name), ...]`` of the figure's panels."""
    lay = fig.layout.to_plotly_json()
    out = []
    for name in sorted((k for k in lay if k.startswith("xaxis")), key=lambda k: int(k[5:] or 1)):
        anchor = (lay[name].get("anchor") or "y")
        y = "yaxis" + anchor[1:]
        if y in lay or y == "yaxis":
            out.append((name, y))
    return out


def _titles_to_axes(fig: go.Figure, width: int, font: int) -> None:
    """Subplot titles become the x-axis titles of their panels, wrapped to the panel.

    Above a panel a subplot title runs into its neighbours', the chart title and
    the legend; under it, it has the panel's width to itself. With more than one
    row the rows move apart to make room for the tick labels and these titles.
    """
    panels = _subplots(fig)
    if len(panels) < 2:
        return
    lay = fig.layout
    keep, moved = [], 0
    for a in lay.annotations:
        hit = None
        if (a.xref, a.yref, a.showarrow) == ("paper", "paper", False) and a.yanchor == "bottom":
            for xn, yn in panels:
                xd, yd = lay[xn].domain or (0, 1), lay[yn].domain or (0, 1)
                if abs((xd[0] + xd[1]) / 2 - (a.x or 0)) < 1e-3 and abs(yd[1] - (a.y or 0)) < 1e-3:
                    hit = xn
        if hit is None:
            keep.append(a)
            continue
        ax = lay[hit]
        xd = ax.domain or (0, 1)
        chars = max(8, int(width * (xd[1] - xd[0]) / (font * 0.58)))
        own = ax.title.text
        text = str(a.text).replace("<br>", " ")
        ax.title.text = _wrap(text + (f" ({own})" if own else ""), chars)
        moved += 1
    if not moved:
        return
    lay.annotations = keep
    tops = sorted({round((lay[yn].domain or (0, 1))[1], 6) for _, yn in panels}, reverse=True)
    rows = len(tops)
    if rows > 1:
        lines = max(str(lay[xn].title.text or "").count("<br>") + 1 for xn, _ in panels)
        gap_px = font * (1.3 * lines + 1.8) + 16
        gap = min(0.45, gap_px / max(SLIDE_CHART[1] - 120, 100))
        h = (1 - gap * (rows - 1)) / rows
        for xn, yn in panels:
            r = tops.index(round((lay[yn].domain or (0, 1))[1], 6))
            top = 1 - r * (h + gap)
            lay[yn].domain = [max(0.0, top - h), top]


def _legend_outside(fig: go.Figure, font: int) -> None:
    """The legend to the right of the plot, top-aligned: clear of the title and axes."""
    shown = [t for t in fig.data if t.showlegend is not False and t.name]
    if fig.layout.showlegend is False or (len(shown) < 2 and fig.layout.showlegend is not True):
        return
    fig.update_layout(legend=dict(orientation="v", x=1.02, xanchor="left", y=1,
                                  yanchor="top", xref="paper", yref="paper",
                                  font=dict(size=font - 2), title_text=None))


def slide_figure(figure, *, font: int = theme.SLIDE_FONT, width: int | None = None
                 ) -> go.Figure:
    """The presentation version of any stored figure, for a slide or a deck image.

    Fonts at slide size (:func:`ulr.theme.slide_layout`), the chart title wrapped
    to the chart's width and kept clear of the plot, subplot titles moved under
    their panels as axis titles (:func:`_titles_to_axes`), the legend to the right
    of the plot where it meets no title, and no fixed size: the figure fills the
    box it is drawn in. The deck draws it with no toolbar.

    Parameters
    ----------
    figure : ReportItem, plotly figure, its JSON or dict.
    font : base font size in pixels at the deck's design size (720 px high).
    width : the chart's width in pixels (default the deck's chart area).
    """
    width = int(width or SLIDE_CHART[0])
    fig = export_figure(figure)
    fig.update_layout(width=None, height=None, autosize=True)
    _titles_to_axes(fig, width, font)
    theme.slide_layout(fig, font=font)
    title = fig.layout.title.text
    if title:
        fig.update_layout(title=dict(
            text=_wrap(title, max(20, int(width * 0.8 / (font * 1.1 * 0.55))), lines=2),
            yref="container", y=1, yanchor="top", x=0, xanchor="left", xref="container",
            pad=dict(t=6, l=4, b=10), automargin=True))
    _legend_outside(fig, font)
    return fig


def _figure_html(item: ReportItem, div_id: str, *, slide: bool = False,
                 height: str = "480px") -> str:
    fig = export_figure(item, slide=slide)
    safe_name = re.sub(r"[^A-Za-z0-9_-]+", "_", item.title)[:60] or "chart"
    config = {"responsive": True, "displaylogo": False,
              "toImageButtonOptions": {"format": "png", "filename": safe_name, "scale": 2}}
    if slide:  # a slide shows the chart, not plotly's toolbar (on screen or in print)
        config = {"responsive": True, "displayModeBar": False}
    return pio.to_html(fig, full_html=False, include_plotlyjs=False, include_mathjax=False,
                       div_id=div_id, config=config, default_width="100%",
                       default_height=height, validate=False)


def build_html(items, *, title: str = "ulr report", generated: str | None = None,
               max_table_rows: int = MAX_TABLE_ROWS_HTML, status: dict | None = None) -> str:
    """One self-contained, offline HTML report.

    Parameters
    ----------
    items : list of :class:`ReportItem` or their session-state dicts, in order.
    title : report heading (HTML-escaped).
    generated : date-time shown as the report's creation time (default: now).
    max_table_rows : rows of each table shown inline (the ZIP has them all).
    status : ``{item id: sentence}`` for items whose dataset changed or was
        deleted (:func:`ulr.reports.dataset_status`); shown on the item.

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

    generated = generated or _now()
    toc = "".join(f'<li><a href="#item-{i}">{_esc(it.title)}</a> '
                  f'<span class="muted">({_esc(it.kind)})</span></li>'
                  for i, it in enumerate(items, start=1))
    sections = []
    for i, it in enumerate(items, start=1):
        parts = [f'<section class="item" id="item-{i}">',
                 f"<h2>{i}. {_esc(it.title)}</h2>",
                 f'<div class="meta">Dataset <b>{_esc(it.dataset or "—")}</b> · created '
                 f'{_esc(it.created or "—")} · ulr {_esc(it.version or "—")}</div>']
        if it.note.strip():
            parts.append(f'<div class="note">{_esc(it.note)}</div>')
        if it.figure is not None:
            parts.append(f'<div class="chart-wrap">{_figure_html(it, f"ulr-fig-{i}")}</div>')
        df = it.frame()
        if df is not None:
            parts.append(_table_html(df, int(max_table_rows)))
        parts.append(_truth_html(it, (status or {}).get(it.id)))
        parts.append("</section>")
        sections.append("".join(parts))
    if not items:
        sections.append('<p class="muted">This report has no items.</p>')
    body = (f'<header class="report"><h1>{_esc(title)}</h1>'
            f'<div class="muted">Generated {_esc(generated)} by ulr {_esc(__version__)} · '
            f"{len(items)} item{'s' if len(items) != 1 else ''}</div></header>"
            + (f'<nav class="toc"><ol>{toc}</ol></nav>' if items else "")
            + "".join(sections)
            + '<footer>Charts are interactive (zoom, hover, legend toggles) and this file '
              "needs no network.</footer>")
    return (_head(title, _CSS, generator=True)
            + f"<body><main>{body}</main></body>\n</html>\n")


# --------------------------------------------------------------------------- ZIP


def _slug(text: str, n: int = 40) -> str:
    s = re.sub(r"[^A-Za-z0-9]+", "-", text.lower()).strip("-")
    return s[:n].strip("-") or "table"


def build_zip(items, *, readme: bool = True) -> bytes:
    """ZIP of every item's table as CSV, plus ``index.csv`` describing the items.

    Every CSV (tables and index) goes through :func:`ulr.export.safe_csv_bytes`:
    text cells starting with ``=``, ``+``, ``-`` or ``@`` get a leading
    apostrophe; numbers (negative ones included) stay numbers.
    File names are ``NN-<slug of the title>.csv`` in report order.
    """
    items = as_items(items)
    buf = io.BytesIO()
    index_rows = []
    stamp = _dt.datetime.now().timetuple()[:6]
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        def put(name, data):
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)

        for i, it in enumerate(items, start=1):
            df = it.frame()
            fname = f"{i:02d}-{_slug(it.title)}.csv" if df is not None else ""
            if df is not None:
                put(fname, safe_csv_bytes(df))
            index_rows.append({"item": i, "title": it.title, "file": fname, "kind": it.kind,
                               "dataset": it.dataset, "created": it.created,
                               "version": it.version, "note": it.note,
                               "takeaway": it.takeaway,
                               "verdict": (it.verdict or {}).get("level", ""),
                               "caveats": "\n".join(it.caveats),
                               "evidence": json.dumps(it.evidence, ensure_ascii=False),
                               "settings": json.dumps(it.settings, ensure_ascii=False),
                               "content_hash": it.content_hash})
        cols = ["item", "title", "file", "kind", "dataset", "created", "version", "note",
                "takeaway", "verdict", "caveats", "evidence", "settings", "content_hash"]
        put("index.csv", safe_csv_bytes(pd.DataFrame(index_rows, columns=cols)))
        if readme:
            put("README.txt", "Tables of a ulr report, one CSV per report item (index.csv "
                "lists them).\nText cells that start with =, +, - or @ carry a leading "
                "apostrophe so that spreadsheet programs do not run them as formulas.\n")
    return buf.getvalue()


# --------------------------------------------------------------------------- images


def find_browser() -> str | None:
    """Path of an installed Chromium/Chrome, or None. Never downloads one.

    ``BROWSER_PATH`` (the variable kaleido's choreographer honours) wins when it
    names an executable file; then the usual system paths; then ``PATH``.
    """
    cands = []
    env = os.environ.get("BROWSER_PATH")
    if env:
        cands.append(env)
    cands += list(SYSTEM_BROWSERS)
    cands += [p for p in (shutil.which(n) for n in _BROWSER_NAMES) if p]
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def static_export_problem() -> str | None:
    """Why static images cannot be made here (one sentence), or None if they can."""
    if importlib.util.find_spec("kaleido") is None:
        return ("static image export needs the kaleido package (pip install kaleido), "
                "which is not installed.")
    if find_browser() is None:
        return ("static image export needs Chromium (on Debian: apt-get install chromium), "
                "which is not installed; set BROWSER_PATH to use another Chrome.")
    return None


def _figure_dict(f) -> dict:
    if isinstance(f, ReportItem):
        if f.figure is None:
            raise UlrError(f"report item {f.title!r} has no chart to export.")
        return json.loads(f.figure)
    if isinstance(f, go.Figure):
        return f.to_plotly_json()
    if isinstance(f, str):
        return json.loads(f)
    if isinstance(f, dict):
        return f
    raise UlrError("a chart to export must be a plotly figure, its JSON, or a report item.")


# ------------------------------------------------------------ export folders
# Every browser an export starts (Chromium for the PDF, kaleido's Chromium for images)
# keeps its profile and files in a fresh temp folder named EXPORT_PREFIX..., with an
# owner file naming the server process. A process killed mid-export cannot clean up;
# the next export removes folders whose owner is gone, with any browser still using them.
EXPORT_PREFIX = "ulr_export_"
_OWNER = "owner.pid"
_LEGACY_PREFIX = "ulr_pdf_"  # folders of earlier versions (no owner file): removed when old
_LEGACY_AGE = 3600.0


def _start_time(pid: int) -> str:
    """The process's start time (clock ticks since boot) as text; "" when unknown.

    Together with the pid it names a process: a pid reused later has another start time.
    """
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _owner_alive(folder: Path) -> bool:
    try:
        pid_text, _, started = (folder / _OWNER).read_text().strip().partition(" ")
        pid = int(pid_text)
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return not started or not os.path.isdir("/proc") or _start_time(pid) == started


def _processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, process group, command line) of every process we can read."""
    out = {}
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        out[int(entry.name)] = (int(fields[1]), int(fields[2]), cmd)
    return out


def _kill_browsers(folder: Path) -> int:
    """Kill every process whose command line names ``folder`` (a browser's
    ``--user-data-dir`` or output there), with its descendants and, for a group
    leader (a browser started in its own session), its whole group. Returns the count."""
    procs = _processes()
    me = os.getpid()
    needle = str(folder) + os.sep
    roots = {p for p, (_, _, cmd) in procs.items() if needle in cmd and p != me}
    victims = set(roots)
    victims |= {p for p, (_, pgid, _) in procs.items() if pgid in roots}
    grew = True
    while grew:
        more = {p for p, (ppid, _, _) in procs.items() if ppid in victims} - victims
        victims |= more
        grew = bool(more)
    victims.discard(me)
    for pid in victims:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return len(victims)


def clean_orphans(root: str | os.PathLike | None = None) -> int:
    """Remove export folders (and kill their browsers) whose owner process is gone.

    ``root`` defaults to the temp directory. Folders of live processes, this one
    included, are left alone. Returns the number of folders removed.
    """
    root = Path(root or tempfile.gettempdir())
    removed = 0
    try:
        entries = list(root.iterdir())
    except OSError:
        return 0
    for folder in entries:
        name = folder.name
        try:
            if name.startswith(EXPORT_PREFIX):
                if _owner_alive(folder):
                    continue
            elif name.startswith(_LEGACY_PREFIX):
                if time.time() - folder.stat().st_mtime < _LEGACY_AGE:
                    continue
            else:
                continue
            if not folder.is_dir() or folder.is_symlink():
                continue
        except OSError:
            continue
        _kill_browsers(folder)
        shutil.rmtree(folder, ignore_errors=True)
        removed += not folder.exists()
    return removed


@contextlib.contextmanager
def export_folder():
    """A fresh temp folder for one export's browser, removed afterwards with any
    browser still using it (timeout, failure); orphans of killed exports go first."""
    clean_orphans()
    folder = Path(tempfile.mkdtemp(prefix=EXPORT_PREFIX))
    try:
        (folder / _OWNER).write_text(f"{os.getpid()} {_start_time(os.getpid())}")
        yield folder
    finally:
        _kill_browsers(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _run_async(coro_fn):
    """Run ``coro_fn()`` to completion, also when called inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_fn())
    box = {}

    def target():
        try:
            box["v"] = asyncio.run(coro_fn())
        except BaseException as exc:  # re-raised in the caller's thread
            box["e"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join()
    if "e" in box:
        raise box["e"]
    return box["v"]


def to_images(figures, *, format: str = "png", width: int | None = None,
              height: int | None = None, scale: float = 2.0, browser: str | None = None,
              timeout: float = 60.0) -> list[bytes]:
    """Render charts as static images through kaleido and the system Chromium.

    One browser session renders all ``figures`` (plotly figures, their JSON or
    dicts, or :class:`ReportItem`), so many images cost one browser start.
    kaleido is pointed at ``browser`` (default :func:`find_browser`) with its
    ``path`` option; MathJax is off so the page loads nothing from the web.

    Raises
    ------
    UlrError
        When kaleido or Chromium is missing, or the browser fails to render.
    """
    if format not in IMAGE_FORMATS:
        raise UlrError(f"image format must be one of {', '.join(IMAGE_FORMATS)}, not "
                       f"{format!r}.")
    if not (0 < float(scale) <= 10):
        raise UlrError("image scale must lie in (0, 10].")
    for name, v in (("width", width), ("height", height)):
        if v is not None and not (10 <= int(v) <= 10_000):
            raise UlrError(f"image {name} must lie between 10 and 10000 pixels.")
    if browser is None:
        problem = static_export_problem()
        if problem:
            raise UlrError(problem)
        browser = find_browser()
    elif importlib.util.find_spec("kaleido") is None:
        raise UlrError(static_export_problem())
    if not (os.path.isfile(browser) and os.access(browser, os.X_OK)):
        raise UlrError(f"there is no executable browser at {browser}.")
    path = browser
    dicts = [_figure_dict(f) for f in figures]
    if not dicts:
        return []
    opts = []
    for d in dicts:
        lay = d.get("layout", {}) or {}
        opts.append({"format": format, "scale": float(scale),
                     "width": int(width or lay.get("width") or 900),
                     "height": int(height or lay.get("height") or 500)})

    import kaleido

    def render_in(folder: Path):
        # kaleido's page and its browser profile both live in our export folder.
        index = folder / "index.html"
        index.write_text(kaleido.PageGenerator(mathjax=False).generate_index(),
                         encoding="utf-8")

        async def render():
            out = []
            async with kaleido.Kaleido(n=1, timeout=timeout, page_generator=str(index),
                                       path=path, tmp_dir=str(folder)) as k:
                for d, o in zip(dicts, opts):
                    out.append(await k.calc_fig(d, opts=o))
            return out
        return render

    try:
        with export_folder() as folder:
            return _run_async(render_in(folder))
    except UlrError:
        raise
    except Exception as exc:  # browser missing/crashed/timed out
        msg = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise UlrError(f"Chromium at {path} could not render the chart: {msg}") from None


def to_image(figure, *, format: str = "png", **kw) -> bytes:
    """One chart as PNG/PDF/SVG bytes (see :func:`to_images`)."""
    return to_images([figure], format=format, **kw)[0]


def image_mime(format: str) -> str:
    return _MIME[format]


def write_bytes(path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (a temporary file, then a rename)."""
    p = Path(path)
    if p.is_dir():
        raise UlrError(f"{p} is a directory, not a file name.")
    if not p.parent.exists():
        raise UlrError(f"the folder {p.parent} does not exist.")
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, p)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UlrError(f"cannot write {p}: {exc.strerror or exc}.") from None
    return p


def write_html(path, items, *, title: str = "ulr report", status: dict | None = None) -> Path:
    """Write :func:`build_html` to ``path`` (UTF-8, atomically) and return the path."""
    return write_bytes(path, build_html(items, title=title, status=status).encode("utf-8"))


# --------------------------------------------------------------------------- slide deck

# Every slide is laid out at a design height of 720 px (its width follows the
# screen's shape) and zoomed to the window, so what fits at 1280x720 fits at any
# size. The budget, top to bottom: title (2 lines, then smaller type), takeaway
# (2 lines), caveats (at most 100 px), the chart (at least 360 px: half the
# slide), the evidence line. Print: one slide per A4 landscape page.
SLIDE_CAVEAT_CHARS = 240   # two caveats share a slide only when they are this short together
SLIDE_CAVEAT_MAX = 420     # a first caveat longer than this goes to the appendix too
SLIDE_TABLE_ROWS = 12
APPENDIX_CHARS = 1400      # caveat text per appendix slide

_DECK_CSS = """
* { box-sizing: border-box; }
:root { --k: 1; --w: 1280px; }
html, body { margin: 0; height: 100%%; overflow: hidden; background: #fff; color: #1a1a1a;
             font-family: %(font)s; }
.deck { position: relative; width: 100vw; height: 100vh; overflow: hidden; }
.slide { position: absolute; left: 0; top: 0; width: var(--w); height: 720px;
         zoom: var(--k); visibility: hidden; display: flex; flex-direction: column;
         padding: 20px 44px 12px; overflow: hidden; background: #fff; }
.slide.active { visibility: visible; }
.slide > * { flex: none; min-width: 0; }
.slide h1 { font-size: 36px; line-height: 1.15; max-height: 84px; margin: 0 0 6px;
            overflow: hidden; }
.slide.cover { justify-content: center; }
.slide.cover h1 { font-size: 56px; max-height: 200px; }
.slide.cover p { font-size: 24px; margin: 8px 0; }
.takeaway { font-size: 22px; line-height: 1.3; max-height: 58px; font-weight: 600;
            margin: 0 0 6px; color: #0b3d66; overflow: hidden; }
.verdict { display: inline-block; font-size: 0.8em; padding: 0 10px; margin-right: 8px;
           border-radius: 12px; background: #0b3d66; color: #fff; }
.verdict-reliable { background: #1b7f3b; } .verdict-directional { background: #8a6d00; }
.verdict-inconclusive { background: #555; } .verdict-invalid { background: #b00020; }
.box { max-height: 100px; overflow: hidden; margin: 0 0 6px; font-size: 17px;
       line-height: 1.3; }
.caveats { background: #fff8e1; border-left: 6px solid #E69F00; padding: 4px 14px; }
.caveats ul { margin: 0; padding-left: 22px; } .caveats b { font-size: 0.9em; }
.caveats p.more { margin: 0; font-style: italic; color: #6b4e00; }
.stale { background: #fdecea; border-left: 6px solid #D55E00; padding: 4px 14px;
         margin-bottom: 4px; }
.chart { flex: 1 1 auto; min-height: 360px; position: relative; }
.chart > div, .chart .plotly-graph-div { height: 100%% !important; }
.tablewrap { flex: 1 1 auto; min-height: 0; overflow: hidden; font-size: 18px; }
table { border-collapse: collapse; } th, td { border: 1px solid #ddd; padding: 3px 10px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
p.muted { color: #666; font-size: 14px; margin: 4px 0; }
.note { flex: 1 1 auto; min-height: 0; overflow: hidden; font-size: 22px; white-space: pre-wrap; }
.evidence { font-size: 14px; line-height: 1.35; max-height: 38px; color: #555;
            margin: 6px 200px 0 0; overflow: hidden; }
.appendix-body { flex: 1 1 auto; min-height: 0; overflow: hidden; font-size: 18px;
                 line-height: 1.3; }
.appendix-body h2 { font-size: 1.1em; margin: 8px 0 2px; }
.appendix-body ul { margin: 0; padding-left: 22px; }
aside.notes { display: none; }
nav.controls { position: fixed; bottom: 10px; right: 20px; display: flex; gap: 10px;
               align-items: center; font-size: calc(18px * var(--k)); z-index: 10; }
nav.controls button { font-size: calc(20px * var(--k)); padding: 4px 16px; border-radius: 6px;
                      border: 1px solid #999; background: #f4f6f9; cursor: pointer; }
@page { size: A4 landscape; margin: 0; }
@media print {
  html, body { height: auto; overflow: visible; }
  nav.controls { display: none; }
  .deck { width: auto; height: auto; overflow: visible; }
  .slide, .slide.active { position: relative; visibility: visible; width: 1018px;
                          height: 719px; zoom: 1.1024; break-after: page;
                          page-break-after: always; }
  .slide:last-child { break-after: auto; page-break-after: auto; }
  .evidence { margin-right: 0; }
}
"""

_DECK_JS = """
(function () {
  var slides = Array.prototype.slice.call(document.querySelectorAll('.slide'));
  var counter = document.getElementById('counter');
  var cur = 0;
  function room(el) {  // the height a box offers its content, in layout pixels
    var cs = getComputedStyle(el);
    var h = cs.maxHeight === 'none' ? el.clientHeight : parseFloat(cs.maxHeight);
    return h - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
  }
  function need(el) {  // the height its content takes, in layout pixels
    var r = document.createRange();
    r.selectNodeContents(el);
    var zoom = el.getBoundingClientRect().height / (el.offsetHeight || 1) || 1;
    return r.getBoundingClientRect().height / zoom;
  }
  function fit(el, min) {  // smaller type until the text fits, with a tenth to spare:
    el.style.fontSize = '';  // print lays text out a little wider than the screen
    var size = parseFloat(getComputedStyle(el).fontSize);
    while ((need(el) > 0.9 * room(el) || el.scrollWidth > el.clientWidth + 1) && size > min) {
      size = Math.max(min, size - 1);
      el.style.fontSize = size + 'px';
    }
  }
  function trimTable(wrap) {  // a table keeps the rows that fit and says how many
    var rows = wrap.querySelectorAll('tbody tr'), n = rows.length, shown = n;
    rows.forEach(function (r) { r.style.display = ''; });
    while (wrap.scrollHeight > wrap.clientHeight + 1 && shown > 1) {
      rows[--shown].style.display = 'none';
    }
    var note = wrap.parentNode.querySelector('p.rows');
    var total = note ? parseInt(note.dataset.total, 10) : n;
    if (note) { note.textContent = shown < total
      ? 'First ' + shown + ' of ' + total + ' rows; the report has them all.' : ''; }
  }
  function layout() {
    var print = window.matchMedia('print').matches;
    if (document.body.hasAttribute('data-paper')) {  // laid out as printed, whatever the window
      document.documentElement.style.setProperty('--k', '1.1024');
      document.documentElement.style.setProperty('--w', '1018px');
    } else if (!print) {
      var w = window.innerWidth, h = window.innerHeight;
      var k = Math.min(h / 720, w / 960);
      document.documentElement.style.setProperty('--k', String(k));
      document.documentElement.style.setProperty('--w', Math.max(960, w / k) + 'px');
    }
    slides.forEach(function (s) {
      s.querySelectorAll('h1').forEach(function (e) { fit(e, 16); });
      s.querySelectorAll('.takeaway').forEach(function (e) { fit(e, 9); });
      s.querySelectorAll('.box, .note, .appendix-body').forEach(function (e) { fit(e, 11); });
      s.querySelectorAll('.evidence').forEach(function (e) { fit(e, 10); });
      s.querySelectorAll('.tablewrap').forEach(function (e) { fit(e, 12); trimTable(e); });
    });
    var charts = window.Plotly ? document.querySelectorAll('.js-plotly-plot') : [];
    return Promise.all(Array.prototype.map.call(charts, function (g) {
      return Plotly.Plots.resize(g);
    }));  // resolves when every chart is redrawn at its new size
  }
  function show(i) {
    cur = Math.max(0, Math.min(slides.length - 1, i));
    slides.forEach(function (s, j) { s.classList.toggle('active', j === cur); });
    counter.textContent = (cur + 1) + ' / ' + slides.length;
    document.getElementById('prev').disabled = cur === 0;
    document.getElementById('next').disabled = cur === slides.length - 1;
    document.body.setAttribute('data-slide', String(cur + 1));
    try { history.replaceState(null, '', '#' + (cur + 1)); } catch (e) {}
  }
  window.ulrShow = show;
  window.ulrLayout = layout;
  document.getElementById('prev').onclick = function () { show(cur - 1); };
  document.getElementById('next').onclick = function () { show(cur + 1); };
  document.addEventListener('keydown', function (e) {
    if (['ArrowRight', 'PageDown', ' '].indexOf(e.key) >= 0) { show(cur + 1); e.preventDefault(); }
    else if (['ArrowLeft', 'PageUp'].indexOf(e.key) >= 0) { show(cur - 1); e.preventDefault(); }
    else if (e.key === 'Home') { show(0); } else if (e.key === 'End') { show(slides.length - 1); }
  });
  window.addEventListener('resize', layout);
  window.addEventListener('beforeprint', layout);
  window.addEventListener('afterprint', layout);
  var pm = window.matchMedia('print');
  if (pm.addEventListener) { pm.addEventListener('change', layout); }
  if (document.body.hasAttribute('data-embedded')) {
    try {  // inside the app: arrow keys work without clicking into the frame first
      var host = window.parent.document;
      if (host.__ulrDeckKeys) { host.removeEventListener('keydown', host.__ulrDeckKeys); }
      host.__ulrDeckKeys = function (e) {
        var t = e.target && e.target.tagName;
        if (t === 'INPUT' || t === 'TEXTAREA') { return; }
        if (e.key === 'ArrowRight' || e.key === 'PageDown') { show(cur + 1); e.preventDefault(); }
        else if (e.key === 'ArrowLeft' || e.key === 'PageUp') { show(cur - 1); e.preventDefault(); }
      };
      host.addEventListener('keydown', host.__ulrDeckKeys);
    } catch (e) {}
  }
  layout();
  var start = parseInt((location.hash || '#1').slice(1), 10);
  show(isNaN(start) ? 0 : start - 1);
  document.body.setAttribute('data-ready', '1');
  window.focus();
})();
"""


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
    parts = [f'<section class="slide" id="slide-{i}"><h1>{_esc(it.title)}</h1>']
    if it.takeaway or it.verdict:
        parts.append(f'<p class="takeaway">{verdict_badge(it)}{_esc(it.takeaway)}</p>')
    shown, hidden = slide_caveats(it)
    if status or it.caveats:
        box = [f'<div class="stale" role="alert">{_esc(status)}</div>'] if status else []
        if it.caveats:
            box.append(_caveats_html(shown, _more_text(len(hidden), appendix)))
        parts.append(f'<div class="box">{"".join(box)}</div>')
    if it.figure is not None:
        chart = _figure_html(it, f"ulr-slide-{i}", slide=True, height="100%")
        parts.append(f'<div class="chart">{chart}</div>')
    elif it.table is not None:
        df = it.frame()
        parts.append(_table_html(df.head(max_table_rows), max_table_rows))
        parts.append(f'<p class="muted rows" data-total="{len(df)}"></p>')
    elif it.note.strip():
        parts.append(f'<div class="note">{_esc(it.note)}</div>')
    parts.append(f'<div class="evidence">Evidence: {_esc(evidence_text(it.evidence))}'
                 f' · dataset {_esc(it.dataset or "—")}</div>')
    if hidden:
        lis = "".join(f"<li>{_esc(c)}</li>" for c in it.caveats)
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
    for the slide (:func:`slide_figure`, no toolbar), at least half the slide's
    height, or a table or note, and the evidence line. Settings are left to the
    long report. ArrowLeft/ArrowRight (also PageUp/PageDown, Home, End) and the
    buttons move between slides; ``#N`` in the address opens slide N. Printing
    (or :func:`build_pdf`) puts one slide per A4 landscape page. As in
    :func:`build_html`, plotly.js is inline once and a Content-Security-Policy
    forbids every network request. ``embedded`` (the app's Present page) also
    listens to the arrow keys of the page around the frame; ``paper`` lays the
    slides out at their A4 landscape print size whatever the window (for
    :func:`build_pdf`, so that text and charts are fitted to the page they print on).
    """
    items = as_items(items)
    if not isinstance(title, str) or not title.strip():
        raise UlrError("the report needs a non-empty title.")
    generated = generated or _now()
    slides = [f'<section class="slide cover"><h1>{_esc(title)}</h1>'
              f'<p class="takeaway">{len(items)} result{"s" if len(items) != 1 else ""}</p>'
              f'<p class="evidence">Generated {_esc(generated)} by ulr {_esc(__version__)}</p>'
              "</section>"]
    pages = _appendix_pages(items)
    first_appendix = len(items) + 2
    where = {i: first_appendix + p for p, page in enumerate(pages) for i, _ in page}
    for i, it in enumerate(items, start=1):
        slides.append(_slide_html(i, it, (status or {}).get(it.id), where.get(i),
                                  int(max_table_rows)))
    for p, page in enumerate(pages):
        body = "".join(f"<h2>Slide {i + 1}: {_esc(it.title)}</h2><ul>"
                       + "".join(f"<li>{_esc(c)}</li>" for c in it.caveats) + "</ul>"
                       for i, it in page)
        slides.append(f'<section class="slide appendix" id="appendix-{p + 1}">'
                      f"<h1>Appendix: every caveat{f' ({p + 1})' if len(pages) > 1 else ''}"
                      f'</h1><div class="appendix-body">{body}</div></section>')
    nav = ('<nav class="controls"><button id="prev" aria-label="Previous slide">&#8592;</button>'
           '<span id="counter"></span>'
           '<button id="next" aria-label="Next slide">&#8594;</button></nav>')
    return (_head(title, _DECK_CSS)
            + f'<body{" data-embedded" if embedded else ""}{" data-paper" if paper else ""}>'
              f'<div class="deck">'
              f'{"".join(slides)}</div>{nav}<script>{_DECK_JS}</script></body>\n</html>\n')


def html_to_pdf(html_text: str, *, browser: str | None = None, timeout: float = 120.0,
                landscape: bool = True, should_stop=None) -> bytes:
    """Print an HTML document to PDF with the system Chromium (headless, offline).

    The document is written to a temporary file and printed with
    ``--print-to-pdf``; the window is A4 landscape sized so charts are laid out
    at print width. Raises :class:`UlrError` when no browser is installed or it fails.
    Chromium runs in its own session inside an :func:`export_folder`: a timeout,
    a failure or ``should_stop()`` (asked every 0.2 s; True raises
    :class:`ulr.errors.Cancelled`) kills all its processes and removes the
    folder, and folders left by a killed server are removed by the next export.
    """
    import subprocess

    browser = browser or find_browser()
    if browser is None:
        raise UlrError("PDF export needs Chromium (on Debian: apt-get install chromium), "
                       "which is not installed; set BROWSER_PATH to use another Chrome.")
    with export_folder() as tmp:
        src, out = Path(tmp) / "doc.html", Path(tmp) / "doc.pdf"
        src.write_text(html_text, encoding="utf-8")
        size = "1123,794" if landscape else "794,1123"
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-extensions", "--disable-background-networking",
               f"--user-data-dir={tmp}/profile", f"--window-size={size}",
               "--no-pdf-header-footer", "--run-all-compositor-stages-before-draw",
               "--virtual-time-budget=15000", f"--print-to-pdf={out}", src.as_uri()]
        log = Path(tmp) / "chromium.log"  # a file, not a pipe: nothing can block on it
        with open(log, "wb") as err_file:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err_file,
                                    start_new_session=True)  # its own group: killed as a whole
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    check(should_stop)
                    if time.monotonic() > deadline:
                        raise UlrError(f"Chromium did not finish the PDF within {timeout:.0f} "
                                       "s.") from None
        finally:
            # The whole group: renderers may outlive the browser. A group id is not
            # reused while any member lives, so this reaches only our processes.
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if not out.exists() or out.stat().st_size == 0:
            msg = " ".join(log.read_text(errors="replace").split())[-300:]
            raise UlrError(f"Chromium at {browser} could not print the PDF: {msg or 'no output'}")
        return out.read_bytes()


def build_pdf(items, *, title: str = "ulr report", status: dict | None = None,
              should_stop=None) -> bytes:
    """The slide deck as PDF, one slide per A4 landscape page (:func:`html_to_pdf`)."""
    return html_to_pdf(build_deck(items, title=title, status=status, paper=True),
                       should_stop=should_stop)
