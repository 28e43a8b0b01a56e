"""Each model recovers its rank parameters from a log simulated by itself.

10,000 sessions of 10 results over 10 queries (the issue's 200k would take
minutes). Tolerances come from the counts behind each parameter: four standard
errors, with a ratio's relative error 1/sqrt(clicks) and a proportion's
sqrt(p (1 - p) / n).
"""

import numpy as np
import pytest

from tests.clickmodels.helpers import sessions_of
from ulr.clickmodels import DBN, DCM, PBM, SDBN, UBM, Cascade

Z = 4.0
N = 10000


def clicks_by_rank(S):
    return (S.click & S.mask).sum(axis=0)


def test_pbm_recovers_theta(simulated):
    log = simulated("pbm", N)
    S = sessions_of(log)
    m = PBM.fit(S)
    rel, truth = m.theta / m.theta[0], log.extra["truth"]["theta"]
    tol = Z * truth / np.sqrt(clicks_by_rank(S))
    assert np.all(np.abs(rel - truth) <= tol), (rel - truth, tol)


def test_ubm_recovers_gamma(simulated):
    log = simulated("ubm", N)
    S = sessions_of(log)
    m = UBM.fit(S)
    truth = log.extra["truth"]["gamma"]
    from ulr.clickmodels.base import prev_click_rank
    prev = prev_click_rank(S.click)
    K = S.ranks
    cell_clicks = np.bincount((np.arange(K)[None, :] * K + prev)[S.click], minlength=K * K)
    rel, trel = m.gamma / m.gamma[0, 0], truth / truth[0, 0]
    checked = 0
    for r in range(K):
        for p in range(r + 1):
            n = cell_clicks[r * K + p]
            if n >= 30:
                assert abs(rel[r, p] - trel[r, p]) <= Z * trel[r, p] / np.sqrt(n), (r, p)
                checked += 1
    assert checked >= 30


def test_dcm_recovers_lambda(simulated):
    log = simulated("dcm", N)
    S = sessions_of(log)
    m = DCM.fit(S)
    lam = m.parameters()["continuation_after_click"][:-1]
    truth = log.extra["truth"]["lam"][:-1]
    n = clicks_by_rank(S)[:-1]
    tol = Z * np.sqrt(truth * (1 - truth) / n)
    assert np.all(np.abs(lam - truth) <= tol), (lam - truth, tol)


def test_dbn_recovers_gamma(simulated):
    log = simulated("dbn", N)
    S = sessions_of(log)
    m = DBN.fit(S)
    g = log.extra["truth"]["gamma"]
    transitions = int(S.mask[:, 1:].sum())  # rank-to-rank steps, examined or not
    n_effective = transitions * float(m.examination_by_rank(S)[1:].mean())
    assert abs(m.gamma - g) <= Z * np.sqrt(g * (1 - g) / n_effective)


@pytest.mark.parametrize("name,cls", [("cascade", Cascade), ("dcm", DCM), ("dbn", DBN),
                                      ("sdbn", SDBN)])
def test_chain_models_recover_examination_by_rank(simulated, name, cls):
    """The average probability of examining each rank against the simulator's own."""
    log = simulated(name, N)
    S = sessions_of(log)
    exam = cls.fit(S).examination_by_rank(S)
    truth = log.theta
    tol = Z * np.sqrt(truth * (1 - truth) / S.sessions) + 1e-12
    # a session's examination depends on its documents' alpha, which are estimated too:
    # allow the spread of alpha's error on top (one more standard error per rank)
    tol = 2 * tol
    assert np.all(np.abs(exam - truth) <= tol), (exam - truth, tol)
