"""OPE figures: readable axes in exports, no point drawn for a missing estimate."""

import numpy as np
import pandas as pd

from ulr.ope import figures as F


def table():
    return pd.DataFrame({"estimator": ["ips", "balanced-ips", "logging"],
                         "value": [0.0123, np.nan, 0.01], "lower": [0.01, np.nan, 0.009],
                         "upper": [0.015, np.nan, 0.011], "se": [0.001, np.nan, 0.0005]})


def test_y_title_stands_clear_of_tick_labels():
    fig = F.estimates_figure(table())
    y = fig.layout.yaxis
    assert y.automargin is True and y.title.standoff >= 10
    assert fig.layout.margin.l >= 80  # room for the tick labels and the title in a static export
    # click rates in %, as the headline reads them (issue 50), with distinct ticks
    assert y.tickformat.endswith("%") and y.dtick is not None
    # the dashed line's label, in % too
    assert fig.layout.annotations[0].text == "logging policy 1.00%"


def test_missing_estimate_is_not_drawn():
    fig = F.estimates_figure(table())
    assert [t.name for t in fig.data] == ["IPS"]


def test_the_logging_line_names_the_evaluated_rows_when_they_are_not_the_log():
    """Issue 50: "logging policy 0.50%" beside a log whose CTR is 0.42% was the evaluated
    half's CTR, and nothing said so."""
    from ulr.ope.evaluate import OPEResult
    half = OPEResult(table=table(), diagnostics={"n": 5000, "clicks": 50}, warnings=[],
                     settings={"evaluated_rows": 5000, "log_rows": 10_000})
    assert half.logging_label == "logging policy on the 5,000 evaluated rows"
    fig = F.estimates_figure(half.table, logging_label=half.logging_label)
    assert fig.layout.annotations[0].text == "logging policy on the 5,000 evaluated rows 1.00%"
    shown = half.estimates_table()
    assert list(shown["method"])[-1] == "Logging policy on the 5,000 evaluated rows"
    whole = OPEResult(table=table(), diagnostics={"n": 10_000, "clicks": 100}, warnings=[],
                      settings={"evaluated_rows": 10_000, "log_rows": 10_000})
    assert whole.logging_label == "logging policy"
