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
