"""The DBN's E-step compiled with numba: one pass per session row (imported by ``DBN.fit``).

The same sums as :meth:`ulr.clickmodels.dbn.DBN._expected` (the numpy formulation,
which builds a dozen ``R x K`` temporaries per iteration) in one loop over each
row's ranks: with ``l`` the last click (0-based, -1 when none) and ``n`` the length,

- ranks ``j <= l`` were examined; below ``l`` the user stopped at ``m`` with weight
  ``w_m = p0 prod_{l<i<=m} (1 - a_i) gamma^(m-l-1) (1 - gamma if m < n - 1)``
  (``p0 = gamma (1 - sigma_l)``, 1 without a click), and at ``l`` itself with
  ``1 - p0`` (1 when ``l = n - 1``); ``z`` is their sum and ``P(E_j) = sum_{m>=j} w_m / z``;
- alpha: clicks / ``P(E)``; sigma: ``P(S_l) = sigma_l / z`` over clicks with a rank
  below; gamma: ``P(E_{j+1})`` over ``P(E_j, not satisfied)``, ``j < n - 1``;
- the row's log-likelihood: the clicks and skips down to ``l``, the steps between
  them (``gamma (1 - sigma)`` after a click, ``gamma`` after a skip) and ``log z``.

Compiled with ``cache=True``: the first process compiles (a few seconds), later ones
load the machine code from ``__pycache__``. tests/clickmodels/test_reference.py
checks it against the numpy formulation and the per-session enumeration.
"""

from __future__ import annotations

import numpy as np
from numba import njit

TINY = 1e-300


@njit(cache=True)
def shape_of(pair, click, i):
    """Row ``i``'s length ``n`` (its slots up to the first empty one) and the 0-based rank
    of its last click (-1 when none)."""
    n, last = 0, -1
    for j in range(pair.shape[1]):
        if pair[i, j] < 0:
            break
        n += 1
        if click[i, j]:
            last = j
    return n, last


@njit(cache=True)
def at_last_click(cont, last, n):
    """``(p0, stop)``: the chance to go on below the last click (``cont``, the chain's
    continuation after it; 1 without a click) and the weight of stopping at it
    (``1 - cont``; 1 at the bottom rank; 0 without a click)."""
    if last < 0:
        return 1.0, 0.0
    return cont, (1.0 if last == n - 1 else 1.0 - cont)


@njit(cache=True)
def estep(pair, click, w, alpha, sigma, gamma):
    """Sums ``(na, da, ns, ds, ng, dg, ll)`` of the DBN E-step over weighted rows."""
    R, K = pair.shape
    P = alpha.shape[0]
    na, da = np.zeros(P), np.zeros(P)
    ns, ds = np.zeros(P), np.zeros(P)
    ng = dg = ll = 0.0
    tail = np.zeros(K + 1)
    for i in range(R):
        wi = w[i]
        if wi == 0.0:
            continue
        n, last = shape_of(pair, click, i)
        # the tail below the last click: stopping weights, then P(E_j) by a reverse sum
        p0, stop = at_last_click(gamma * (1.0 - sigma[pair[i, max(last, 0)]]), last, n)
        u, g, z = p0, 1.0, stop
        for m in range(last + 1, n):
            u *= 1.0 - alpha[pair[i, m]]
            wm = u * g * ((1.0 - gamma) if m < n - 1 else 1.0)
            tail[m] = wm
            z += wm
            g *= gamma
        z = max(z, TINY)
        acc = 0.0
        for m in range(n - 1, last, -1):
            acc += tail[m]
            tail[m] = acc / z
        lli = np.log(z)
        for j in range(n):
            q = pair[i, j]
            c = click[i, j]
            e = 1.0 if j <= last else tail[j]
            if c:
                na[q] += wi
            da[q] += wi * e
            if j <= last:  # the observed part of the likelihood
                a = alpha[q]
                seen = a if c else 1.0 - a
                step = 1.0
                if j < last:
                    step = gamma * (1.0 - sigma[q]) if c else gamma
                lli += np.log(max(seen * step, TINY))
            if j < n - 1:
                ps = sigma[q] / z if j == last else 0.0
                if c:
                    ns[q] += wi * ps
                    ds[q] += wi
                    dg += wi * (1.0 - ps if j == last else 1.0)
                else:
                    dg += wi * e
                ng += wi * (1.0 if j + 1 <= last else tail[j + 1])
        ll += wi * lli
    return na, da, ns, ds, ng, dg, ll
