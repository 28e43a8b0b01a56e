"""The propensity bootstrap's interval (issue 54): the standard interval on the log scale
(:func:`ulr.propensity.bootstrap.standard_interval`) against a slow obvious reference, and
by its coverage of the true theta on simulated PBM logs for randomization and intervention
harvesting, where the percentile interval of the default 50 replicates covered about 91%."""

import math
import statistics

import numpy as np
import pytest
from scipy.stats import binom, t as student

from ulr import propensity
from ulr.propensity import bootstrap as bs
from ulr.simulate import simulate_clicks
from tests.propensity.test_propensity_em_interval import table_scan

def reference(samples, estimate, level):
    """The slow obvious reference, one position at a time in Python floats: where the
    estimate and every replicate are finite and positive, ``exp(log est +- t s)`` with ``s``
    the sample standard deviation of the replicates' logs and ``t`` Student's quantile with
    B - 1 degrees of freedom; elsewhere the percentile rule (None here: the caller checks
    those against :func:`percentile_interval`)."""
    b, k = samples.shape
    q = float(student.ppf(0.5 + level / 2, b - 1))
    out = []
    for j in range(k):
        col = [float(x) for x in samples[:, j]]
        est = float(estimate[j])
        if not (math.isfinite(est) and est > 0 and all(math.isfinite(x) and x > 0 for x in col)):
            out.append(None)
            continue
        s = statistics.stdev([math.log(x) for x in col])
        out.append((est * math.exp(-q * s), est * math.exp(q * s)))
    return out


def test_standard_interval_matches_the_slow_reference():
    rng = np.random.default_rng(4)
    b, level = 50, 0.9
    good = np.exp(rng.normal([0.0, -0.3, -0.7, -1.2], [0.0, 0.05, 0.1, 0.4], (b, 4)))
    good[:, 0] = 1.0  # the reference position
    odd = np.exp(rng.normal(-1.0, 0.2, (b, 5)))
    odd[:4, 0] = np.inf  # no clicks at the reference position in 4 replicates
    odd[7, 1] = np.nan  # undefined in one replicate (dropped by the percentile rule)
    odd[:10, 2] = np.nan  # undefined in many: [0, inf]
    odd[5, 3] = 0.0  # no clicks at this position in one replicate
    samples = np.hstack([good, odd])
    est = np.concatenate([[1.0], np.exp([-0.28, -0.75, -1.1]), np.full(4, 0.4), [np.nan]])
    lo, up, notes = bs.standard_interval(samples, est, level)
    plo, pup, pnotes = bs.percentile_interval(samples, level)
    ref = reference(samples, est, level)
    assert [r is None for r in ref] == [False] * 4 + [True] * 5
    for j, r in enumerate(ref):
        if r is None:  # the percentile rule, as before
            np.testing.assert_array_equal([lo[j], up[j]], [plo[j], pup[j]])
        else:
            np.testing.assert_allclose([lo[j], up[j]], r, rtol=1e-12)
    assert lo[0] == up[0] == 1.0  # the reference position stays [1, 1]
    assert np.isposinf(up[4]) and (lo[6], up[6]) == (0.0, np.inf)
    assert notes == pnotes and "10 of 50 bootstrap replicates" in notes[0]
    # centred on the estimate, not on the replicates: symmetric on the log scale
    np.testing.assert_allclose(np.log(up[1:4] / est[1:4]), np.log(est[1:4] / lo[1:4]),
                               rtol=1e-12)
    # a larger level widens it; a different estimate moves it and keeps its width
    lo2, up2, _ = bs.standard_interval(samples, est, 0.99)
    assert np.all(lo2[1:4] < lo[1:4]) and np.all(up2[1:4] > up[1:4])
    lo3, up3, _ = bs.standard_interval(samples, est * 2, level)
    np.testing.assert_allclose([lo3[1:4], up3[1:4]], [2 * lo[1:4], 2 * up[1:4]], rtol=1e-12)
    with pytest.raises(ValueError):
        bs.standard_interval(samples, est[:3], level)


N_LOGS = {"randomization": 200, "intervention-harvesting": 100}


def test_standard_interval_covers_the_true_theta_at_the_nominal_rate(n_logs=N_LOGS):
    """On simulated PBM logs with known theta (30 queries x 5 documents, 5,000 sessions, a
    tenth of them shown in random order), the default interval (50 replicates) of
    randomization and of intervention harvesting covers each position's true theta at
    95% (200 logs, and 100 for harvesting, 5 times slower): the count of covering logs lies
    within the Binomial(n, 0.95) range at
    two-sided level 0.01 / 8 per method and position (Bonferroni: the test errs with
    probability below 1%). The percentile interval of the same replicates, which these
    methods drew until issue 54, covers about 91% (its 2.5% quantile sits between the 2nd
    and 3rd of 50 draws); on 400 logs it covered 363 to 369 per position for
    randomization, and with it in place of the standard interval this test fails
    (randomization covered 190, 182, 177, 181 of these 200 logs; the range starts at 179).
    """
    k, level, b = 5, 0.95, 50
    methods = tuple(n_logs)  # harvesting on fewer logs: it costs 5x randomization's time
    covered = {m: np.zeros(k - 1, dtype=int) for m in methods}
    log_err = {m: [] for m in methods}
    half = {m: [] for m in methods}
    for i in range(max(n_logs.values())):
        sim = simulate_clicks(queries=30, positions=k, sessions=5000, features=0,
                              seed=9000 + i, ranker_noise=1.0)
        truth = sim.relative_theta[1:]
        scan = table_scan(sim.df, randomized=True)
        for m in (m for m in methods if i < n_logs[m]):
            res = propensity.estimate(scan, method=m, n_bootstrap=b, seed=i, level=level,
                                      weigh_facts=False)
            assert res.interval == "bootstrap" and res.lower[0] == res.upper[0] == 1.0
            lo, up = res.lower[1:], res.upper[1:]
            covered[m] += ((lo <= truth) & (truth <= up)).astype(int)
            log_err[m].append(np.log(res.theta[1:] / truth))
            half[m].append(np.log(up / lo) / 2)
    alpha = 0.01 / (len(methods) * (k - 1))
    q = float(student.ppf(0.5 + level / 2, b - 1))
    for m in methods:
        n = n_logs[m]
        lo_n, hi_n = binom.ppf(alpha / 2, n, level), binom.isf(alpha / 2, n, level)
        print(f"{m}: covered in {n} logs, positions 2..{k}: {covered[m].tolist()}, "
              f"accepted {lo_n:.0f}..{hi_n:.0f}")
        assert np.all((covered[m] >= lo_n) & (covered[m] <= hi_n)), (m, covered[m], lo_n, hi_n)
        # the width is the sampling spread: the mean log half-width / t against the sd of
        # the log estimates over the logs, within 4 standard errors of that sd (normal
        # theory, sd / sqrt(2 (n - 1))) plus 5% (the replicates' sd is itself a 50-draw
        # estimate whose mean is below the sd by about 1 / (4 (B - 1)), and the log of a
        # click-count ratio is normal only to first order)
        sd_true = np.std(log_err[m], axis=0, ddof=1)
        sd_claim = np.mean(half[m], axis=0) / q
        assert np.all(np.abs(sd_claim / sd_true - 1) <= 4 / np.sqrt(2 * (n - 1)) + 0.05), (
            m, sd_claim, sd_true)
