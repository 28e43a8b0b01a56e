"""Figures of the bandit lab (shared by the page and the HTML report)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ulr import theme
from ulr.bandits.bounds import env_bounds

BOUND_STYLE = {
    "ucb1 upper bound": dict(color=theme.color_for("ucb1"), dash="dash"),
    "asymptotic lower bound (Kveton et al.)": dict(color=theme.color_for("truth"), dash="dot"),
}


def regret_figure(curves: dict, *, horizon: int | None = None, bounds: dict | None = None,
                  title: str = "Cumulative regret") -> go.Figure:
    """Cumulative regret curves with bands over runs, and optional bounds.

    Parameters
    ----------
    curves : dict
        ``{algorithm: {"t", "mean", "lower", "upper"}}`` as returned by
        :meth:`ulr.bandits.simulate.BanditRuns.curve`.
    horizon : int, optional
        Fix the x axis to ``[0, horizon]`` (live charts grow left to right).
    bounds : dict, optional
        ``{name: (t, values)}`` drawn as dashed lines (see :func:`lab_bounds`).
    """
    fig = go.Figure()
    top = 0.0
    for i, (name, c) in enumerate(curves.items()):
        color = theme.color_for(name, i)
        t = np.asarray(c["t"])
        if t.size == 0:
            continue
        fig.add_trace(go.Scatter(x=t, y=c["upper"], mode="lines", line=dict(width=0),
                                 hoverinfo="skip", showlegend=False, legendgroup=name))
        fig.add_trace(go.Scatter(x=t, y=c["lower"], mode="lines", line=dict(width=0),
                                 fill="tonexty", fillcolor=theme.band_color(color),
                                 hoverinfo="skip", showlegend=False, legendgroup=name))
        fig.add_trace(go.Scatter(x=t, y=c["mean"], mode="lines", name=name, legendgroup=name,
                                 line=dict(color=color, width=2.5),
                                 hovertemplate=f"{name}<br>step %{{x:,}}<br>regret "
                                               "%{y:,.1f}<extra></extra>"))
        top = max(top, float(np.max(c["upper"])))
    for name, (t, values) in (bounds or {}).items():
        style = BOUND_STYLE.get(name, dict(color=theme.color_for(name), dash="dash"))
        fig.add_trace(go.Scatter(x=t, y=values, mode="lines", name=name,
                                 line=dict(width=1.8, **style),
                                 hovertemplate=f"{name}<br>step %{{x:,}}<br>%{{y:,.1f}}"
                                               "<extra></extra>"))
        peak = float(np.max(values))
        # the lower bound always fits; an upper bound only when it is near the curves
        top = max(top, peak if name.startswith("lower") or peak <= 4 * top else top)
    theme.apply(fig, title=title, x="step t", y="cumulative expected regret (clicks)")
    if horizon:
        fig.update_xaxes(range=[0, horizon])
    if top > 0:   # an upper bound may run off the top: keep the curves readable
        fig.update_yaxes(range=[0, 1.08 * top])
    return fig


def lab_bounds(lab, *, points: int = 200) -> dict:
    """The bounds that apply to a :class:`~ulr.bandits.simulate.BanditLab`, over its horizon."""
    t = np.unique(np.linspace(1, lab.steps, points).round().astype(int))
    return {name: (t, v) for name, v in env_bounds(lab.env, t, algorithms=lab.algorithms).items()}


def lab_figure(lab, *, points: int = 400, title: str | None = None) -> go.Figure:
    """Live chart of a :class:`~ulr.bandits.simulate.BanditLab`: mean and 10-90% band."""
    curves = {s.algorithm: s.curve(points=points) for s in lab.sims}
    env = lab.env
    title = title or (f"Cumulative regret — {env.name} environment, L={env.n_items}, "
                      f"K={env.k}, {lab.runs} run{'s' if lab.runs > 1 else ''}")
    return regret_figure(curves, horizon=lab.steps, bounds=lab_bounds(lab), title=title)
