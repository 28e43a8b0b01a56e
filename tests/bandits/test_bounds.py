"""Theory curves: the UCB1 upper bound holds empirically; the lower bound formula."""

import math

import numpy as np
import pytest
from scipy.stats import entropy

from ulr.bandits.bounds import (ZETA3, cascade_lower_bound, cascade_lower_bound_rate,
                                env_bounds, kl_bernoulli, ucb1_upper_bound)
from ulr.bandits.envs import CascadeEnv, kveton_env
from ulr.bandits.simulate import simulate
from ulr.errors import UlrError


def test_kl_bernoulli_matches_scipy_entropy():
    for p, q in [(0.05, 0.2), (0.5, 0.1), (0.0, 0.3), (1.0, 0.6), (0.3, 0.3)]:
        assert float(kl_bernoulli(p, q)) == pytest.approx(entropy([p, 1 - p], [q, 1 - q]),
                                                          abs=1e-15)


def test_ucb1_bound_formula_by_hand():
    w = np.array([0.9, 0.6, 0.5])
    n = 1000
    by_hand = sum(d * (math.ceil(8 * math.log(n) / d**2) - 1 + 2 * ZETA3) for d in (0.3, 0.4))
    assert ucb1_upper_bound(w, n) == pytest.approx(by_hand)
    assert ucb1_upper_bound(w, 2) == pytest.approx(2 * 0.4)     # the trivial n * max gap
    assert np.all(ucb1_upper_bound(np.array([0.2, 0.2]), [1, 10]) == 0)


@pytest.mark.parametrize("w", [[0.9, 0.6, 0.5, 0.4], [0.5, 0.45, 0.3, 0.3, 0.1]])
def test_ucb1_mean_regret_stays_under_its_bound(w):
    """Plain UCB1 (K = 1) on Bernoulli arms: mean regret of 20 runs <= the bound.

    The bound is on the expectation; the 20-run mean has a standard error of
    about 3% of the regret, far below the bound's slack (the mean reaches at
    most ~45% of the bound on these instances), so a correct implementation
    passes reliably. Like every UCB1-style bound it is loose: it checks the
    order of magnitude and the constants of the derivation, not optimality.
    """
    env = CascadeEnv("custom", np.array(w), 1)
    n = 8000
    sim = simulate("ucb1", env, steps=n, runs=20, seed=5)
    t = np.arange(1, n + 1)
    bound = ucb1_upper_bound(env.w, t)
    mean = sim.cum_regret.mean(axis=0)
    assert np.all(mean <= bound), float(np.max(mean - bound))
    gaps = env.w.max() - env.w
    assert bound[-1] < n * gaps.max()           # the bound is not the trivial one here
    assert mean[-1] > 0.05 * bound[-1]          # and the regret is not negligible


def test_cascade_lower_bound_value():
    kl = 0.05 * math.log(0.05 / 0.2) + 0.95 * math.log(0.95 / 0.8)
    c = 14 * 0.15 * 0.8 / kl
    assert cascade_lower_bound_rate(items=16, positions=2, p=0.2, delta=0.15) == pytest.approx(c)
    np.testing.assert_allclose(cascade_lower_bound([1, 100], items=16, positions=2, p=0.2, delta=0.15),
                               [0.0, c * math.log(100)])
    with pytest.raises(UlrError):
        cascade_lower_bound_rate(items=4, positions=4, p=0.2, delta=0.1)


def test_klucb_grows_at_least_like_the_lower_bound_rate():
    """Asymptotically R(n) >= c log n: the regret between n/4 and n (log n - log n/4
    growth) exceeds a fraction of c log 4 once the algorithm has settled."""
    env = kveton_env(items=8, positions=2, p=0.2, delta=0.15, seed=0)
    sim = simulate("cascade-klucb", env, steps=8000, runs=8, seed=1)
    c = cascade_lower_bound_rate(items=8, positions=2, p=0.2, delta=0.15)
    m = sim.cum_regret.mean(axis=0)
    assert m[-1] - m[2000 - 1] > 0.5 * c * math.log(4)


def test_env_bounds_apply_only_where_valid():
    t = np.array([1, 10, 100])
    kv = kveton_env(items=6, positions=1)
    assert set(env_bounds(kv, t, algorithms=("ucb1",))) == {"ucb1 upper bound",
                                                            "asymptotic lower bound (Kveton et al.)"}
    assert set(env_bounds(kveton_env(items=6, positions=2), t, algorithms=("ucb1",))) == {
        "asymptotic lower bound (Kveton et al.)"}
    assert env_bounds(CascadeEnv("data", [0.1, 0.2, 0.3], 1), t, algorithms=("ts",)) == {}
