"""Randomization (RandTopN) and swap interventions (RandPair) against pandas references."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from ulr.errors import NeedsRandomizedRows, UlrError
from ulr.propensity import estimate
from ulr.propensity import randomization as R
from ulr.data.scan import scan_of
from ulr.simulate import simulate_clicks

THETA = 1.0 / np.arange(1, 6)


def ctr_ratio(df):
    ctr = df.groupby("position")["click"].mean()
    return (ctr / ctr.loc[1]).to_numpy()


def swap_log(sessions, *, seed, pivot=1, topn_sessions=0, k_max=5, theta=THETA):
    """Production order per query; each session swaps (pivot, k) with prob. 1/2 and flags
    the two rows randomized. ``topn_sessions`` more sessions are fully randomized."""
    rng = np.random.default_rng(seed)
    n_q = 50
    gamma = rng.uniform(0.05, 0.9, (n_q, k_max))
    rows = []
    for s in range(sessions + topn_sessions):
        q = int(rng.integers(n_q))
        order = np.arange(k_max)
        flags = np.zeros(k_max, dtype=int)
        if s < sessions:
            others = [k for k in range(1, k_max + 1) if k != pivot]
            k = others[int(rng.integers(len(others)))]
            if rng.random() < 0.5:
                order[[pivot - 1, k - 1]] = order[[k - 1, pivot - 1]]
            flags[[pivot - 1, k - 1]] = 1
        else:
            order = rng.permutation(k_max)
            flags[:] = 1
        p = theta * gamma[q, order]
        clicks = (rng.random(k_max) < p).astype(int)
        for i in range(k_max):
            rows.append((q, q * 100 + order[i], i + 1, clicks[i], s, flags[i]))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "position", "click", "session_id",
                                       "randomized"])


def test_randtopn_equals_pandas_ctr_ratio(open_df):
    sim = simulate_clicks(queries=200, sessions=20_000, seed=2)
    res = estimate(open_df(sim.df), method="randomization")
    ref = ctr_ratio(sim.df[sim.df.randomized == 1])
    np.testing.assert_array_equal(res.theta, ref)  # exactly, not approximately
    assert res.rows_used == int((sim.df.randomized == 1).sum())


def test_assume_randomized_uses_every_row(open_df):
    sim = simulate_clicks(queries=100, sessions=5000, randomized_fraction=1.0, seed=3)
    df = sim.df.drop(columns=["randomized"])
    res = estimate(open_df(df), method="randomization", assume_randomized=True)
    np.testing.assert_array_equal(res.theta, ctr_ratio(df))
    assert res.rows_used == len(df)


def test_swap_pairs_use_their_click_ratios(open_df):
    df = swap_log(20_000, seed=1)
    res = estimate(open_df(df), method="randomization")
    # Reference: per swapped pair (1, k), clicks at k over clicks at 1 in those sessions.
    rr = df[df.randomized == 1]
    k_of = rr.groupby("session_id")["position"].max().rename("k")
    rr = rr.join(k_of, on="session_id")
    ref = [1.0]
    for k in range(2, 6):
        part = rr[rr.k == k]
        ref.append(part.loc[part.position == k, "click"].sum()
                   / part.loc[part.position == 1, "click"].sum())
    np.testing.assert_allclose(res.theta, ref, rtol=1e-12)
    assert len(res.extras["swap_pairs"]) == 4
    # Against the truth, with a tolerance of 4 standard errors of a ratio of click counts:
    # SE(log ratio) ~ sqrt(1/C_k + 1/C_1).
    for k in range(2, 6):
        part = rr[rr.k == k]
        ck, c1 = (part.loc[part.position == j, "click"].sum() for j in (k, 1))
        tol = 4 * THETA[k - 1] * np.sqrt(1 / ck + 1 / c1)
        assert abs(res.theta[k - 1] - THETA[k - 1]) < tol


def poisson_ml_reference(df):
    """Joint Poisson ML of RandTopN rows and swap pairs, by a generic optimizer."""
    rr = df[df.randomized == 1]
    nflag = rr.groupby("session_id")["position"].transform("size")
    top = rr[nflag != 2]
    pr = rr[nflag == 2]
    jk = pr.groupby("session_id")["position"].agg(["min", "max"])
    pr = pr.join(jk, on="session_id")
    n_k = top.groupby("position").size().reindex(range(1, 6), fill_value=0).to_numpy(float)
    c_k = top.groupby("position")["click"].sum().reindex(range(1, 6), fill_value=0).to_numpy(float)
    pairs = sorted(set(map(tuple, jk.to_numpy())))
    s = np.array([len(jk[(jk["min"] == a) & (jk["max"] == b)]) for a, b in pairs], float)
    cj = np.array([pr[(pr["min"] == a) & (pr["max"] == b) & (pr.position == a)].click.sum()
                   for a, b in pairs], float)
    ck = np.array([pr[(pr["min"] == a) & (pr["max"] == b) & (pr.position == b)].click.sum()
                   for a, b in pairs], float)
    ja = np.array([a for a, _ in pairs]) - 1
    kb = np.array([b for _, b in pairs]) - 1

    def nll(x):
        lt = np.concatenate([[0.0], x[:4]])
        la, lb = x[4], x[5:]
        mu_top = n_k * np.exp(lt + la)
        mu_j = s * np.exp(lt[ja] + lb)
        mu_k = s * np.exp(lt[kb] + lb)
        return -(c_k @ np.log(mu_top) - mu_top.sum() + cj @ np.log(mu_j) - mu_j.sum()
                 + ck @ np.log(mu_k) - mu_k.sum())

    x = minimize(nll, np.zeros(5 + len(pairs)), method="BFGS",
                 options={"gtol": 1e-9, "maxiter": 10_000}).x
    return np.exp(np.concatenate([[0.0], x[:4]]))


def test_mixed_randtopn_and_pairs_is_the_joint_poisson_ml(open_df):
    df = swap_log(6000, seed=7, pivot=2, topn_sessions=3000)
    res = estimate(open_df(df), method="randomization")
    np.testing.assert_allclose(res.theta, poisson_ml_reference(df), rtol=1e-5)


def test_tiny_click_counts_give_wide_intervals(open_df):
    tiny = simulate_clicks(queries=50, positions=5, sessions=300, seed=5)  # ~30 randomized
    res = estimate(open_df(tiny.df), method="randomization", n_bootstrap=300, seed=1)
    width = res.upper - res.lower
    assert np.all(width[1:] > 0.4), width
    big = simulate_clicks(queries=50, positions=5, sessions=30_000, seed=5)
    res_big = estimate(open_df(big.df, "big.parquet"), method="randomization",
                       n_bootstrap=300, seed=1)
    assert np.all((res_big.upper - res_big.lower)[1:] < 0.5 * width[1:])
    assert res.lower[0] == res.upper[0] == 1.0


def test_bootstrap_width_matches_the_delta_method(open_df):
    sim = simulate_clicks(queries=300, positions=5, sessions=40_000, seed=9)
    res = estimate(open_df(sim.df), method="randomization", n_bootstrap=400, seed=3)
    rr = sim.df[sim.df.randomized == 1]
    n = rr.groupby("position").size().to_numpy(float)
    c = rr.groupby("position")["click"].sum().to_numpy(float)
    p = c / n
    # Binomial delta method for log(CTR_k / CTR_1), sessions independent.
    se = res.theta * np.sqrt((1 - p) / c + (1 - p[0]) / c[0])
    # the interval is theta exp(+- t sd(log theta*)) (issue 54): its log half-width / t is
    # the replicates' sd of log theta, times theta the se of theta
    b = 400
    t = 1.9659  # Student's 97.5% quantile, 399 degrees of freedom
    se_boot = res.theta * np.log(res.upper / res.lower) / (2 * t)
    np.testing.assert_allclose(np.log(res.upper[1:] / res.theta[1:]),
                               np.log(res.theta[1:] / res.lower[1:]), rtol=1e-9)
    ratio = se_boot[1:] / se[1:]
    # Tolerance from the sample sizes: a sample sd from B replicates has relative sd
    # 1 / sqrt(2 (B - 1)) (normal theory); 4 sd of that, plus 5% for the delta method's
    # first-order approximation. (The percentile interval's width it replaced was noisier:
    # each end's sd sqrt(a (1 - a) / B) / phi(z), a = 0.025, gave a tolerance of 0.24.)
    tol = 4 / math.sqrt(2 * (b - 1)) + 0.05
    assert np.all(np.abs(ratio - 1) < tol), (ratio, tol)


def test_errors_name_the_problem(open_df):
    sim = simulate_clicks(queries=20, positions=4, sessions=500, randomized_fraction=0.0,
                          seed=1)
    with pytest.raises(NeedsRandomizedRows, match="no randomized rows") as err:
        estimate(open_df(sim.df), method="randomization")
    assert err.value.field == "randomized"
    with pytest.raises(NeedsRandomizedRows, match="no 'randomized' column"):
        estimate(open_df(sim.df.drop(columns=["randomized"]), "b.parquet"),
                 method="randomization")
    df = sim.df.copy()
    df["randomized"] = 1
    df.loc[df.position == 1, "click"] = 0
    with pytest.raises(UlrError, match="no clicks at position 1"):
        estimate(open_df(df, "c.parquet"), method="randomization")


def test_vectorized_replicates_equal_one_at_a_time(open_df):
    df = swap_log(2000, seed=3, pivot=2, topn_sessions=1000)
    stats = R.collect(scan_of(open_df(df)), groups=True)
    w = np.random.default_rng(0).poisson(1.0, (5, stats.n_groups)).astype(float)
    batch = R.fit_many(stats, w)
    one = np.vstack([R.fit_many(stats, w[b:b + 1]) for b in range(5)])
    np.testing.assert_allclose(batch, one, rtol=1e-10)
