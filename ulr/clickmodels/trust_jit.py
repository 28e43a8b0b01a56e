"""The trust-bias model's E-step over cells, compiled with numba (imported by ``Trust.fit`` and
``ulr.propensity.trust``).

A cell is a (pair, rank) with weighted impressions ``n`` and clicks ``c``. With ``p1_k``
(the click probability of a relevant result at rank k, ``alpha_k + beta_k``) and ``p0_k``
(of an irrelevant one, ``beta_k``), one pass gives each pair's log-likelihood under either
class, ``L1`` and ``L0``; the posterior of relevance is
``r = sigmoid(logit(pi) + L1 - L0)`` and the log-likelihood
``sum_pairs log(pi e^L1 + (1 - pi) e^L0)``; a second pass gives the M-step's sums
``sum r c``, ``sum r n``, ``sum (1 - r) c``, ``sum (1 - r) n`` per rank.
tests/clickmodels/test_trust.py checks them against a slow reference EM.
"""

from __future__ import annotations

import numpy as np
from numba import njit

TINY = 1e-300


@njit(cache=True)
def trust_step(pair, idx, n, c, p1, p0, pi, n_pairs, k):
    """``(num1, den1, num0, den0, r_sum, live, ll, r)`` for one EM step at ``(p1, p0, pi)``."""
    l1 = np.zeros(n_pairs)
    l0 = np.zeros(n_pairs)
    seen = np.zeros(n_pairs, dtype=np.bool_)
    lp1 = np.log(np.maximum(p1, TINY))
    lq1 = np.log(np.maximum(1.0 - p1, TINY))
    lp0 = np.log(np.maximum(p0, TINY))
    lq0 = np.log(np.maximum(1.0 - p0, TINY))
    for i in range(pair.shape[0]):
        q, j = pair[i], idx[i]
        ci, si = c[i], n[i] - c[i]
        if n[i] <= 0.0:
            continue
        seen[q] = True
        t1 = 0.0
        t0 = 0.0
        if ci != 0.0:
            t1 += ci * lp1[j]
            t0 += ci * lp0[j]
        if si != 0.0:
            t1 += si * lq1[j]
            t0 += si * lq0[j]
        l1[q] += t1
        l0[q] += t0
    lpi = np.log(max(pi, TINY))
    lqi = np.log(max(1.0 - pi, TINY))
    r = np.full(n_pairs, pi)
    ll = 0.0
    r_sum = 0.0
    live = 0.0
    for q in range(n_pairs):
        if not seen[q]:
            continue
        a = lpi + l1[q]
        b = lqi + l0[q]
        m = max(a, b)
        tot = m + np.log(np.exp(a - m) + np.exp(b - m))
        ll += tot
        r[q] = np.exp(a - tot)
        r_sum += r[q]
        live += 1.0
    num1 = np.zeros(k)
    den1 = np.zeros(k)
    num0 = np.zeros(k)
    den0 = np.zeros(k)
    for i in range(pair.shape[0]):
        rq = r[pair[i]]
        j = idx[i]
        num1[j] += rq * c[i]
        den1[j] += rq * n[i]
        num0[j] += (1.0 - rq) * c[i]
        den0[j] += (1.0 - rq) * n[i]
    return num1, den1, num0, den0, r_sum, live, ll, r
