"""Pluggable reward models: GBDT through reward_predictions, a user column by hand."""

import numpy as np
import pytest

from ulr.errors import UlrError
from ulr.ope import estimators as est
from ulr.ope.evaluate import reward_predictions
from ulr.ope.reward_models import make_reward_model, pair_predictions
from ulr.ope.simulate import simulate_bandit


@pytest.fixture(scope="module")
def world():
    sim = simulate_bandit(contexts=8, actions=5, seed=1)
    return sim, sim.policy(temperature=0.5), sim.sample(3000, seed=2).feedback(0)


def test_user_column_by_hand(world):
    sim, pi, fb = world
    q = sim.q[0]
    ql, qt = pair_predictions(fb, pi, q)
    c = fb.candidates
    i = 17
    ctx = c.context[fb.pair[i]]
    assert ql[i] == q[fb.pair[i]]
    assert qt[i] == pytest.approx(sum(pi[j] * q[j] for j in range(c.n_pairs)
                                      if c.context[j] == ctx), abs=1e-12)
    # the true model: DM is the true value up to the contexts' sampling
    assert est.direct_method(qt) == pytest.approx(sim.true_value(pi), abs=0.02)


def test_gbdt_model_fits_and_dr_stays_close(world):
    sim, pi, fb = world
    w = pi[fb.pair] / fb.propensity
    ql, qt = reward_predictions(fb, pi, model=make_reward_model("gbdt"), folds=2)
    assert np.all((ql >= 0) & (ql <= 1))
    v = est.doubly_robust(fb.reward, w, q_logged=ql, q_target=qt)
    se = np.std(qt + w * (fb.reward - ql), ddof=1) / np.sqrt(fb.n)
    assert abs(v - sim.true_value(pi)) < 4 * se


def test_unknown_model():
    with pytest.raises(UlrError):
        make_reward_model("forest")
    assert make_reward_model("linear") is None
