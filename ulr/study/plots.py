"""The study's figure: one panel per metric, every learner a dot with its interval."""

from __future__ import annotations

import plotly.graph_objects as go

from ulr.rankers.plots import comparison_figure


def study_figure(result, *, metrics=None) -> go.Figure:
    """:func:`ulr.rankers.comparison_figure` of the learners' values and intervals over runs
    and test queries (:meth:`ulr.study.StudyResult.table`), one panel per metric."""
    table = result.table().rename(columns={"learner": "ranker"})
    if metrics is not None:
        table = table[table["metric"].isin(list(metrics))]
    return comparison_figure(table, title="Learners on the held-out queries' grades "
                                          "(intervals over runs and test queries)")


def study_sweep_figure(table, *, over: str) -> go.Figure:
    """A sweep of the study (:func:`ulr.study.run.sweep_table`): the primary metric of
    every learner against the swept value (η or sessions per run), a line through the
    values and a band over their intervals (runs and test queries)."""
    import numpy as np

    from ulr import theme
    from ulr.rankers.plots import short_title, metric_title
    metric = str(table["metric"].iloc[0])
    fig = go.Figure()
    for i, (name, g) in enumerate(table.groupby("learner", sort=False)):
        g = g.sort_values(over)
        color = theme.color_for(name, i)
        x = g[over].to_numpy(dtype=float)
        fig.add_trace(go.Scatter(
            x=np.r_[x, x[::-1]], y=np.r_[g["upper"], g["lower"][::-1]], mode="lines",
            fill="toself", fillcolor=theme.band_color(color), line=dict(width=0),
            hoverinfo="skip", showlegend=False, legendgroup=name))
        fig.add_trace(go.Scatter(
            x=x, y=g["value"], mode="lines+markers", name=name, legendgroup=name,
            line=dict(color=color),
            customdata=np.c_[g["lower"], g["upper"]],
            hovertemplate=f"{name}<br>{over} %{{x:,}}<br>{short_title(metric)} %{{y:.4f}}"
                          "<br>interval [%{customdata[0]:.4f}, %{customdata[1]:.4f}]"
                          "<extra></extra>"))
    xlabel = (theme.metric_label("eta") + ", θₖ = (1/k)^η" if over == "eta"
              else "sessions per run")
    theme.apply(fig, title=f"{short_title(metric)} on the held-out queries' grades, by "
                           f"{'severity of position bias' if over == 'eta' else 'traffic'}",
                x=xlabel, y=metric_title(metric))
    if over == "sessions":
        fig.update_xaxes(type="log")
    return fig
