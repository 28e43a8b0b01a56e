"""Intervention harvesting: interventional sets vs a loop reference, AllPairs, no randomization."""

from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from ulr.errors import UlrError
from ulr.data.scan import cell_stats, scan_of
from ulr.propensity import estimate
from ulr.propensity import harvesting as H
from ulr.simulate import simulate_clicks


def loop_reference(df, k):
    """c[k, k'] and N[k, k'] by plain loops over (query, doc) pairs."""
    n = defaultdict(lambda: defaultdict(int))
    c = defaultdict(lambda: defaultdict(int))
    for q, d, pos, click in df[["query_id", "doc_id", "position", "click"]].itertuples(
            index=False):
        n[(q, d)][pos] += 1
        c[(q, d)][pos] += click
    chat = np.zeros((k, k))
    neff = np.zeros((k, k))
    for key, by_pos in n.items():
        for a in by_pos:
            for b in by_pos:
                if a == b:
                    continue
                na, nb = by_pos[a], by_pos[b]
                w = na * nb / (na + nb)
                chat[a - 1, b - 1] += w * c[key][a] / na
                neff[a - 1, b - 1] += w
    return chat, neff


def test_interventional_sets_equal_the_loop_reference(open_df):
    sim = simulate_clicks(queries=30, positions=5, sessions=1500, seed=3)
    st = cell_stats(scan_of(open_df(sim.df)))
    chat, neff = H.interventional_sets(st)
    ref_c, ref_n = loop_reference(sim.df, 5)
    np.testing.assert_allclose(chat, ref_c, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(neff, ref_n, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(neff, neff.T, rtol=1e-12)


def test_two_positions_give_the_click_ratio(open_df):
    # With K = 2 AllPairs has a closed form: theta_2 / theta_1 = c_2^{12} / c_1^{12}.
    sim = simulate_clicks(queries=30, positions=5, sessions=3000, seed=4)
    st = cell_stats(scan_of(open_df(sim.df)), positions=2)
    theta, info = H.fit(st)
    chat, _ = H.interventional_sets(st)
    assert info["converged"]
    assert theta[1] == pytest.approx(chat[1, 0] / chat[0, 1], rel=1e-6)


def test_all_pairs_recovers_theta_from_exact_moments():
    # Noise-free interventional sets built from a known theta and pair relevances.
    theta = np.array([1.0, 0.6, 0.4, 0.3])
    rng = np.random.default_rng(0)
    r = rng.uniform(0.1, 0.5, (4, 4))
    r = (r + r.T) / 2
    neff = rng.uniform(500, 2000, (4, 4))
    neff = (neff + neff.T) / 2
    np.fill_diagonal(neff, 0)
    chat = neff * theta[:, None] * r
    est, info = H.all_pairs(chat, neff)
    np.testing.assert_allclose(est, theta, rtol=1e-5)


def test_without_any_randomization(open_df):
    # Rankers' per-session noise alone moves pairs across positions.
    sim = simulate_clicks(sessions=30_000, randomized_fraction=0.0, seed=12)
    res = estimate(open_df(sim.df), method="intervention-harvesting")
    err = np.abs(res.theta - sim.relative_theta)
    # 300k rows: the 0.05 (for 1M rows) scaled by sqrt(1M / 300k) for sample size.
    assert err.max() < 0.05 * np.sqrt(1e6 / len(sim.df)), err


def test_no_interventions_is_an_error(open_df):
    df = pd.DataFrame({"query_id": [1] * 40, "doc_id": [1, 2] * 20, "position": [1, 2] * 20,
                       "click": [1, 0, 0, 1] * 10})
    with pytest.raises(UlrError, match="two different positions"):
        estimate(open_df(df), method="intervention-harvesting")


def test_bootstrap_interval_covers_the_estimate(open_df):
    sim = simulate_clicks(queries=100, sessions=5000, seed=6)
    res = estimate(open_df(sim.df), method="intervention-harvesting", n_bootstrap=30)
    assert np.all(res.lower <= res.theta + 1e-9) and np.all(res.theta <= res.upper + 1e-9)
    assert np.all((res.upper - res.lower)[1:] > 0)
