"""ulr.rankers.learners: the linear and the boosted learner, naive and IPW."""

import numpy as np

from ulr import rankers as R
from ulr.simulate import simulate_clicks


# Small logs keep the file fast: 300 queries x 10 docs, 20k sessions (200k rows)
# fit in well under a second per ranker.
Q, S = 300, 20_000


def test_boosted_learner_ipw_beats_naive():
    sim = simulate_clicks(queries=600, sessions=30_000, eta=1.5, seed=0)
    comp = R.train_and_evaluate(sim.df, None, sim.theta, learner="gbdt", seed=0)
    m = comp.metrics()
    assert m["ipw"]["arp"] < m["naive"]["arp"]
    assert m["ipw"]["ndcg@10"] > m["naive"]["ndcg@10"]
    # deterministic given the seed
    small = simulate_clicks(queries=60, sessions=3000, eta=1.5, seed=1)
    runs = [R.train_and_evaluate(small.df, None, small.theta, learner="gbdt", seed=4).metrics()
            for _ in range(2)]
    assert runs[0] == runs[1]


def test_clip_at_one_is_naive_and_snips_is_a_regularization_rescale():
    sim = simulate_clicks(queries=100, sessions=5000, eta=1.5, seed=3)
    df = sim.df
    naive = R.LinearPairwiseRanker(loss="logistic").fit(df)
    clipped = R.LinearPairwiseRanker(loss="logistic", clip=1.0).fit(df, sim.theta)
    np.testing.assert_allclose(clipped.coef_, naive.coef_)
    # SNIPS divides the weighted loss by sum(w) instead of n: the same optimum as IPS
    # with lambda scaled by mean(w)
    pairs = R.click_pairs(df)
    mean_w = R.ipw_weights(df["position"].to_numpy()[pairs.clicked], sim.theta).mean()
    snips = R.LinearPairwiseRanker(loss="logistic", alpha=0.01, normalize=True).fit(df, sim.theta)
    ips = R.LinearPairwiseRanker(loss="logistic", alpha=0.01 * mean_w).fit(df, sim.theta)
    np.testing.assert_allclose(snips.coef_, ips.coef_, rtol=1e-3, atol=1e-6)
    assert not np.allclose(snips.coef_, naive.coef_, rtol=1e-2)


def test_linear_ranker_recovers_relevance_direction():
    # at eta = 0 the click preferences follow relevance: the learned weights point
    # along the true relevance weights much more than along the logging ranker's error
    sim = simulate_clicks(queries=Q, sessions=S, eta=0.0, seed=5)
    w = R.LinearPairwiseRanker().fit(sim.df).coef_
    cos = w @ sim.relevance_weights / np.linalg.norm(w) / np.linalg.norm(sim.relevance_weights)
    assert cos > 0.95
