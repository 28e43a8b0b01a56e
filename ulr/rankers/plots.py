"""Figures of the ranker comparison and of the severity sweep."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ulr import theme
from ulr.errors import UlrError


def _label(metric: str) -> str:
    """:func:`ulr.theme.metric_label`, with ``ndcg@K`` named with its own K."""
    label = theme.metric_label(metric)
    if label == metric and metric.startswith("ndcg@"):
        k = metric.split("@", 1)[1]
        label = (theme.metric_label("ndcg@k").replace("at k", f"at {k}")
                 .replace("top k", f"top {k}"))
    return label


def short_title(metric: str) -> str:
    """The first words of ``metric``'s label (before a colon or a parenthesis)."""
    return re.split(r":| \(", _label(metric), maxsplit=1)[0]


def metric_title(metric: str) -> str:
    """Panel or axis title of ``metric`` in the app's words (:func:`ulr.theme.metric_label`).

    Two lines: the name (the explanation after a colon is left to the page's
    help) and which direction is better, so neighbouring panels never overlap,
    on a slide either.
    """
    tail = _label(metric).partition(" (")[2]
    return short_title(metric) + (f"<br>({tail}" if tail else "")


def comparison_figure(table: pd.DataFrame, *, title: str = "Naive vs IPW ranker",
                      estimated: bool = False) -> go.Figure:
    """One panel per metric: naive next to IPW, a dot with its bootstrap interval.

    ``table`` is :meth:`ulr.rankers.evaluate.RankerComparison.table`. Metrics have different scales,
    so each gets its own panel, titled by :func:`metric_title`.
    """
    metric_names = list(dict.fromkeys(table["metric"]))
    cols = 3
    nrows = max(1, -(-len(metric_names) // cols))
    fig = make_subplots(rows=nrows, cols=cols,
                        subplot_titles=[metric_title(m) for m in metric_names],
                        horizontal_spacing=0.08, vertical_spacing=0.18)
    for i, ranker in enumerate(dict.fromkeys(table["ranker"])):
        color = theme.color_for(ranker, i)
        for j, m in enumerate(metric_names):
            row = table[(table["ranker"] == ranker) & (table["metric"] == m)]
            if row.empty:
                continue
            r = row.iloc[0]
            fig.add_trace(go.Bar(
                x=[ranker], y=[r["value"]], name=ranker, marker_color=color,
                legendgroup=ranker, showlegend=(j == 0),
                error_y=dict(type="data", symmetric=False, array=[r["upper"] - r["value"]],
                             arrayminus=[r["value"] - r["lower"]], color="#333"),
                hovertemplate=f"{ranker}<br>{short_title(m)} %{{y:.4f}}<br>interval "
                              f"[{r['lower']:.4f}, {r['upper']:.4f}]<extra></extra>"),
                row=j // cols + 1, col=j % cols + 1)
    suffix = " (click-based IPW estimates)" if estimated else ""
    theme.apply(fig, title=title + suffix)
    # Subplot titles sit where the theme puts the legend: move it to the title row.
    fig.update_layout(height=320 * nrows, bargap=0.35,
                      legend=dict(yref="container", y=0.99, yanchor="top", x=1.0,
                                  xanchor="right"))
    return theme.dots_for_bars(fig)  # dots + intervals on fitted axes (0.93 vs 0.95 visible)


def sweep_figure(df: pd.DataFrame, *, metric: str = "arp",
                 title: str | None = None) -> go.Figure:
    """Test ``metric`` against eta, one line per ranker: the mean over runs, and as a band the
    same Student-t interval over runs that the sweep's table gives
    (:func:`ulr.rankers.sweep.sweep_summary`: one interval per point on every surface)."""
    from ulr.rankers.sweep import sweep_summary
    sub = df[df["metric"] == metric]
    if sub.empty:
        raise UlrError(f"The sweep has no values for {metric}.")
    fig = go.Figure()
    for i, (ranker, g) in enumerate(sub.groupby("ranker", sort=False)):
        color = theme.color_for(ranker, i)
        agg = sweep_summary(g).sort_values("eta").reset_index(drop=True)
        if g["run"].nunique() > 1 and agg[["lower", "upper"]].notna().all(axis=None):
            fig.add_trace(go.Scatter(
                x=np.r_[agg["eta"], agg["eta"][::-1]],
                y=np.r_[agg["upper"], agg["lower"][::-1]],
                mode="lines", fill="toself", fillcolor=theme.band_color(color),
                line=dict(width=0),
                hoverinfo="skip", showlegend=False, legendgroup=ranker))
        fig.add_trace(go.Scatter(
            x=agg["eta"], y=agg["mean"], mode="lines+markers", name=ranker, legendgroup=ranker,
            line=dict(color=color),
            hovertemplate=f"{ranker}<br>η %{{x}}<br>{short_title(metric)} %{{y:.4f}}"
                          "<extra></extra>"))
    theme.apply(fig, title=title or f"{short_title(metric)} on held-out queries, by severity "
                                    "of position bias",
                x=theme.metric_label("eta") + ", θₖ = (1/k)^η", y=metric_title(metric))
    return fig
