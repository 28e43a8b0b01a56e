"""PBM's and UBM's E-step over cell counts, compiled with numba (imported by their fits).

A cell is a (pair, examination index) with weighted impressions ``n`` and clicks
``c`` (:mod:`ulr.clickmodels.cells`; the index is the rank for the PBM, the
(rank, previous click) for the UBM). With ``p = e a`` and ``q = 1 - p``, one
pass over the cells gives

    num_a[pair] += c + (n - c) a (1 - e) / q      (expected attractive impressions)
    num_e[idx]  += c + (n - c) e (1 - a) / q      (expected examined impressions)
    ll          += c log p + (n - c) log q        (the cells' log-likelihood)

the same sums as the numpy ``bincount`` formulation (tests/clickmodels/test_reference.py)
without its five cell-sized temporaries per iteration. ``cache=True``: compiled once.
"""

from __future__ import annotations

import numpy as np
from numba import njit

TINY = 1e-300


@njit(cache=True)
def cell_step(pair, idx, n, c, alpha, exam):
    """``(num_a, num_e, ll)`` for attractiveness ``alpha`` and examination ``exam``."""
    num_a = np.zeros(alpha.shape[0])
    num_e = np.zeros(exam.shape[0])
    ll = 0.0
    for i in range(pair.shape[0]):
        a, e = alpha[pair[i]], exam[idx[i]]
        p = e * a
        q = 1.0 - p
        skip = n[i] - c[i]
        num_a[pair[i]] += c[i] + skip * a * (1.0 - e) / q
        num_e[idx[i]] += c[i] + skip * e * (1.0 - a) / q
        ll += c[i] * np.log(max(p, TINY)) + skip * np.log(max(q, TINY))
    return num_a, num_e, ll
