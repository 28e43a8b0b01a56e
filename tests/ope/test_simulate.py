"""The estimators against simulated ground truth over repeated logs, and the sample log.

Tolerances come from the number of draws: a mean over R draws is compared with
the truth within 4 standard errors (two-sided false alarm ~6e-5).
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ulr.ope import estimators as est
from ulr.ope.simulate import (bias_variance_table, make_sample_log, repeated_intervals,
                              repeated_point_estimates, simulate_bandit)

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_ope.csv"


def test_true_value_matches_on_policy_monte_carlo():
    # Logging with pi itself, the mean reward of R x n rows estimates V(pi) with
    # standard error sqrt(V (1 - V) / (R n)) (rows are independent).
    sim = simulate_bandit(contexts=8, actions=4, positions=3, logging="softmax", base_rate=0.3,
                          seed=4)
    d = sim.sample(5000, runs=20, seed=5)
    V = float(sim.true_value(sim.logging))
    se = np.sqrt(V * (1 - V) / d.reward.size)
    assert abs(d.reward.mean() - V) < 4 * se
    # logged actions: propensities are the logging probabilities, inside their context
    c = sim.candidates
    assert np.array_equal(d.propensity, sim.logging[d.pair])
    freq = np.bincount(d.pair.ravel(), minlength=c.n_pairs) / d.pair.size
    expect = sim.logging / c.n_contexts
    assert np.all(np.abs(freq - expect) < 4 * np.sqrt(expect / d.pair.size) + 1e-4)


def test_ips_is_unbiased_over_repeated_logs():
    # 4000 logs of 200 rows, vectorized. |mean - V| < 4 standard errors of the mean.
    sim = simulate_bandit(contexts=20, actions=10, n_features=3, logging="softmax",
                          logging_noise=2.0, base_rate=0.2, seed=3)
    pi = sim.policy(temperature=0.5)
    V = float(sim.true_value(pi))
    d = sim.sample(200, runs=4000, seed=11)
    vals = repeated_point_estimates(sim, pi, d, estimators=("ips",))["value"].to_numpy()
    se = vals.std(ddof=1) / np.sqrt(len(vals))
    assert abs(vals.mean() - V) < 4 * se
    # and the spread matches the exact per-row variance / n (sample variance of 4000
    # values has relative sd sqrt(2 / 3999) ~ 2.2%, kurtosis aside; allow 12%)
    _, var_row = sim.clipped_moments(pi)
    assert vals.var(ddof=1) == pytest.approx(var_row / 200, rel=0.12)


def test_clipping_trades_bias_for_variance():
    # Theory (Strehl et al. 2010; Ionides 2008): with rewards >= 0, min(w, M) <= w, so the
    # clipped estimator is biased *downwards* by E[(w - M)_+ r], and its variance is lower;
    # both shrink towards IPS as M grows. Checked against the exact moments of the
    # simulation and empirically over 4000 logs (means within 4 se; variances within 12%).
    sim = simulate_bandit(contexts=20, actions=10, n_features=3, logging="uniform",
                          base_rate=0.2, seed=3)
    pi = sim.policy(temperature=0.5)
    V = float(sim.true_value(pi))
    n, R = 200, 4000
    d = sim.sample(n, runs=R, seed=12)
    w = pi[d.pair] / d.propensity
    assert w.max() > 8  # the target concentrates where uniform logging is thin
    last_bias, last_var = -np.inf, 0.0
    for M in (2.0, 4.0, 8.0, np.inf):
        vals = est.clipped_ips(d.reward, w, clip=M)
        mean_row, var_row = sim.clipped_moments(pi, M)
        exact_bias, exact_var = mean_row - V, var_row / n
        se = vals.std(ddof=1) / np.sqrt(R)
        assert abs(vals.mean() - mean_row) < 4 * se, M
        assert vals.var(ddof=1) == pytest.approx(exact_var, rel=0.12), M
        if np.isfinite(M):
            assert exact_bias < 0 and vals.mean() < V - 4 * se  # biased downwards ...
        assert exact_bias > last_bias and exact_var > last_var  # ... less so as M grows
        last_bias, last_var = exact_bias, exact_var
    ips_var = est.ips(d.reward, w).var(ddof=1)
    assert est.clipped_ips(d.reward, w, clip=2.0).var(ddof=1) < 0.3 * ips_var


def test_snips_and_dr_intervals_cover_the_truth():
    # 200 logs of 1000 rows; 95% bootstrap intervals (400 draws, cross-fitted DR). If the
    # intervals are right, the number that cover V is Binomial(200, 0.95): mean 190, sd 3.1,
    # so >= 180 (90%) fails with probability ~7e-4; an interval with true coverage 85%
    # passes with probability ~0.02. The test therefore separates the two.
    sim = simulate_bandit(contexts=20, actions=5, n_features=3, logging="softmax",
                          base_rate=0.2, seed=1)
    pi = sim.policy(temperature=0.5)
    V = float(sim.true_value(pi))
    d = sim.sample(1000, runs=200, seed=2)
    df = repeated_intervals(sim, pi, d, estimators=("snips", "dr"), n_bootstrap=400)
    tab = bias_variance_table(df, V).set_index("estimator")
    for name in ("snips", "dr"):
        assert tab.loc[name, "coverage"] >= 0.90, (name, tab.loc[name, "coverage"])
        assert abs(tab.loc[name, "bias"]) < 4 * tab.loc[name, "bias_se"]


def test_repeated_point_estimates_equal_the_per_log_estimators():
    sim = simulate_bandit(contexts=6, actions=5, positions=2, base_rate=0.3, seed=8)
    pi = sim.policy(temperature=0.3)
    d = sim.sample(300, runs=4, seed=9)
    df = repeated_point_estimates(sim, pi, d, estimators=("ips", "clipped-ips", "snips", "dr"))
    from ulr.ope.evaluate import evaluate
    for i in range(4):
        ref = evaluate(d.feedback(i), pi, n_bootstrap=50, seed=i).table.set_index("estimator")
        got = df[df["draw"] == i].set_index("estimator")["value"]
        for e in ("ips", "clipped-ips", "snips", "dr"):  # same per-log clip and DR folds
            assert got[e] == pytest.approx(ref.loc[e, "value"], rel=1e-9), (i, e)


def test_bias_variance_table_against_numpy():
    df = pd.DataFrame({"draw": [0, 1, 2, 0, 1, 2], "estimator": ["a"] * 3 + ["b"] * 3,
                       "value": [1.0, 2.0, 4.0, 3.0, 3.0, 3.0]})
    t = bias_variance_table(df, 2.0).set_index("estimator")
    assert t.loc["a", "bias"] == pytest.approx(1 / 3)
    assert t.loc["a", "sd"] == pytest.approx(np.std([1, 2, 4], ddof=1))
    assert t.loc["a", "rmse"] == pytest.approx(np.sqrt((1 + 0 + 4) / 3))
    assert t.loc["b", "sd"] == 0 and t.loc["b", "rmse"] == pytest.approx(1.0)


def test_bundled_sample_is_reproducible_and_as_described():
    df = make_sample_log()
    bundled = pd.read_csv(SAMPLE)
    assert list(bundled.columns) == list(df.columns)
    for col in df.columns:
        if df[col].dtype.kind == "f":
            assert np.allclose(bundled[col], df[col], rtol=1e-5, atol=1e-9), col
        else:
            assert (bundled[col].astype(str) == df[col].astype(str)).all(), col
    assert len(df) == 10_000
    assert sorted(df["position"].unique()) == [1, 2, 3]
    assert (df["propensity"] == 0.1).all() and df["doc_id"].nunique() == 10
    assert df["click"].mean() < 0.01
    # each impression shows distinct docs in a uniformly random order: every doc is
    # equally likely at every position (chi-square-like 4-sigma bound per cell)
    counts = pd.crosstab(df["doc_id"], df["position"]).to_numpy()
    expect = len(df) / 3 / 10
    assert np.all(np.abs(counts - expect) < 4 * np.sqrt(expect))
    assert (df.groupby("session_id")["doc_id"].nunique() == df.groupby("session_id").size()).all()
