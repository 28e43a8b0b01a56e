"""SNDR, Switch-DR, DRos and sub-Gaussian IPS/DR: slow references, OBP's formulas, ground truth."""

import numpy as np
import pytest

from ulr.ope import estimators as est
from ulr.ope import registry
from ulr.ope.simulate import simulate_bandit

# ---------------------------------------------------------------- slow references (loops)


def ref_sndr(r, w, ql, qt):
    n = len(r)
    dm = sw = corr = 0.0
    for i in range(n):
        dm += qt[i]
        sw += w[i]
        corr += w[i] * (r[i] - ql[i])
    return dm / n + corr / sw


def ref_switch(r, w, ql, qt, tau):
    s = 0.0
    for i in range(len(r)):
        s += qt[i]
        if w[i] <= tau:  # Wang et al. 2017: DR below the threshold, DM above it
            s += w[i] * (r[i] - ql[i])
    return s / len(r)


def ref_dros(r, w, ql, qt, lam):
    s = 0.0
    for i in range(len(r)):
        shrunk = lam * w[i] / (w[i] ** 2 + lam)  # Su et al. 2020, optimistic shrinkage
        s += qt[i] + shrunk * (r[i] - ql[i])
    return s / len(r)


def ref_sg(r, w, lam, ql=None, qt=None):
    s = 0.0
    for i in range(len(r)):
        wl = w[i] / (1 - lam + lam * w[i])  # Metelli et al. 2021, power-mean correction
        s += wl * r[i] if ql is None else qt[i] + wl * (r[i] - ql[i])
    return s / len(r)


# OBP (obp/ope/estimators.py, _estimate_round_rewards), transcribed (SNDR, Switch-DR, DRos
# also run against 0.4.1's own code: benchmarks/compare_obp_dr.py; sub-Gaussian is 0.5's)
# for one position with q_hat_factual = ql and np.average(q_hat, weights=pi_e) = qt:
def obp_sndr(r, iw, ql, qt):
    return np.mean(qt + iw * (r - ql) / iw.mean())


def obp_switch(r, iw, ql, qt, lambda_):
    switch_indicator = np.array(iw <= lambda_, dtype=int)
    return np.mean(qt + switch_indicator * iw * (r - ql))


def obp_dros(r, iw, ql, qt, lambda_):
    if lambda_ < np.inf:
        iw_hat = (lambda_ * iw) / (iw ** 2 + lambda_)
    else:
        iw_hat = iw
    return np.mean(qt + iw_hat * (r - ql))


def obp_sg_ipw(r, iw, lambda_):
    return np.mean(iw / (1 - lambda_ + lambda_ * iw) * r)


@pytest.fixture
def log():
    rng = np.random.default_rng(11)
    n = 400
    p = rng.uniform(0.02, 1.0, n)
    t = rng.uniform(0.0, 1.0, n)
    r = (rng.random(n) < 0.3).astype(float)
    return r, est.importance_weights(t, p), rng.uniform(0, 1, n), rng.uniform(0, 1, n)


def test_match_slow_references_and_obp(log):
    r, w, ql, qt = log
    kw = dict(q_logged=ql, q_target=qt)
    assert est.sndr(r, w, **kw) == pytest.approx(ref_sndr(r, w, ql, qt), abs=1e-12)
    assert est.sndr(r, w, **kw) == pytest.approx(obp_sndr(r, w, ql, qt), abs=1e-12)
    for tau in (0.0, 1.0, 5.0, 20.0, np.inf):
        v = est.switch_dr(r, w, tau=tau, **kw)
        assert v == pytest.approx(ref_switch(r, w, ql, qt, tau), abs=1e-12)
        assert v == pytest.approx(obp_switch(r, w, ql, qt, tau), abs=1e-12)
    for lam in (0.5, 3.0, 100.0):
        v = est.dros(r, w, lam=lam, **kw)
        assert v == pytest.approx(ref_dros(r, w, ql, qt, lam), abs=1e-12)
        assert v == pytest.approx(obp_dros(r, w, ql, qt, lam), abs=1e-12)
    for lam in (0.0, 0.1, 0.5, 1.0):
        assert est.sg_ips(r, w, lam=lam) == pytest.approx(ref_sg(r, w, lam), abs=1e-12)
        assert est.sg_ips(r, w, lam=lam) == pytest.approx(obp_sg_ipw(r, w, lam), abs=1e-12)
        assert est.sg_dr(r, w, lam=lam, **kw) == pytest.approx(ref_sg(r, w, lam, ql, qt),
                                                               abs=1e-12)


def test_limits(log):
    r, w, ql, qt = log
    kw = dict(q_logged=ql, q_target=qt)
    dr = est.doubly_robust(r, w, **kw)
    assert est.switch_dr(r, w, tau=np.inf, **kw) == pytest.approx(dr, abs=1e-12)
    assert est.dros(r, w, lam=np.inf, **kw) == pytest.approx(dr, abs=1e-12)
    assert est.sg_dr(r, w, lam=0.0, **kw) == pytest.approx(dr, abs=1e-12)
    assert est.switch_dr(r, w, tau=0.0, **kw) == pytest.approx(est.direct_method(qt), abs=1e-12)
    assert est.dros(r, w, lam=0.0, **kw) == pytest.approx(est.direct_method(qt), abs=1e-12)
    assert est.sg_ips(r, w, lam=0.0) == pytest.approx(est.ips(r, w), abs=1e-12)


def test_row_terms_give_the_estimates(log):
    r, w, ql, qt = log
    kw = dict(q_logged=ql, q_target=qt)
    cases = [("sndr", None, est.sndr(r, w, **kw)),
             ("switch-dr", 4.0, est.switch_dr(r, w, tau=4.0, **kw)),
             ("dros", 2.0, est.dros(r, w, lam=2.0, **kw)),
             ("sg-ips", 0.2, est.sg_ips(r, w, lam=0.2)),
             ("sg-dr", 0.2, est.sg_dr(r, w, lam=0.2, **kw)),
             ("clipped-ips", 3.0, est.clipped_ips(r, w, clip=3.0)),
             ("dr", None, est.doubly_robust(r, w, **kw))]
    for name, h, value in cases:
        num, den = registry.row_terms(name, r, w, hyperparameter=h, **kw)
        assert num.sum() / den.sum() == pytest.approx(value, abs=1e-12), name


def test_broadcast_over_draws(log):
    r, w, ql, qt = log
    R, W, QL, QT = (np.stack([x, x[::-1]]) for x in (r, w, ql, qt))
    v = est.dros(R, W, q_logged=QL, q_target=QT, lam=2.0)
    assert v[1] == pytest.approx(ref_dros(r[::-1], w[::-1], ql[::-1], qt[::-1], 2.0), abs=1e-12)
    v = est.sndr(R, W, q_logged=QL, q_target=QT)
    assert v[1] == pytest.approx(ref_sndr(r[::-1], w[::-1], ql[::-1], qt[::-1]), abs=1e-12)


def test_bad_hyperparameters(log):
    r, w, ql, qt = log
    with pytest.raises(ValueError):
        est.switch_dr(r, w, q_logged=ql, q_target=qt, tau=-1)
    with pytest.raises(ValueError):
        est.dros(r, w, q_logged=ql, q_target=qt, lam=np.nan)
    with pytest.raises(ValueError):
        est.sg_ips(r, w, lam=1.5)
    with pytest.raises(ValueError):
        registry.row_terms("switch-dr", r, w, q_logged=ql, q_target=qt)


# ---------------------------------------------------------------- ground truth


def model_terms(sim, pi, draws, qhat):
    """``q_logged``, ``q_target`` of a fixed reward model ``qhat`` (per pair) on every draw."""
    cand = sim.candidates
    per_ctx = cand.per_context_sum(pi * qhat)  # sum_a pi(a|c) qhat(c, a)
    return qhat[draws.pair], per_ctx[cand.context[draws.pair]]


def test_unbiased_with_the_true_model_and_consistent_otherwise():
    sim = simulate_bandit(contexts=10, actions=8, logging="softmax", seed=3)
    pi = sim.policy(temperature=0.5)
    truth = float(sim.true_value(pi))
    D, n = 400, 400
    d = sim.sample(n, runs=D, seed=5)
    w = pi[d.pair] / d.propensity
    exact = sim.q[0]
    wrong = np.full_like(exact, exact.mean())  # a constant model: misspecified
    for qhat, unbiased in ((exact, ("switch-dr", "dros", "sg-dr", "sndr")), (wrong, ("sndr",))):
        ql, qt = model_terms(sim, pi, d, qhat)
        kw = dict(q_logged=ql, q_target=qt)
        vals = {"sndr": est.sndr(d.reward, w, **kw),
                "switch-dr": est.switch_dr(d.reward, w, tau=5.0, **kw),
                "dros": est.dros(d.reward, w, lam=5.0, **kw),
                "sg-dr": est.sg_dr(d.reward, w, lam=0.1, **kw)}
        for name in unbiased:  # sndr's O(1/n) bias is far below 4 SE of the mean of 400 logs
            v = vals[name]
            se = v.std(ddof=1) / np.sqrt(D)
            assert abs(v.mean() - truth) < 4 * se, (name, v.mean(), truth, se)
    # with the constant model, switching to it costs bias that the test can see
    ql, qt = model_terms(sim, pi, d, wrong)
    v = est.switch_dr(d.reward, w, tau=0.0, q_logged=ql, q_target=qt)
    assert abs(v.mean() - truth) > 4 * v.std(ddof=1) / np.sqrt(D)
