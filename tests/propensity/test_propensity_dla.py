"""DLA: gradients vs finite differences, input errors, simulated truth."""

import numpy as np
import pandas as pd
import pytest

from ulr.errors import NeedsFeatures, NeedsSessions, UlrError
from ulr.propensity import dla as D
from ulr.propensity import estimate
from ulr.data.scan import scan_of
from ulr.simulate import simulate_clicks


@pytest.mark.parametrize("hidden", [0, 3])
def test_gradients_match_finite_differences(hidden):
    rng = np.random.default_rng(0)
    s, k, p = 7, 4, 3
    X2 = rng.standard_normal((s * k, p))
    mask = np.ones((s, k), dtype=bool)
    mask[2, 3] = mask[5, 2] = False
    cw = (rng.random((s, k)) < 0.4) * mask * rng.uniform(0.5, 2.0, (s, 1))
    cw[:, 0] = 1.0
    if hidden:
        params = {"W1": rng.standard_normal((p, hidden)), "b1": rng.standard_normal(hidden),
                  "w2": rng.standard_normal(hidden)}
    else:
        params = {"w": rng.standard_normal(p)}
    g = rng.standard_normal(k)
    _, _, grads = D.losses_and_grads(params, g, X2, mask, cw)

    # Each loss is differentiated with the other model's weights held fixed: freeze them by
    # evaluating the weights at the base point.
    base_g, base_params = g.copy(), {key: v.copy() for key, v in params.items()}

    def loss_f(pars):  # IPW loss with pw from base_g
        return D.losses_and_grads(pars, base_g, X2, mask, cw)[0]

    def loss_g(gg):  # IRW loss with rw from base_params
        return D.losses_and_grads(base_params, gg, X2, mask, cw)[1]

    h = 1e-6
    for key, val in params.items():
        num = np.zeros_like(val)
        for idx in np.ndindex(val.shape):
            up = {kk: v.copy() for kk, v in params.items()}
            dn = {kk: v.copy() for kk, v in params.items()}
            up[key][idx] += h
            dn[key][idx] -= h
            num[idx] = (loss_f(up) - loss_f(dn)) / (2 * h)
        np.testing.assert_allclose(grads[key], num, rtol=1e-5, atol=1e-8)
    num_g = np.array([(loss_g(g + h * e) - loss_g(g - h * e)) / (2 * h) for e in np.eye(k)])
    np.testing.assert_allclose(grads["g"], num_g, rtol=1e-5, atol=1e-8)


def test_dla_is_within_the_issue_tolerance(open_df):
    # 300k rows (15k clicked lists) instead of 1M: the max error over DLA seeds 0-2 on this
    # log was 0.024-0.031 (0.016 at 1M), so the issue's 0.1 holds with room to spare.
    sim = simulate_clicks(sessions=30_000, seed=13)
    res = estimate(open_df(sim.df), method="dla", seed=0)
    err = np.abs(res.theta - sim.relative_theta)
    assert err.max() < 0.1, err
    assert res.theta[0] == 1.0 and np.all(np.diff(res.theta[:4]) < 0)


def test_missing_sessions_or_features_are_errors(open_df):
    sim = simulate_clicks(queries=20, positions=4, sessions=400, seed=1)
    with pytest.raises(NeedsSessions, match="no session_id"):
        estimate(open_df(sim.df.drop(columns=["session_id"])), method="dla")
    no_feat = sim.df.drop(columns=[c for c in sim.df if c.startswith("feature_")])
    with pytest.raises(NeedsFeatures, match="no feature_\\* columns"):
        estimate(open_df(no_feat, "b.parquet"), method="dla")
    no_click = sim.df.assign(click=0)
    with pytest.raises(UlrError, match="no result list with a click"):
        estimate(open_df(no_click, "c.parquet"), method="dla")


def test_lists_are_padded_by_position(open_df):
    df = pd.DataFrame({"query_id": [1, 1, 1, 2, 2], "doc_id": [1, 2, 3, 4, 5],
                       "position": [1, 2, 3, 1, 3], "click": [0, 1, 0, 1, 0],
                       "session_id": ["a", "a", "a", "b", "b"],
                       "feature_1": [0.1, 0.2, 0.3, 0.4, 0.5]})
    ls = D.collect(scan_of(open_df(df)))
    assert ls.X.shape == (2, 3, 1)
    np.testing.assert_array_equal(ls.mask, [[True, True, True], [True, False, True]])
    np.testing.assert_array_equal(ls.clicks, [[0, 1, 0], [1, 0, 0]])
    np.testing.assert_allclose(ls.X[1, :, 0], [0.4, 0.0, 0.5])


def test_bootstrap_replicates_retrain(open_df):
    sim = simulate_clicks(queries=40, positions=5, sessions=1500, seed=5)
    res = estimate(open_df(sim.df), method="dla", n_bootstrap=3, seed=2)
    assert np.all(res.lower <= res.upper) and np.all((res.upper - res.lower)[1:] > 0)
    assert any("initialization" in n for n in res.notes)
