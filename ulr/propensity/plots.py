"""Figures and tables of position-bias estimates (shared by the page and the report)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ulr import theme


def results_table(results, truth: np.ndarray | None = None) -> pd.DataFrame:
    """Long table: one row per (method, position) with theta, interval and truth.

    ``truth`` is the absolute true theta (it is shown relative to position 1).
    """
    frames = [r.to_frame() for r in results]
    if not frames:
        return pd.DataFrame(columns=["method", "position", "theta", "lower", "upper"])
    df = pd.concat(frames, ignore_index=True)
    if truth is not None and len(truth) and truth[0] > 0:
        rel = np.asarray(truth, dtype=float) / truth[0]
        pos = df["position"].to_numpy()
        df["true_theta"] = np.where(pos <= len(rel), rel[np.minimum(pos, len(rel)) - 1], np.nan)
        df["error"] = df["theta"] - df["true_theta"]
    return df


def theta_figure(results, truth: np.ndarray | None = None, *,
                 title: str = "Examination by position (relative to position 1)") -> go.Figure:
    """theta per position per method, with bootstrap intervals and the true theta."""
    fig = go.Figure()
    top = 1.05
    n = len(results)
    for i, r in enumerate(results):
        pos = np.arange(1, r.positions + 1)
        x = pos + (i - (n - 1) / 2) * min(0.08, 0.3 / max(n, 1))  # dodge overlapping bars
        color = theme.color_for(r.method, i)
        has_ci = r.lower is not None
        if has_ci:
            finite_up = np.where(np.isfinite(r.upper), r.upper, np.nan)
            if np.isfinite(finite_up).any():
                top = max(top, float(np.nanmax(finite_up)))
        if np.isfinite(r.theta).any():
            top = max(top, float(np.nanmax(r.theta)))
        lo = r.lower if has_ci else np.full(r.positions, np.nan)
        up = r.upper if has_ci else np.full(r.positions, np.nan)
        custom = np.column_stack([pos, lo, np.where(np.isfinite(up), up, np.nan)])
        trace = dict(x=x, y=r.theta, mode="lines+markers", name=r.method,
                     line=dict(color=color), marker=dict(size=8), customdata=custom,
                     hovertemplate=(f"{r.method}<br>position %{{customdata[0]}}"
                                    "<br>theta %{y:.3f}"
                                    + ("<br>interval %{customdata[1]:.3f} – "
                                       "%{customdata[2]:.3f}" if has_ci else "")
                                    + "<extra></extra>"))
        if has_ci:
            cap = 10.0  # an unbounded interval runs off the top of the chart
            plus = np.where(np.isfinite(up), up - r.theta, cap)
            minus = np.where(np.isfinite(lo), r.theta - lo, 0.0)
            trace["error_y"] = dict(type="data", symmetric=False,
                                    array=np.nan_to_num(plus, nan=0.0),
                                    arrayminus=np.nan_to_num(minus, nan=0.0),
                                    color=color, thickness=1.5, width=4)
        fig.add_trace(go.Scatter(**trace))
    if truth is not None and len(truth) and truth[0] > 0:
        k = max((r.positions for r in results), default=len(truth))
        rel = np.asarray(truth, dtype=float)[:k] / truth[0]
        fig.add_trace(go.Scatter(
            x=np.arange(1, len(rel) + 1), y=rel, mode="lines+markers", name="true theta",
            line=dict(color=theme.color_for("true theta"), dash="dash", width=2),
            marker=dict(symbol="x", size=9),
            hovertemplate="true theta<br>position %{x}<br>%{y:.3f}<extra></extra>"))
    theme.apply(fig, title=title, x="position (1 = top)", y="theta_k / theta_1")
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(range=[0, min(top * 1.08, 3.0)])
    return fig


def convergence_figure(results, *, title: str = "Convergence: log-likelihood per iteration"
                       ) -> go.Figure | None:
    """Log-likelihood per iteration of the iterative methods (None if there are none)."""
    fig = go.Figure()
    for i, r in enumerate(results):
        if not r.loglik:
            continue
        ll = np.asarray(r.loglik)
        fig.add_trace(go.Scatter(
            x=np.arange(1, len(ll) + 1), y=ll, mode="lines+markers", name=r.method,
            line=dict(color=theme.color_for(r.method, i)),
            hovertemplate=f"{r.method}<br>iteration %{{x}}<br>log-likelihood %{{y:,.1f}}"
                          "<extra></extra>"))
    if not fig.data:
        return None
    theme.apply(fig, title=title, x="iteration", y="log-likelihood (nats)")
    return fig
