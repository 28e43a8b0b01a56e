"""ulr.rankers.plots: the comparison and the sweep figures."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from ulr import rankers as R
from ulr.simulate import simulate_clicks


@pytest.fixture(scope="module")
def comparison_table():
    sim = simulate_clicks(queries=100, sessions=5000, eta=1.0, seed=0)
    return R.train_and_evaluate(sim.df, None, sim.theta).table(n_boot=200)


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


def test_sweep_figure_band_with_runs():
    df = pd.DataFrame({"eta": [0, 0, 1, 1], "run": [0, 1, 0, 1], "ranker": "naive",
                       "metric": "arp", "value": [3.0, 3.2, 3.4, 3.6]})
    fig = R.sweep_figure(df)
    band, line = fig.data
    assert band.fill == "toself" and list(line.y) == pytest.approx([3.1, 3.5])
    np.testing.assert_allclose(band.y, [3.2, 3.6, 3.4, 3.0])  # max forward, min back
