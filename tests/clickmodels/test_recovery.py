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
            log = simulate_click_model(model, sessions=N, queries=10, docs_per_query=10,
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
