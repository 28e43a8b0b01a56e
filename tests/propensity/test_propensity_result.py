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
    r = PropensityResult.build(method="em", positions=3, theta=[1.0, 0.5, 0.2], lower=[1, 0.4, 0.1],
                         upper=[1, 0.6, 0.3], loglik=[-3.0, -2.0], notes=["x"])
    assert r.iterations == 2 and not r.theta.flags.writeable
    d = r.to_dict()
    assert list(d)[:6] == ["method", "positions", "theta", "lower", "upper", "bootstrap"]
    assert r.to_frame().shape == (3, 5)
    with pytest.raises(ValueError, match="relative to position 1"):
        PropensityResult.build(method="em", positions=2, theta=[0.8, 0.4])
    with pytest.raises(ValueError, match="one value per position"):
        PropensityResult.build(method="em", positions=3, theta=[1.0, 0.4])
    with pytest.raises(ValueError, match="lower must not exceed"):
        PropensityResult.build(method="em", positions=2, theta=[1, 0.5], lower=[1, 0.6],
                         upper=[1, 0.5])


def _judged(res, table=None, mapping=()):
    """What the verdict of ``res`` must be, from the lower-level helpers: the bootstrap
    interval alone, or (``table``: :func:`ulr.propensity.plots.results_table` with click
    counts) the intervals and relative half-widths the chart draws."""
    from dataclasses import replace
    bare = replace(res, clicks=None, impressions=None, mapping=tuple(mapping), misfit=None)
    if table is None:
        return bare._judge(None, None, None)
    rows = table[table["method"] == res.method].sort_values("position")
    return bare._judge(rows["lower"].to_numpy(), rows["upper"].to_numpy(),
                       rows["relative_half_width"].to_numpy(dtype=float))


def test_the_verdict_is_computed_from_the_fields_never_set():
    """With click counts the verdict judges the intervals the chart draws (bootstrap, else
    the counts'); without them the bootstrap's own; a blocking mapping warning makes it
    invalid and a PBM misfit caps it; a changed copy (``but``) has its own verdict."""
    from dataclasses import fields

    from ulr.lists import MappingWarning
    from ulr.propensity.plots import results_table
    from ulr.verdict import Reason
    assert "verdict" not in {f.name for f in fields(PropensityResult)}  # computed, never set
    counts = dict(clicks=[400, 200, 100], impressions=[10_000] * 3)
    r = PropensityResult.build(method="em", positions=3, theta=[1.0, 0.5, 0.25], rows_used=30_000)
    s = PropensityResult.build(method="dla", positions=3, theta=[1.0, 0.45, 0.3], lower=[1, 0.3, 0.2],
                         upper=[1, 0.6, 0.4], rows_used=30_000)
    table = results_table([r, s], **counts)
    for res in (r, s):
        assert res.verdict == _judged(res)  # no counts: the bootstrap's interval alone
        counted = res.but(**counts)
        assert counted.verdict == _judged(res, table)
    assert r.verdict.level == "inconclusive" and "no_interval" in r.verdict.codes
    assert r.but(**counts).verdict.level != "inconclusive"
    assert s.but(**counts).to_dict()["verdict"] == _judged(s, table).to_dict()
    blocked = (MappingWarning("repeated_position", "Sessions show one position twice.", 1.0),)
    assert s.but(**counts, mapping=blocked).verdict == _judged(s, table, blocked)
    assert s.but(**counts, mapping=blocked).verdict.level == "invalid"
    misfit = Reason("pbm_misfit", "The PBM fits worse.")
    capped = s.but(**counts, misfit=misfit).verdict
    assert capped.reasons[-1] == misfit and capped.level in ("directional", "inconclusive")
    with pytest.raises(ValueError, match="go together"):
        PropensityResult.build(method="em", positions=2, theta=[1, 0.5], clicks=[3, 1])


def test_the_verdict_field_is_the_old_judgement_on_the_charts_intervals():
    """Expected written with the lower-level helpers of ulr.verdict, as PropensityResult's
    ``verdict_on(results_table(...))`` computed it before the verdict became a field."""
    from ulr import verdict as V
    from ulr.propensity.plots import results_table
    counts = dict(clicks=np.array([400, 120, 30, 9]), impressions=np.array([10_000] * 4))
    for boot in (None, ([1, 0.5, 0.25, 0.2], [1, 0.7, 0.4, 0.45])):
        lo_hi = {} if boot is None else dict(lower=boot[0], upper=boot[1], n_bootstrap=50)
        res = PropensityResult.build(method="em", positions=4, theta=[1.0, 0.6, 0.3, 0.3],
                               rows_used=40_000, **lo_hi, **counts)
        t = results_table([res], **counts)
        lo, hi = t["lower"].to_numpy(), t["upper"].to_numpy()
        rel = t["relative_half_width"].to_numpy(dtype=float)
        worst = int(np.argmax(rel[1:])) + 1
        r = float(rel[worst])
        se = V.se_of(lo[3], hi[3], 0.95)
        takeaway = (f"Position 4 is examined {V.fmt(0.3, se)} times as often as position 1 "
                    f"({V.fmt_interval(0.3, lo[3], hi[3], level=0.95)}, 95% interval); the "
                    f"least precise position, {worst + 1}, is known to ±{r:.0%}.")
        v = res.verdict
        assert v.level == V.precision_level(r) and v.takeaway == takeaway
        assert v.estimate["worst_position"] == worst + 1
        assert v.estimate["relative_half_width"] == pytest.approx(r)
        more = V.more_for_precision(40_000, r)
        assert v.to_settle == (f"about {V.about(more)} more rows would pin theta at position "
                               f"{worst + 1} to ±20%" if more else None)


def test_estimate_judges_with_the_logs_click_counts(tmp_path):
    """estimate() sets the counts of ulr.data.summary.ctr_by_position and the mapping it is
    given, so the verdict is the one on the table the page and the report draw."""
    from ulr.data.summary import ctr_by_position
    from ulr.propensity.plots import results_table
    sim = simulate_clicks(queries=20, positions=4, sessions=600, seed=0,
                          randomized_fraction=1.0)
    path = tmp_path / "l.parquet"
    write_log(sim.df, str(path))
    log = ingest.open_file(path)
    by_pos = ctr_by_position(log)
    for method, b in (("em", 0), ("randomization", 5)):
        res = estimate(log, method=method, n_bootstrap=b)
        np.testing.assert_array_equal(res.clicks, by_pos["clicks"])
        table = results_table([res], clicks=by_pos["clicks"].to_numpy(),
                              impressions=by_pos["impressions"].to_numpy())
        assert res.verdict == _judged(res, table)


def test_dispatcher_refuses_bad_options(tmp_path):
    sim = simulate_clicks(queries=10, positions=3, sessions=200, seed=0)
    path = tmp_path / "l.parquet"
    write_log(sim.df, str(path))
    log = ingest.open_file(path)
    with pytest.raises(UlrError, match="unknown propensity method"):
        estimate(log, method="magic")
    with pytest.raises(UlrError, match="bootstrap must be"):
        estimate(log, method="em", n_bootstrap=1)
    assert set(METHODS) == {"randomization", "em", "regression-em", "dla",
                            "intervention-harvesting", "trust-em"}


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
    sim = simulate_clicks(queries=20, positions=4, sessions=1000, seed=0)
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
    r = PropensityResult.build(method="em", positions=3, theta=[1.0, 0.6, 0.5],
                         lower=[1.0, 0.2, 0.4], upper=[1.0, 1.0, 0.6], rows_used=10_000,
                         n_bootstrap=50)
    assert r.verdict.estimate["worst_position"] == 2  # bootstrap alone
    counts = dict(clicks=np.array([20, 12, 3]), impressions=np.array([3334, 3334, 3334]))
    table = results_table([r], **counts)
    rel = table.set_index("position")["relative_half_width"]
    assert rel[3] > rel[2]
    v = r.but(**counts).verdict
    assert v.estimate["worst_position"] == 3
    assert f"the least precise position, 3, is known to ±{rel[3]:.0%}" in v.takeaway
