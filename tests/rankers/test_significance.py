"""Paired tests, Holm/BH corrections and Tukey's HSD against scipy, statsmodels and slow loops."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from ulr.errors import UlrError
from ulr.metrics import MetricResult
from ulr.rankers import significance as S

# ---------------------------------------------------------------- corrections


def slow_holm(p):
    """Holm's step-down, as in the paper: reject in order while p_(i) <= alpha / (m - i + 1);
    the adjusted value of p_(i) is the largest (m - j + 1) p_(j) over j <= i, capped at 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order, start=1):
        running = max(running, min(1.0, (m - rank + 1) * p[i]))
        out[i] = running
    return out


def slow_bh(p):
    """BH adjusted p-value: min over j >= rank(i) of m p_(j) / j, capped at 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    ranks = {i: r for r, i in enumerate(order, start=1)}
    return [min(1.0, min(m * p[order[j - 1]] / j for j in range(ranks[i], m + 1)))
            for i in range(m)]


@pytest.mark.parametrize("seed", range(5))
def test_holm_and_bh_match_statsmodels_and_slow_loops(seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.06, 5), rng.uniform(0, 1, 7)])
    p[3] = p[4]  # a tie
    for method, sm, slow in (("holm", "holm", slow_holm), ("bh", "fdr_bh", slow_bh)):
        got = S.adjust(p, method)
        np.testing.assert_allclose(got, multipletests(p, method=sm)[1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(got, slow(list(p)), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(S.adjust(p, "none"), p)


def test_corrections_leave_missing_p_values_out_of_the_family():
    p = np.array([0.01, np.nan, 0.04, 0.03])
    got = S.adjust(p, "holm")
    assert np.isnan(got[1])
    np.testing.assert_allclose(got[[0, 2, 3]], multipletests(p[[0, 2, 3]], method="holm")[1])
    with pytest.raises(UlrError, match="correction must be one of holm, bh, none"):
        S.adjust(p, "bonferroni")


# ---------------------------------------------------------------- t test


def test_t_test_is_scipy_ttest_rel_with_equal_weights():
    rng = np.random.default_rng(1)
    a = rng.normal(0.5, 0.2, 40)
    b = a + rng.normal(0.05, 0.1, 40)
    delta, lo, hi, p = S.t_test(b - a, level=0.9)
    ref = stats.ttest_rel(b, a)
    ci = ref.confidence_interval(0.9)
    assert delta == pytest.approx(np.mean(b - a))
    assert p == pytest.approx(ref.pvalue, rel=1e-10)
    assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-10)
    # equal weights of any size are no weights
    assert S.t_test(b - a, np.full(40, 3.0), level=0.9) == pytest.approx((delta, lo, hi, p))


def test_weighted_t_test_uses_the_linearized_ratio_standard_error():
    rng = np.random.default_rng(2)
    d = rng.normal(0.1, 1.0, 30)
    w = rng.uniform(0.5, 3.0, 30)
    mean = sum(wi * di for wi, di in zip(w, d)) / sum(w)
    wbar = sum(w) / len(w)
    z = [wi * (di - mean) / wbar for wi, di in zip(w, d)]
    zbar = sum(z) / len(z)
    se = (sum((zi - zbar) ** 2 for zi in z) / (len(z) - 1) / len(z)) ** 0.5
    delta, lo, hi, p = S.t_test(d, w)
    assert delta == pytest.approx(mean)
    assert p == pytest.approx(2 * stats.t.sf(abs(mean / se), 29))
    assert hi - lo == pytest.approx(2 * stats.t.ppf(0.975, 29) * se)


# ---------------------------------------------------------------- randomization test


def slow_sign_flip_p(d, w, n_resamples, seed):
    """One uniform draw per query per resample, sign -1 below 0.5, as documented."""
    rng = np.random.default_rng(seed)
    t_obs = abs(sum(wi * di for wi, di in zip(w, d)))
    extreme = 0
    for _ in range(n_resamples):
        u = rng.random(len(d))
        t = abs(sum((-1 if ui < 0.5 else 1) * wi * di for ui, wi, di in zip(u, w, d)))
        extreme += t >= t_obs - 1e-12 * max(1.0, t_obs)
    return (1 + extreme) / (1 + n_resamples)


def exact_sign_flip_p(d):
    t_obs = abs(sum(d))
    flips = list(itertools.product((-1, 1), repeat=len(d)))
    return sum(abs(sum(s * x for s, x in zip(signs, d))) >= t_obs - 1e-12 * max(1.0, t_obs)
               for signs in flips) / len(flips)


def test_randomization_p_matches_a_slow_loop_and_is_the_same_every_run():
    rng = np.random.default_rng(3)
    d = rng.normal(0.15, 1.0, 25)
    w = rng.uniform(0.5, 2.0, 25)
    p1 = S.randomization_p(d, w, n_resamples=3000, seed=7)
    assert p1 == slow_sign_flip_p(d, w, 3000, 7)
    assert S.randomization_p(d, w, n_resamples=3000, seed=7) == p1  # seeded: identical
    assert 1 / 3001 <= p1 <= 1


def test_randomization_p_is_exact_on_a_tiny_case():
    d = [0.3, -0.1, 0.25, 0.4, 0.05, -0.2, 0.15]
    assert S.randomization_p(d, n_resamples=10_000) == pytest.approx(exact_sign_flip_p(d))
    # Monte Carlo (2^12 > 2000 resamples) agrees with the exact value within its sampling error
    d12 = np.random.default_rng(4).normal(0.3, 1.0, 12)
    exact = exact_sign_flip_p(list(d12))
    mc = S.randomization_p(d12, n_resamples=20_000, seed=1)
    assert abs(mc - exact) < 4 * np.sqrt(exact * (1 - exact) / 20_000) + 1 / 20_000
    # every difference positive: only the two all-equal-sign patterns are as extreme
    assert S.randomization_p([1.0] * 6, n_resamples=64) == pytest.approx(2 / 64)


def test_randomization_p_holds_its_level_under_the_null():
    rng = np.random.default_rng(5)
    n_sim = 400
    ps = np.array([S.randomization_p(rng.normal(0, 1, 30), n_resamples=500, seed=i)
                   for i in range(n_sim)])
    rate = np.mean(ps <= 0.05)
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / n_sim)


# ---------------------------------------------------------------- bootstrap test


def test_bootstrap_interval_and_p_match_a_slow_loop():
    rng = np.random.default_rng(6)
    d = rng.normal(0.1, 0.5, 20)
    w = rng.uniform(1, 3, 20)
    lo, hi, p = S._bootstrap(d, w, n_resamples=2000, level=0.9, seed=11)
    r = np.random.default_rng(11)
    means = []
    for _ in range(2000):
        idx = r.integers(0, 20, 20)
        means.append(sum(w[i] * d[i] for i in idx) / sum(w[i] for i in idx))
    means = np.array(means)
    delta = np.dot(w, d) / w.sum()
    assert (lo, hi) == pytest.approx(tuple(np.quantile(means, [0.05, 0.95])))
    assert p == (1 + np.sum(np.abs(means - delta) >= abs(delta) - 1e-12)) / 2001


def _result(values, name="ndcg@10", weights=None):
    idx = pd.Index([f"q{i}" for i in range(len(values))])
    w = np.ones(len(values)) if weights is None else weights
    v = pd.Series(values, index=idx, dtype=float)
    return MetricResult(name, float(np.nansum(w * np.nan_to_num(v)) / w[~np.isnan(v)].sum()),
                        v, pd.Series(np.where(np.isnan(v), 0.0, w), index=idx))


@pytest.mark.parametrize("test", S.TESTS)
def test_paired_difference_pairs_common_defined_queries(test):
    a = _result([0.5, 0.6, np.nan, 0.7, 0.2, 0.9, 0.4, 0.5])
    b = _result([0.6, 0.7, 0.8, 0.9, 0.2, 0.95, 0.5, 0.4])
    r = S.paired_difference(a, b, test=test, n_resamples=500, seed=0)
    d = np.array([0.1, 0.1, 0.2, 0.0, 0.05, 0.1, -0.1])
    assert r.n_queries == 7 and r.delta == pytest.approx(d.mean())
    assert r.lower <= r.delta <= r.upper and 0 < r.p_value <= 1
    if test == "t":
        assert r.p_value == pytest.approx(stats.ttest_rel(d, np.zeros(7)).pvalue)
    if test == "randomization":  # 2^7 = 128 <= 500 sign patterns: exact
        assert r.p_value == pytest.approx(exact_sign_flip_p(list(d)))
    with pytest.raises(UlrError, match="test must be one of"):
        S.paired_difference(a, b, test="wilcoxon")


@pytest.mark.parametrize("test", S.TESTS)
def test_paired_difference_does_not_depend_on_the_order_queries_arrive_in(test):
    rng = np.random.default_rng(12)
    va, vb = rng.uniform(0, 1, 40), rng.uniform(0, 1, 40)
    a, b = _result(va), _result(vb)
    perm = rng.permutation(40)
    a2, b2 = _result(va[perm]), _result(vb[perm])
    a2 = MetricResult(a2.name, a2.value, a2.per_query.set_axis(a.per_query.index[perm]),
                      a2.weight.set_axis(a.per_query.index[perm]))
    b2 = MetricResult(b2.name, b2.value, b2.per_query.set_axis(a.per_query.index[perm]),
                      b2.weight.set_axis(a.per_query.index[perm]))
    r1 = S.paired_difference(a, b, test=test, n_resamples=400, seed=5)
    r2 = S.paired_difference(a2, b2, test=test, n_resamples=400, seed=5)
    assert (r1.lower, r1.upper, r1.p_value) == pytest.approx((r2.lower, r2.upper, r2.p_value),
                                                              rel=1e-12)
    assert r1.delta == pytest.approx(r2.delta, rel=1e-12)


# ---------------------------------------------------------------- Tukey HSD


def test_unblocked_tukey_hsd_is_scipy_tukey_hsd():
    rng = np.random.default_rng(8)
    x = rng.normal([0.5, 0.55, 0.6, 0.4], 0.15, size=(30, 4))
    got = S.tukey_hsd(x, blocked=False, level=0.9)
    ref = stats.tukey_hsd(*x.T)
    ci = ref.confidence_interval(0.9)
    for r in got.to_dict("records"):
        i, j = r["i"], r["j"]
        # scipy's statistic[i, j] is mean_i - mean_j; ours is mean_j - mean_i
        assert r["diff"] == pytest.approx(-ref.statistic[i, j])
        assert r["p_value"] == pytest.approx(ref.pvalue[i, j], abs=1e-8)
        assert (r["lower"], r["upper"]) == pytest.approx((-ci.high[i, j], -ci.low[i, j]))
    assert len(got) == 6


def test_blocked_tukey_hsd_uses_the_two_way_anova_residual():
    """The query-blocked MSE is the residual of an OLS fit of value ~ query + system."""
    import statsmodels.formula.api as smf
    rng = np.random.default_rng(9)
    n, k = 25, 3
    x = rng.normal(0, 1, (n, 1)) + np.array([0.0, 0.3, 0.35]) + rng.normal(0, 0.2, (n, k))
    long = pd.DataFrame({"y": x.ravel(), "q": np.repeat(np.arange(n), k),
                         "s": np.tile(np.arange(k), n)})
    fit = smf.ols("y ~ C(q) + C(s)", long).fit()
    se = np.sqrt(fit.mse_resid / n)
    got = S.tukey_hsd(x).set_index(["i", "j"])
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        diff = x[:, j].mean() - x[:, i].mean()
        r = got.loc[(i, j)]
        assert r["diff"] == pytest.approx(diff)
        assert r["p_value"] == pytest.approx(
            stats.studentized_range.sf(abs(diff) / se, k, fit.df_resid))
        half = stats.studentized_range.ppf(0.95, k, fit.df_resid) * se
        assert r["upper"] - r["lower"] == pytest.approx(2 * half)
    # the query effect is large: blocking separates 0 from 1, independent groups do not
    assert got.loc[(0, 1), "p_value"] < 0.01
    assert S.tukey_hsd(x, blocked=False).set_index(["i", "j"]).loc[(0, 1), "p_value"] > 0.05


def test_blocked_tukey_hsd_holds_its_family_wise_level_under_the_null():
    rng = np.random.default_rng(10)
    n_sim = 250
    hits = sum(S.tukey_hsd(rng.normal(0, 1, (20, 1)) + rng.normal(0, 0.3, (20, 3)))
               ["p_value"].min() <= 0.05 for _ in range(n_sim))
    assert hits / n_sim <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / n_sim)


def test_tukey_needs_a_complete_table():
    with pytest.raises(UlrError, match="complete table"):
        S.tukey_hsd(np.array([[1.0, np.nan], [0.5, 0.4]]))
