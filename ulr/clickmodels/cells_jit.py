"""PBM's and UBM's cell counts and E-step over them, compiled with numba (imported by their
fits).

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
def cell_step(pair, idx, n, c, alpha, exam, with_ll=True):
    """``(num_a, num_e, ll)`` for attractiveness ``alpha`` and examination ``exam`` (``ll``
    0 without ``with_ll``: a step whose likelihood nobody reads skips the logarithms).

    The PBM's one EM kernel: the click models' PBM and UBM and Position bias's EM
    (:func:`ulr.propensity.em._em_step`) all run it; their M-steps divide its sums by the
    impressions, with or without a prior's pseudo-counts (:mod:`ulr.clickmodels.prior`)."""
    num_a = np.zeros(alpha.shape[0])
    num_e = np.zeros(exam.shape[0])
    ll = 0.0
    for i in range(pair.shape[0]):
        a, e = alpha[pair[i]], exam[idx[i]]
        p = e * a
        q = 1.0 - p
        ci = c[i]
        skip = n[i] - ci
        if skip != 0.0:
            qq = max(q, TINY)
            num_a[pair[i]] += ci + skip * a * (1.0 - e) / qq
            num_e[idx[i]] += ci + skip * e * (1.0 - a) / qq
        else:
            # without a prior, maximum likelihood may reach a = e = 1 (a pair clicked at every
            # showing in a slot always examined): q = 0, and a cell without skips adds ci
            num_a[pair[i]] += ci
            num_e[idx[i]] += ci
        if with_ll:
            # a log only where its weight is not 0 (most cells have no click): the same sum,
            # to the bit (0 * log(p) added nothing)
            term = ci * np.log(max(p, TINY)) if ci != 0.0 else 0.0
            if skip != 0.0:
                term += skip * np.log(max(q, TINY))
            ll += term
    return num_a, num_e, ll


@njit(cache=True)
def pair_gram(pair, idx, b, k):
    """``B'B`` (K x K) for the (pairs x K) matrix ``B`` with ``B[pair[i], idx[i]] = b[i]``,
    one entry per cell, the cells of a pair adjacent: each entry sums its products pair by
    pair in ascending order, as scipy's sparse ``B.T @ B`` does (the same bits), in one pass
    without building the sparse matrices. Position bias's Newton start
    (:func:`ulr.propensity.em._poisson_newton`) takes its Hessian from it."""
    g = np.zeros((k, k))
    n = pair.shape[0]
    s = 0
    while s < n:
        e = s + 1
        while e < n and pair[e] == pair[s]:
            e += 1
        for i in range(s, e):
            bi = b[i]
            for j in range(s, e):
                g[idx[i], idx[j]] += bi * b[j]
        s = e
    return g


@njit(cache=True)
def pair_exposure(pair, idx, n, exam, m):
    """``S[q] = sum over q's cells of n exam[idx]`` (``m`` pairs): ``np.bincount(pair,
    n * exam[idx], minlength=m)`` in one pass without its two cell-sized temporaries, adding
    in the same order (the same bits). The Newton start's exposure of each pair."""
    out = np.zeros(m)
    for i in range(pair.shape[0]):
        out[pair[i]] += n[i] * exam[idx[i]]
    return out


@njit(cache=True)
def newton_terms(pair, idx, n, exam, rate, w, k):
    """The Newton start's expected clicks per position ``E[k] = sum n exam[idx] rate[pair]``
    (over the cells at k) and Gram matrix :func:`pair_gram` of ``b = n exam[idx] w[pair]``,
    as the numpy expressions ``bincount(idx, nth * rate[pair])`` and ``nth * w[pair]``
    (``nth = n * exam[idx]``) give them, bit for bit, in two passes without temporaries."""
    e = np.zeros(k)
    b = np.empty(pair.shape[0])
    for i in range(pair.shape[0]):
        nth = n[i] * exam[idx[i]]
        e[idx[i]] += nth * rate[pair[i]]
        b[i] = nth * w[pair[i]]
    return e, pair_gram(pair, idx, b, k)


@njit(cache=True)
def dense_cells(pair, click, w, K, span, with_prev):
    """Weighted impressions and clicks per cell index ``(pair * K + r) * (K + 1) + prev``
    (``r`` the 0-based rank; ``prev`` the rank of the last click above, 0 without one or
    when not ``with_prev``), ``span`` slots, in one pass over the rows: the sums
    :func:`ulr.clickmodels.cells.cells` makes by ``bincount`` block by block, without its
    per-block key and weight temporaries."""
    n_acc, c_acc = np.zeros(span), np.zeros(span)
    for i in range(pair.shape[0]):
        wi = w[i]
        prev = 0
        for j in range(pair.shape[1]):
            q = np.int64(pair[i, j])
            if q < 0:
                continue
            key = (q * K + j) * (K + 1) + (prev if with_prev else 0)
            n_acc[key] += wi
            if click[i, j]:
                c_acc[key] += wi
                prev = j + 1
    return n_acc, c_acc
