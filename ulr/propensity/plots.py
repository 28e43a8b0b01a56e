"""Figures and tables of position-bias estimates (shared by the page and the report)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ulr.propensity.precision import (  # noqa: F401  (read here too)
    THIN_RELATIVE_HALF_WIDTH, click_count_interval, precision)

if TYPE_CHECKING:  # plotly is imported by the figures only: the tables (the audit's
    import plotly.graph_objects as go  # position-bias answer, the CLI) do not pay for it


def _plotting():
    """plotly's graph objects and the theme, imported by the first figure drawn."""
    import plotly.graph_objects as go

    from ulr import theme
    return go, theme


def with_precision(result, clicks, impressions):
    """``result``'s interval (bootstrap, else the click-count approximation) and
    which positions rest on too little evidence (:func:`ulr.propensity.precision.precision`).

    Returns a frame: position, theta, lower, upper, interval ("bootstrap",
    "Fisher information" or "click counts"), relative_half_width, thin.
    """
    p = precision(result, clicks, impressions)
    return pd.DataFrame({"position": np.arange(1, result.positions + 1), "theta": p["theta"],
                         "lower": p["lower"], "upper": p["upper"], "interval": p["interval"],
                         "relative_half_width": p["relative_half_width"], "thin": p["thin"],
                         "clicks": p["clicks"].astype(int),
                         "impressions": p["impressions"].astype(int)})


def results_table(results, truth: np.ndarray | None = None, *, clicks=None,
                  impressions=None) -> pd.DataFrame:
    """Long table: one row per (method, position) with theta, interval and truth.

    ``truth`` is the absolute true theta (it is shown relative to position 1).
    With ``clicks`` and ``impressions`` per position, every row gets an
    interval (bootstrap, else from click counts) and a ``thin`` flag.
    """
    if clicks is not None:
        frames = [with_precision(r, clicks, impressions).assign(method=r.method)
                  for r in results]
    else:
        frames = [r.to_frame() for r in results]
    if not frames:
        return pd.DataFrame(columns=["method", "position", "theta", "lower", "upper"])
    df = pd.concat(frames, ignore_index=True)
    df = df[["method"] + [c for c in df.columns if c != "method"]]
    if truth is not None and len(truth) and truth[0] > 0:
        rel = np.asarray(truth, dtype=float) / truth[0]
        pos = df["position"].to_numpy()
        df["true_theta"] = np.where(pos <= len(rel), rel[np.minimum(pos, len(rel)) - 1], np.nan)
        df["error"] = df["theta"] - df["true_theta"]
    return df


def thin_note(table: pd.DataFrame, *, clicks: int) -> str | None:
    """The sentence on the thin estimates of :func:`results_table` (positions below 1 whose
    interval is wider than ±``THIN_RELATIVE_HALF_WIDTH`` of them), naming their positions,
    or None when none is; ``clicks``: the log's clicks, from the result's evidence. The
    page, the audit and the report's caveat all say it in these words."""
    below = table[table["position"] > 1]
    thin = below[below["thin"]]
    if not len(thin):
        return None
    at = sorted({int(k) for k in thin["position"]})
    where = ("position " if len(at) == 1 else "positions ") + ", ".join(map(str, at))
    return (f"Thin evidence: {len(thin)} of {len(below)} estimates ({where}) rest on too few "
            f"clicks ({clicks:,} in all): their 95% interval is wider than "
            f"±{THIN_RELATIVE_HALF_WIDTH:.0%} of the estimate, so they are drawn hollow with "
            "their full interval. Treat them as unknown, not as flat.")


def theta_figure(results, truth: np.ndarray | None = None, *, table: pd.DataFrame | None = None,
                 title: str = "Examination by position (relative to position 1)") -> go.Figure:
    """theta per position per method, with intervals and the true theta.

    With ``table`` (from :func:`results_table` with click counts) every point
    gets its interval, and thin points are drawn hollow and grey-edged.
    """
    go, theme = _plotting()
    if table is not None and "thin" in table:
        return _theta_figure_with_precision(results, table, truth, title)
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
    return _finish(fig, results, truth, top=top, title=title)


def convergence_figure(results, *, title: str = "Convergence: log-likelihood per iteration"
                       ) -> go.Figure | None:
    """Log-likelihood per iteration of the iterative methods (None if there are none)."""
    go, theme = _plotting()
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
    n_iter = max(len(r.loglik) for r in results)
    fig.update_xaxes(tickformat="d", dtick=max(1, int(np.ceil(n_iter / 10))), tick0=1)
    fig.update_yaxes(tickformat=",.1f", exponentformat="none")
    return fig


def _theta_figure_with_precision(results, table, truth, title) -> go.Figure:
    go, theme = _plotting()
    fig = go.Figure()
    top = 1.05
    n = len(results)
    for i, r in enumerate(results):
        t = table[table["method"] == r.method]
        pos = t["position"].to_numpy()
        x = pos + (i - (n - 1) / 2) * min(0.08, 0.3 / max(n, 1))
        color = theme.color_for(r.method, i)
        theta = t["theta"].to_numpy(dtype=float)
        lo, up = t["lower"].to_numpy(dtype=float), t["upper"].to_numpy(dtype=float)
        thin = t["thin"].to_numpy(dtype=bool)
        cap = 3.0
        shown_up = np.where(np.isfinite(up), up, cap)
        top = max(top, float(np.nanmax(np.r_[theta[np.isfinite(theta)], 1.0])),
                  float(np.nanmax(np.minimum(shown_up, cap))))
        custom = np.column_stack([pos, lo, up, t["clicks"].to_numpy(),
                                  np.where(thin, "thin evidence", "")])
        fig.add_trace(go.Scatter(
            x=x, y=theta, mode="lines+markers", name=r.method,
            line=dict(color=color, dash="dot" if thin[1:].all() else "solid"),
            marker=dict(size=9, color=np.where(thin, "rgba(0,0,0,0)", color),
                        line=dict(color=np.where(thin, "#9e9e9e", color), width=2)),
            customdata=custom,
            error_y=dict(type="data", symmetric=False,
                         array=np.nan_to_num(shown_up - theta, nan=0.0),
                         arrayminus=np.nan_to_num(theta - lo, nan=0.0),
                         color=color, thickness=1.5, width=4),
            hovertemplate=(f"{r.method}<br>position %{{customdata[0]}}<br>theta %{{y:.3f}}"
                           "<br>interval %{customdata[1]:.3f} – %{customdata[2]:.3f}"
                           "<br>%{customdata[3]} clicks %{customdata[4]}<extra></extra>")))
    return _finish(fig, results, truth, top=top, title=title)


def _finish(fig, results, truth, *, top: float, title: str):
    """The true theta (simulated logs) as a dashed line, the axes and the theme."""
    go, theme = _plotting()
    if truth is not None and len(truth) and truth[0] > 0:
        k = max((r.positions for r in results), default=len(truth))
        rel = np.asarray(truth, dtype=float)[:k] / truth[0]
        fig.add_trace(go.Scatter(
            x=np.arange(1, len(rel) + 1), y=rel, mode="lines+markers", name="true theta",
            line=dict(color=theme.color_for("true theta"), dash="dash", width=2),
            marker=dict(symbol="x", size=9),
            hovertemplate="true theta<br>position %{x}<br>%{y:.3f}<extra></extra>"))
    theme.apply(fig, title=title, x="position (1 = top)",
                y="θₖ / θ₁ (examination relative to position 1)")
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(range=[0, min(top * 1.08, 3.0)])
    return fig


def trust_table(result) -> pd.DataFrame | None:
    """``trust-em``'s click probabilities by position: ``alpha`` (what a relevant result adds)
    and ``beta`` (the click probability of an irrelevant one), with their bootstrap intervals
    where replicates were drawn (no interval columns without); None for the other methods."""
    ex = result.extras
    if "alpha" not in ex or "beta" not in ex:
        return None
    k = result.positions
    out = {"position": np.arange(1, k + 1)}
    for name in ("alpha", "beta", "beta_relative"):
        out[name] = np.asarray(ex[name], dtype=float)
        for side in ("lower", "upper"):  # intervals only where replicates were drawn
            key = f"{name}_{side}"
            if key in ex:
                out[key] = np.asarray(ex[key], dtype=float)
    return pd.DataFrame(out)


def segments_table(seg) -> pd.DataFrame:
    """One row per (segment, position) of a :class:`ulr.propensity.segments.SegmentResult`:
    theta and its interval, the difference from the other segments with its simultaneous
    interval, and the Holm-adjusted p-value."""
    rows = []
    for v in seg.values:
        for k in range(seg.positions):
            rows.append({"segment": v, "position": k + 1, "theta": seg.theta[v][k],
                         "lower": seg.lower[v][k], "upper": seg.upper[v][k],
                         "difference": seg.delta[v][k],
                         "difference_lower": seg.delta_lower[v][k],
                         "difference_upper": seg.delta_upper[v][k],
                         "p_holm": seg.p_holm[v][k]})
    return pd.DataFrame(rows)


def segment_figure(seg, *, title: str | None = None) -> go.Figure:
    """theta per position with one curve per segment and its interval."""
    go, theme = _plotting()
    fig = go.Figure()
    n = len(seg.values)
    top = 1.05
    for i, v in enumerate(seg.values):
        pos = np.arange(1, seg.positions + 1)
        x = pos + (i - (n - 1) / 2) * min(0.08, 0.3 / max(n, 1))
        th, lo, up = seg.theta[v], seg.lower[v], seg.upper[v]
        color = theme.color_for(f"segment {v}", i)
        cap = 3.0
        shown_up = np.where(np.isfinite(up), up, cap)
        if np.isfinite(th).any():
            top = max(top, float(np.nanmax(th)), float(np.nanmax(np.minimum(shown_up, cap))))
        fig.add_trace(go.Scatter(
            x=x, y=th, mode="lines+markers", name=f"{seg.column} = {v}",
            line=dict(color=color), marker=dict(size=8),
            customdata=np.column_stack([pos, lo, up]),
            error_y=dict(type="data", symmetric=False,
                         array=np.nan_to_num(shown_up - th, nan=0.0),
                         arrayminus=np.nan_to_num(th - lo, nan=0.0),
                         color=color, thickness=1.5, width=4),
            hovertemplate=(f"{seg.column} = {v}<br>position %{{customdata[0]}}<br>theta "
                           "%{y:.3f}<br>interval %{customdata[1]:.3f} – %{customdata[2]:.3f}"
                           "<extra></extra>")))
    theme.apply(fig, title=title or f"Examination by position and {seg.column} ({seg.method})",
                x="position (1 = top)", y="θₖ / θ₁ (examination relative to position 1)")
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(range=[0, min(top * 1.08, 3.0)])
    return fig
