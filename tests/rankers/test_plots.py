"""ulr.rankers.plots: the comparison and the sweep figures."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from ulr import rankers as R
from ulr import theme
from ulr.simulate import simulate_clicks


@pytest.fixture(scope="module")
def comparison_table():
    sim = simulate_clicks(queries=100, sessions=5000, eta=1.0, seed=0)
    return R.train_and_evaluate(sim.df, None, sim.theta).table(n_bootstrap=200)


def test_comparison_figure_draws_every_value_with_its_interval(comparison_table):
    table = comparison_table
    fig = R.comparison_figure(table)
    assert isinstance(fig, go.Figure) and len(fig.data) == 12
    assert {t.name for t in fig.data} == {"naive", "ipw"}
    for tr in fig.data:  # one dot per (ranker, metric), in table order per ranker
        rows = table[table["ranker"] == tr.name]
        assert len(tr.y) == 1 and tr.y[0] in set(rows["value"])
        r = rows[rows["value"] == tr.y[0]].iloc[0]
        assert tr.error_y.array[0] == pytest.approx(r["upper"] - r["value"])
        assert tr.error_y.arrayminus[0] == pytest.approx(r["value"] - r["lower"])
    # panels are titled in the app's words (ulr.theme), one per metric, with the
    # direction that is better
    titles = [a.text for a in fig.layout.annotations]
    assert titles[0] == "Average rank of relevant results<br>(lower is better)"
    for t, m in zip(titles, R.METRICS, strict=True):
        name, better = t.split("<br>")
        assert theme.metric_label(m).startswith(name) and name != m
        assert better == ("(lower is better)" if m in R.LOWER_IS_BETTER
                          else "(higher is better)")


def test_comparison_figure_names_a_cut_off_other_than_10():
    table = pd.DataFrame({"ranker": "naive", "metric": ["ndcg@5"], "value": [0.5],
                          "lower": [0.4], "upper": [0.6]})
    title = R.comparison_figure(table).layout.annotations[0].text
    assert title == "nDCG at 5<br>(higher is better)"


def test_sweep_figure_band_with_runs():
    df = pd.DataFrame({"eta": [0, 0, 1, 1], "run": [0, 1, 0, 1], "ranker": "naive",
                       "metric": "arp", "value": [3.0, 3.2, 3.4, 3.6]})
    fig = R.sweep_figure(df)
    band, line = fig.data
    assert band.fill == "toself" and list(line.y) == pytest.approx([3.1, 3.5])
    assert band.mode == "lines"  # a band, without stray markers at its corners
    # the band is the table's Student-t interval over runs (issue 50), upper forward,
    # lower back: mean ± t(0.975, 1) · sd / sqrt(2), sd = 0.1414 at both etas
    half = 12.706204736 * np.std([3.0, 3.2], ddof=1) / np.sqrt(2)
    np.testing.assert_allclose(band.y, [3.1 + half, 3.5 + half, 3.5 - half, 3.1 - half])
    assert fig.layout.yaxis.title.text == "Average rank of relevant results<br>(lower is better)"
    assert fig.layout.title.text.startswith("Average rank of relevant results on held-out")
