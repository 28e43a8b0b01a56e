"""Simulated clicks on a labelled set (ulr.study.simulate) and θ estimated from them."""

import numpy as np
import pytest

from tests.study.letor import linear_set
from ulr.errors import UlrError
from ulr.simulate import attractiveness
from ulr.study import simulate as S
from ulr.study.labels import split_queries
from ulr.study.run import estimate_theta


@pytest.fixture(scope="module")
def train():
    return split_queries(linear_set(queries=60, docs=14, seed=2), seed=0)[0]


def test_without_noise_a_session_shows_the_production_top_k_in_order(train):
    scores = S.production_ranker(train, seed=1).score(train.X)
    log = S.simulate_clicks(train, scores, sessions=40, noise=0.0, randomized_fraction=0.0,
                            positions=5, seed=3)
    for s in range(40):  # the slow, obvious reference: sort each query's documents
        rows = log.session == s
        q = int(log.query[rows][0])
        docs = np.arange(train.starts[q], train.starts[q + 1])
        want = docs[np.argsort(-scores[docs], kind="stable")][:5]
        np.testing.assert_array_equal(log.doc[rows], want)
        assert log.position[rows].tolist() == [1, 2, 3, 4, 5]


def test_short_queries_show_all_their_documents_once():
    d = linear_set(queries=10, docs=4, seed=0)
    log = S.simulate_clicks(d, np.zeros(d.n_documents), sessions=50, positions=10, seed=0)
    assert len(log) == 50 * 4
    for s in range(50):
        rows = log.session == s
        assert sorted(log.doc[rows]) == list(range(d.starts[log.query[rows][0]],
                                                   d.starts[log.query[rows][0] + 1]))


def test_pbm_clicks_follow_theta_times_attractiveness(train):
    scores = S.production_ranker(train, seed=0).score(train.X)
    eta = 1.5
    log = S.simulate_clicks(train, scores, sessions=60_000, eta=eta, seed=5)
    np.testing.assert_allclose(log.theta_true, (1 / np.arange(1, 11)) ** eta)
    gamma = attractiveness(train.relevance[log.doc], eps=S.EPS, y_max=4)
    want = log.theta_true[log.position - 1] * gamma
    for k in (1, 5, 10):
        at = log.position == k
        n = at.sum()
        p = want[at].mean()
        assert abs(log.click[at].mean() - p) < 4 * np.sqrt(p * (1 - p) / n)


def test_cascade_clicks_once_at_most_and_dbn_ubm_trust_run(train):
    scores = S.production_ranker(train, seed=0).score(train.X)
    casc = S.simulate_clicks(train, scores, sessions=5000, model="cascade", seed=1)
    per_session = np.bincount(casc.session, weights=casc.click)
    assert per_session.max() == 1
    assert casc.theta_true[0] == 1.0 and np.all(np.diff(casc.theta_true) <= 0)
    pbm = S.simulate_clicks(train, scores, sessions=5000, model="pbm", seed=1)
    trust = S.simulate_clicks(train, scores, sessions=5000, model="trust", seed=1)
    assert trust.click.mean() > pbm.click.mean()  # trust bias adds clicks on irrelevant ones
    for model in ("dbn", "ubm"):
        log = S.simulate_clicks(train, scores, sessions=2000, model=model, seed=1)
        assert 0 < log.click.mean() < 1 and log.theta_true[0] == 1.0


def test_em_recovers_theta_from_the_simulated_clicks(train):
    """Done-when: EM's θ from the simulated clicks is within 0.05 of the simulated θ."""
    scores = S.production_ranker(train, seed=0).score(train.X)
    log = S.simulate_clicks(train, scores, sessions=20_000, eta=1.0, seed=7)
    theta = estimate_theta(log, train, "em", seed=0)
    truth = log.theta_true / log.theta_true[0]
    assert np.abs(theta - truth).max() < 0.05, (theta, truth)


def test_the_log_frame_is_a_canonical_click_log(train):
    log = S.simulate_clicks(train, np.zeros(train.n_documents), sessions=30, seed=0)
    df = log.frame(train, features=True)
    assert list(df.columns[:7]) == ["query_id", "doc_id", "position", "click", "session_id",
                                    "randomized", "relevance"]
    assert df.filter(like="feature_").shape[1] == train.n_features
    assert df.groupby("session_id")["doc_id"].nunique().eq(10).all()


@pytest.mark.parametrize("kw, words", [
    (dict(model="dcm"), "click model must be one of"),
    (dict(eta=-1.0), "eta must be"),
    (dict(sessions=0), "sessions must be at least 1"),
    (dict(randomized_fraction=2.0), "randomized share"),
])
def test_bad_options_are_refused(train, kw, words):
    with pytest.raises(UlrError, match=words):
        S.simulate_clicks(train, np.zeros(train.n_documents), **{"sessions": 10, **kw})


def test_a_production_column_must_be_a_feature(train):
    with pytest.raises(UlrError, match="not a feature"):
        S.production_ranker(train, feature="feature_99")
    p = S.production_ranker(train, feature="feature_2")
    np.testing.assert_allclose(p.score(train.X), train.X[:, 1], rtol=1e-6)
