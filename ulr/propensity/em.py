"""EM for the position-based click model (PBM).

The PBM says a result at position k is clicked when it is examined and
attractive, independently:

    P(C = 1 | q, d, k) = theta_k * gamma_{q,d}.

With impressions ``n`` and clicks ``c`` per cell (q, d, k) the log-likelihood
is ``sum c log(theta gamma) + (n - c) log(1 - theta gamma)``. EM treats
examination E and attractiveness R as hidden (Chuklin, Markov & de Rijke,
"Click Models for Web Search", 2015, ch. 4; Wang et al., "Position bias
estimation for unbiased learning to rank in personal search", WSDM 2018,
Eq. 5-8). A click means E = R = 1; for a skipped result

    P(E = 1, R = 0 | C = 0) = theta (1 - gamma) / (1 - theta gamma)
    P(E = 0, R = 1 | C = 0) = (1 - theta) gamma / (1 - theta gamma)

and the M-step averages these posteriors:

    theta_k     <- sum_{cells at k}    [c + (n - c) P(E=1,R=0|C=0)] / sum n
    gamma_{q,d} <- sum_{cells of q,d}  [c + (n - c) P(E=0,R=1|C=0)] / sum n.

Each iteration is a handful of vector operations and two ``bincount`` over
the cells, never over rows. Parameters are clipped to [eps, 1 - eps] so a
position or pair with no clicks (or only clicks) cannot reach 0 or 1, where
EM would stick. The overall scale (theta * s, gamma / s) is only weakly
identified, so the estimate is reported relative to position 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.errors import UlrError
from ulr.propensity.aggregate import CellStats

EPS = 1e-6


@dataclass(frozen=True)
class EMFit:
    theta: np.ndarray  # absolute, clipped to [eps, 1 - eps]
    gamma: np.ndarray  # per pair
    loglik: tuple
    converged: bool


def _clip(a, eps):
    return np.clip(a, eps, 1.0 - eps, out=a)


def initial_theta(stats: CellStats) -> np.ndarray:
    """Naive start: CTR per position relative to the best position, scaled to 0.9."""
    k = stats.positions
    pos0 = stats.position - 1
    n_k = np.bincount(pos0, stats.impressions, minlength=k)
    c_k = np.bincount(pos0, stats.clicks, minlength=k)
    ctr = np.divide(c_k, n_k, out=np.zeros(k), where=n_k > 0)
    top = ctr.max()
    theta = 0.9 * ctr / top if top > 0 else np.full(k, 0.5)
    return np.clip(theta, 0.05, 0.95)


def poisson_start(stats: CellStats, *, max_iter: int = 100, tol: float = 1e-5
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Starting point: the PBM fitted under the Poisson approximation.

    ``clicks ~ Poisson(n theta_k gamma_qd)`` has no hidden variables; its
    maximum likelihood is found by alternating the closed forms
    ``theta_k = C_k / sum n gamma`` and ``gamma_qd = C_qd / sum n theta``
    (iterative proportional fitting), which converges in tens of cheap
    iterations where EM needs hundreds. With CTRs well below 1 its fit is
    close to the Bernoulli one, so EM started there has little left to do.
    The scale is set so that max theta = 0.9.
    """
    k, m = stats.positions, stats.n_pairs
    pos0, pair, n = stats.position - 1, stats.pair, stats.impressions
    c_k = np.bincount(pos0, stats.clicks, minlength=k)
    c_q = np.bincount(pair, stats.clicks, minlength=m)
    theta = initial_theta(stats)
    gamma = np.full(m, 0.5)
    for _ in range(int(max_iter)):
        expo_q = np.bincount(pair, n * theta[pos0], minlength=m)
        gamma = np.divide(c_q, expo_q, out=np.zeros(m), where=expo_q > 0)
        expo_k = np.bincount(pos0, n * gamma[pair], minlength=k)
        new = np.divide(c_k, expo_k, out=np.zeros(k), where=expo_k > 0)
        top = new.max()
        if not top > 0:
            break
        new *= 0.9 / top
        done = np.max(np.abs(new - theta)) < tol
        theta = new
        if done:
            break
    gamma = gamma * (top / 0.9) if top > 0 else gamma  # same products theta * gamma
    return theta, gamma


def pbm_em(stats: CellStats, *, theta0=None, gamma0=None, tol: float = 1e-8,
           max_iter: int = 500, eps: float = EPS, accelerate: bool = True,
           progress=None) -> EMFit:
    """Fit the PBM by EM on cell statistics.

    Parameters
    ----------
    stats : CellStats
        Impressions and clicks per (pair, position).
    theta0, gamma0 : array, optional
        Starting values (default: the naive CTR ratio, and the pairs' CTR over it).
    tol : float
        Stop when the log-likelihood per impression changes by less than ``tol``
        from one iteration to the next.
    max_iter : int
        At most this many iterations.
    eps : float
        Clip parameters to [eps, 1 - eps].
    accelerate : bool
        SQUAREM (Varadhan & Roland, "Simple and globally convergent methods for
        accelerating the convergence of any EM algorithm", Scand. J. Stat.
        2008), scheme S3: one iteration is two EM steps, an extrapolation
        ``x0 - 2 a r + a^2 v`` with ``a = -|r|/|v|``, and a stabilizing EM
        step; the extrapolation is kept only when it does not lower the
        likelihood, so the sequence stays monotone. Plain EM on PBM converges
        linearly and slowly when CTRs are low (most of the information is
        missing); SQUAREM needs several times fewer EM steps for the same fit.
    progress : callable(fraction, text), optional

    Returns
    -------
    EMFit
        Absolute theta and gamma (scale weakly identified), the
        log-likelihood of each iterate, and whether ``tol`` was reached.
    """
    k, m = stats.positions, stats.n_pairs
    pos0 = stats.position - 1
    pair = stats.pair
    n = stats.impressions
    c = stats.clicks
    nc = n - c
    n_k = np.bincount(pos0, n, minlength=k)
    c_k = np.bincount(pos0, c, minlength=k)
    n_q = np.bincount(pair, n, minlength=m)
    c_q = np.bincount(pair, c, minlength=m)
    total = max(float(n.sum()), 1.0)
    safe_nk = np.where(n_k > 0, n_k, 1.0)
    safe_nq = np.where(n_q > 0, n_q, 1.0)

    def em_step(theta, gamma):
        """One EM map; also the log-likelihood at the input."""
        th = theta[pos0]
        g = gamma[pair]
        p = th * g
        q = 1.0 - p
        # sum c log(theta gamma) needs no per-cell logarithm.
        ll = float(c_k @ np.log(theta) + c_q @ np.log(gamma) + nc @ np.log(q))
        w = nc / q
        wp = w * p
        # w th (1 - g) = w th - w p  and  w g (1 - th) = w g - w p
        t_new = (c_k + np.bincount(pos0, w * th - wp, minlength=k)) / safe_nk
        g_new = (c_q + np.bincount(pair, w * g - wp, minlength=m)) / safe_nq
        return _clip(t_new, eps), _clip(g_new, eps), ll

    if theta0 is None and gamma0 is None:
        theta0, gamma0 = poisson_start(stats)
    theta = _clip(np.array(theta0 if theta0 is not None else initial_theta(stats), float), eps)
    if gamma0 is not None:
        gamma = _clip(np.array(gamma0, dtype=float), eps)
    else:
        exposure = np.bincount(pair, n * theta[pos0], minlength=m)
        gamma = _clip(np.divide(c_q, exposure, out=np.full(m, 0.5), where=exposure > 0), eps)

    lls: list[float] = []
    converged = False
    for it in range(int(max_iter)):
        t1, g1, ll0 = em_step(theta, gamma)
        lls.append(ll0)  # log-likelihood of the current iterate
        if it > 0 and abs(lls[-1] - lls[-2]) / total < tol:
            converged = True
            break
        if not accelerate:
            theta, gamma = t1, g1
        else:
            t2, g2, ll1 = em_step(t1, g1)
            rt, rg = t1 - theta, g1 - gamma
            vt, vg = t2 - t1 - rt, g2 - g1 - rg
            rr = float(rt @ rt + rg @ rg)
            vv = float(vt @ vt + vg @ vg)
            alpha = -np.sqrt(rr / vv) if vv > 0 else -1.0
            if alpha > -1.0:
                theta, gamma = t2, g2
            else:
                tx = _clip(theta - 2 * alpha * rt + alpha ** 2 * vt, eps)
                gx = _clip(gamma - 2 * alpha * rg + alpha ** 2 * vg, eps)
                t3, g3, llx = em_step(tx, gx)  # stabilizing step
                if np.isfinite(llx) and llx >= ll1:
                    theta, gamma = t3, g3
                else:
                    theta, gamma = t2, g2
        if progress is not None and it % 5 == 0:
            progress(min(it / max(max_iter, 1), 1.0), f"EM iteration {it + 1}")
    return EMFit(theta=theta, gamma=gamma, loglik=tuple(lls), converged=converged)


def run(scan, *, positions=None, bootstrap: int = 0, seed=0, assume_randomized: bool = False,
        progress=None, alpha: float = 0.05, tol: float = 1e-8, max_iter: int = 500):
    """EM estimate from one aggregate query; bootstrap by reweighting the cells."""
    from ulr.propensity import bootstrap as bs
    from ulr.propensity.aggregate import cell_stats, connected_to_top
    from ulr.propensity.result import PropensityResult

    prog = bs.Progress(progress)
    prog(0.02, "aggregating impressions and clicks per (query, doc, position) in SQL")
    stats = cell_stats(scan, positions=positions, groups=bootstrap > 0)
    linked = connected_to_top(stats)
    if not linked[1:].any():
        raise UlrError("every query-document pair was shown at a single position, so EM "
                       "cannot tell position from relevance; it needs pairs shown at several "
                       "positions (ranker changes, noise or randomization).")
    fit = pbm_em(stats, tol=tol, max_iter=max_iter,
                 progress=prog.sub(0.1, 0.5 if bootstrap else 0.98))
    theta = fit.theta / fit.theta[0]
    theta[~linked] = np.nan
    notes = []
    if not fit.converged:
        notes.append(f"EM stopped after {max_iter} iterations before the log-likelihood "
                     "settled; treat the estimate with care.")
    if not linked.all():
        notes.append("no chain of query-document pairs links position(s) "
                     f"{', '.join(str(i + 1) for i in np.flatnonzero(~linked))} to position 1; "
                     "their theta is not identified and left empty.")
    if assume_randomized:
        notes.append("--assume-randomized only affects the randomization method.")
    lower = upper = None
    if bootstrap > 0:
        def one(w):
            f = pbm_em(stats.reweighted(w), theta0=fit.theta, gamma0=fit.gamma, tol=tol,
                       max_iter=max_iter)
            t = f.theta / f.theta[0]
            t[~linked] = np.nan
            return t
        samples = bs.replicate(one, n_groups=stats.groups.n_groups, replicates=bootstrap,
                               seed=seed, progress=prog.sub(0.5, 1.0))
        lower, upper, more = bs.percentile_interval(samples, alpha)
        notes += more
    return PropensityResult(
        method="em", positions=stats.positions, theta=theta, lower=lower, upper=upper,
        absolute=fit.theta, loglik=fit.loglik, rows_used=stats.rows, notes=notes,
        extras={"converged": fit.converged, "pairs": stats.n_pairs, "cells": len(stats.pair)},
        bootstrap=bootstrap, alpha=alpha)
