"""Plotly figures for off-policy evaluation (shared by the page and the HTML report)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ulr import theme
from ulr.ope import registry
from ulr.text import plain

LABELS = registry.LABELS  # one label per estimator, read live from the registry


def _readable_y(fig: go.Figure) -> None:
    """Keep the y-axis title clear of its tick labels (also in static exports, where
    plotly does not measure the labels): the margin grows to fit them and the title
    stands off by a fixed gap; ticks use at most 3 significant digits."""
    fig.update_yaxes(automargin=True, title_standoff=14, tickformat=".3~r")  # never 4e-5
    fig.update_layout(margin=dict(l=max(80, (fig.layout.margin.l or 0))))


def _rate(value, lower=None, upper=None, se=None) -> str:
    """A click rate as every surface reads it (:class:`ulr.quantity.Quantity`)."""
    from ulr.quantity import Quantity
    return Quantity("rate", value, lower, upper, se=se).text()


def _label(name: str) -> str:
    return LABELS.get(name, name)


def estimates_figure(table: pd.DataFrame, *, truth: float | None = None,
                     title: str = "Estimated value of the target policy",
                     logging_label: str = "logging policy") -> go.Figure:
    """Point estimates with their intervals; the logging policy's value as a dashed line,
    labelled ``logging_label`` (:attr:`ulr.ope.evaluate.OPEResult.logging_label`: it names
    the evaluated rows when they are not the whole log).

    Values are click rates: an estimate or bound outside [0, 1] (DR's reward model can
    push it below 0) is drawn clipped, and the axis never goes below 0 (docs/verdicts.md §2).
    """
    from ulr.ope.verdicts import clipped_table
    fig = go.Figure()
    table = clipped_table(table)
    t = table[(table["estimator"] != "logging") & table["value"].notna()]
    for i, r in enumerate(t.itertuples()):
        c = theme.color_for(r.estimator, i)
        fig.add_trace(go.Scatter(
            x=[_label(r.estimator)], y=[r.value], mode="markers", name=_label(r.estimator),
            marker=dict(color=c, size=11),
            error_y=dict(type="data", symmetric=False, array=[r.upper - r.value],
                         arrayminus=[r.value - r.lower], color=c, thickness=2, width=8),
            hovertemplate=f"{_label(r.estimator)}<br>"
                          f"{_rate(r.value, r.lower, r.upper, r.se)}<extra></extra>"))
    log_row = table[table["estimator"] == "logging"]
    if len(log_row):
        v = float(log_row["value"].iloc[0])
        se = log_row["se"].iloc[0] if "se" in log_row else None
        fig.add_hline(y=v, line=dict(color=theme.color_for("logging", 8), dash="dash"),
                      annotation_text=f"{logging_label} {_rate(v, se=se)}",
                      annotation_position="top left")
    if truth is not None:
        fig.add_hline(y=truth, line=dict(color=theme.color_for("truth"), width=2),
                      annotation_text=f"true value {_rate(truth)}",
                      annotation_position="bottom right")
    theme.apply(fig, title=title, x="estimator", y="expected clicks per logged row")
    _readable_y(fig)
    # click rates in %, as the headline and the verdict read them (docs/verdicts.md §2)
    fig.update_yaxes(rangemode="nonnegative", tickformat=".1%")
    theme.fix_percent_axes(fig)
    fig.update_layout(showlegend=False)
    return fig


def repeated_figure(estimates: pd.DataFrame, truth: float, *,
                    title: str = "Estimates over repeated logs") -> go.Figure:
    """Box plot of each estimator's estimates over the draws, with the true value."""
    fig = go.Figure()
    for i, (name, g) in enumerate(estimates.groupby("estimator", sort=False)):
        c = theme.color_for(name, i)
        fig.add_trace(go.Box(y=g["value"], name=_label(name), marker_color=c, line_color=c,
                             fillcolor=theme.band_color(c), boxmean="sd"))
    fig.add_hline(y=truth, line=dict(color=theme.color_for("truth"), width=2),
                  annotation_text=f"true value {plain(truth, sig=4)}",
                  annotation_position="top left")
    theme.apply(fig, title=title, x="estimator", y="estimated value (clicks per row)")
    _readable_y(fig)
    fig.update_layout(showlegend=False)
    return fig


def bias_variance_figure(table: pd.DataFrame, *,
                         title: str = "Bias against standard deviation") -> go.Figure:
    """Each estimator as a point (sd, bias) with +-2 standard errors of the bias."""
    fig = go.Figure()
    for i, r in enumerate(table.itertuples()):
        c = theme.color_for(r.estimator, i)
        fig.add_trace(go.Scatter(
            x=[r.sd], y=[r.bias], mode="markers", name=_label(r.estimator),
            marker=dict(color=c, size=12),
            error_y=dict(type="data", array=[2 * r.bias_se], color=c),
            hovertemplate=(f"{_label(r.estimator)}<br>bias %{{y:.3~r}} "
                           f"± {plain(2 * r.bias_se, sig=2)}"
                           f"<br>sd %{{x:.3~r}}<br>RMSE {plain(r.rmse, sig=3)}<extra></extra>")))
    fig.add_hline(y=0, line=dict(color=theme.color_for("truth"), width=1))
    theme.apply(fig, title=title, x="standard deviation over logs (clicks per row)",
                y="bias (clicks per row)")
    _readable_y(fig)
    fig.update_xaxes(rangemode="tozero")
    return fig


def intervals_figure(df: pd.DataFrame, truth: float, *, estimator: str, max_draws: int = 100,
                     title: str | None = None) -> go.Figure:
    """Intervals of one estimator on the first draws, sorted; misses highlighted."""
    g = df[df["estimator"] == estimator].head(max_draws).sort_values("value")
    x = np.arange(1, len(g) + 1)
    c = theme.color_for(estimator)
    miss = ~g["covers"].to_numpy()
    fig = go.Figure()
    for mask, name, color in ((~miss, "covers the truth", c), (miss, "misses", "#d62728")):
        s = g[mask]
        fig.add_trace(go.Scatter(
            x=x[mask], y=s["value"], mode="markers", name=name, marker=dict(color=color, size=5),
            error_y=dict(type="data", symmetric=False, array=s["upper"] - s["value"],
                         arrayminus=s["value"] - s["lower"], color=color, thickness=1, width=0)))
    fig.add_hline(y=truth, line=dict(color=theme.color_for("truth"), width=2))
    cov = 1 - miss.mean() if len(g) else float("nan")
    theme.apply(fig, title=title or f"{_label(estimator)} intervals over {len(g)} logs "
                                    f"(coverage {cov:.0%})",
                x="log (sorted by estimate)", y="value (clicks per row)")
    _readable_y(fig)
    return fig


def crm_curve_figure(curve: pd.DataFrame, *, truth: pd.Series | None = None,
                     logging_value: float | None = None,
                     title: str = "Policy learning (counterfactual risk minimization)"
                     ) -> go.Figure:
    """Training objective and held-out estimates of the learned policy by step."""
    fig = go.Figure()
    series = [("objective", "training objective", "#7f7f7f", "dot"),
              ("train_snips", "SNIPS on the learning rows", theme.color_for("snips"), "dash"),
              ("holdout_snips", "SNIPS on held-out rows", theme.color_for("snips"), "solid"),
              ("holdout_ips", "IPS on held-out rows", theme.color_for("ips"), "solid")]
    for col, name, color, dash in series:
        fig.add_trace(go.Scatter(x=curve["step"], y=curve[col], mode="lines", name=name,
                                 line=dict(color=color, dash=dash)))
    if truth is not None:
        fig.add_trace(go.Scatter(x=curve["step"], y=truth, mode="lines", name="true value",
                                 line=dict(color=theme.color_for("truth"), width=2)))
    if logging_value is not None:
        fig.add_hline(y=logging_value, line=dict(color="#7f7f7f", dash="dash"),
                      annotation_text="logging policy", annotation_position="bottom right")
    theme.apply(fig, title=title, x="gradient step", y="value (clicks per row)")
    _readable_y(fig)
    return fig
