"""Bandit building blocks against slow, obvious per-item references."""

import math

import numpy as np
import pytest
from scipy.special import xlogy

from ulr.bandits.bounds import kl_bernoulli
from ulr.bandits.envs import CascadeEnv, kveton_env, linear_env
from ulr.bandits.policies import (CascadeKLUCB, CascadeLinTS, CascadeLinUCB, CascadeTS,
                                  CascadeUCB1, RankedTS, RankedUCB1, cascade_feedback,
                                  klucb_index, klucb_rate, make_policy,
                                  sequential_rank1_update, sherman_morrison_update, topk)
from ulr.bandits.simulate import BanditRuns
from ulr.errors import UlrError


# ----------------------------------------------------------------------------- feedback
def slow_feedback(attracted):
    r, k = attracted.shape
    observed = np.zeros((r, k), bool)
    clicks = np.zeros((r, k), bool)
    for i in range(r):
        for j in range(k):
            observed[i, j] = True          # scanned
            if attracted[i, j]:
                clicks[i, j] = True        # first attractive item: click and leave
                break
    return observed, clicks


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("k", [1, 2, 5])
def test_cascade_feedback_matches_per_step_reference(p, k):
    att = np.random.default_rng(3).random((200, k)) < p
    obs, clk = cascade_feedback(att)
    ref_obs, ref_clk = slow_feedback(att)
    np.testing.assert_array_equal(obs, ref_obs)
    np.testing.assert_array_equal(clk, ref_clk)
    assert (clk.sum(1) <= 1).all()
    for i in range(20):   # one run at a time: the plain-Python path
        one_obs, one_clk = cascade_feedback(att[i:i + 1])
        np.testing.assert_array_equal(one_obs, ref_obs[i:i + 1])
        np.testing.assert_array_equal(one_clk, ref_clk[i:i + 1])


# ----------------------------------------------------------------------------- top-k
@pytest.mark.parametrize("k", [1, 3, 8, 12])
def test_topk_matches_full_sort(k):
    s = np.random.default_rng(0).random((5, 40))
    np.testing.assert_array_equal(topk(s, k), np.argsort(-s, axis=1)[:, :k])
    before = s.copy()
    topk(s, k)
    np.testing.assert_array_equal(s, before)   # not overwritten unless allowed


@pytest.mark.parametrize("k", [3, 12])
def test_topk_with_ties_returns_k_largest_distinct_items(k):
    s = np.random.default_rng(1).integers(0, 4, size=(6, 30)).astype(float)
    idx = topk(s, k)
    for row, ix in zip(s, idx):
        assert len(set(ix)) == k
        np.testing.assert_array_equal(row[ix], np.sort(row)[::-1][:k])


# ----------------------------------------------------------------------------- KL-UCB
def slow_kl(p, q):
    out = 0.0
    if p > 0:
        out += p * math.log(p / q)
    if p < 1:
        out += (1 - p) * math.log((1 - p) / (1 - q)) if q < 1 else math.inf
    return out


def slow_klucb(p, n, rate):
    """max{q in [p, 1]: n KL(p, q) <= rate} by bisection (60 halvings: 1e-18)."""
    if n == 0:
        return 1.0
    lo, hi = p, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if n * slow_kl(p, mid) > rate:
            hi = mid
        else:
            lo = mid
    return lo


def test_slow_kl_agrees_with_library_kl():
    for p, q in [(0.0, 0.3), (0.2, 0.5), (0.9, 0.95), (1.0, 0.4)]:
        assert slow_kl(p, q) == pytest.approx(float(kl_bernoulli(p, q)), rel=1e-12)


def test_klucb_index_matches_scalar_bisection():
    grid = [(p, n, rate) for p in (0.0, 1e-4, 0.03, 0.2, 0.5, 0.77, 0.999, 1.0)
            for n in (0, 1, 3, 40, 1000, 10**6) for rate in (0.0, 0.5, 3.0, 25.0)]
    p, n, rate = (np.array(v, float) for v in zip(*grid))
    for r in np.unique(rate):
        sel = rate == r
        got = klucb_index(p[sel], n[sel], r)
        ref = np.array([slow_klucb(a, b, r) if r > 0 else (a if b > 0 else 1.0)
                        for a, b in zip(p[sel], n[sel])])
        np.testing.assert_allclose(got, ref, atol=1e-9)
        assert (got >= p[sel] - 1e-12).all()


def test_scalar_klucb_index_and_start_match_the_references():
    from ulr.bandits.policies import klucb_index_one, klucb_start, klucb_start_one
    for p in (0.0, 1e-4, 0.03, 0.2, 0.5, 0.77, 0.999, 1.0):
        for n in (0, 1, 3, 40, 1000, 10**6):
            for rate in (0.0, 0.5, 3.0, 25.0):
                got = klucb_index_one(p, n, rate)
                ref = slow_klucb(p, n, rate) if rate > 0 else (p if n > 0 else 1.0)
                assert got == pytest.approx(ref, abs=1e-9)
                start = klucb_start_one(p, n, rate)
                assert start == pytest.approx(float(klucb_start(p, n, rate)), rel=1e-12)
                assert start >= ref - 1e-12   # an upper bound of the index
                if rate > 0:   # warm start from the index at a smaller rate: same root
                    warm = klucb_index_one(p, n, rate, start=klucb_index_one(p, n, 0.9 * rate))
                    assert warm == pytest.approx(got, abs=1e-12)


def test_compiled_klucb_index_is_the_scalar_one():
    """The compiled solver repeats klucb_index_one's Newton iteration (numba's cache would
    not see edits of another file): same floats to the last bit, and the slow reference."""
    pytest.importorskip("numba")
    from ulr.bandits.policies import klucb_index_one
    from ulr.bandits.policies.klucb_jit import _index
    for p in (0.0, 1e-4, 0.03, 0.2, 0.5, 0.77, 0.999, 1.0):
        for n in (0, 1, 3, 40, 1000, 10**6):
            for rate in (0.5, 3.0, 25.0):
                got = _index(p, float(n), rate)
                assert got == klucb_index_one(p, n, rate)
                assert got == pytest.approx(slow_klucb(p, n, rate), abs=1e-9)


def test_klucb_index_on_policy_shaped_arrays():
    rng = np.random.default_rng(5)
    n = rng.integers(1, 500, size=(4, 16)).astype(float)
    p = rng.binomial(n.astype(int), 0.3) / n
    got = klucb_index(p, n, klucb_rate(1234))
    ref = np.vectorize(lambda a, b: slow_klucb(a, b, klucb_rate(1234)))(p, n)
    np.testing.assert_allclose(got, ref, atol=1e-9)


def test_klucb_rate():
    assert klucb_rate(1) == 0.0 and klucb_rate(2) == 0.0
    t = 1000
    assert klucb_rate(t) == pytest.approx(math.log(t) + 3 * math.log(math.log(t)))


# ----------------------------------------------------------------------------- Sherman-Morrison
def test_sherman_morrison_matches_inverse_with_mask():
    rng = np.random.default_rng(2)
    r, d = 6, 5
    a = rng.normal(size=(r, d, d))
    m = a @ a.transpose(0, 2, 1) + np.eye(d)
    m_inv = np.linalg.inv(m)
    x = rng.normal(size=(r, d))
    mask = np.array([1, 0, 1, 1, 0, 1], bool)
    scale = 4.0
    sherman_morrison_update(m_inv, x, scale=scale, mask=mask)
    expected = np.linalg.inv(m + scale * mask[:, None, None] * x[:, :, None] * x[:, None, :])
    np.testing.assert_allclose(m_inv, expected, rtol=1e-10, atol=1e-12)


def test_block_update_equals_sequential_sherman_morrison():
    rng = np.random.default_rng(8)
    r, m, d = 5, 4, 6
    a = rng.normal(size=(r, 3, d))
    m_inv = np.linalg.inv(np.eye(d) + np.einsum("rmd,rme->rde", a, a))
    xs = rng.normal(size=(r, m, d))
    mask = np.arange(m)[None, :] < np.array([4, 0, 2, 1, 3])[:, None]   # observed prefixes
    expected = m_inv.copy()
    for j in range(m):                                  # one rank-1 step per vector
        sherman_morrison_update(expected, xs[:, j], scale=2.0, mask=mask[:, j])
    got = m_inv.copy()
    sequential_rank1_update(got, xs, scale=2.0, mask=mask)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-13)


def drive(policy, w, steps, rng, t0=0):
    """Run a policy by hand; return the (lists, observed, clicks) of every step."""
    hist = []
    for t in range(t0 + 1, t0 + steps + 1):
        a = policy.select(t)
        obs, clk = cascade_feedback(rng.random(a.shape) < w[a])
        policy.update(a, obs, clk)
        hist.append((a.copy(), obs, clk))
    return hist


@pytest.mark.parametrize("cls", [CascadeLinUCB, CascadeLinTS])
@pytest.mark.parametrize("runs", [1, 3])
def test_linear_statistics_equal_direct_inverse(cls, runs):
    rng = np.random.default_rng(7)
    n_items, d, k, sigma = 25, 4, 3, 0.7
    x = rng.random((n_items, d))
    w = np.clip(x @ np.array([0.2, 0.1, 0.05, 0.15]), 0, 1)
    pol = cls(n_items=n_items, k=k, runs=runs, seed=1, features=x, sigma=sigma)
    hist = drive(pol, w, 150, rng)
    for r in range(runs):
        m = np.eye(d)
        b = np.zeros(d)
        for a, obs, clk in hist:            # one rank-1 term per observed item
            for j in range(k):
                if obs[r, j]:
                    xe = x[a[r, j]]
                    m += np.outer(xe, xe) / sigma**2
                    b += xe * clk[r, j]
        np.testing.assert_allclose(pol.m_inv[r], np.linalg.inv(m), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(pol.b[r], b, atol=1e-12)
        np.testing.assert_allclose(pol.theta_bar()[r], np.linalg.solve(m, b) / sigma**2,
                                   rtol=1e-7, atol=1e-12)


def test_lints_draws_one_theta_per_step():
    rng = np.random.default_rng(0)
    x = rng.random((30, 3))
    pol = CascadeLinTS(n_items=30, k=2, runs=2, seed=3, features=x)
    drive(pol, np.full(30, 0.2), 40, rng)
    s = pol.scores(41).copy()
    for r in range(2):   # all 30 scores are x_e' theta for a single theta
        theta, *_ = np.linalg.lstsq(x, s[r], rcond=None)
        np.testing.assert_allclose(x @ theta, s[r], atol=1e-10)


def test_lints_sample_has_posterior_mean_and_covariance():
    rng = np.random.default_rng(1)
    x = rng.random((10, 3))
    pol = CascadeLinTS(n_items=10, k=2, runs=1, seed=4, features=x)
    drive(pol, np.full(10, 0.3), 30, rng)
    n = 20000
    draws = np.array([pol.sample_theta()[0] for _ in range(n)])
    mean, cov = pol.theta_bar()[0], pol.m_inv[0]
    sd = np.sqrt(np.diag(cov))
    # the sample mean has sd sqrt(cov_ii / n): allow 5 of those
    assert np.all(np.abs(draws.mean(0) - mean) < 5 * sd / np.sqrt(n))
    # sample variances: relative sd sqrt(2 / n) = 1%; allow 5%
    np.testing.assert_allclose(draws.var(0), np.diag(cov), rtol=0.05)


def test_linucb_scores_equal_direct_formula():
    rng = np.random.default_rng(3)
    x = rng.random((12, 3))
    pol = CascadeLinUCB(n_items=12, k=2, runs=2, seed=0, features=x, c=0.8)
    drive(pol, np.full(12, 0.25), 60, rng)
    s = pol.scores(61)
    for r in range(2):
        theta = pol.theta_bar()[r]
        ref = [x[e] @ theta + 0.8 * math.sqrt(x[e] @ pol.m_inv[r] @ x[e]) for e in range(12)]
        np.testing.assert_allclose(s[r], ref, rtol=1e-10)


# ------------------------------------------------------------------------- posteriors and counts
def test_cascade_ts_posterior_counts():
    rng = np.random.default_rng(4)
    w = rng.random(15) * 0.5
    pol = CascadeTS(n_items=15, k=4, runs=3, seed=0)
    hist = drive(pol, w, 300, rng)
    for r in range(3):
        alpha, beta = np.ones(15), np.ones(15)
        for a, obs, clk in hist:
            for j in range(4):
                if obs[r, j]:
                    alpha[a[r, j]] += clk[r, j]
                    beta[a[r, j]] += 1 - clk[r, j]
        np.testing.assert_array_equal(pol.alpha[r], alpha)
        np.testing.assert_array_equal(pol.beta[r], beta)


def test_ranked_ts_updates_every_position_with_its_click():
    rng = np.random.default_rng(5)
    pol = RankedTS(n_items=9, k=3, runs=2, seed=0)
    hist = drive(pol, np.full(9, 0.3), 200, rng)
    for r in range(2):
        alpha, beta = np.ones((3, 9)), np.ones((3, 9))
        for a, obs, clk in hist:
            assert len(set(a[r])) == 3          # no item twice in a list
            for j in range(3):
                alpha[j, a[r, j]] += clk[r, j]
                beta[j, a[r, j]] += 1 - clk[r, j]
        np.testing.assert_array_equal(pol.alpha[r], alpha)
        np.testing.assert_array_equal(pol.beta[r], beta)


def test_counting_policy_statistics():
    rng = np.random.default_rng(6)
    pol = CascadeUCB1(n_items=10, k=3, runs=2, seed=0)
    init = rng.random((2, 10)) < 0.4
    pol.initialize(init)
    hist = drive(pol, np.full(10, 0.3), 100, rng)
    for r in range(2):
        pulls, wins = np.ones(10), init[r].astype(float)
        for a, obs, clk in hist:
            for j in range(3):
                if obs[r, j]:
                    pulls[a[r, j]] += 1
                    wins[a[r, j]] += clk[r, j]
        np.testing.assert_array_equal(pol.pulls[r], pulls)
        np.testing.assert_allclose(pol.mean[r], wins / pulls)


# ----------------------------------------------------------------------------- whole algorithms
def reference_cascade_run(name, w, k, init, u):
    """Per-run, per-step, per-item CascadeUCB1 / CascadeKL-UCB (Kveton et al. 2015)."""
    n_steps, runs, _ = u.shape
    n_items = len(w)
    lists = np.zeros((n_steps, runs, k), int)
    for r in range(runs):
        pulls = [1.0] * n_items
        wins = [float(v) for v in init[r]]
        for i in range(n_steps):
            t = i + 1
            index = []
            for e in range(n_items):
                mean = wins[e] / pulls[e]
                if name == "cascade-ucb1":
                    index.append(mean + math.sqrt(1.5 * math.log(t)) * (1 / math.sqrt(pulls[e])))
                else:
                    index.append(slow_klucb(mean, pulls[e], klucb_rate(t)))
            order = sorted(range(n_items), key=lambda e: -index[e])[:k]  # stable: low id first
            lists[i, r] = order
            for j, e in enumerate(order):
                pulls[e] += 1
                if u[i, r, j] < w[e]:       # first attractive item: click, stop
                    wins[e] += 1
                    break
    return lists


@pytest.mark.parametrize("name", ["cascade-ucb1", "cascade-klucb"])
def test_batched_algorithm_equals_per_item_reference(name):
    w = np.array([0.3, 0.1, 0.25, 0.05, 0.3, 0.15, 0.2, 0.12])
    env = CascadeEnv("custom", w, 3)
    runs, steps, seed = 2, 250, 11
    sim = BanditRuns(name, env, steps, runs=runs, seed=seed)
    recorded = []
    select = sim.policy.select
    sim.policy.select = lambda t, items=None: recorded.append(select(t, items)) or recorded[-1]
    sim.advance()
    # the same random stream the simulation consumed: init draws, then one chunk
    env_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
    init = env_rng.random((runs, len(w))) < w
    u = env_rng.random((steps, runs, 3))
    ref = reference_cascade_run(name, w, 3, init, u)
    np.testing.assert_array_equal(np.array(recorded), ref)
    regret = [[env.optimal_reward - (1 - np.prod(1 - w[ref[i, r]])) for i in range(steps)]
              for r in range(runs)]
    np.testing.assert_allclose(sim.cum_regret, np.maximum(np.cumsum(regret, axis=1), 0),
                               atol=1e-9)


def test_ranked_ucb1_with_one_position_is_plain_ucb1():
    w = np.array([0.5, 0.3, 0.45, 0.2])
    pol = RankedUCB1(n_items=4, k=1, runs=1, seed=0)
    init = np.array([[1, 0, 1, 0]], bool)
    pol.initialize(init)
    rng = np.random.default_rng(0)
    pulls, wins = np.ones(4), init[0].astype(float)
    for t in range(1, 300):
        idx = wins / pulls + math.sqrt(2 * math.log(t)) * (1 / np.sqrt(pulls))
        a = pol.select(t)
        assert a[0, 0] == int(np.argmax(idx))
        reward = rng.random() < w[a[0, 0]]
        pol.update(a, np.ones((1, 1), bool), np.array([[reward]]))
        pulls[a[0, 0]] += 1
        wins[a[0, 0]] += reward


def test_select_among_candidates_and_factory_errors():
    pol = CascadeKLUCB(n_items=6, k=2, runs=1, seed=0)
    pol.initialize(np.array([[1, 0, 0, 0, 0, 1]], bool))
    got = pol.select(5, items=np.array([1, 3, 5]))
    assert set(got[0]) <= {1, 3, 5} and got[0, 0] == 5
    with pytest.raises(UlrError):
        make_policy("nope", n_items=5, positions=2)
    with pytest.raises(UlrError):
        make_policy("cascade-ts", n_items=5, positions=2, sigma=1.0)
    with pytest.raises(UlrError, match="features"):
        make_policy("cascade-lints", n_items=5000, positions=2)
    assert make_policy("cascade-lints", n_items=5, positions=2).d == 5   # one-hot fallback


# ----------------------------------------------------------------------------- CascadeKL-UCB lists
def frozen_klucb_index(p, n, rate, tol=1e-10, max_iter=50):
    """The vectorized KL-UCB solver of the first CascadeKL-UCB, frozen here as the reference.

    Newton's method in ``y = -log(1 - q)`` from the closed-form upper bound, stopped
    when no index moves by more than ``tol``; unobserved items and ``p = 1`` get 1.
    """
    p, n = np.broadcast_arrays(np.asarray(p, float), np.asarray(n, float))
    out = np.ones(p.shape)
    todo = (n > 0) & (p < 1.0)
    p, n = p[todo], n[todo]
    r = rate / n
    q = np.minimum(p + np.sqrt(0.5 * r), p + r + np.sqrt(r * r + 2.0 * p * r))
    q = np.minimum(q, 1.0 - 1e-15)
    y = -np.log1p(-q)
    h = xlogy(p, p) + xlogy(1.0 - p, 1.0 - p)
    for _ in range(max_iter):
        g = h - p * np.log(q) + (1.0 - p) * y - r
        y -= g * q / np.maximum(q - p, 1e-300)
        q_new = -np.expm1(-y)
        done = q.size == 0 or np.max(np.abs(q_new - q)) <= tol
        q = q_new
        if done:
            break
    out[todo] = q
    return out


def reference_klucb_lists(w, k, runs, steps, seed):
    """CascadeKL-UCB the slow, obvious way, on the random streams of ``BanditRuns``.

    Every step solves the index of every item (``rate = log t + 3 log log t``,
    0 for ``t < 3`` where the index is the mean) and shows the ``k`` largest by a
    stable sort, so tied indices go to the lower item index.
    """
    n_items = len(w)
    env_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
    init = env_rng.random((runs, n_items)) < w
    u = env_rng.random((steps, runs, k))
    pulls, wins = np.ones((runs, n_items)), init.astype(float)
    lists = np.empty((steps, runs, k), dtype=int)
    for i in range(steps):
        t = i + 1
        rate = 0.0 if t < 3 else math.log(t) + 3 * math.log(math.log(t))
        for r in range(runs):
            mean = wins[r] / pulls[r]
            index = mean if rate <= 0 else frozen_klucb_index(mean, pulls[r], rate)
            chosen = np.argsort(-index, kind="stable")[:k]
            lists[i, r] = chosen
            for j, e in enumerate(chosen):
                pulls[r, e] += 1
                if u[i, r, j] < w[e]:
                    wins[r, e] += 1
                    break
    return lists


def _recorded_lists(env, steps, runs, seed, path="groups", bounds_from=0):
    sim = BanditRuns("cascade-klucb", env, steps, runs=runs, seed=seed)
    sim.policy.path = path
    sim.policy.bounds_from = bounds_from
    lists = []
    select = sim.policy.select
    sim.policy.select = lambda t, items=None: lists.append(select(t, items)) or lists[-1]
    sim.advance()
    return np.array(lists), sim


def _paths(*paths):
    """The paths as test parameters; "bounds" needs numba (requirements.txt)."""
    need = pytest.mark.skipif(not CascadeKLUCB.choose_path(16, 20) == "bounds",
                              reason="numba is not installed")
    return [pytest.param(p, marks=need) if p == "bounds" else p for p in paths]


def _tie_env(items, k, seed):
    """Attractions 0, 1 and a few repeated values: many exactly tied indices,
    items that are always clicked (index 1 forever) and never clicked."""
    w = np.random.default_rng(seed).choice([0.0, 1.0, 0.05, 0.05, 0.2, 0.2, 0.2], size=items)
    return CascadeEnv("custom", w, k)


KLUCB_CASES = {  # name: (env factory, runs, steps)
    "kveton-400": (lambda s: kveton_env(items=400, positions=4, p=0.2, delta=0.1, seed=s), 1, 1500),
    "linear-400": (lambda s: linear_env(items=400, positions=4, n_features=5, seed=s), 1, 1500),
    "linear-400-3runs": (lambda s: linear_env(items=400, positions=4, n_features=5, seed=s), 3, 800),
    "ties-60": (lambda s: _tie_env(60, 3, s), 2, 1500),
    "k1-30": (lambda s: linear_env(items=30, positions=1, n_features=4, seed=s), 1, 2000),
    "k-equals-l": (lambda s: CascadeEnv("custom", [0.3, 0.1, 0.3, 0.0, 1.0], 5), 1, 300),
    "small-long": (lambda s: kveton_env(items=8, positions=3, p=0.3, delta=0.05, seed=s), 2, 2500),
    "kveton-16-20runs": (lambda s: kveton_env(items=16, positions=2, seed=s), 20, 700),
    "ties-12-6runs": (lambda s: _tie_env(12, 2, s), 6, 800),
    "linear-100-5runs": (lambda s: linear_env(items=100, positions=3, n_features=4, seed=s), 5, 600),
}


# every case on one seed; three seeds where ties and long runs make the pruning's
# bookkeeping (equal indices, stale bounds) take different branches from seed to seed
KLUCB_SEEDS = [(case, 0) for case in sorted(KLUCB_CASES)] + [
    (case, seed) for case in ("ties-12-6runs", "ties-60", "small-long") for seed in (1, 2)]


@pytest.mark.parametrize("path", _paths("groups", "bounds"))
@pytest.mark.parametrize("case, seed", KLUCB_SEEDS)
def test_klucb_lists_equal_the_full_reference(case, seed, path):
    make_env, runs, steps = KLUCB_CASES[case]
    env = make_env(seed)
    ref = reference_klucb_lists(env.w, env.k, runs, steps, seed)
    got, _ = _recorded_lists(env, steps, runs, seed, path=path)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("path", _paths("groups", "bounds"))
def test_klucb_lists_equal_the_reference_at_the_benchmark_shape(path):
    """L = 3000, K = 4 as in benchmarks/bench_bandits.py (fewer steps), and the
    full library path (``path="full"``) on the same run."""
    env = linear_env(items=3000, positions=4, n_features=10, seed=0)
    ref = reference_klucb_lists(env.w, env.k, 1, 2500, 7)
    got, _ = _recorded_lists(env, 2500, 1, 7, path=path)
    np.testing.assert_array_equal(got, ref)
    full, _ = _recorded_lists(env, 400, 1, 7, path="full")
    np.testing.assert_array_equal(full, ref[:400])


def test_klucb_bounds_the_pruning_rests_on():
    """The index is increasing and concave in the rate (tangent above, last value below),
    and U(w, n + 1) <= U(w, n): the facts that let a pair keep old bounds (slow bisection)."""
    from ulr.bandits.policies import _klucb_slope, klucb_index_one
    for w, n in [(0, 1), (0, 7), (1, 2), (3, 10), (9, 10), (40, 900), (1, 5000)]:
        p = w / n
        for rate0, rate in [(1.0, 1.2), (3.0, 9.0), (8.0, 8.01), (12.0, 16.0)]:
            q0 = klucb_index_one(p, n, rate0)
            truth = slow_klucb(p, n, rate)
            assert q0 <= truth + 1e-12
            assert truth <= q0 + (rate - rate0) * _klucb_slope(q0, p, n) + 1e-12
            assert slow_klucb(w / (n + 1), n + 1, rate) <= truth + 1e-15


def test_pruned_klucb_solves_few_indices(monkeypatch):
    """Every index solve is counted (vectorized and scalar): the pruned run must solve
    far fewer than L per step, the unpruned one all L."""
    import ulr.bandits.policies.counting as counting
    import ulr.bandits.policies.klucb_solver as solver
    solved = [0]

    def counting_index(p_hat, n, rate, **kw):
        solved[0] += np.size(n)
        return klucb_index(p_hat, n, rate, **kw)

    def counting_one(*a, **kw):
        solved[0] += 1
        return one(*a, **kw)

    one = solver.klucb_index_one
    for module in (counting, solver):   # every module that calls a solver
        monkeypatch.setattr(module, "klucb_index", counting_index)
    monkeypatch.setattr(solver, "klucb_index_one", counting_one)
    env = linear_env(items=400, positions=4, n_features=5, seed=0)
    for path, most in (("groups", 0.05 * 400), ("full", 400)):
        solved[0] = 0
        _, sim = _recorded_lists(env, 1500, 1, 0, path=path)
        per_step = solved[0] / 1500
        assert per_step <= most
        if path == "full":
            assert per_step >= 0.99 * 400   # every item from t = 3 on


@pytest.mark.parametrize("path", _paths("bounds"))
def test_compiled_klucb_solves_few_indices(path):
    """The compiled path counts its own solves (numba code cannot be patched): from the
    second step on it solves the observed items and a few contested ones per run, far
    fewer than L, while its first step solves every item of every run."""
    env = kveton_env(items=16, positions=2, seed=0)
    _, sim = _recorded_lists(env, 2000, 20, 0, path=path)
    assert sim.policy.solves >= 20 * 16                       # the first step: all
    assert (sim.policy.solves - 20 * 16) / 1997 <= 0.35 * 20 * 16


@pytest.mark.parametrize("path", _paths("groups", "bounds"))
@pytest.mark.parametrize("runs", [1, 2])
def test_pruned_klucb_keeps_the_per_item_statistics(runs, path):
    """The groups path updates pulls, wins, mean and 1/sqrt(pulls) itself (one run)
    or through the base class (several): both must equal the full path's run."""
    env = kveton_env(items=50, positions=3, p=0.3, delta=0.1, seed=1)
    _, pruned = _recorded_lists(env, 600, runs, 4, path=path)
    _, full = _recorded_lists(env, 600, runs, 4, path="full")
    for name in ("pulls", "wins", "mean", "_isq"):
        np.testing.assert_array_equal(getattr(pruned.policy, name), getattr(full.policy, name))
    np.testing.assert_array_equal(pruned.policy._isq, 1.0 / np.sqrt(full.policy.pulls))


def test_klucb_picks_its_path_by_shape():
    """path=None: the groups path for one run or from 250 items on; otherwise the compiled
    bounds path, or without numba the groups path for 2 runs and the full one for more. The compiled loop
    starts the sooner the more work a step of its predecessor costs."""
    from ulr.bandits.policies import _has_numba

    choose = CascadeKLUCB.choose_path
    assert choose(3000, 20) == choose(250, 2) == choose(16, 1) == "groups"
    if _has_numba():
        assert choose(16, 2) == choose(16, 20) == choose(249, 5) == "bounds"
    else:
        assert (choose(16, 2), choose(16, 20)) == ("groups", "full")
    assert [CascadeKLUCB.path_before_bounds(r) for r in (1, 2, 3)] == ["groups", "groups", "full"]
    start = [CascadeKLUCB.bounds_start(16, r) for r in (3, 20, 100, 10**6)]
    assert start == sorted(start, reverse=True) and start[-1] == 3
    assert CascadeKLUCB.bounds_start(16, 2) < CascadeKLUCB.bounds_start(16, 1)
    with pytest.raises(UlrError, match="path"):
        CascadeKLUCB(n_items=5, k=2, path="fast")


@pytest.mark.parametrize("runs", [2, 20])
def test_klucb_default_path_gives_the_reference_lists_across_the_switch(runs):
    """path=None on Kveton's 16 items: groups (2 runs) or full (20 runs) until bounds_from,
    the compiled loop after it (without numba: no switch); the lists are the reference's."""
    env = kveton_env(items=16, positions=2, seed=3)
    sim = BanditRuns("cascade-klucb", env, 600, runs=runs, seed=3)
    assert sim.policy.path == CascadeKLUCB.choose_path(16, runs)
    sim.policy.bounds_from = 300      # switch inside this short run
    lists = []
    select = sim.policy.select
    sim.policy.select = lambda t, items=None: lists.append(select(t, items)) or lists[-1]
    sim.advance()
    ref = reference_klucb_lists(env.w, env.k, runs, 600, 3)
    np.testing.assert_array_equal(np.array(lists), ref)
    if sim.policy.path == "bounds":
        assert sim.policy.solves > 0 and sim.policy._groups is None   # compiled after 300


@pytest.mark.parametrize("path", _paths("bounds"))
def test_compiled_klucb_starts_afresh_when_t_goes_back(path):
    """Lower bounds from a larger rate do not hold at a smaller one: select at t = 5000,
    then at t = 40 must give the lists of every index solved at t = 40 (slow reference)."""
    rng = np.random.default_rng(5)
    pulls = rng.integers(1, 60, size=(4, 12)).astype(float)
    wins = np.floor(pulls * rng.random((4, 12)) * 0.5)
    pol = CascadeKLUCB(n_items=12, k=3, runs=4, seed=0, path=path)
    pol.bounds_from = 0
    pol.initialize(np.zeros((4, 12), bool))
    pol.pulls[:], pol.wins[:], pol.mean[:] = pulls, wins, wins / pulls
    for t in (5000, 40):
        got = pol.select(t)
        for r in range(4):
            index = [slow_klucb(wins[r, e] / pulls[r, e], pulls[r, e], klucb_rate(t))
                     for e in range(12)]
            assert list(got[r]) == sorted(range(12), key=lambda e: -index[e])[:3]


def test_klucb_bounds_falls_back_without_the_compiled_loop(monkeypatch):
    """If the compiled module cannot be imported mid-run, the path falls back to the one
    it ran before (groups for 2 runs, rebuilt from the counts) with the same lists."""
    import sys
    env = kveton_env(items=16, positions=2, seed=2)
    ref = reference_klucb_lists(env.w, env.k, 2, 400, 2)
    monkeypatch.setitem(sys.modules, "ulr.bandits.policies.klucb_jit", None)   # ImportError
    got, sim = _recorded_lists(env, 400, 2, 2, path="bounds", bounds_from=200)
    np.testing.assert_array_equal(got, ref)
    assert sim.policy.path == "groups"
