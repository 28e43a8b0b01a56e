"""Figures and table of the position-bias page."""

import numpy as np

from ulr.propensity import plots
from ulr.propensity.result import PropensityResult


def results():
    em = PropensityResult(method="em", positions=3, theta=[1, 0.5, 0.3], lower=[1, 0.4, 0.2],
                          upper=[1, 0.6, np.inf], loglik=[-10.0, -9.0, -8.9])
    rnd = PropensityResult(method="randomization", positions=3, theta=[1, 0.55, np.nan])
    return [em, rnd]


def test_theta_figure_has_methods_bars_and_truth():
    fig = plots.theta_figure(results(), np.array([0.9, 0.45, 0.3]))
    names = [t.name for t in fig.data]
    assert names == ["em", "randomization", "true theta"]
    em = fig.data[0]
    np.testing.assert_allclose(em.error_y.array[:2], [0.0, 0.1])
    assert em.error_y.array[2] > 1  # unbounded interval drawn off the chart, not as inf
    np.testing.assert_allclose(fig.data[2].y, [1.0, 0.5, 1 / 3])
    assert fig.data[1].error_y.array is None
    assert np.all(np.abs(np.asarray(em.x) - [1, 2, 3]) < 0.2)


def test_table_and_convergence():
    table = plots.results_table(results(), np.array([0.9, 0.45, 0.3]))
    assert list(table.columns) == ["method", "position", "theta", "lower", "upper",
                                   "true_theta", "error"]
    assert len(table) == 6
    assert np.isclose(table.loc[1, "error"], 0.0)
    conv = plots.convergence_figure(results())
    assert [t.name for t in conv.data] == ["em"]
    assert plots.convergence_figure(results()[1:]) is None
    assert "true_theta" not in plots.results_table(results())
