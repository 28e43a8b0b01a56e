"""ulr.ope.estimators against slow per-row references and analytic standard errors."""

import numpy as np
import pandas as pd
import pytest

from ulr.ope import estimators as est
from ulr.validate import BadOption

# ---------------------------------------------------------------- slow references (loops)


def ref_ips(r, w):
    s = 0.0
    for ri, wi in zip(r, w):
        s += wi * ri
    return s / len(r)


def ref_clipped(r, w, M):
    s = 0.0
    for ri, wi in zip(r, w):
        s += (wi if wi < M else M) * ri
    return s / len(r)


def ref_snips(r, w):
    num = den = 0.0
    for ri, wi in zip(r, w):
        num += wi * ri
        den += wi
    return num / den


def ref_dr(r, w, ql, qt):
    s = 0.0
    for i in range(len(r)):
        s += qt[i] + w[i] * (r[i] - ql[i])
    return s / len(r)


def ref_ess(w):
    s1 = s2 = 0.0
    for wi in w:
        s1 += wi
        s2 += wi * wi
    return s1 * s1 / s2


@pytest.fixture
def log():
    rng = np.random.default_rng(7)
    n = 300
    p = rng.uniform(0.05, 1.0, n)
    t = rng.uniform(0.0, 1.0, n)
    r = (rng.random(n) < 0.3).astype(float)
    ql = rng.uniform(0, 1, n)
    qt = rng.uniform(0, 1, n)
    return r, est.importance_weights(t, p), ql, qt


def test_estimators_match_slow_references(log):
    r, w, ql, qt = log
    assert est.ips(r, w) == pytest.approx(ref_ips(r, w), rel=1e-12)
    assert est.clipped_ips(r, w, clip=3.0) == pytest.approx(ref_clipped(r, w, 3.0), rel=1e-12)
    assert est.snips(r, w) == pytest.approx(ref_snips(r, w), rel=1e-12)
    assert est.doubly_robust(r, w, q_logged=ql, q_target=qt) == pytest.approx(
        ref_dr(r, w, ql, qt), rel=1e-12)
    assert est.direct_method(qt) == pytest.approx(np.mean(qt))
    assert est.effective_sample_size(w) == pytest.approx(ref_ess(w), rel=1e-12)


def test_ratio_terms_reproduce_each_estimator(log):
    r, w, ql, qt = log
    for name, fn in [("ips", lambda: est.ips(r, w)),
                     ("clipped-ips", lambda: est.clipped_ips(r, w, clip=2.0)),
                     ("snips", lambda: est.snips(r, w)),
                     ("dr", lambda: est.doubly_robust(r, w, q_logged=ql, q_target=qt)),
                     ("dm", lambda: est.direct_method(qt))]:
        a, b = est.ratio_terms(name, r, w, clip=2.0, q_logged=ql, q_target=qt)
        assert a.sum() / b.sum() == pytest.approx(fn(), rel=1e-12), name


def test_estimators_broadcast_over_draws(log):
    r, w, ql, qt = log
    R = np.vstack([r, 1 - r, r])
    W = np.vstack([w, w, w[::-1]])
    for fn in (est.ips, est.snips):
        got = fn(R, W)
        assert got.shape == (3,)
        assert np.allclose(got, [fn(R[i], W[i]) for i in range(3)])
    assert np.allclose(est.effective_sample_size(W), [ref_ess(W[i]) for i in range(3)])


def test_basic_properties(log):
    r, w, _, _ = log
    # clipping never raises a non-negative-reward estimate; a huge clip changes nothing
    assert est.clipped_ips(r, w, clip=1.0) <= est.ips(r, w)
    assert est.clipped_ips(r, w, clip=1e9) == pytest.approx(est.ips(r, w))
    # SNIPS is equivariant (shift of rewards shifts it), IPS is not
    assert est.snips(r + 5, w) == pytest.approx(est.snips(r, w) + 5)
    assert est.ips(r + 5, w) != pytest.approx(est.ips(r, w) + 5)
    # ESS: equal weights -> n; a single non-zero weight -> 1; all zero -> 0
    assert est.effective_sample_size(np.full(50, 3.0)) == pytest.approx(50)
    assert est.effective_sample_size(np.r_[np.zeros(9), 2.0]) == pytest.approx(1)
    assert est.effective_sample_size(np.zeros(5)) == 0
    assert np.isnan(est.snips(r, np.zeros_like(w)))


def test_invalid_inputs_raise():
    with pytest.raises(ValueError):
        est.importance_weights([0.5], [0.0])
    with pytest.raises(ValueError):
        est.importance_weights([1.5], [0.5])
    with pytest.raises(ValueError):
        est.ips([1.0, 0.0], [1.0])
    with pytest.raises(ValueError):
        est.clipped_ips([1.0], [1.0], clip=0)
    with pytest.raises(ValueError):
        est.ratio_terms("nope", [1.0], [1.0])


def test_default_clip_is_ionides_truncation():
    w = np.r_[np.zeros(100), np.arange(1, 101, dtype=float)]  # n = 200, mean 25.25
    assert est.default_clip(w) == pytest.approx(np.sqrt(200) * 25.25)
    assert est.default_clip(np.full(4, 0.1)) == 1.0  # never below 1
    assert est.default_clip(np.zeros(3)) == 1.0
    W = np.vstack([w, w / 2])
    assert np.allclose(est.default_clip(W), [np.sqrt(200) * 25.25, np.sqrt(200) * 12.625])


def test_bootstrap_se_matches_the_analytic_standard_error():
    # IPS is a mean, so its standard error is sd(w r) / sqrt(n). The bootstrap sd of
    # B replicates has a relative sampling error of about sqrt(1 / (2 B)) (~1.1% at
    # B = 4000) plus O(1/n); 6% is more than five of those.
    rng = np.random.default_rng(3)
    n = 2000
    w = rng.exponential(1.0, n)
    r = (rng.random(n) < 0.3).astype(float)
    a, b = est.ratio_terms("ips", r, w)
    ci = est.bootstrap_ratio(a, b, n_bootstrap=4000, seed=1)
    analytic = np.std(w * r, ddof=0) / np.sqrt(n)
    assert ci.se[0] == pytest.approx(analytic, rel=0.06)
    # the percentile interval is close to estimate +- 1.96 se for a mean of 2000 rows
    v = est.ips(r, w)
    assert ci.lower[0] == pytest.approx(v - 1.96 * analytic, abs=0.25 * analytic)
    assert ci.upper[0] == pytest.approx(v + 1.96 * analytic, abs=0.25 * analytic)


def test_cluster_bootstrap_resamples_whole_clusters():
    # Every row duplicated into a cluster of two identical rows. Resampling the n clusters
    # with the same seed draws the same count matrix as resampling the n originals, so the
    # replicates (and the interval) are identical. Treating the 2n rows as independent
    # instead shrinks the se by sqrt(2); each bootstrap se has a relative error of about
    # 1 / sqrt(2 B) = 1.1% (B = 4000), their ratio about 1.6%, so 6.5% is 4 of those.
    rng = np.random.default_rng(5)
    n = 1000
    v = rng.exponential(1.0, n)
    a = np.repeat(v, 2)
    b = np.ones_like(a)
    cl = np.repeat(np.arange(n), 2)
    ci_cluster = est.bootstrap_ratio(a, b, cluster=cl, n_bootstrap=4000, seed=2)
    ci_orig = est.bootstrap_ratio(v, np.ones(n), n_bootstrap=4000, seed=2)
    assert np.allclose([ci_cluster.lower, ci_cluster.upper, ci_cluster.se],
                       [ci_orig.lower, ci_orig.upper, ci_orig.se], rtol=1e-12)
    se_rows = est.bootstrap_ratio(a, b, n_bootstrap=4000, seed=3).se[0]
    assert ci_cluster.se[0] / se_rows == pytest.approx(np.sqrt(2), rel=0.065)


def test_bootstrap_is_paired_and_reproducible(log):
    r, w, _, _ = log
    num = np.vstack([w * r, w * r])
    den = np.vstack([np.ones_like(r), np.ones_like(r)])
    ci1 = est.bootstrap_ratio(num, den, n_bootstrap=300, seed=9)
    ci2 = est.bootstrap_ratio(num, den, n_bootstrap=300, seed=9)
    assert np.array_equal(ci1.lower, ci2.lower)
    assert ci1.lower[0] == ci1.lower[1]  # same resamples for every estimator
    assert ci1.lower[0] < est.ips(r, w) < ci1.upper[0]
    with pytest.raises(BadOption, match="n_bootstrap must be between 2 and"):
        est.bootstrap_ratio(num, den, n_bootstrap=1)


def test_compiled_counts_are_numpys_counts_bit_for_bit(monkeypatch):
    """Large chunks are tallied by a compiled loop: the same counts as numpy's bincount,
    so every bootstrap replicate is the same number; and the estimates' intervals and the
    paired differences read one set of replicates, as when each drew its own."""
    from ulr.ope import estimators as E
    from ulr.ope.verdicts import bootstrap_difference

    def counts(threshold):
        monkeypatch.setattr(E, "COMPILED_COUNTS", threshold)
        rng = np.random.default_rng(5)
        return [c.copy() for _, c in E.resample_counts(1_003, 70, rng, chunk=32)]
    small, large = counts(10 ** 12), counts(0)
    assert len(small) == len(large) == 3
    for a, b in zip(small, large):
        assert a.dtype == b.dtype == np.float64
        np.testing.assert_array_equal(a, b)
        assert np.all(a.sum(axis=1) == 1_003)
    rng = np.random.default_rng(1)
    num, den = rng.random((3, 500)), rng.random((3, 500)) + 0.1
    cluster = rng.integers(0, 200, 500)
    kw = dict(cluster=cluster, n_bootstrap=60, seed=3)
    reps = E.ratio_replicates(num, den, **kw)
    a, b = E.bootstrap_ratio(num, den, **kw), E.bootstrap_ratio(num, den, replicates=reps, **kw)
    for f in ("lower", "upper", "se"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    pd.testing.assert_frame_equal(bootstrap_difference(num, den, **kw),
                                  bootstrap_difference(num, den, replicates=reps, **kw))


def test_counts_are_the_draws_tallied_one_by_one():
    """The numpy path (one bincount per draw) against the obvious tally of the same draws
    (the generator's block of indices, each index added one at a time): the same float
    counts, so the bootstrap replicates are the numbers they were before (issue 54)."""
    from ulr.ope import estimators as E
    units, n, chunk = 37, 23, 10
    got = [(rows, c.copy()) for rows, c in E.resample_counts(units, n, np.random.default_rng(8),
                                                               chunk=chunk)]
    rng = np.random.default_rng(8)
    assert [r for r, _ in got] == [slice(0, 10), slice(10, 20), slice(20, 23)]
    for rows, c in got:
        idx = rng.integers(0, units, size=(rows.stop - rows.start, units))
        want = np.zeros((len(idx), units))
        for i, row in enumerate(idx):
            for k in row:
                want[i, k] += 1.0
        assert c.dtype == np.float64
        np.testing.assert_array_equal(c, want)


def test_compiled_counts_widen_when_a_count_passes_16_bits():
    """A unit drawn more than 65,535 times in one replicate (possible only for tiny unit
    counts with huge draws) is counted again in 64 bits: the counts stay exact."""
    from ulr.ope.resample_jit import row_counts
    idx = np.zeros((2, 70_000), dtype=np.int64)
    idx[1, ::2] = 1
    c = row_counts(idx, 3)
    np.testing.assert_array_equal(c, [[70_000, 0, 0], [35_000, 35_000, 0]])
    small = row_counts(np.array([[2, 2, 0]]), 4)
    np.testing.assert_array_equal(small, [[1, 0, 2, 0]])
