"""Each model recovers its rank parameters from a log simulated by itself.

200,000 sessions of 10 results over 10 queries, each query's list shown in one of 20
fixed orders (so every document is seen at many ranks and sessions repeat), fitted on
the distinct session patterns with their counts. Tolerances come from
the counts behind each parameter: four standard errors, with a ratio's relative error
1/sqrt(clicks) and a proportion's sqrt(p (1 - p) / n).
"""

import numpy as np
import pytest

from tests.clickmodels.helpers import compress, sessions_of
from ulr.clickmodels import DBN, DCM, PBM, SDBN, UBM, Cascade
from ulr.simulate import simulate_click_model

Z = 4.0
N = 200_000
ORDERS = 20


@pytest.fixture(scope="module")
def simulated():
    """``simulated(model)``: the log (truth in ``extra``) and its distinct patterns with
    counts (what ``sessions.collect`` returns; tests/clickmodels/test_patterns.py), cached."""
    cache = {}

    def get(model):
        if model not in cache:
            log = simulate_click_model(model, sessions=N, queries=10, positions=10,
                                       seed=1, orders=ORDERS)
            cache[model] = (log, compress(sessions_of(log)))
        return cache[model]
    return get


@pytest.fixture(scope="module")
def fitted(simulated):
    """``fitted(model, cls)``: ``cls`` fitted on ``model``'s log, cached."""
    cache = {}

    def get(model, cls):
        if (model, cls) not in cache:
            cache[model, cls] = cls.fit(simulated(model)[1])
        return cache[model, cls]
    return get


def clicks_by_rank(S):
    return S.count @ (S.click & S.mask)


def test_pbm_recovers_theta(simulated):
    log, S = simulated("pbm")
    m = PBM.fit(S)
    rel, truth = m.theta / m.theta[0], log.extra["truth"]["theta"]
    tol = Z * truth / np.sqrt(clicks_by_rank(S))
    assert np.all(np.abs(rel - truth) <= tol), (rel - truth, tol)


def test_ubm_recovers_gamma(simulated):
    log, S = simulated("ubm")
    m = UBM.fit(S)
    truth = log.extra["truth"]["gamma"]
    from ulr.clickmodels.base import prev_click_rank
    prev = prev_click_rank(S.click)
    K = S.ranks
    cells = np.broadcast_to(np.arange(K)[None, :] * K, prev.shape) + prev
    counts = np.broadcast_to(S.count[:, None], prev.shape)
    cell_clicks = np.bincount(cells[S.click], counts[S.click], minlength=K * K)
    rel, trel = m.gamma / m.gamma[0, 0], truth / truth[0, 0]
    checked = 0
    for r in range(K):
        for p in range(r + 1):
            n = cell_clicks[r * K + p]
            if n >= 30:
                assert abs(rel[r, p] - trel[r, p]) <= Z * trel[r, p] / np.sqrt(n), (r, p)
                checked += 1
    assert checked >= 30


def test_dcm_recovers_lambda(simulated, fitted):
    log, S = simulated("dcm")
    m = fitted("dcm", DCM)
    lam = m.parameters()["continuation_after_click"][:-1]
    truth = log.extra["truth"]["lam"][:-1]
    n = clicks_by_rank(S)[:-1]
    # whether the user went on after a click at r shows only through a later click: with
    # alpha ~ Beta(1, 2) (E[1 - alpha] = 2/3) a user who goes on clicks below with
    # probability p = 1 - (2/3)^(K - r), so the evidence is a Bernoulli(lambda p) per click
    # and lambda's standard error is sqrt(lambda p (1 - lambda p) / n) / p
    K = S.ranks
    p = 1 - (2 / 3) ** (K - np.arange(1, K))
    tol = Z * np.sqrt(truth * p * (1 - truth * p) / n) / p
    assert np.all(np.abs(lam - truth) <= tol), (lam - truth, tol)


def test_dbn_recovers_gamma(simulated, fitted):
    log, S = simulated("dbn")
    m = fitted("dbn", DBN)
    g = log.extra["truth"]["gamma"]
    transitions = int(S.count @ S.mask[:, 1:].sum(axis=1))  # rank-to-rank steps
    n_effective = transitions * float(m.examination_by_rank(S)[1:].mean())
    assert abs(m.gamma - g) <= Z * np.sqrt(g * (1 - g) / n_effective)


@pytest.mark.parametrize("name,cls", [("cascade", Cascade), ("dcm", DCM), ("dbn", DBN),
                                      ("sdbn", SDBN)])
def test_chain_models_recover_examination_by_rank(simulated, fitted, name, cls):
    """The average probability of examining each rank against the simulator's own."""
    log, S = simulated(name)
    exam = fitted(name, cls).examination_by_rank(S)
    truth = log.theta
    tol = Z * np.sqrt(truth * (1 - truth) / S.total) + 1e-12
    # a session's examination depends on its documents' alpha, which are estimated too:
    # allow the spread of alpha's error on top (one more standard error per rank)
    tol = 2 * tol
    assert np.all(np.abs(exam - truth) <= tol), (exam - truth, tol)


@pytest.mark.parametrize("name,cls", [("pbm", PBM), ("ubm", UBM), ("cascade", Cascade),
                                      ("dcm", DCM), ("dbn", DBN), ("sdbn", SDBN)])
def test_the_default_prior_moves_no_well_observed_pair_by_its_standard_error(
        simulated, fitted, name, cls):
    """Every pair here is shown in about 20,000 sessions: the auto prior's pseudo-counts
    (a few results' worth) move its attractiveness by less than one standard error
    ``sqrt(alpha (1 - alpha) / E)``, with E the pair's expected examinations (alpha taken
    between the two fits: one without a prior may sit on 1, where the formula gives 0).
    PBM and UBM fix alpha only up to a scale shared with examination, so theirs is compared
    as a click probability at rank 1 (alpha times rank 1's examination), both fitted to
    convergence: along that scale EM crawls, and at the default cap of 200 iterations two
    UBM fits can still differ there by more than a standard error, prior or not."""
    _, S = simulated(name)
    if name in ("pbm", "ubm"):
        tight = dict(max_iter=3000, tol=1e-9, ll_tol=1e-9)
        auto, plain = cls.fit(S, **tight), cls.fit(S, prior="none", **tight)
        assert max(auto.iterations, plain.iterations) < 3000
    else:
        auto, plain = fitted(name, cls), cls.fit(S, prior="none")
    assert auto.prior.kind == "auto" and auto.prior.strength["attractiveness"] >= 1

    def at_rank_1(m):
        return m.alpha * {"pbm": lambda: m.theta[0], "ubm": lambda: m.gamma[0, 0]}.get(
            name, lambda: 1.0)()
    exam = np.bincount(S.pair[S.mask], (plain.examination(S) * S.count[:, None])[S.mask],
                       minlength=S.n_pairs)
    a, b = at_rank_1(plain), at_rank_1(auto)
    mid = (a + b) / 2
    se = np.sqrt(mid * (1 - mid) / exam)
    assert exam.min() > 1000
    assert np.all(np.abs(b - a) <= se), np.max(np.abs(b - a) / se)


@pytest.mark.parametrize("truth", ["pbm", "dbn", "ubm"])
def test_the_default_prior_lowers_perplexity_on_rarely_seen_pairs(truth):
    """On a long-tailed log (Zipf-like query frequencies), held-out perplexity of the
    impressions whose pair was seen in 1 or in 2-9 training sessions is lower with the auto
    prior than with none (where a pair seen once and clicked gets attractiveness 1), and no
    worse on the pairs seen 10 or more times."""
    from tests.clickmodels.helpers import long_tail_log
    from ulr.clickmodels import evaluate
    S = sessions_of(long_tail_log(truth, sessions=20000, queries=1000), test_every=5)
    got = {p: evaluate.compare(S, [truth], prior=p).score(truth).perplexity_by_frequency
           for p in ("none", "auto")}
    for bucket in ("1", "2-9"):
        assert got["none"][bucket]["impressions"] > 500
        assert got["auto"][bucket]["value"] < got["none"][bucket]["value"], (bucket, got)
    assert got["auto"]["10+"]["value"] <= got["none"]["10+"]["value"] + 1e-3, got
