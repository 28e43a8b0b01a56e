"""ulr.rankers.sweep: the severity sweep is train_and_evaluate per eta."""

import numpy as np
import pandas as pd
import pytest

from ulr import rankers as R
from ulr.errors import UlrError
from ulr.simulate import simulate_clicks


def test_severity_sweep_small(randomization_theta):
    calls = []
    est_calls = []

    def estimate(df):
        est_calls.append(len(df))
        return randomization_theta(df)

    res = R.severity_sweep([0.0, 1.5], queries=60, sessions=3000, estimate_theta=estimate,
                           propensity="randomization",
                           progress=lambda done, total, msg: calls.append((done, total, msg)))
    out = res.rows
    assert list(out.columns[:5]) == ["eta", "run", "ranker", "metric", "value"]
    assert set(out["ranker"]) == {"naive", "ipw (true theta)", "ipw (estimated theta)"}
    assert set(out["eta"]) == {0.0, 1.5} and len(est_calls) == 2
    assert (out.loc[out["ranker"] == "ipw (estimated theta)", "estimator"] == "randomization").all()
    assert len(out) == 2 * 3 * len(R.METRICS)
    assert [c[0] for c in calls] == list(range(1, 9)) and all(c[1] == 8 for c in calls)
    truth = out[out["ranker"] == "ipw (true theta)"]
    assert (truth["theta_error"] == 0).all()
    # the sweep's numbers are train_and_evaluate's numbers on the same simulated log
    sim = simulate_clicks(queries=60, sessions=3000, eta=1.5, seed=0)
    tr, te = R.split_queries(sim.df, seed=0)
    direct = R.train_and_evaluate(tr, te, sim.theta).metrics()
    got = out[(out["eta"] == 1.5) & (out["metric"] == "arp")].set_index("ranker")["value"]
    assert got["naive"] == pytest.approx(direct["naive"]["arp"])
    assert got["ipw (true theta)"] == pytest.approx(direct["ipw"]["arp"])
    fig = R.sweep_figure(out, metric="arp")
    assert len(fig.data) == 3 and list(fig.data[0].x) == [0.0, 1.5]
    with pytest.raises(UlrError, match="no values"):
        R.sweep_figure(out, metric="nope")


def test_sweep_reports_an_unusable_estimate():
    with pytest.raises(UlrError, match="At eta=1 .run 1., the dla estimate"):
        R.severity_sweep([1.0], queries=20, sessions=300, propensity="dla",
                         estimate_theta=lambda df: np.zeros(10))


def test_propensity_estimator_is_the_propensity_module_on_the_same_log(tmp_path):
    from ulr import propensity
    from ulr.data import ingest
    from ulr.simulate import write_log

    sim = simulate_clicks(queries=40, sessions=3000, eta=1.0, randomized_fraction=0.3, seed=4)
    est = R.propensity_estimator("randomization", seed=1)
    path = tmp_path / "log.parquet"
    write_log(sim.df.drop(columns=["true_theta"]), str(path))
    want = propensity.estimate(ingest.open_file(path), method="randomization", seed=1).theta
    np.testing.assert_allclose(est(sim.df), want)
    assert est.__name__ == "estimate_randomization"


def test_propensity_estimator_refuses_an_unknown_method_at_once():
    with pytest.raises(UlrError, match="unknown propensity method 'bogus'; choose one of "
                                       "randomization, em"):
        R.propensity_estimator("bogus")


def test_sweep_table_is_one_row_per_eta_with_means_bounds_and_the_change():
    """Checked against plain pandas means and a Student t interval from scipy."""
    import pandas as pd
    from scipy import stats
    rng = np.random.default_rng(0)
    rows = [dict(metric=m, eta=eta, ranker=r, run=run, value=rng.normal(2 + eta, 0.3))
            for m in ("arp", "ndcg@10") for eta in (0.0, 1.0) for r in ("naive", "ipw (true theta)")
            for run in range(4)]
    df = pd.DataFrame(rows)
    t = R.sweep_table(df, metric="arp")
    assert list(t["eta"]) == [0.0, 1.0]
    assert list(t.columns) == ["eta", "naive", "ipw (true theta)", "naive lower",
                               "ipw (true theta) lower", "naive upper", "ipw (true theta) upper",
                               R.SWEEP_CHANGE]
    for eta in (0.0, 1.0):
        row = t.set_index("eta").loc[eta]
        for r in ("naive", "ipw (true theta)"):
            v = df[(df.metric == "arp") & (df.eta == eta) & (df.ranker == r)]["value"]
            lo, hi = stats.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=stats.sem(v))
            assert row[r] == pytest.approx(v.mean())
            assert (row[f"{r} lower"], row[f"{r} upper"]) == pytest.approx((lo, hi))
        assert row[R.SWEEP_CHANGE] == pytest.approx(row["ipw (true theta)"] / row["naive"] - 1)
    assert R.SWEEP_CHANGE not in R.sweep_table(df[df.ranker == "naive"], metric="arp")


def _rows(runs: int, gap: float = 0.05, seed: int = 0):
    """A sweep's long rows at eta 0 and 2: IPW better than naive by ``gap`` on nDCG@10."""
    rng = np.random.default_rng(seed)
    out = []
    for eta in (0.0, 2.0):
        for run in range(runs):
            base = 0.6 + rng.normal(0, 0.01)
            for ranker, v in (("naive", base), ("ipw (true theta)", base + gap * (eta > 0)
                                                 + rng.normal(0, 0.005))):
                out.append(dict(metric="ndcg@10", eta=eta, ranker=ranker, run=run, value=v))
    return pd.DataFrame(out)


def test_few_runs_cap_the_sweep_at_directional():
    from ulr.rankers.sweep import MIN_RUNS, SweepResult
    few = SweepResult.of(_rows(3), metric="ndcg@10").verdict
    assert few.level == "directional" and few.codes == ["few_runs"], few
    assert few.estimate["lower"] > 0  # the interval excludes 0: only the run count caps it
    many = SweepResult.of(_rows(MIN_RUNS), metric="ndcg@10").verdict
    assert many.level == "reliable" and not many.reasons, many


def test_the_sweep_chart_band_is_the_table_interval():
    from ulr.rankers.plots import sweep_figure
    from ulr.rankers.sweep import sweep_table
    rows = _rows(4)
    fig = sweep_figure(rows, metric="ndcg@10")
    table = sweep_table(rows, metric="ndcg@10").set_index("eta")
    bands = [t for t in fig.data if t.fill == "toself"]
    assert len(bands) == 2
    for band, ranker in zip(bands, ("naive", "ipw (true theta)")):
        n = len(band.y) // 2
        np.testing.assert_allclose(band.y[:n], table[f"{ranker} upper"].to_numpy())
        np.testing.assert_allclose(band.y[n:][::-1], table[f"{ranker} lower"].to_numpy())
