"""One visual language for the app and every export.

``TEMPLATE`` is a plotly template registered as ``"ulr"``; ``color_for(name)``
gives each method, learner and algorithm the same colour on every page.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

FONT = "Inter, 'Segoe UI', Helvetica, Arial, sans-serif"

# Fixed colours for names the product knows; anything else cycles PALETTE.
PALETTE = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
    "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
]
COLORS = {
    # truth and baselines
    "truth": "#111111",
    "true theta": "#111111",
    # propensity methods
    "randomization": "#1f77b4",
    "em": "#d62728",
    "regression-em": "#2ca02c",
    "dla": "#9467bd",
    "intervention-harvesting": "#ff7f0e",
    # rankers
    "naive": "#7f7f7f",
    "ipw": "#1f77b4",
    "ipw (true theta)": "#17becf",
    "ipw (estimated theta)": "#1f77b4",
    # bandits
    "ucb1": "#8c564b",
    "ts": "#e377c2",
    "cascade-ucb1": "#d62728",
    "cascade-klucb": "#1f77b4",
    "cascade-ts": "#2ca02c",
    "cascade-linucb": "#ff7f0e",
    "cascade-lints": "#9467bd",
    # off-policy estimators and recommenders
    "ips": "#d62728",
    "clipped-ips": "#ff7f0e",
    "snips": "#1f77b4",
    "dr": "#2ca02c",
    "naive-mf": "#7f7f7f",
    "propensity-mf": "#1f77b4",
    "cause": "#2ca02c",
}


def color_for(name: str, index: int = 0) -> str:
    """Colour of a named series; unknown names get ``PALETTE[index]``."""
    return COLORS.get(str(name).lower(), PALETTE[index % len(PALETTE)])


def band_color(hex_color: str, alpha: float = 0.18) -> str:
    """Translucent version of ``hex_color`` for confidence bands."""
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


TEMPLATE = go.layout.Template(
    layout=dict(
        font=dict(family=FONT, size=14, color="#222"),
        title=dict(font=dict(size=18), x=0.0, xanchor="left", y=0.98, yanchor="top"),
        colorway=PALETTE,
        paper_bgcolor="white",
        plot_bgcolor="white",
        xaxis=dict(showgrid=True, gridcolor="#e6e6e6", zeroline=False,
                   linecolor="#888", ticks="outside", title=dict(standoff=8)),
        yaxis=dict(showgrid=True, gridcolor="#e6e6e6", zeroline=False,
                   linecolor="#888", ticks="outside", title=dict(standoff=8)),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
        margin=dict(l=60, r=20, t=100, b=50),
        hoverlabel=dict(font=dict(family=FONT)),
    )
)
pio.templates["ulr"] = TEMPLATE


def apply(fig: go.Figure, *, title: str | None = None, x: str | None = None,
          y: str | None = None) -> go.Figure:
    """Apply the ulr template and axis titles (with units) to ``fig``."""
    fig.update_layout(template="ulr")
    if title is not None:
        fig.update_layout(title=title)
    if x is not None:
        fig.update_xaxes(title_text=x)
    if y is not None:
        fig.update_yaxes(title_text=y)
    return fig
