"""The compiled pass of the EM's score bootstrap (:func:`ulr.propensity.em.score_replicates`).

numba, like the EM kernel (:mod:`ulr.clickmodels.cells_jit`); ``cache=True``: compiled once.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def unit_scores(cell, unit, n, c, pair, pos0, mu, w, dinv, start, end, live, g, k):
    """Efficient score of theta per resampling unit, ``u`` of shape (g, k).

    One pass over the (unit, cell) entries. An entry with ``n`` impressions and ``c``
    clicks of cell ``i`` (pair ``p``, position ``j``) has the score
    ``rho = (c - n mu_i) / (1 - mu_i)`` for ``log theta_j`` and for ``log gamma_p``; the
    efficient score for ``log theta`` subtracts its projection on ``log gamma_p``:
    ``rho (e_j - a_p)`` with ``a_p[k'] = w_{p,k'} / sum_k'' w_{p,k''}`` (the Fisher
    weights ``w = n mu / (1 - mu)`` of the pair's cells; ``dinv[p]`` is one over their sum,
    0 for a pair whose gamma is held at a bound). The cells of pair ``p`` are
    ``start[p]:end[p]``; entries of pairs without clicks (``live`` False) add nothing.
    """
    u = np.zeros((g, k))
    for e in range(cell.shape[0]):
        i = cell[e]
        p = pair[i]
        if not live[p]:
            continue
        m = mu[i]
        rho = (c[e] - n[e] * m) / (1.0 - m)
        row = unit[e]
        u[row, pos0[i]] += rho
        dp = dinv[p]
        if dp != 0.0:
            f = rho * dp
            for j in range(start[p], end[p]):
                u[row, pos0[j]] -= f * w[j]
    return u
