"""The DCM's E-step compiled with numba: one pass per session row (imported by ``DCM.fit``).

The same sums as :meth:`ulr.clickmodels.dcm.DCM._expected` (the numpy formulation of
the examination chain with ``cc_r = lambda_r`` and ``cs = 1``, which builds a dozen
``R x K`` temporaries per block and iteration). After a skip the user always goes on, so
below the last click ``l`` (0-based, -1 when none) of a session of length ``n`` they stop
either at ``l`` (weight ``1 - lambda_l``; 1 when ``l = n - 1``; 0 without a click) or at
the bottom (weight ``u = p0 prod_{l<m<n} (1 - a_m)``, ``p0 = lambda_l``, 1 without a
click); every rank below ``l`` is examined with probability ``e = u / z``, ``z`` the sum.

- alpha: clicks / ``P(E)`` per pair;
- lambda_r: ``P(E_{r+1})`` / clicks at r, over clicks with a rank below them;
- the row's log-likelihood: the clicks and skips down to ``l``, ``lambda`` after each click
  above ``l``, and ``log z`` (for the fit's stopping rule).

``cache=True``: compiled once. tests/clickmodels/test_reference.py checks it against the
numpy formulation and the per-session enumeration.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ulr.clickmodels.dbn_jit import at_last_click, shape_of

TINY = 1e-300


@njit(cache=True)
def estep(pair, click, w, alpha, lam):
    """Sums ``(na, da, nl, dl, ll)`` of the DCM E-step over weighted rows."""
    R, K = pair.shape
    P = alpha.shape[0]
    na, da = np.zeros(P), np.zeros(P)
    nl, dl = np.zeros(K), np.zeros(K)
    ll = 0.0
    for i in range(R):
        wi = w[i]
        if wi == 0.0:
            continue
        n, last = shape_of(pair, click, i)
        p0, stop = at_last_click(lam[max(last, 0)], last, n)
        u = 1.0
        for m in range(last + 1, n):
            u *= 1.0 - alpha[pair[i, m]]
        bottom = p0 * u if last < n - 1 else 0.0
        z = max(stop + bottom, TINY)
        e = bottom / z  # P(E_j) below the last click
        lli = np.log(z)
        for j in range(last + 1):  # the observed part: examined down to the last click
            a = alpha[pair[i, j]]
            seen = a if click[i, j] else 1.0 - a
            step = lam[j] if (click[i, j] and j < last) else 1.0
            lli += np.log(max(seen * step, TINY))
        ll += wi * lli
        for j in range(n):
            q = pair[i, j]
            if click[i, j]:
                na[q] += wi
                if j < n - 1:
                    nl[j] += wi * (1.0 if j + 1 <= last else e)
                    dl[j] += wi
            da[q] += wi * (1.0 if j <= last else e)
    return na, da, nl, dl, ll
