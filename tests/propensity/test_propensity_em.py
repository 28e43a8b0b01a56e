"""PBM EM: the likelihood maximum (vs a direct optimizer), degeneracy guards, simulated truth."""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from ulr.errors import UlrError
from ulr.data.scan import cell_stats, scan_of
from ulr.propensity import em, estimate
from ulr.simulate import simulate_clicks


def row_loglik(df, theta, gamma_of):
    """Bernoulli log-likelihood summed over ROWS (no aggregation): the slow reference."""
    p = theta[df.position.to_numpy() - 1] * gamma_of
    c = df.click.to_numpy()
    return float(np.sum(c * np.log(p) + (1 - c) * np.log(1 - p)))


def test_em_reaches_the_maximum_of_the_row_likelihood(open_df):
    sim = simulate_clicks(queries=25, positions=5, sessions=4000, features=0, seed=4)
    df = sim.df
    log = open_df(df)
    st = cell_stats(scan_of(log))
    fit = em.pbm_em(st, tol=1e-15, max_iter=3000)

    # Reference: L-BFGS on logit(theta), logit(gamma) of the row-level likelihood.
    pair = pd.MultiIndex.from_arrays([df.query_id, df.doc_id]).factorize()[0]
    pos = df.position.to_numpy() - 1
    c = df.click.to_numpy().astype(float)
    k, m = 5, pair.max() + 1

    def nll(x):
        th, ga = 1 / (1 + np.exp(-x[:k])), 1 / (1 + np.exp(-x[k:]))
        p = th[pos] * ga[pair]
        d = c / p - (1 - c) / (1 - p)  # d loglik / d p
        g_th = np.bincount(pos, d * ga[pair], minlength=k) * th * (1 - th)
        g_ga = np.bincount(pair, d * th[pos], minlength=m) * ga * (1 - ga)
        return -np.sum(c * np.log(p) + (1 - c) * np.log(1 - p)), -np.concatenate([g_th, g_ga])

    x0 = np.zeros(k + m)
    ref = minimize(nll, x0, jac=True, method="L-BFGS-B",
                   options={"maxiter": 20000, "gtol": 1e-10, "ftol": 1e-15})
    th_ref = 1 / (1 + np.exp(-ref.x[:k]))
    # Our fit, evaluated on the rows, is at least as likely as the optimizer's (within 1e-6).
    # Map cell pairs to row pairs through (query, doc, position) -> gamma of the cell's pair.
    cells = pd.DataFrame({"pair_cell": st.pair, "position": st.position})
    keys = log.cur.execute(
        f"SELECT dense_rank() OVER (ORDER BY query_id, doc_id) - 1 AS pc, query_id, doc_id "
        f"FROM (SELECT DISTINCT query_id, doc_id FROM {log.table})").df()
    keys["query_id"] = keys["query_id"].astype(int)
    keys["doc_id"] = keys["doc_id"].astype(int)
    rows = df.merge(keys, on=["query_id", "doc_id"], how="left")
    ll_ours = row_loglik(rows, fit.theta, fit.gamma[rows["pc"].to_numpy()])
    assert len(cells) > 0
    assert ll_ours >= -ref.fun - 1e-6 * len(df)
    np.testing.assert_allclose(fit.theta / fit.theta[0], th_ref / th_ref[0], atol=2e-3)
    # The log-likelihood never decreases (SQUAREM keeps EM monotone).
    assert np.all(np.diff(fit.loglik) >= -1e-8 * len(df))


def test_plain_and_accelerated_em_agree(open_df):
    sim = simulate_clicks(queries=50, positions=6, sessions=5000, seed=8)
    st = cell_stats(scan_of(open_df(sim.df)))
    fast = em.pbm_em(st, tol=1e-13, max_iter=5000)
    slow = em.pbm_em(st, tol=1e-13, max_iter=20000, accelerate=False)
    assert fast.converged and slow.converged
    assert len(fast.loglik) < len(slow.loglik)
    np.testing.assert_allclose(fast.theta / fast.theta[0], slow.theta / slow.theta[0],
                               atol=2e-3)


def test_degenerate_cells_stay_finite(open_df):
    # Doc a is clicked whenever it is at 1 or 2, b and c never; position 3 never gets a click.
    rows = []
    for s in range(200):
        order = [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]][s % 3]
        for k, d in enumerate(order, start=1):
            rows.append({"query_id": "q1", "doc_id": d, "position": k,
                         "click": int(d == "a" and k < 3), "session_id": s})
    log = open_df(pd.DataFrame(rows))
    res = estimate(log, method="em")
    assert np.all(np.isfinite(res.theta))
    assert res.absolute.min() >= em.EPS and res.absolute.max() <= 1 - em.EPS
    assert res.theta[2] < 1e-3  # nothing is ever clicked at position 3


def test_pairs_always_at_one_position_are_refused(open_df):
    df = pd.DataFrame({"query_id": [1] * 40, "doc_id": [1, 2] * 20, "position": [1, 2] * 20,
                       "click": [1, 0, 0, 1] * 10})
    with pytest.raises(UlrError, match="single position"):
        estimate(open_df(df), method="em")


def test_unlinked_position_is_left_empty(open_df):
    # Docs a/b swap between positions 1 and 2; doc c is always at 3: theta_3 is not identified.
    rows = []
    for s in range(100):
        order = ["a", "b", "c"] if s % 2 else ["b", "a", "c"]
        for k, d in enumerate(order, start=1):
            rows.append({"query_id": 1, "doc_id": d, "position": k, "click": int(s % 3 == k - 1)})
    res = estimate(open_df(pd.DataFrame(rows)), method="em")
    assert np.isfinite(res.theta[1]) and np.isnan(res.theta[2])
    assert any("not identified" in n for n in res.notes)


def test_em_recovers_a_non_power_law_theta(open_df):
    # The setting: 1M rows, 10 positions, per-session ranker noise, 10% randomized.
    theta = np.array([0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06])
    sim = simulate_clicks(sessions=100_000, theta=theta, seed=21)
    res = estimate(open_df(sim.df), method="em")
    err = np.abs(res.theta - theta / theta[0])
    assert err.max() < 0.03, err
    assert res.extras["converged"]


def _ipf_reference(st, iters=20000):
    """Slow reference: the Poisson PBM by alternating its two closed forms to a fixed point."""
    pos0, pair, n, c = st.position - 1, st.pair, st.impressions, st.clicks
    c_k = np.bincount(pos0, c, minlength=st.positions)
    c_q = np.bincount(pair, c, minlength=st.n_pairs)
    theta = np.full(st.positions, 0.5)
    for _ in range(iters):
        expo_q = np.bincount(pair, n * theta[pos0], minlength=st.n_pairs)
        gamma = np.divide(c_q, expo_q, out=np.zeros_like(expo_q), where=expo_q > 0)
        expo_k = np.bincount(pos0, n * gamma[pair], minlength=st.positions)
        theta = np.divide(c_k, expo_k, out=np.zeros_like(expo_k), where=expo_k > 0)
        theta = theta / theta.max()
    return theta


@pytest.mark.parametrize("randomized", [0.02, 0.3])
def test_newton_start_is_the_poisson_maximum(open_df, randomized):
    # A mostly fixed production order (little randomization) is where the alternating
    # closed forms crawl; Newton must land on their fixed point all the same.
    sim = simulate_clicks(queries=40, positions=5, sessions=6000, features=0,
                          randomized_fraction=randomized, ranker_noise=0.0, seed=3)
    st = cell_stats(scan_of(open_df(sim.df)))
    theta, gamma = em.poisson_start(st)
    ref = _ipf_reference(st)
    np.testing.assert_allclose(theta / theta[0], ref / ref[0], rtol=1e-7)
    # gamma is the closed form C_qd / sum_k n theta_k at that theta (capped at 1).
    expo = np.bincount(st.pair, st.impressions * theta[st.position - 1], minlength=st.n_pairs)
    c_q = np.bincount(st.pair, st.clicks, minlength=st.n_pairs)
    np.testing.assert_allclose(gamma, np.minimum(c_q / expo, 1.0), rtol=1e-9)
    assert np.isclose(theta.max(), 0.9)


@pytest.mark.parametrize("seed", [5, 6])
def test_newtons_gram_matrix_is_the_sparse_product_to_the_bit(seed):
    """Newton's K x K matrix B'B from one compiled pass over cells sorted by pair: the
    outer products of each pair's row summed pair by pair, and bit for bit what scipy's
    sparse ``B.T @ B`` gives (so the start, and EM after it, keep their last bits)."""
    import scipy.sparse as sp
    from ulr.clickmodels.cells_jit import pair_gram
    rng = np.random.default_rng(seed)
    k, m = 6, 400
    cells = sorted({(int(q), int(p)) for q, p in zip(rng.integers(0, m, 1500),
                                                      rng.integers(0, k, 1500))})
    P = np.array([q for q, _ in cells], dtype=np.int64)
    K = np.array([p for _, p in cells], dtype=np.int64)
    b = rng.lognormal(0.0, 2.0, len(cells))
    ref = np.zeros((k, k))
    for q in range(m):
        row = np.zeros(k)
        row[K[P == q]] = b[P == q]
        ref += np.outer(row, row)
    got = pair_gram(P, K, b, k)
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    bb = sp.csr_matrix((b, (P, K)), shape=(m, k))
    np.testing.assert_array_equal(got, (bb.T @ bb).toarray())


def test_newtons_compiled_terms_are_the_numpy_expressions_to_the_bit():
    """The exposure per pair and the expected clicks and Gram matrix of one Newton step,
    each in one compiled pass, against the numpy expressions they replace, bit for bit."""
    from ulr.clickmodels.cells_jit import newton_terms, pair_exposure, pair_gram
    rng = np.random.default_rng(11)
    k, m = 5, 300
    cells = sorted({(int(q), int(p)) for q, p in zip(rng.integers(0, m, 1000),
                                                      rng.integers(0, k, 1000))})
    P = np.array([q for q, _ in cells], dtype=np.int64)
    K = np.array([p for _, p in cells], dtype=np.int64)
    N = rng.integers(1, 500, len(cells)).astype(float)
    th = rng.uniform(0.01, 1.0, k)
    s = pair_exposure(P, K, N, th, m)
    np.testing.assert_array_equal(s, np.bincount(P, N * th[K], minlength=m))
    c_q = rng.poisson(3.0, m).astype(float)
    has = (c_q > 0) & (s > 0)
    rate = np.divide(c_q, s, out=np.zeros(m), where=has)
    w = np.sqrt(rate * np.divide(1.0, s, out=np.zeros(m), where=has))
    e, g = newton_terms(P, K, N, th, rate, w, k)
    nth = N * th[K]
    np.testing.assert_array_equal(e, np.bincount(K, nth * rate[P], minlength=k))
    np.testing.assert_array_equal(g, pair_gram(P, K, nth * w[P], k))


def test_newton_start_does_not_depend_on_the_order_of_the_cells(open_df):
    sim = simulate_clicks(queries=30, positions=5, sessions=3000, features=0, seed=8)
    st = cell_stats(scan_of(open_df(sim.df)))
    bt = em._Batch(st.position - 1, st.pair, st.impressions, st.clicks, st.positions,
                   st.n_pairs)
    perm = np.random.default_rng(0).permutation(len(st.pair))
    shuffled = em._Batch((st.position - 1)[perm], st.pair[perm], st.impressions[perm],
                         st.clicks[perm], st.positions, st.n_pairs)
    (t1, g1), (t2, g2) = em._poisson_start(bt), em._poisson_start(shuffled)
    np.testing.assert_allclose(t2, t1, rtol=1e-10)
    np.testing.assert_allclose(g2, g1, rtol=1e-10)


@pytest.mark.parametrize("pseudo", [None, (1.0, 1.0), (0.5, 3.0)])
def test_em_step_is_the_click_models_kernel_with_an_optional_prior(pseudo):
    """Position bias's EM step runs the click models' compiled PBM kernel; against the
    posterior formulas written out per cell (module docstring), with and without a Beta
    prior's pseudo-counts in the M-step."""
    from ulr.clickmodels import prior as priors
    rng = np.random.default_rng(3)
    k, m, L = 4, 30, 90
    pos0, pair = rng.integers(0, k, L), rng.integers(0, m, L)
    n = rng.integers(1, 50, L).astype(float)
    c = np.floor(n * rng.uniform(0, 0.6, L))
    theta, gamma = rng.uniform(0.1, 0.9, (1, k)), rng.uniform(0.05, 0.95, (1, m))
    bt = em._Batch(pos0, pair, n, c, k, m)
    pr = None if pseudo is None else priors.fixed(*pseudo)
    t_new, g_new, ll = em._em_step(bt, theta.copy(), gamma.copy(), 1e-12, prior=pr)
    th, ga = theta[0][pos0], gamma[0][pair]
    q = 1 - th * ga
    e_post = c + (n - c) * th * (1 - ga) / q  # examined, per cell
    r_post = c + (n - c) * ga * (1 - th) / q  # attractive, per cell
    a, b = pseudo or (0.0, 0.0)
    want_t = (np.bincount(pos0, e_post, k) + a) / (np.bincount(pos0, n, k) + a + b)
    live = np.bincount(pair, n, m) > 0
    want_g = (np.bincount(pair, r_post, m) + a) / np.where(live, np.bincount(pair, n, m) + a + b,
                                                           1.0)
    np.testing.assert_allclose(t_new[0], want_t, rtol=1e-12)
    np.testing.assert_allclose(g_new[0][live], want_g[live], rtol=1e-12)
    assert abs(ll[0] - float(np.sum(c * np.log(th * ga) + (n - c) * np.log(q)))) < 1e-9
