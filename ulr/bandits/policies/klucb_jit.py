"""CascadeKL-UCB's lists for many runs at once, compiled with numba (imported on demand).

:func:`select_lists` is the ``"bounds"`` path of
:class:`ulr.bandits.policies.CascadeKLUCB`: per run it keeps, for every item,
its last exact KL-UCB index ``q0``, the rate ``rate0`` it was solved at, the
slope ``s0 = dU/d rate`` there and the pulls ``n0`` it belongs to, and solves
an index again only where the top ``K`` depends on it. The index

    U(p, n, rate) = max{q in [p, 1] : n KL(p, q) <= rate}

is increasing and concave in the rate (the inverse of ``q -> n KL(p, q)``,
increasing and convex on ``[p, 1)``), so while an item's pulls are unchanged

    q0 <= U(rate) <= q0 + (rate - rate0) * s0      (rate >= rate0).

Per run and step:

1. items observed since their last solve (pulls != n0) are solved at ``rate``;
2. ``tau`` is the ``K``-th largest lower bound; an item whose upper bound is
   below ``tau - TIE`` has at least ``K`` items strictly above it and cannot be
   listed; the others are the candidates;
3. a candidate whose interval meets another candidate's is solved at ``rate``
   (then its interval is one point);
4. the list is the ``K`` largest candidates by lower bound, ties to the lower
   item id: two candidates either have disjoint intervals (so the lower bounds
   order them) or are both solved exactly at ``rate``.

Every solve starts from the same closed-form bound, so equal ``(wins, pulls)``
give equal indices (a tie ordered by id, as in the full computation). Bounds
within ``TIE`` (1e-12) count as overlapping, so rounding cannot order two
items wrongly. The Newton iteration is that of
:func:`ulr.bandits.policies.klucb_index_one` (in ``y = -log(1 - q)``, stopped
when an iterate moves by at most 1e-10).

Compiled with ``cache=True``: the first process compiles (a one-off cost;
``benchmarks/bench_bandits.py --kveton`` prints numba's start), later ones load the
machine code from ``__pycache__``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

TIE = 1e-12   # klucb_solver._TIE (a constant of this file: see _index)
_TOL = 1e-10
_MAX_ITER = 50
_MANY = 32   # more candidates than this: solve them all (no pairwise overlap test)


# The Newton iteration of klucb_solver.klucb_index_one, written again here: numba's cache
# is invalidated only by edits of the file a compiled function is in, so a compiled copy of
# a function from another module could go stale unseen (test_policies compares the two).
@numba.njit(cache=True, nogil=True)
def _index(p: float, n: float, rate: float) -> float:
    """KL-UCB index (``rate > 0``) by Newton's method in ``y = -log(1 - q)`` from the
    closed-form start, as :func:`ulr.bandits.policies.klucb_index_one`."""
    if n <= 0.0 or p >= 1.0:
        return 1.0
    r = rate / n
    q = min(p + math.sqrt(0.5 * r), p + r + math.sqrt(r * r + 2.0 * p * r), 1.0 - 1e-15)
    y = -math.log1p(-q)
    h = (p * math.log(p) if p > 0.0 else 0.0) + (1.0 - p) * math.log(1.0 - p)
    one_m_p = 1.0 - p
    for _ in range(_MAX_ITER):
        g = h - p * math.log(q) + one_m_p * y - r
        y -= g * q / max(q - p, 1e-300)
        q_new = -math.expm1(-y)
        done = abs(q_new - q) <= _TOL
        q = q_new
        if done:
            break
    return q


@numba.njit(cache=True, nogil=True)
def _solve(st, wins, pulls, r, e, rate):
    """Solve item ``e`` of run ``r`` at ``rate``; record value, rate, slope and pulls."""
    n = pulls[r, e]
    p = wins[r, e] / n
    q = _index(p, n, rate)
    st[0, r, e] = q
    st[1, r, e] = rate
    st[2, r, e] = q * (1.0 - q) / (n * max(q - p, 1e-300))
    st[3, r, e] = n
    return q


@numba.njit(cache=True, nogil=True)
def select_lists(wins, pulls, rate, st, out, cand, lo, hi):
    """Write the ``K`` items of largest KL-UCB index of every run into ``out``.

    Parameters
    ----------
    wins, pulls : float64 arrays of shape (R, L)
        Clicks and observations per item (``pulls >= 1``).
    rate : float
        ``log t + 3 log log t > 0``, never smaller than at the previous call.
    st : float64 array of shape (4, R, L)
        State ``q0, rate0, s0, n0``; ``n0 = -1`` (all of it) before the first call.
    out : intp array of shape (R, K)
        The lists, best first (ties to the lower item id).
    cand : intp array of shape (L,); lo, hi : float64 arrays of shape (L,)
        Scratch space.

    Returns
    -------
    int
        Index solves made (diagnostics).
    """
    n_runs, n_items = pulls.shape
    k = out.shape[1]
    solves = 0
    top = np.empty(k)
    for r in range(n_runs):
        # 1. bounds of every item, solving those observed since their last solve
        for j in range(k):
            top[j] = -np.inf
        for e in range(n_items):
            if pulls[r, e] != st[3, r, e]:
                q = _solve(st, wins, pulls, r, e, rate)
                solves += 1
                lo[e] = q
                hi[e] = q
            else:
                q = st[0, r, e]
                lo[e] = q
                hi[e] = min(1.0, q + (rate - st[1, r, e]) * st[2, r, e])
            if q > top[k - 1]:   # keep the k largest lower bounds, descending
                j = k - 1
                while j > 0 and top[j - 1] < q:
                    top[j] = top[j - 1]
                    j -= 1
                top[j] = q
        # 2. candidates: upper bound not below tau (the k-th largest lower bound)
        limit = top[k - 1] - TIE
        m = 0
        for e in range(n_items):
            if hi[e] >= limit:
                cand[m] = e
                m += 1
        # 3. solve the candidates whose interval meets another's
        if m > 1:
            for a in range(m):
                ea = cand[a]
                if lo[ea] == hi[ea] and st[1, r, ea] == rate:
                    continue
                meets = m > _MANY
                b = 0
                while not meets and b < m:
                    eb = cand[b]
                    if b != a and hi[eb] >= lo[ea] - TIE and hi[ea] >= lo[eb] - TIE:
                        meets = True
                    b += 1
                if meets:
                    q = _solve(st, wins, pulls, r, ea, rate)
                    solves += 1
                    lo[ea] = q
                    hi[ea] = q
        # 4. the k best candidates by lower bound, ties to the lower id
        for j in range(k):
            best = -1
            pick = 0
            for a in range(m):
                e = cand[a]
                if e >= 0 and (best < 0 or lo[e] > lo[best]
                               or (lo[e] == lo[best] and e < best)):
                    best = e
                    pick = a
            out[r, j] = best
            cand[pick] = -1
    return solves
