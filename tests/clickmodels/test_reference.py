"""Each model's EM against a slow, obvious reference: enumerate every latent state of every
session from the generative story, one session at a time, in plain Python.

Both run the same number of iterations from the same start (tol = 0), so they
must agree to 1e-9 on a small log. The reference's M-step follows PyClick's documented
rule (every parameter's counts start each iteration at one success in two trials, then
each session adds its posterior; Chuklin, Markov & de Rijke 2015, §4), which is ulr's
``prior="1,1"``.
"""

import itertools
import math

import numpy as np
import pytest

from ulr.clickmodels import DBN, DCM, PBM, SDBN, UBM, Cascade
from ulr.clickmodels.sessions import Sessions

ITER = 6
A, B = 1.0, 1.0  # the pseudo-counts of PRIOR
PRIOR = "1,1"


@pytest.fixture(scope="module")
def small():
    """40 sessions of 4 ranks over 6 documents, some sessions shorter; a few held out."""
    rng = np.random.default_rng(7)
    s_, p_, r_, c_, t_ = [], [], [], [], []
    for s in range(40):
        n = 4 if s % 5 else 3
        docs = rng.permutation(6)[:n]
        for r, d in enumerate(docs, 1):
            s_.append(s), p_.append(int(d)), r_.append(r)
            c_.append(int(rng.random() < [0.6, 0.45, 0.35, 0.25][r - 1] * (0.5 + d / 10)))
            t_.append(s % 8 == 0)
    return Sessions.from_rows(s_, p_, r_, c_, t_)


def rows(S, s):
    """A session as plain lists: pairs and clicks of its ranks 1..n."""
    n = int(S.length[s])
    return [int(x) for x in S.pair[s, :n]], [bool(x) for x in S.click[s, :n]]


def train(S):
    return [s for s in range(S.sessions) if not S.test[s]]


def beta(num, den, key):
    """The M-step of one parameter: A pseudo-successes in A + B pseudo-trials, plus its
    expected counts (0 for a parameter no session informs)."""
    return (num.get(key, 0.0) + A) / (den.get(key, 0.0) + A + B)


# ----------------------------------------------------------------- PBM and UBM


def row_model_em(S, exam_key, n_exam_keys):
    """PBM/UBM: each row's (E, A) enumerated; C = E * A."""
    alpha = [0.5] * S.n_pairs
    exam = {}
    for _ in range(ITER):
        na, da, ne, de = {}, {}, {}, {}
        for s in train(S):
            pairs, clicks = rows(S, s)
            prev = 0
            for r, (q, c) in enumerate(zip(pairs, clicks), 1):
                k = exam_key(r, prev)
                g, a = exam.get(k, 0.5), alpha[q]
                joint = {}
                for e, at in itertools.product((0, 1), repeat=2):
                    if (e * at) != int(c):
                        continue
                    joint[(e, at)] = (g if e else 1 - g) * (a if at else 1 - a)
                z = sum(joint.values())
                na[q] = na.get(q, 0) + sum(p for (e, at), p in joint.items() if at) / z
                da[q] = da.get(q, 0) + 1
                ne[k] = ne.get(k, 0) + sum(p for (e, at), p in joint.items() if e) / z
                de[k] = de.get(k, 0) + 1
                if c:
                    prev = r
        alpha = [beta(na, da, q) for q in range(S.n_pairs)]
        exam = {k: beta(ne, de, k) for k in de}  # an unseen key stays at A / (A + B)
    return np.array(alpha), exam


def test_pbm_em_matches_reference(small):
    alpha, theta = row_model_em(small, lambda r, prev: r, small.ranks)
    m = PBM.fit(small, max_iter=ITER, tol=0, ll_tol=None, prior=PRIOR)
    np.testing.assert_allclose(m.alpha, alpha, atol=1e-9)
    np.testing.assert_allclose(m.theta, [theta[r] for r in range(1, small.ranks + 1)], atol=1e-9)


def test_ubm_em_matches_reference(small):
    alpha, gamma = row_model_em(small, lambda r, prev: (r, prev), small.ranks)
    m = UBM.fit(small, max_iter=ITER, tol=0, ll_tol=None, prior=PRIOR)
    np.testing.assert_allclose(m.alpha, alpha, atol=1e-9)
    for (r, prev), g in gamma.items():
        assert abs(m.gamma[r - 1, prev] - g) < 1e-9


# ----------------------------------------------------------------- the chain models


def session_states(pairs, clicks, alpha, cont_click, cont_skip, sat=None):
    """Every latent (E_1..E_n, S at each clicked rank) consistent with the clicks, with its
    joint probability under the story: E_1 = 1; an examined result is clicked w.p. alpha;
    after a click, satisfied w.p. sat (DBN) and then stops, else goes on w.p. cont_click(r);
    after a skip goes on w.p. cont_skip(r); an unexamined rank is never clicked or examined
    below."""
    n = len(pairs)
    clicked = [r for r in range(n - 1) if clicks[r]]  # a click at the bottom: S says nothing
    out = []
    for E in itertools.product((0, 1), repeat=n - 1):
        E = (1,) + E
        for Sv in itertools.product((0, 1), repeat=len(clicked) if sat is not None else 0):
            Sd = dict(zip(clicked, Sv))
            p = 1.0
            for r in range(n):
                if not E[r]:
                    if any(clicks[r:]) or any(E[r:]):
                        p = 0.0
                    break
                a = alpha[pairs[r]]
                p *= a if clicks[r] else 1 - a
                if r + 1 == n:
                    break
                if clicks[r]:
                    if sat is not None:
                        s = sat[pairs[r]]
                        if Sd[r]:
                            p *= s * (0.0 if E[r + 1] else 1.0)
                            continue
                        p *= 1 - s
                    go = cont_click(r + 1)
                else:
                    go = cont_skip(r + 1)
                p *= go if E[r + 1] else 1 - go
            if p > 0:
                out.append((E, Sd, p))
    return out


def chain_em(S, *, kind, start=None):
    K = S.ranks
    alpha = list(start.alpha) if start is not None else [0.5] * S.n_pairs
    sat = list(start.sigma) if start is not None and kind != "dcm" else [0.5] * S.n_pairs
    lam = [0.5] * K
    gamma = 1.0 if kind == "sdbn" else 0.5
    for _ in range(ITER):
        na, da, ns, ds, nl, dl = {}, {}, {}, {}, {}, {}
        ng = dg = 0.0
        for s in train(S):
            pairs, clicks = rows(S, s)
            n = len(pairs)
            if kind == "dcm":
                states = session_states(pairs, clicks, alpha, lambda r: lam[r - 1], lambda r: 1.0)
            else:
                states = session_states(pairs, clicks, alpha, lambda r: gamma, lambda r: gamma,
                                        sat=sat)
            z = sum(p for _, _, p in states)
            for E, Sd, p in states:
                w = p / z
                for r in range(n):
                    q = pairs[r]
                    na[q] = na.get(q, 0) + w * clicks[r]
                    da[q] = da.get(q, 0) + w * E[r]
                    if clicks[r] and r + 1 < n:  # a click with a rank below it
                        if kind == "dcm":
                            nl[r] = nl.get(r, 0) + w * E[r + 1]
                            dl[r] = dl.get(r, 0) + w
                        else:
                            ns[q] = ns.get(q, 0) + w * Sd[r]
                            ds[q] = ds.get(q, 0) + w
                    if r + 1 < n and E[r] and not (clicks[r] and Sd.get(r, 0)):
                        ng += w * E[r + 1]
                        dg += w
        alpha = [beta(na, da, q) for q in range(S.n_pairs)]
        if kind == "dcm":
            lam = [beta(nl, dl, r) for r in range(K)]
        else:
            sat = [beta(ns, ds, q) for q in range(S.n_pairs)]
            if kind == "dbn":
                gamma = beta({0: ng}, {0: dg}, 0)
    return np.array(alpha), np.array(sat), np.array(lam), gamma


def test_dcm_em_matches_reference(small):
    alpha, _, lam, _ = chain_em(small, kind="dcm")
    m = DCM.fit(small, max_iter=ITER, tol=0, ll_tol=None, prior=PRIOR)
    np.testing.assert_allclose(m.alpha, alpha, atol=1e-9)
    np.testing.assert_allclose(m.lam, lam, atol=1e-9)


def test_dbn_em_matches_reference(small):
    alpha, sigma, _, gamma = chain_em(small, kind="dbn",
                                      start=SDBN.closed_form(small, prior=PRIOR))
    m = DBN.fit(small, max_iter=ITER, tol=0, ll_tol=None, prior=PRIOR)
    np.testing.assert_allclose(m.alpha, alpha, atol=1e-9)
    np.testing.assert_allclose(m.sigma, sigma, atol=1e-9)
    assert abs(m.gamma - gamma) < 1e-9


def closed_form_reference(S, pseudo=None):
    """Cascade and SDBN counting estimates, session by session; ``pseudo`` (a, b) adds a
    pseudo-successes in a + b pseudo-trials to every count, else an unseen pair gets the
    pooled ratio."""
    ca, cd, sa, sd, ss, sc = {}, {}, {}, {}, {}, {}
    for s in train(S):
        pairs, clicks = rows(S, s)
        n = len(pairs)
        first = clicks.index(True) + 1 if any(clicks) else n
        last = max(r + 1 for r in range(n) if clicks[r]) if any(clicks) else n
        for r, (q, c) in enumerate(zip(pairs, clicks), 1):
            if r <= first:
                cd[q] = cd.get(q, 0) + 1
                ca[q] = ca.get(q, 0) + (c and r == first)
            if r <= last:
                sd[q] = sd.get(q, 0) + 1
                sa[q] = sa.get(q, 0) + c
            if c:
                sc[q] = sc.get(q, 0) + 1
                ss[q] = ss.get(q, 0) + (r == last)
    out = []
    for num, den in ((ca, cd), (sa, sd), (ss, sc)):
        if pseudo is not None:
            a, b = pseudo
            out.append(np.array([(num.get(q, 0) + a) / (den.get(q, 0) + a + b)
                                 for q in range(S.n_pairs)]))
            continue
        p = sum(num.values()) / sum(den.values())
        out.append(np.array([num.get(q, 0) / den[q] if den.get(q) else p
                             for q in range(S.n_pairs)]))
    return out


@pytest.mark.parametrize("pseudo", [None, (A, B), (0.3, 2.5)])
def test_cascade_closed_form_matches_reference(small, pseudo):
    alpha, _, _ = closed_form_reference(small, pseudo)
    prior = "none" if pseudo is None else f"{pseudo[0]},{pseudo[1]}"
    np.testing.assert_allclose(Cascade.fit(small, prior=prior).alpha, alpha, atol=1e-12)


def test_sdbn_closed_form_and_em_match_reference(small):
    _, a0, s0 = closed_form_reference(small)
    start = SDBN.closed_form(small)  # the book's counts, no prior
    np.testing.assert_allclose(start.alpha, a0, atol=1e-12)
    np.testing.assert_allclose(start.sigma, s0, atol=1e-12)
    _, a1, s1 = closed_form_reference(small, (A, B))
    start = SDBN.closed_form(small, prior=PRIOR)
    np.testing.assert_allclose(start.alpha, a1, atol=1e-12)
    np.testing.assert_allclose(start.sigma, s1, atol=1e-12)
    alpha, sigma, _, gamma = chain_em(small, kind="sdbn", start=start)
    m = SDBN.fit(small, max_iter=ITER, tol=0, ll_tol=None, prior=PRIOR)
    np.testing.assert_allclose(m.alpha, alpha, atol=1e-9)
    np.testing.assert_allclose(m.sigma, sigma, atol=1e-9)
    assert m.gamma == gamma == 1.0


@pytest.mark.parametrize("cls", [PBM, UBM, Cascade, DCM, DBN, SDBN])
def test_session_likelihood_matches_enumeration(small, cls):
    """The filter's product of conditional click probabilities is the session's likelihood:
    the sum over all latent states of the story (chain models) / the product of row
    probabilities (PBM, UBM)."""
    m = cls.fit(small, max_iter=ITER, tol=0)
    ll = m.loglik(small)
    for s in range(small.sessions):
        pairs, clicks = rows(small, s)
        if cls in (PBM, UBM):
            p, prev = 1.0, 0
            for r, (q, c) in enumerate(zip(pairs, clicks), 1):
                g = m.theta[r - 1] if cls is PBM else m.gamma[r - 1, prev]
                pc = g * m.alpha[q]
                p *= max(pc if c else 1 - pc, 1e-6)
                prev = r if c else prev
        elif cls is Cascade:
            if sum(clicks) > 1:
                continue  # impossible under cascade; floored, checked elsewhere
            p = sum(x for _, _, x in session_states(pairs, clicks, m.alpha, lambda r: 0.0,
                                                   lambda r: 1.0))
        elif cls is DCM:
            p = sum(x for _, _, x in session_states(pairs, clicks, m.alpha,
                                                   lambda r: m.lam[r - 1], lambda r: 1.0))
        else:
            p = sum(x for _, _, x in session_states(pairs, clicks, m.alpha, lambda r: m.gamma,
                                                   lambda r: m.gamma, sat=m.sigma))
        assert abs(ll[s] - math.log(p)) < 1e-9, s


@pytest.mark.parametrize("cls", [DCM, DBN, SDBN])
def test_block_by_block_examination_equals_one_block(small, cls, monkeypatch):
    """The chain models' fits run compiled passes over all rows; what still goes block by
    block (``base.chunks``) is the examination by rank, which must not depend on it."""
    from ulr.clickmodels import base
    m = cls.fit(small, max_iter=ITER, tol=0)
    whole = m.examination_by_rank(small)
    monkeypatch.setattr(base, "CHUNK", 7)
    np.testing.assert_allclose(m.examination_by_rank(small), whole, atol=1e-12)


@pytest.mark.parametrize("cls", [PBM, UBM])
def test_sparse_and_blocked_cells_equal_dense_cells(small, cls, monkeypatch):
    from ulr.clickmodels import base, cells
    whole = cls.fit(small, max_iter=ITER, tol=0)
    monkeypatch.setattr(base, "CHUNK", 7)
    monkeypatch.setattr(cells, "DENSE_FACTOR", 0)
    other = cls.fit(small, max_iter=ITER, tol=0)
    np.testing.assert_allclose(other.alpha, whole.alpha, atol=1e-12)
    if cls is PBM:
        np.testing.assert_allclose(other.theta, whole.theta, atol=1e-12)
    else:
        np.testing.assert_allclose(other.gamma, whole.gamma, atol=1e-12)


@pytest.mark.parametrize("cls", [DCM, DBN, SDBN])
def test_e_step_loglik_is_the_session_likelihood(small, cls):
    """The log-likelihood the chain E-step returns (for its stopping rule) is the filter's."""
    from ulr.clickmodels import base
    m = cls.fit(small, max_iter=ITER, tol=0, ll_tol=None)
    w = np.arange(small.sessions, dtype=float) % 3
    ll = m._expected(small, w)[-1]
    assert abs(ll - w @ m.loglik(small)) < 1e-9


@pytest.mark.parametrize("cls", [PBM, UBM])
def test_cell_loglik_is_the_session_likelihood(small, cls):
    from ulr.clickmodels import base
    from ulr.clickmodels.cells import cells
    m = cls.fit(small, max_iter=ITER, tol=0, ll_tol=None)
    w = base.weights_of(small, None)
    from ulr.clickmodels.cells_jit import cell_step
    cl = cells(small, w, with_prev=cls is UBM)
    K = small.ranks
    idx, exam = (cl.rank - 1, m.theta) if cls is PBM else \
        ((cl.rank - 1) * K + cl.prev, m.gamma.ravel())
    ll = cell_step(cl.pair, idx, cl.n, cl.c, m.alpha, exam)[2]
    assert abs(ll - w @ m.loglik(small)) < 1e-9


@pytest.fixture(scope="module")
def ragged():
    """A DCM log with short sessions, sessions without clicks and clicks at the bottom rank,
    Poisson weights (some 0) and random parameters."""
    from tests.clickmodels.helpers import sessions_of
    from ulr.simulate import simulate_click_model
    df = simulate_click_model("dcm", sessions=3000, queries=5, positions=6, seed=3).df
    df = df[(df.position <= 6 - df.session_id % 3)]  # lengths 4, 5, 6
    S = sessions_of(df)
    rng = np.random.default_rng(1)
    return S, rng.poisson(2.0, S.sessions).astype(float), rng.uniform(0.05, 0.95, S.n_pairs)


@pytest.mark.parametrize("gamma", [0.7, 1.0])
def test_compiled_dbn_e_step_equals_numpy(ragged, gamma):
    """The fit's compiled E-step against the numpy formulation."""
    from ulr.clickmodels.dbn_jit import estep
    S, w, alpha = ragged
    m = DBN(alpha=alpha, sigma=np.random.default_rng(2).uniform(0.05, 0.95, S.n_pairs),
            gamma=gamma)
    want = m._expected(S, w)
    got = estep(S.pair, S.click, w, m.alpha, m.sigma, gamma)
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-9)


def test_compiled_dcm_e_step_equals_numpy(ragged):
    from ulr.clickmodels.dcm_jit import estep
    S, w, alpha = ragged
    m = DCM(alpha=alpha, lam=np.random.default_rng(3).uniform(0.05, 0.95, S.ranks))
    want = m._expected(S, w)
    got = estep(S.pair, S.click, w, m.alpha, m.lam)
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("cls", [PBM, UBM])
def test_a_never_clicked_pair_has_a_fixed_point_that_max_iter_does_not_decide(small, cls):
    """Without a prior, EM multiplies a never-clicked pair's attractiveness by
    (1 - theta) / (1 - theta alpha) < 1 every iteration, so where it stops decides the
    value; with pseudo-counts it converges to one value."""
    S = Sessions(pair=np.vstack([small.pair, [[6, 0, 1, 2]] * 3]),
                 click=np.vstack([small.click, [[False] * 4] * 3]),
                 test=np.concatenate([small.test, [False] * 3]), n_pairs=7)
    fits = {(p, it): cls.fit(S, prior=p, max_iter=it, tol=0, ll_tol=None)
            for p in ("none", "auto", PRIOR) for it in (300, 1200)}
    assert fits["none", 1200].alpha[6] < fits["none", 300].alpha[6] / 10
    for p in ("auto", PRIOR):
        a, b = fits[p, 300].alpha[6], fits[p, 1200].alpha[6]
        assert a > 0.01 and abs(a - b) < 1e-9, (p, a, b)
