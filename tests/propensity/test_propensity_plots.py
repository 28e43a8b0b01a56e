"""Figures and table of the position-bias page."""

import numpy as np
import pytest

from ulr.propensity import plots
from ulr.propensity.result import PropensityResult

Z95 = 1.959963984540054  # the 97.5% normal quantile: the 95% level the intervals take


def results():
    em = PropensityResult.build(method="em", positions=3, theta=[1, 0.5, 0.3], lower=[1, 0.4, 0.2],
                          upper=[1, 0.6, np.inf], loglik=[-10.0, -9.0, -8.9])
    rnd = PropensityResult.build(method="randomization", positions=3, theta=[1, 0.55, np.nan])
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


def _result(theta, **kw):
    return PropensityResult.build(method="em", positions=len(theta), theta=theta, **kw)


def test_no_bootstrap_still_gives_every_position_an_interval_and_flags_thin_ones():
    r = _result([1.0, 0.5, 0.4])
    t = plots.with_precision(r, clicks=[400, 200, 3], impressions=[10_000] * 3)
    assert t["lower"].notna().all() and t["upper"].notna().all()
    assert (t["interval"] == "click counts").all()
    assert t["thin"].tolist() == [False, False, True]  # 3 clicks cannot say 0.4
    # The delta-method half-width of log(CTR_2 / CTR_1) from the counts, by hand.
    se = np.sqrt((1 - 0.02) / 200 + (1 - 0.04) / 400)
    assert t.loc[1, "upper"] == pytest.approx(0.5 * np.exp(Z95 * se), rel=1e-12)


def test_a_narrow_bootstrap_interval_does_not_hide_few_clicks():
    r = _result([1.0, 0.5], lower=[1.0, 0.49], upper=[1.0, 0.51], n_bootstrap=50)
    t = plots.with_precision(r, clicks=[20, 5], impressions=[1000, 1000])
    assert t.loc[1, "interval"] == "bootstrap" and t.loc[1, "thin"]


def test_convergence_chart_has_integer_ticks_and_plain_numbers():
    r = _result([1.0, 0.5], loglik=[-190.84626, -150.5, -149.9])
    fig = plots.convergence_figure([r])
    assert fig.layout.xaxis.tickformat == "d" and fig.layout.xaxis.dtick == 1
    assert fig.layout.yaxis.tickformat == ",.1f"


def test_thin_points_are_drawn_hollow_with_their_interval():
    r = _result([1.0, 0.5, 0.4])
    table = plots.results_table([r], clicks=[400, 200, 3], impressions=[10_000] * 3)
    fig = plots.theta_figure([r], table=table)
    tr = fig.data[0]
    assert list(tr.marker.color)[2] == "rgba(0,0,0,0)" and list(tr.marker.color)[1] != \
        "rgba(0,0,0,0)"
    assert tr.error_y.array is not None and np.all(np.isfinite(tr.error_y.array))


def test_the_click_count_interval_is_drawn_around_the_methods_own_estimate():
    """EM's theta differs from the raw CTR ratio (it corrects for relevance): its
    click-count interval has the counts' log-scale width but sits around theta."""
    r = _result([1.0, 0.7])  # the raw ratio is 200 / 400 = 0.5
    t = plots.with_precision(r, clicks=[400, 200], impressions=[10_000] * 2)
    se = np.sqrt((1 - 0.02) / 200 + (1 - 0.04) / 400)
    np.testing.assert_allclose([t.loc[1, "lower"], t.loc[1, "upper"]],
                               [0.7 * np.exp(-Z95 * se), 0.7 * np.exp(Z95 * se)], rtol=1e-12)
    assert t.loc[1, "lower"] < 0.7 < t.loc[1, "upper"]


def test_thin_note_counts_the_positions_whose_interval_is_wider_than_half_the_estimate():
    """Position 3 rests on 3 clicks: its delta-method interval (log-scale half-width
    1.96 sqrt((1 - p3)/c3 + (1 - p1)/c1)) is far wider than ±50% of theta; position 2 is not."""
    r = _result([1.0, 0.5, 0.4])
    table = plots.results_table([r], clicks=[400, 200, 3], impressions=[10_000] * 3)
    half = Z95 * np.sqrt((1 - 3e-4) / 3 + (1 - 0.04) / 400)
    assert 0.4 * (np.exp(half) - np.exp(-half)) / 2 > 0.5 * 0.4  # the reference: thin
    note = plots.thin_note(table, clicks=603)
    assert note.startswith("Thin evidence: 1 of 2 estimates (position 3) rest on too few "
                           "clicks (603 in all)")
    two = plots.results_table([r, _result([1.0, 0.5, 0.4])], clicks=[400, 2, 3],
                              impressions=[10_000] * 3)
    assert plots.thin_note(two, clicks=405).startswith(
        "Thin evidence: 4 of 4 estimates (positions 2, 3) rest")  # two methods, same positions
    assert "±50% of the estimate" in note
    full = plots.results_table([r], clicks=[4000, 2000, 1600], impressions=[10_000] * 3)
    assert plots.thin_note(full, clicks=7600) is None
