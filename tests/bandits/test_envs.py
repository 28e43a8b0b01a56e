"""Environments: Kveton, linear tags, and attraction estimated from a click log."""

import numpy as np
import pandas as pd
import pytest

from ulr.data import ingest
from ulr.bandits.envs import (CascadeEnv, data_env, doc_features, kveton_env, linear_env,
                              make_env, randomized_theta)
from ulr.errors import NeedsRandomizedRows, UlrError
from ulr.simulate import simulate_clicks, write_log


def test_kveton_env():
    env = kveton_env(items=16, positions=2, p=0.2, delta=0.15, seed=3)
    assert env.n_items == 16 and env.k == 2
    assert np.sum(env.w == 0.2) == 2 and np.allclose(np.sort(env.w)[:14], 0.05)
    assert set(env.optimal) == set(np.flatnonzero(env.w == 0.2))
    assert env.optimal_reward == pytest.approx(1 - 0.8**2)
    other = kveton_env(items=16, positions=2, p=0.2, delta=0.15, seed=4)
    assert not np.array_equal(env.w, other.w)      # positions are shuffled by the seed
    np.testing.assert_allclose(env.regret([env.optimal, [0, 1]]),
                               [0, (1 - 0.8**2) - (1 - np.prod(1 - env.w[[0, 1]]))])
    for bad in (dict(positions=16), dict(p=0.1, delta=0.2), dict(delta=0), dict(items=1)):
        with pytest.raises(UlrError):
            kveton_env(**bad)


def test_linear_env_is_multi_hot_and_linear():
    env = linear_env(items=400, positions=4, n_features=8, p=0.2, seed=1)
    x = env.features
    assert x.shape == (400, 8) and set(np.unique(x)) <= {0.0, 1.0}
    assert x.sum(axis=1).min() >= 1
    theta = np.array(env.params["theta"])
    np.testing.assert_allclose(env.w, np.clip(x @ theta, 0, 1), atol=1e-5)
    assert np.mean(x @ theta) == pytest.approx(0.2, rel=1e-4)


def test_env_validation():
    with pytest.raises(UlrError):
        CascadeEnv("x", [0.1, 1.2], 1)
    with pytest.raises(UlrError):
        CascadeEnv("x", [0.1, 0.2], 3)
    with pytest.raises(UlrError):
        CascadeEnv("x", [0.1, 0.2], 1, features=np.ones((3, 2)))
    with pytest.raises(UlrError):
        make_env("nope")
    with pytest.raises(UlrError, match="log"):
        make_env("data")


# ----------------------------------------------------------------------------- data env
@pytest.fixture(scope="module")
def sim_log(tmp_path_factory):
    sim = simulate_clicks(model="pbm", queries=20, positions=5, sessions=20000, eta=1.0,
                          randomized_fraction=0.3, features=3, seed=11)
    path = tmp_path_factory.mktemp("bandit_env") / "log.csv"
    write_log(sim.df, str(path))
    return sim, ingest.open_file(str(path))


def slow_data_w(df, theta):
    """Per document: clicks / sum of theta over its impressions (rows with a theta)."""
    out = {}
    for doc, g in df.groupby(df["doc_id"].astype(str)):
        num = den = 0.0
        n = 0
        for pos, click in zip(g["position"], g["click"]):
            th = theta[pos - 1] if pos - 1 < len(theta) else np.nan
            if np.isfinite(th) and th > 0:
                num += click
                den += th
                n += 1
        if n:
            out[doc] = (n, min(num / den, 1.0))
    return out


def test_data_env_matches_slow_reference(sim_log):
    sim, log = sim_log
    theta = np.array([1.0, 0.6, np.nan, 0.3])     # position 3 unknown, 5 beyond the array
    env = data_env(log, items=None, positions=3, theta=theta)
    ref = slow_data_w(sim.df, theta)
    assert env.n_items == len(ref)
    got = dict(zip(env.item_ids, env.w))
    for doc, (_, w) in ref.items():
        assert got[doc] == pytest.approx(w, rel=1e-12)
    imps = np.array([ref[d][0] for d in env.item_ids])
    assert np.all(np.diff(imps) <= 0)              # most shown first
    assert env.params["theta_from"] == "given"


def test_data_env_recovers_true_attraction_with_true_theta(sim_log):
    sim, log = sim_log
    env = data_env(log, items=None, positions=2, theta=sim.theta)
    gamma = sim.extra["gamma"].ravel()             # doc_id = query * D + local index
    truth = gamma[env.item_ids.astype(int)]
    th = sim.df["position"].map(lambda k: sim.theta[k - 1])
    exam = th.groupby(sim.df["doc_id"].astype(str)).sum()[list(env.item_ids)].to_numpy()
    # clicks of a document are a sum of Bernoullis with mean w * sum(theta):
    # sd(w_hat) <= sqrt(w / sum theta); allow 5 sd (+ a floor for w near 0)
    tol = 5 * np.sqrt(np.maximum(truth, 0.01) / exam)
    assert np.all(np.abs(env.w - truth) <= tol)


def test_default_theta_from_randomized_rows(sim_log):
    sim, log = sim_log
    df = sim.df[sim.df["randomized"] == 1]
    ctr = df.groupby("position")["click"].mean().to_numpy()
    np.testing.assert_allclose(randomized_theta(log), ctr / ctr[0])
    env = data_env(log, items=30, positions=3)
    assert env.n_items == 30 and env.params["theta_from"] == "randomized CTR ratios"
    ref = slow_data_w(sim.df, ctr / ctr[0])
    for doc, w in zip(env.item_ids, env.w):
        assert w == pytest.approx(ref[doc][1])


def test_doc_features_are_document_means_plus_intercept(sim_log):
    sim, log = sim_log
    ids = np.array(["3", "57", "12"], dtype=object)
    x = doc_features(log, ids)
    means = sim.df.groupby(sim.df["doc_id"].astype(str))[["feature_1", "feature_2",
                                                          "feature_3"]].mean()
    np.testing.assert_allclose(x[:, :3], means.loc[list(ids)].to_numpy(), rtol=1e-9)
    np.testing.assert_array_equal(x[:, 3], 1.0)


def test_data_env_without_randomized_rows_refuses_unless_raw_ctr_is_asked_for(tmp_path):
    df = pd.DataFrame({"query_id": ["q"] * 8, "doc_id": ["a", "b", "c", "a", "b", "c", "a", "d"],
                       "position": [1, 2, 3, 1, 2, 3, 2, 1], "click": [1, 0, 0, 0, 1, 0, 1, 0]})
    path = tmp_path / "tiny.csv"
    df.to_csv(path, index=False)
    log = ingest.open_file(str(path))
    assert randomized_theta(log) is None
    with pytest.raises(NeedsRandomizedRows, match="no randomized rows"):
        data_env(log, items=None, positions=2)
    env = data_env(log, items=None, positions=2, raw_ctr=True)
    assert env.params["theta_from"].startswith("none: raw CTR")
    np.testing.assert_allclose(dict(zip(env.item_ids, env.w))["a"], 2 / 3)
    assert env.features is None
    with pytest.raises(UlrError, match="more than k"):
        data_env(log, items=None, positions=4, raw_ctr=True)
