"""Figures for the Data page (shared by the app and the HTML report)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from ulr import theme


def ctr_by_position_figure(df: pd.DataFrame, *, title: str = "Click-through rate by position"
                           ) -> go.Figure:
    """CTR per position with its 95% Wilson interval (``store.ctr_by_position``)."""
    color = theme.color_for("ctr", 0)
    fig = go.Figure(go.Scatter(
        x=df["position"], y=df["ctr"], mode="lines+markers", name="CTR",
        line=dict(color=color),
        error_y=dict(type="data", symmetric=False, array=df["upper"] - df["ctr"],
                     arrayminus=df["ctr"] - df["lower"], color=color),
        customdata=df[["impressions", "clicks"]].to_numpy(),
        hovertemplate="position %{x}<br>CTR %{y:.2%}<br>%{customdata[1]} clicks / "
                      "%{customdata[0]} impressions<extra></extra>"))
    theme.apply(fig, title=title, x="position (1 = top)", y="click-through rate")
    hi = float(pd.concat([df["upper"], df["ctr"]]).max()) if len(df) else 0.01
    theme.percent_axis(fig, 0.0, hi)  # distinct ticks from 0.1% to 50% CTR
    fig.update_xaxes(dtick=1)
    return fig
