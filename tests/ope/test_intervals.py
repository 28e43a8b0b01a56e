"""ulr.ope.intervals: formulas against slow references; coverage over 100 small simulated logs."""

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from ulr.ope import estimators as est
from ulr.ope import registry
from ulr.ope import intervals as iv
from ulr.ope.simulate import simulate_bandit


def test_t_matches_a_slow_reference():
    rng = np.random.default_rng(1)
    x = rng.exponential(size=50)
    m = sum(x) / 50
    s = math.sqrt(sum((xi - m) ** 2 for xi in x) / 49)
    v, h = iv.t_halfwidth(x, level=0.9)
    assert v == pytest.approx(m, abs=1e-12)
    assert h == pytest.approx(student_t.ppf(0.95, 49) * s / math.sqrt(50), abs=1e-12)


def test_ratio_t_is_the_delta_method():
    rng = np.random.default_rng(2)
    w = rng.exponential(size=80)
    r = (rng.random(80) < 0.4).astype(float)
    v, h = iv.t_halfwidth(w * r, w, level=0.95)
    V = sum(w * r) / sum(w)
    e = [(wi * ri - V * wi) / (sum(w) / 80) for wi, ri in zip(w, r)]
    me = sum(e) / 80
    s = math.sqrt(sum((ei - me) ** 2 for ei in e) / 79)
    assert v == pytest.approx(V, abs=1e-12)
    assert h == pytest.approx(student_t.ppf(0.975, 79) * s / math.sqrt(80), abs=1e-12)


def test_sndr_t_interval_is_the_delta_method_of_its_two_means():
    """SNDR = mean(q_t) + sum w (r - q_l) / sum w: its t interval's spread is that of
    q_t,i + w_i (r_i - q_l,i - C) / mean(w), written here loop by loop."""
    rng = np.random.default_rng(5)
    n = 60
    w = rng.exponential(size=n)
    r = (rng.random(n) < 0.3).astype(float)
    ql, qt = rng.uniform(0.1, 0.5, n), rng.uniform(0.1, 0.5, n)
    b = iv.interval("sndr", r, w, method="t", q_logged=ql, q_target=qt, level=0.9)
    C = sum(wi * (ri - qi) for wi, ri, qi in zip(w, r, ql)) / sum(w)
    V = sum(qt) / n + C
    x = [qti + wi * (ri - qli - C) / (sum(w) / n) for qti, wi, ri, qli in zip(qt, w, r, ql)]
    mx = sum(x) / n
    s = math.sqrt(sum((xi - mx) ** 2 for xi in x) / (n - 1))
    h = student_t.ppf(0.95, n - 1) * s / math.sqrt(n)
    assert float(b.value) == pytest.approx(V, abs=1e-12)
    assert float(b.upper) - float(b.value) == pytest.approx(h, abs=1e-12)
    assert float(b.value) - float(b.lower) == pytest.approx(h, abs=1e-12)


def test_concentration_halfwidths_by_hand():
    x = np.array([0.0, 1.0, 0.5, 0.25, 1.0])
    n, a = 5, 0.1
    var = sum((xi - x.mean()) ** 2 for xi in x) / 4
    L = math.log(4 / a)  # Maurer & Pontil (2009), Thm 4, alpha/2 per side
    assert iv.bernstein_halfwidth(x, width=2.0, level=0.9) == pytest.approx(
        math.sqrt(2 * var * L / n) + 7 * 2.0 * L / (3 * (n - 1)), abs=1e-12)
    assert iv.hoeffding_halfwidth(n, width=2.0, level=0.9) == pytest.approx(
        2.0 * math.sqrt(math.log(2 / a) / (2 * n)), abs=1e-12)


def test_term_range_contains_every_term():
    rng = np.random.default_rng(3)
    W = 7.0
    w = np.r_[rng.uniform(0, W, 500), W, 0.0]
    r = rng.random(len(w))
    ql, qt = rng.random(len(w)), rng.random(len(w))
    for e, h in [("ips", None), ("clipped-ips", 3.0), ("dr", None), ("switch-dr", 2.0),
                 ("dros", 4.0), ("dros", 400.0), ("sg-ips", 0.3), ("sg-dr", 0.3), ("dm", None)]:
        num, _ = registry.row_terms(e, r, w, hyperparameter=h, q_logged=ql, q_target=qt)
        lo, hi = iv.term_range(e, max_weight=W, hyperparameter=h)
        assert lo <= num.min() and num.max() <= hi, e


def test_self_normalized_gets_no_concentration_bound():
    b = iv.interval("snips", np.ones(5), np.ones(5), method="hoeffding")
    assert np.isnan(b.lower) and "self-normalized" in b.note


# ---------------------------------------------------------------- coverage

D, N, LEVEL = 100, 300, 0.9
HYPER = {"switch-dr": 2.5, "dros": 30.0, "sg-ips": 0.02}  # mild: bias well below the SE


@pytest.fixture(scope="module")
def world():
    sim = simulate_bandit(contexts=10, actions=5, logging="uniform", base_rate=0.3, seed=1)
    pi = sim.policy(temperature=1.0)
    d = sim.sample(N, runs=D, seed=2)
    qhat = np.clip(sim.q[0] * 0.8 + 0.05, 0, 1)  # a misspecified reward model
    cand = sim.candidates
    qt = cand.per_context_sum(pi * qhat)[cand.context[d.pair]]
    return dict(truth=float(sim.true_value(pi)), reward=d.reward, weight=pi[d.pair] / d.propensity,
                q_logged=qhat[d.pair], q_target=qt,
                max_weight=float(np.max(pi / sim.logging)))


def coverage(world, estimator, method):
    b = iv.interval(estimator, world["reward"], world["weight"], method=method, level=LEVEL,
                    hyperparameter=HYPER.get(estimator), q_logged=world["q_logged"],
                    q_target=world["q_target"], max_weight=world["max_weight"], n_bootstrap=400)
    t = world["truth"]
    return float(np.mean((b.lower <= t) & (t <= b.upper)))


@pytest.mark.parametrize("estimator", ["ips", "snips", "dr", "sndr", "switch-dr", "dros", "sg-ips"])
@pytest.mark.parametrize("method", ["bootstrap", "t"])
def test_asymptotic_intervals_cover_at_their_level(world, estimator, method):
    se = math.sqrt(LEVEL * (1 - LEVEL) / D)  # binomial standard error of a coverage of 100 logs
    assert abs(coverage(world, estimator, method) - LEVEL) <= 3 * se


@pytest.mark.parametrize("estimator", ["ips", "dr", "switch-dr", "dros", "sg-ips"])
@pytest.mark.parametrize("method", ["hoeffding", "bernstein"])
def test_concentration_bounds_cover_at_least_their_level(world, estimator, method):
    assert coverage(world, estimator, method) >= LEVEL
