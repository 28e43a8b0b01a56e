"""Charts as exported: the ulr look, and the slide version of any stored figure."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io as pio

from ulr import theme
from ulr.errors import UlrError
from ulr.report.item import ReportItem



def export_figure(item, *, slide: bool = False) -> go.Figure:
    """The item's figure as exported: ulr template, distinct percent ticks.

    ``item`` is a :class:`ReportItem`, a plotly figure, its JSON or dict. With
    ``slide`` it is :func:`slide_figure`'s presentation version.
    """
    if slide:
        return slide_figure(item)
    d = figure_dict(item)
    if isinstance(item, ReportItem):  # parsed JSON already: no second round trip
        fig = go.Figure(d, skip_invalid=True)
    else:
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


def figure_dict(f) -> dict:
    """The chart of a report item, plotly figure, its JSON or dict, as a plotly dict."""
    if isinstance(f, ReportItem):
        if f.figure is None:
            raise UlrError(f"report item {f.title!r} has no chart to export.")
        return f.figure_dict()
    if isinstance(f, go.Figure):
        return f.to_plotly_json()
    if isinstance(f, str):
        return json.loads(f)
    if isinstance(f, dict):
        return f
    raise UlrError("a chart to export must be a plotly figure, its JSON, or a report item.")



def shown_figure(item):
    """:func:`export_figure` of a report item, drawn once per item version for the Report
    page (:mod:`ulr.report.drawn`). The same object for every caller: read-only
    (Streamlit's ``plotly_chart`` copies it; never update it)."""
    from ulr.report import drawn
    return drawn.memo("shown_figure", drawn.digest(drawn.code(), drawn.figure_key(item)),
                      lambda: export_figure(item))
