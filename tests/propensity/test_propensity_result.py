"""Result type, dispatcher checks and bootstrap helpers."""

import numpy as np
import pandas as pd
import pytest

from ulr.data import ingest
from ulr.errors import UlrError
from ulr.propensity import METHODS, PropensityResult, estimate
from ulr.propensity import bootstrap as bs
from ulr.propensity.aggregate import poisson_weights
from ulr.simulate import simulate_clicks, write_log


def test_result_validates_itself():
    r = PropensityResult(method="em", positions=3, theta=[1.0, 0.5, 0.2], lower=[1, 0.4, 0.1],
                         upper=[1, 0.6, 0.3], loglik=[-3.0, -2.0], notes=["x"])
    assert r.iterations == 2 and not r.theta.flags.writeable
    d = r.to_dict()
    assert list(d)[:6] == ["method", "positions", "theta", "lower", "upper", "bootstrap"]
    assert r.to_frame().shape == (3, 5)
    with pytest.raises(ValueError, match="relative to position 1"):
        PropensityResult(method="em", positions=2, theta=[0.8, 0.4])
    with pytest.raises(ValueError, match="one value per position"):
        PropensityResult(method="em", positions=3, theta=[1.0, 0.4])
    with pytest.raises(ValueError, match="lower must not exceed"):
        PropensityResult(method="em", positions=2, theta=[1, 0.5], lower=[1, 0.6],
                         upper=[1, 0.5])


def test_verdict_on_judges_the_intervals_the_chart_draws():
    """The per-method verdict rests on the table's intervals (bootstrap, else click counts)
    for every position, and on the bootstrap's own when the table lacks a position."""
    from ulr.propensity.plots import results_table
    r = PropensityResult(method="em", positions=3, theta=[1.0, 0.5, 0.25])
    s = PropensityResult(method="dla", positions=3, theta=[1.0, 0.45, 0.3], lower=[1, 0.3, 0.2],
                         upper=[1, 0.6, 0.4])
    table = results_table([r, s], clicks=[400, 200, 100], impressions=[10_000] * 3)
    for res in (r, s):
        rows = table[table["method"] == res.method].sort_values("position")
        expected = res.verdict(lower=rows["lower"].to_numpy(), upper=rows["upper"].to_numpy())
        assert res.verdict_on(table) == expected
    assert r.verdict().level == "inconclusive" and r.verdict_on(table).level != "inconclusive"
    short = table[table["position"] < 3]
    assert s.verdict_on(short) == s.verdict() and r.verdict_on(short) == r.verdict()


def test_dispatcher_refuses_bad_options(tmp_path):
    sim = simulate_clicks(queries=10, docs_per_query=3, sessions=200, seed=0)
    path = tmp_path / "l.parquet"
    write_log(sim.df, str(path))
    log = ingest.open_file(path)
    with pytest.raises(UlrError, match="unknown propensity method"):
        estimate(log, method="magic")
    with pytest.raises(UlrError, match="bootstrap must be"):
        estimate(log, method="em", n_bootstrap=1)
    assert set(METHODS) == {"randomization", "em", "regression-em", "dla",
                            "intervention-harvesting"}


def test_every_method_refuses_a_single_position_log(tmp_path):
    df = pd.DataFrame({"query_id": [1, 2, 3, 4], "doc_id": [1, 2, 3, 4], "position": 1,
                       "click": [1, 0, 1, 0], "randomized": 1, "session_id": [1, 2, 3, 4],
                       "feature_1": [0.1, 0.2, 0.3, 0.4]})
    path = tmp_path / "one.parquet"
    write_log(df, str(path))
    log = ingest.open_file(path)
    for method in METHODS:
        with pytest.raises(UlrError, match="single position"):
            estimate(log, method=method)


def test_progress_is_reported_up_to_one(tmp_path):
    sim = simulate_clicks(queries=20, docs_per_query=4, sessions=1000, seed=0)
    path = tmp_path / "l.parquet"
    write_log(sim.df, str(path))
    seen = []
    estimate(ingest.open_file(path), method="em", n_bootstrap=3,
             progress=lambda f, t: seen.append((f, t)))
    fr = [f for f, _ in seen]
    assert fr[-1] == 1.0 and all(0.0 <= f <= 1.0 for f in fr)
    assert all(b >= a - 1e-12 for a, b in zip(fr, fr[1:]))  # never goes back


def test_percentile_interval_handles_inf_and_nan():
    s = np.array([[1.0, 0.5, np.inf], [1.0, 0.7, 2.0], [1.0, 0.6, 3.0], [1.0, 0.4, 1.0]])
    lo, hi, notes = bs.percentile_interval(s, level=0.5)
    assert lo[0] == hi[0] == 1.0
    assert lo[1] == pytest.approx(np.quantile(s[:, 1], 0.25))
    assert hi[2] == np.inf and np.isfinite(lo[2])
    assert notes
    many_nan = np.array([[1.0, np.nan]] * 5 + [[1.0, 0.5]] * 5)
    lo, hi, _ = bs.percentile_interval(many_nan, level=0.95)
    assert lo[1] == 0.0 and hi[1] == np.inf  # the data cannot bound theta here


def test_poisson_weights_are_reproducible():
    a = poisson_weights(4, 10, seed=3)
    np.testing.assert_array_equal(a, poisson_weights(4, 10, seed=3))
    assert a.shape == (4, 10) and a.min() >= 0
    assert abs(poisson_weights(200, 1000, seed=1).mean() - 1.0) < 0.01


def test_progress_mapper_nests():
    got = []
    p = bs.Progress(lambda f, t: got.append(f)).sub(0.5, 1.0).sub(0.0, 0.5)
    p(0.5, "x")
    assert got == [pytest.approx(0.625)]


def test_least_precise_position_is_the_one_the_shown_table_says():
    """The bootstrap alone makes position 2 the widest; the click counts behind position 3
    are fewer, so the table the page shows (relative half-width with the click-count floor)
    makes 3 the least precise: the verdict names 3 and the table's own figure."""
    from ulr.propensity.plots import results_table
    r = PropensityResult(method="em", positions=3, theta=[1.0, 0.6, 0.5],
                         lower=[1.0, 0.2, 0.4], upper=[1.0, 1.0, 0.6], rows_used=10_000,
                         n_bootstrap=50)
    assert r.verdict().estimate["worst_position"] == 2  # bootstrap alone
    table = results_table([r], clicks=np.array([20, 12, 3]),
                          impressions=np.array([3334, 3334, 3334]))
    rel = table.set_index("position")["relative_half_width"]
    assert rel[3] > rel[2]
    v = r.verdict_on(table)
    assert v.estimate["worst_position"] == 3
    assert f"the least precise position, 3, is known to ±{rel[3]:.0%}" in v.takeaway
