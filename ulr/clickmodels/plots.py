"""The User models page's figure: examination by rank per model, beside the PBM estimate."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ulr import theme
from ulr.clickmodels import LABELS


def examination_figure(comparison, pbm_theta=None, *, truth=None,
                       title: str = "Examination by rank (relative to rank 1)") -> go.Figure:
    """Each model's average ``P(E_r = 1)`` over the training sessions, divided by rank 1's
    (the PBM and UBM fix examination only up to a scale), beside ulr's PBM estimate
    (:mod:`ulr.propensity`, EM) and, for a simulated log, the true examination."""
    fig = go.Figure()
    for i, s in enumerate(comparison.scores):
        e = np.asarray(s.examination, dtype=float)
        rel = e / e[0] if e[0] > 0 else e
        r = np.arange(1, len(e) + 1)
        best = s.name == comparison.best
        fig.add_trace(go.Scatter(
            x=r, y=rel, mode="lines+markers", name=LABELS[s.name] + (" (best)" if best else ""),
            line=dict(color=theme.color_for(s.name, i), width=3 if best else 1.5),
            hovertemplate=f"{LABELS[s.name]}<br>rank %{{x}}<br>%{{y:.3f}}<extra></extra>"))
    if pbm_theta is not None:
        t = np.asarray(pbm_theta, dtype=float)
        fig.add_trace(go.Scatter(
            x=np.arange(1, len(t) + 1), y=t, mode="markers", name="PBM estimate (Position bias)",
            marker=dict(symbol="x", size=10, color="#444"),
            hovertemplate="Position bias page (em)<br>rank %{x}<br>%{y:.3f}<extra></extra>"))
    if truth is not None:
        t = np.asarray(truth, dtype=float)
        fig.add_trace(go.Scatter(x=np.arange(1, len(t) + 1), y=t / t[0], mode="lines",
                                 name="true", line=dict(dash="dash", color="#888")))
    theme.apply(fig, title=title, x="rank", y="examination relative to rank 1")
    return fig


def frequency_figure(comparison, *, title: str = "Held-out perplexity by how often the pair "
                                                  "was seen in training") -> go.Figure:
    """Per model, the held-out perplexity of each bucket of the pair's training sessions
    (unseen, 1, 2-9, 10+): where rarely seen pairs cost a model, and where a prior helps.
    Lower is better; 1 is a perfect prediction."""
    from ulr.clickmodels.evaluate import FREQUENCY_BUCKETS
    fig = go.Figure()
    for i, s in enumerate(comparison.scores):
        labels, values, counts = [], [], []
        for label, *_ in FREQUENCY_BUCKETS:
            b = s.perplexity_by_frequency.get(label) or {}
            if b.get("impressions"):
                labels.append(label)
                values.append(b["value"])
                counts.append(b["impressions"])
        fig.add_trace(go.Bar(
            x=labels, y=values, name=LABELS[s.name], customdata=counts,
            marker_color=theme.color_for(s.name, i),
            hovertemplate=(f"{LABELS[s.name]}<br>pair seen in %{{x}} training sessions<br>"
                           "perplexity %{y:.4f}<br>%{customdata:,} held-out impressions"
                           "<extra></extra>")))
    theme.apply(fig, title=title, x="training sessions of the (query, document) pair",
                y="perplexity (lower is better)")
    fig.update_layout(barmode="group")
    return fig
