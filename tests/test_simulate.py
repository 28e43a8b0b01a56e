"""Simulator: ground truth is recoverable, runs are reproducible."""

import numpy as np
import pytest

from ulr.errors import UlrError
from ulr.simulate import attractiveness, power_law_theta, simulate_clicks


def test_randomized_ctr_ratios_estimate_theta():
    # In randomized sessions every document is equally likely at every position,
    # so CTR_k / CTR_1 -> theta_k / theta_1. Tolerance: 4 standard errors of the
    # ratio by the delta method, sd(r) ~ r * sqrt(1/c_k + 1/c_1) with c = clicks.
    sim = simulate_clicks(queries=2000, sessions=60000, eta=1.0, randomized_fraction=0.5, seed=7)
    r = sim.df[sim.df["randomized"] == 1]
    clicks = r.groupby("position")["click"].sum().to_numpy()
    ctr = r.groupby("position")["click"].mean().to_numpy()
    ratio = ctr / ctr[0]
    truth = sim.theta / sim.theta[0]
    se = truth * np.sqrt(1 / clicks + 1 / clicks[0])
    assert np.all(np.abs(ratio - truth) < 4 * se), (ratio, truth, se)
    # Not randomized sessions are ranked: CTR ratios there are steeper than theta.
    nr = sim.df[sim.df["randomized"] == 0].groupby("position")["click"].mean().to_numpy()
    assert (nr[4] / nr[0]) < truth[4]


def test_explicit_theta_and_pbm_click_probability():
    theta = [0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06]
    sim = simulate_clicks(queries=200, sessions=40000, theta=theta, randomized_fraction=1.0,
                          eps=0.1, seed=1)
    df = sim.df
    np.testing.assert_allclose(sim.theta, theta)
    gamma = attractiveness(df["relevance"].to_numpy(), eps=0.1)
    expected = np.asarray(theta)[df["position"].to_numpy() - 1] * gamma
    # Mean click prob equals mean model prob within 4 standard errors.
    se = np.sqrt((expected * (1 - expected)).sum()) / len(df)
    assert abs(df["click"].mean() - expected.mean()) < 4 * se


def test_shape_determinism_and_randomized_share():
    a = simulate_clicks(queries=50, positions=6, sessions=3000, randomized_fraction=0.3,
                        features=3, seed=11)
    b = simulate_clicks(queries=50, positions=6, sessions=3000, randomized_fraction=0.3,
                        features=3, seed=11)
    assert len(a.df) == 18000
    assert a.df.equals(b.df)
    share = a.df.groupby("session_id")["randomized"].first().mean()
    assert abs(share - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 3000)
    # Each session shows each of its query's documents exactly once.
    assert (a.df.groupby("session_id")["doc_id"].nunique() == 6).all()
    assert set(a.df.columns) >= {"feature_1", "feature_3", "relevance", "true_theta"}
    assert a.df["relevance"].between(0, 4).all()
    # The same (query, doc) is seen at several positions (per-session noise).
    assert a.df.groupby("doc_id")["position"].nunique().mean() > 2


def test_cascade_model_one_click_per_session():
    sim = simulate_clicks(model="cascade", queries=100, sessions=5000, seed=2)
    per_session = sim.df.groupby("session_id")["click"].sum()
    assert per_session.max() == 1
    assert sim.theta[0] == 1.0 and np.all(np.diff(sim.theta) < 0)


def test_power_law_and_validation():
    np.testing.assert_allclose(power_law_theta(3, 2.0), [1, 0.25, 1 / 9])
    with pytest.raises(UlrError):
        simulate_clicks(model="dbn")
    with pytest.raises(UlrError):
        simulate_clicks(theta=[0.5, 0.2], positions=3)
    with pytest.raises(UlrError):
        simulate_clicks(randomized_fraction=1.5)
