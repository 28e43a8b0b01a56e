"""EM for the position-based click model (PBM).

The PBM says a result at position k is clicked when it is examined and
attractive, independently:

    P(C = 1 | q, d, k) = theta_k * gamma_{q,d}.

With impressions ``n`` and clicks ``c`` per cell (q, d, k) the log-likelihood
is ``sum c log(theta gamma) + (n - c) log(1 - theta gamma)``. EM treats
examination E and attractiveness R as hidden (Chuklin, Markov & de Rijke,
"Click Models for Web Search", 2015; Wang et al., "Position bias
estimation for unbiased learning to rank in personal search", WSDM 2018,
the EM baseline). A click means E = R = 1; for a skipped result

    P(E = 1, R = 0 | C = 0) = theta (1 - gamma) / (1 - theta gamma)
    P(E = 0, R = 1 | C = 0) = (1 - theta) gamma / (1 - theta gamma)

and the M-step averages these posteriors:

    theta_k     <- sum_{cells at k}    [c + (n - c) P(E=1,R=0|C=0)] / sum n
    gamma_{q,d} <- sum_{cells of q,d}  [c + (n - c) P(E=0,R=1|C=0)] / sum n.

Each EM step is one compiled pass over the cells, never over rows: the kernel
:func:`ulr.clickmodels.cells_jit.cell_step`, which the click models' PBM and UBM run too
(one PBM for both), once per replicate of a batch. An optional Beta prior
(:mod:`ulr.clickmodels.prior`) adds pseudo-counts in the M-step; Position bias runs without
one (its estimate of theta is unchanged; with every pair's impressions in the tens, a
prior would only move gamma's scale, which theta relative to position 1 does not see).
Parameters are clipped to [eps, 1 - eps] so a position or pair with no
clicks (or only clicks) cannot reach 0 or 1, where EM would stick. The overall scale (theta * s, gamma / s) is only weakly
identified, so the estimate is reported relative to position 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.errors import UlrError, check
from ulr.data.scan import CellStats

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


class _Batch:
    """Cell arrays for B replicates: n, c of shape (B, L); sums by position / pair."""

    def __init__(self, pos0, pair, n, c, k, m):
        # the kernel's types, once: int64 indices, float64 counts, contiguous rows
        self.pos0 = np.ascontiguousarray(pos0, dtype=np.int64)
        self.pair = np.ascontiguousarray(pair, dtype=np.int64)
        self.k, self.m = k, m
        self.n = np.ascontiguousarray(np.atleast_2d(n), dtype=np.float64)
        self.c = np.ascontiguousarray(np.atleast_2d(c), dtype=np.float64)
        self.b = self.n.shape[0]
        off = np.arange(self.b)[:, None]
        self.ipos = (pos0[None, :] + k * off).ravel()
        self.ipair = (pair[None, :] + m * off).ravel()
        self.n_k, self.c_k = self.by_pos(self.n), self.by_pos(self.c)
        self.n_q, self.c_q = self.by_pair(self.n), self.by_pair(self.c)
        self.safe_nk = np.where(self.n_k > 0, self.n_k, 1.0)
        self.safe_nq = np.where(self.n_q > 0, self.n_q, 1.0)
        self.total = np.maximum(self.n.sum(axis=1), 1.0)

    def by_pos(self, w):
        return np.bincount(self.ipos, w.ravel(), minlength=self.b * self.k).reshape(self.b, -1)

    def by_pair(self, w):
        return np.bincount(self.ipair, w.ravel(), minlength=self.b * self.m).reshape(self.b, -1)

    def subset(self, rows):
        return _Batch(self.pos0, self.pair, self.n[rows], self.c[rows], self.k, self.m)


def _poisson_start(bt: _Batch, max_iter: int = 50, tol: float = 1e-12):
    """The Poisson fit (:func:`poisson_start`) of every replicate in ``bt``."""
    thetas, gammas = [], []
    for r in range(bt.b):
        th, ga = _poisson_newton(bt.pos0, bt.pair, bt.n[r], bt.c_k[r], bt.c_q[r], bt.k, bt.m,
                                 max_iter=max_iter, tol=tol)
        top = th.max()
        thetas.append(0.9 * th / top)  # the scale is free: max theta = 0.9, as EM expects
        gammas.append(np.minimum(ga * top / 0.9, 1.0))
    return np.vstack(thetas), np.vstack(gammas)


def _poisson_newton(pos0, pair, n, c_k, c_q, k, m, *, max_iter, tol):
    """Newton's method on the Poisson profile log-likelihood of ``phi = log theta``.

    With ``gamma_qd`` profiled out (``gamma_qd = C_qd / S_qd``,
    ``S_qd = sum_k n_qdk theta_k``) the log-likelihood is, up to a constant,

        l(phi) = sum_k C_k phi_k - sum_qd C_qd log S_qd,

    concave in ``phi`` (a linear term minus log-sum-exps), with gradient
    ``C_k - E_k``, ``E_k = theta_k sum_qd n_qdk C_qd / S_qd``, and negative
    Hessian ``diag(E) - B'B``, ``B_qd,k = sqrt(C_qd) n_qdk theta_k / S_qd``
    (a K x K matrix: :func:`ulr.clickmodels.cells_jit.pair_gram`, one compiled pass over
    the cells, summing in the order a sparse product ``B'B`` does). Newton with step
    halving converges in a handful of iterations where the alternating closed
    forms (iterative proportional fitting) crawl along the direction that a
    production ranker leaves weakly identified (a document that mostly stays
    at one position). The position with most clicks is held fixed (the
    overall scale is free); positions without clicks keep a tiny theta.
    """
    from ulr.clickmodels.cells_jit import newton_terms, pair_exposure
    live = c_q[pair] > 0  # pairs without clicks drop out of the profile
    P, K, N = pair[live], pos0[live], n[live]
    if P.size and np.any(P[1:] < P[:-1]):  # newton_terms reads each pair's cells as one run
        order = np.argsort(P, kind="stable")
        P, K, N = P[order], K[order], N[order]
    n_k = np.bincount(pos0, n, minlength=k)
    ctr = np.divide(c_k, n_k, out=np.zeros(k), where=n_k > 0)
    ref = int(np.argmax(c_k))
    phi = np.log(np.clip(ctr / max(ctr[ref], 1e-300), 1e-6, None))
    free = np.setdiff1d(np.flatnonzero(c_k > 0), [ref])
    has = c_q > 0

    def value(phi):
        th = np.exp(phi)
        s = pair_exposure(P, K, N, th, m)
        return th, s, float(c_k @ phi - c_q[has] @ np.log(s[has]))

    th, s, ll = value(phi)
    for _ in range(int(max_iter)):
        if free.size == 0:
            break
        rate = np.divide(c_q, s, out=np.zeros(m), where=has)
        w = np.sqrt(rate * np.divide(1.0, s, out=np.zeros(m), where=has))
        e, gram = newton_terms(P, K, N, th, rate, w, k)
        h = np.diag(e) - gram
        d = np.zeros(k)
        d[free] = np.linalg.lstsq(h[np.ix_(free, free)], (c_k - e)[free], rcond=None)[0]
        step = 1.0
        while True:
            th2, s2, ll2 = value(phi + step * d)
            if ll2 >= ll or step < 1e-8:
                break
            step /= 2
        if ll2 < ll:
            break
        phi, th, s = phi + step * d, th2, s2
        gain, ll = ll2 - ll, ll2
        if gain <= tol * abs(ll) or np.max(np.abs(step * d)) < 1e-10:
            break
    gamma = np.divide(c_q, s, out=np.zeros(m), where=has)
    return th, gamma


def poisson_start(stats: CellStats, *, max_iter: int = 50, tol: float = 1e-12
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Starting point: the PBM fitted under the Poisson approximation.

    ``clicks ~ Poisson(n theta_k gamma_qd)`` has no hidden variables, and
    with ``gamma`` profiled out its log-likelihood is concave in
    ``log theta``; Newton's method (:func:`_poisson_newton`) finds its maximum
    to floating precision in about five iterations. With CTRs well below 1
    that fit is close to the Bernoulli one, so EM started there has little
    left to do, and the start does not depend on an iteration cap. The
    scale is set so that max theta = 0.9.
    """
    bt = _Batch(stats.position - 1, stats.pair, stats.impressions, stats.clicks,
                stats.positions, stats.n_pairs)
    theta, gamma = _poisson_start(bt, max_iter=max_iter, tol=tol)
    return theta[0], gamma[0]


def _em_step(bt: _Batch, theta, gamma, eps, with_ll: bool = True, prior=None):
    """One EM map for every replicate; also the log-likelihood (B,) at the input.

    The E-step is the shared compiled kernel (module docstring): per pair and position the
    expected attractive and examined impressions ``c + (n - c) P(.|C = 0)``. The M-step
    divides them by the impressions, or with ``prior`` (a
    :class:`ulr.clickmodels.prior.Prior`) adds its pseudo-counts first."""
    from ulr.clickmodels.cells_jit import cell_step  # compiled once (cache=True)
    t_new, g_new = np.empty_like(theta), np.empty_like(gamma)
    ll = np.empty(bt.b) if with_ll else None
    for r in range(bt.b):
        num_g, num_t, lr = cell_step(bt.pair, bt.pos0, bt.n[r], bt.c[r],
                                     np.ascontiguousarray(gamma[r]),
                                     np.ascontiguousarray(theta[r]), with_ll)
        if prior is None:
            t_new[r] = num_t / bt.safe_nk[r]
            g_new[r] = num_g / bt.safe_nq[r]
        else:
            t_new[r] = prior.update(num_t, bt.n_k[r], "examination")
            g_new[r] = prior.update(num_g, bt.n_q[r], "attractiveness")
        if with_ll:
            ll[r] = lr
    return _clip(t_new, eps), _clip(g_new, eps), ll


def _squarem(bt: _Batch, theta, gamma, *, tol, max_iter, eps, accelerate, progress=None,
             should_stop=None, prior=None):
    """EM (SQUAREM S3) for every replicate until its own log-likelihood settles."""
    b = bt.b
    lls = [[] for _ in range(b)]
    converged = np.zeros(b, dtype=bool)
    act = np.arange(b)  # replicates still iterating
    sub = bt
    for it in range(int(max_iter)):
        check(should_stop)
        th, ga = theta[act], gamma[act]
        t1, g1, ll0 = _em_step(sub, th, ga, eps, prior=prior)
        done = np.zeros(len(act), dtype=bool)
        for j, r in enumerate(act):
            lls[r].append(float(ll0[j]))
            if it > 0 and abs(lls[r][-1] - lls[r][-2]) / sub.total[j] < tol:
                done[j] = True
        converged[act[done]] = True
        keep = ~done
        if not keep.any():
            break
        if not keep.all():
            act, th, ga, t1, g1 = act[keep], th[keep], ga[keep], t1[keep], g1[keep]
            sub = bt.subset(act)
        if not accelerate:
            new_t, new_g = t1, g1
        else:
            t2, g2, _ = _em_step(sub, t1, g1, eps, with_ll=False, prior=prior)
            rt, rg = t1 - th, g1 - ga
            vt, vg = t2 - t1 - rt, g2 - g1 - rg
            rr = (rt * rt).sum(axis=1) + (rg * rg).sum(axis=1)
            vv = (vt * vt).sum(axis=1) + (vg * vg).sum(axis=1)
            alpha = -np.sqrt(np.divide(rr, vv, out=np.ones_like(rr), where=vv > 0))
            alpha = np.minimum(alpha, -1.0)[:, None]
            tx = _clip(th - 2 * alpha * rt + alpha ** 2 * vt, eps)
            gx = _clip(ga - 2 * alpha * rg + alpha ** 2 * vg, eps)
            t3, g3, llx = _em_step(sub, tx, gx, eps, prior=prior)  # stabilizing step
            # Keep the extrapolation only if it is at least as likely as the cycle's start.
            ok = (np.isfinite(llx) & (llx >= ll0[keep]))[:, None]
            new_t = np.where(ok, t3, t2)
            new_g = np.where(ok, g3, g2)
        theta[act] = new_t
        gamma[act] = new_g
        if progress is not None and it % 5 == 0:
            progress(min(it / max(max_iter, 1), 1.0), f"EM iteration {it + 1}")
    return theta, gamma, lls, converged


def pbm_em(stats: CellStats, *, theta0=None, gamma0=None, tol: float = 1e-8,
           max_iter: int = 500, eps: float = EPS, accelerate: bool = True,
           progress=None, should_stop=None, prior=None) -> EMFit:
    """Fit the PBM by EM on cell statistics.

    Parameters
    ----------
    stats : CellStats
        Impressions and clicks per (pair, position).
    theta0, gamma0 : array, optional
        Starting values (default: :func:`poisson_start`).
    tol : float
        Stop when the log-likelihood per impression changes by less than ``tol``
        from one iteration to the next (1e-8: 0.1 nats on 10M impressions;
        theta then moves by well under its sampling error).
    max_iter : int
        At most this many iterations.
    eps : float
        Clip parameters to [eps, 1 - eps].
    accelerate : bool
        SQUAREM (Varadhan & Roland, "Simple and globally convergent methods for
        accelerating the convergence of any EM algorithm", Scand. J. Stat.
        2008), scheme S3: one iteration is two EM steps, an extrapolation
        ``x0 - 2 a r + a^2 v`` with ``a = -|r|/|v|``, and a stabilizing EM
        step; the extrapolation is kept only when it is at least as likely as
        the iteration's start, so the recorded log-likelihood never decreases.
        Plain EM on PBM converges linearly and slowly when CTRs are low (most
        of the information is missing); SQUAREM needs several times fewer EM
        steps for the same fit.
    progress : callable(fraction, text), optional
    should_stop : callable() -> bool, optional
        Checked every iteration; True raises :class:`ulr.errors.Cancelled`.
    prior : ulr.clickmodels.prior.Prior, optional
        Beta pseudo-counts added to the M-step's expected counts (the click models' prior);
        None (Position bias's default): maximum likelihood. With a prior the recorded
        log-likelihood is the data's alone, which the prior's pull may lower a little.

    Returns
    -------
    EMFit
        Absolute theta and gamma (scale weakly identified), the
        log-likelihood of each iterate, and whether ``tol`` was reached.
    """
    bt = _Batch(stats.position - 1, stats.pair, stats.impressions, stats.clicks,
                stats.positions, stats.n_pairs)
    if theta0 is None and gamma0 is None:
        theta, gamma = _poisson_start(bt)
    else:
        theta = np.atleast_2d(np.array(theta0 if theta0 is not None else initial_theta(stats),
                                       dtype=float))
        if gamma0 is not None:
            gamma = np.atleast_2d(np.array(gamma0, dtype=float))
        else:
            expo = bt.by_pair(bt.n * theta[:, bt.pos0])
            gamma = np.divide(bt.c_q, expo, out=np.full_like(expo, 0.5), where=expo > 0)
    theta, gamma = _clip(theta, eps), _clip(gamma, eps)
    theta, gamma, lls, conv = _squarem(bt, theta, gamma, tol=tol, max_iter=max_iter, eps=eps,
                                       accelerate=accelerate, progress=progress,
                                       should_stop=should_stop, prior=prior)
    return EMFit(theta=theta[0], gamma=gamma[0], loglik=tuple(lls[0]), converged=bool(conv[0]))


def _warm_kernel(scores: bool = False) -> None:
    """Import numba and load the compiled kernel (a fixed cost per process) with the types the
    fit passes; :func:`run` does it on a thread while the engine aggregates (DuckDB's
    threads run without the GIL), so the first EM step does not wait for it."""
    try:
        from ulr.clickmodels.cells_jit import cell_step, newton_terms, pair_exposure
        i, x = np.zeros(1, dtype=np.int64), np.full(1, 0.5)
        cell_step(i, i, np.ones(1), np.zeros(1), x, x, True)
        newton_terms(i, i, x, x, x, x, 1)  # the Poisson start's kernels
        pair_exposure(i, i, x, x, 1)
        if scores:  # the score bootstrap's pass (score_replicates)
            from ulr.propensity.score_jit import unit_scores
            b = np.ones(1, dtype=np.bool_)
            unit_scores(i, i, x, x, i, i, x, x, x, i, i, b, 1, 1)
    except Exception:  # noqa: BLE001 - the fit's own first call reports any real failure
        pass


def pbm_em_replicates(stats: CellStats, weights: np.ndarray, *, tol: float = 1e-8,
                      max_iter: int = 500, eps: float = EPS, max_cells: int = 4_000_000,
                      should_stop=None) -> np.ndarray:
    """Relative theta (B, K) of bootstrap replicates with bucket ``weights`` (B, G).

    Each replicate starts from its own Poisson fit (not from the point
    estimate, which would pull replicates toward it and narrow the interval)
    and runs to the same tolerance. Replicates are fitted together in chunks
    of at most ``max_cells`` replicate-cells.
    """
    w = np.atleast_2d(np.asarray(weights, dtype=float))
    out = []
    n_cells = max(len(stats.pair), 1)
    chunk = max(1, int(max_cells // n_cells))
    for start in range(0, w.shape[0], chunk):
        wb = w[start:start + chunk]
        tot = [stats.groups.totals(wi, len(stats.pair)) for wi in wb]
        n = np.vstack([t[0] for t in tot])
        c = np.vstack([t[1] for t in tot])
        bt = _Batch(stats.position - 1, stats.pair, n, c, stats.positions, stats.n_pairs)
        theta, gamma = _poisson_start(bt)
        theta, _, _, _ = _squarem(bt, _clip(theta, eps), _clip(gamma, eps), tol=tol,
                                  max_iter=max_iter, eps=eps, accelerate=True,
                                  should_stop=should_stop)
        out.append(theta / theta[:, :1])
    return np.vstack(out)


def information(stats: CellStats, theta, gamma, *, eps: float = EPS):
    """Fisher information of ``log theta`` with every free ``log gamma`` profiled out.

    With ``mu = theta_k gamma_qd`` each cell's Fisher weight for the log-parameters is
    ``w = n mu / (1 - mu)`` (Bernoulli clicks: ``(d mu / d log theta)^2 / (mu (1 - mu))``),
    the same for ``(log theta_k, log theta_k)``, ``(log gamma_p, log gamma_p)`` and the cross
    term. The information matrix has an arrow shape (each gamma meets only its own
    pair's cells), so profiling gamma out is a Schur complement over pairs:

        J = diag(D) - sum_p w_p w_p' / sum(w_p),   D_k = sum of w over the cells at k,

    ``w_p`` the K-vector of pair p's weights (:func:`ulr.clickmodels.cells_jit.pair_gram`).
    Pairs without clicks (gamma at 0) drop out; a pair whose gamma is held at its upper
    bound ``1 - eps`` is not free and is not profiled (Louis 1982 for the information of an
    EM fit; here the complete-data detour is not needed, the PBM's observed-data likelihood
    is explicit).

    Returns
    -------
    (J, mu, w, dinv, live)
        J (K, K); per cell ``mu`` and ``w``; per pair ``dinv`` (1 / sum of its weights, 0
        when not profiled) and ``live`` (has clicks).
    """
    from ulr.clickmodels.cells_jit import pair_gram
    k, m = stats.positions, stats.n_pairs
    pos0 = np.ascontiguousarray(stats.position - 1, dtype=np.int64)
    pair = np.ascontiguousarray(stats.pair, dtype=np.int64)
    n = np.asarray(stats.impressions, dtype=float)
    mu = np.asarray(theta, dtype=float)[pos0] * np.asarray(gamma, dtype=float)[pair]
    w = n * mu / (1.0 - mu)
    live = np.bincount(pair, stats.clicks, minlength=m) > 0
    free = live & (np.asarray(gamma, dtype=float) < 1.0 - 2 * eps)
    w = np.where(live[pair], w, 0.0)
    d_k = np.bincount(pos0, w, minlength=k)
    d_p = np.bincount(pair, w, minlength=m)
    dinv = np.divide(1.0, d_p, out=np.zeros(m), where=free & (d_p > 0))
    b = w * np.sqrt(dinv[pair])
    return np.diag(d_k) - pair_gram(pair, pos0, b, k), mu, w, dinv, live


def score_replicates(stats: CellStats, fit: EMFit, *, n_bootstrap: int, seed, linked,
                     eps: float = EPS, should_stop=None, progress=None):
    """Bootstrap replicates of ``log(theta_k / theta_1)`` from the fit's scores: the
    estimating-function (score) bootstrap of Hu & Kalbfleisch ("The estimating function
    bootstrap", Canad. J. Statist. 2000), with Poisson(1) weights on the resampling units.

    A replicate reweights the units (the groups of ``stats``) by ``W`` ~ Poisson(1); refitting
    would move ``log theta`` from the fit by one Fisher-scoring step to first order,

        delta_b = J^{-1} sum_g (W_bg - 1) u_g,

    with ``u_g`` the efficient score of unit g at the fit (:func:`information`,
    :func:`ulr.propensity.score_jit.unit_scores`) and ``J`` the profiled information. The
    replicates share all their work: one pass over the (unit, cell) entries gives every
    ``u_g``, and a replicate is a product of its weights with them, so B replicates cost one
    matrix product instead of B EM fits. Their spread estimates the session-clustered
    (sandwich) variance ``J^{-1} (sum_g u_g u_g') J^{-1}``, which stays right when clicks
    in a session depend on each other; the interval (the replicates' sd of log theta,
    :func:`ulr.propensity.bootstrap.standard_interval`) keeps the bootstrap's reading. The free positions are those linked to position 1 with clicks; the others get
    NaN. Returns (B, K) relative theta replicates, or None when position 1 has no clicks
    or ``J`` is singular (the caller refits instead).
    """
    from ulr.propensity.aggregate import poisson_weights
    from ulr.propensity.score_jit import unit_scores
    gr = stats.groups
    k = stats.positions
    theta, gamma = fit.theta, fit.gamma
    _, c_k = stats.by_position()
    free = np.asarray(linked, dtype=bool) & (c_k > 0)
    free[0] = False
    if c_k[0] <= 0 or not free.any():
        return None
    J, mu, w, dinv, live = information(stats, theta, gamma, eps=eps)
    jf = J[np.ix_(free, free)]
    try:
        chol = np.linalg.cholesky(jf)
    except np.linalg.LinAlgError:
        return None
    check(should_stop)
    pair = np.ascontiguousarray(stats.pair, dtype=np.int64)
    start = np.searchsorted(pair, np.arange(stats.n_pairs), side="left")
    end = np.searchsorted(pair, np.arange(stats.n_pairs), side="right")
    u = unit_scores(gr.cell, gr.group, np.asarray(gr.impressions, dtype=float),
                    np.asarray(gr.clicks, dtype=float), pair,
                    np.ascontiguousarray(stats.position - 1, dtype=np.int64), mu, w, dinv,
                    start, end, live, int(gr.n_groups), k)[:, free]
    # J^{-1} u' for every unit once; a replicate is then its centred weights times these
    z = np.linalg.solve(chol.T, np.linalg.solve(chol, u.T)).T  # (G, F)
    total = z.sum(axis=0)
    base = np.log(theta[free] / theta[0])
    out = np.full((int(n_bootstrap), k), np.nan)
    out[:, 0] = 1.0
    wts = poisson_weights(n_bootstrap, gr.n_groups, seed)
    for s in range(0, int(n_bootstrap), 25):
        check(should_stop)
        e = min(s + 25, int(n_bootstrap))
        out[s:e, np.flatnonzero(free)] = np.exp(base + wts[s:e] @ z - total)
        if progress is not None:
            progress(e / n_bootstrap, f"bootstrap replicate {e}/{n_bootstrap}")
    return out


def information_interval(stats: CellStats, fit: EMFit, *, linked, level: float = 0.95,
                         eps: float = EPS):
    """Wald interval of ``theta_k / theta_1`` from the fit's Fisher information.

    With ``J`` the information of ``log theta`` with every ``log gamma`` profiled out
    (:func:`information`) over the free positions (linked to position 1, with clicks; the
    reference position 1 held fixed), the covariance of ``log(theta_k / theta_1)`` is
    ``J^{-1}`` and the interval is

        theta_k / theta_1 * exp(+- z_{(1 + level) / 2} sqrt((J^{-1})_kk)),

    on the log scale, so it stays positive (Wald 1943; the information of an EM fit:
    Louis 1982; the PBM's observed-data likelihood is explicit, so no complete-data detour
    is needed). It costs one pass over the cells and a K x K inverse: no replicate. Under
    the PBM its coverage is nominal (tests/propensity/test_propensity_em_interval.py); on
    a log of 1M rows its widths matched the session bootstrap's within their Monte Carlo
    error (docs/benchmarks.md). The session bootstrap (:func:`score_replicates`) stays on
    request for clicks that depend on each other within a session beyond the PBM.

    Returns (lower, upper), arrays of K: ``[1, 1]`` at position 1, ``[0, inf)`` at a linked
    position without clicks, NaN where theta is not identified; or None when position 1
    has no clicks or ``J`` is singular (no interval can be formed this way).
    """
    from ulr.stats import normal_quantile
    k = stats.positions
    _, c_k = stats.by_position()
    linked = np.asarray(linked, dtype=bool)
    free = linked & (c_k > 0)
    free[0] = False
    if c_k[0] <= 0 or not free.any():
        return None
    J = information(stats, fit.theta, fit.gamma, eps=eps)[0]
    jf = J[np.ix_(free, free)]
    try:
        chol = np.linalg.cholesky(jf)
    except np.linalg.LinAlgError:
        return None
    inv_chol = np.linalg.solve(chol, np.eye(len(jf)))
    se = np.sqrt(np.sum(inv_chol ** 2, axis=0))  # diag of J^{-1} = L^{-T} L^{-1}
    z = normal_quantile(0.5 + float(level) / 2)
    rel = fit.theta[free] / fit.theta[0]
    lower, upper = np.full(k, np.nan), np.full(k, np.nan)
    lower[free], upper[free] = rel * np.exp(-z * se), rel * np.exp(z * se)
    lower[0] = upper[0] = 1.0
    silent = linked & (c_k <= 0)  # no clicks there: nothing bounds theta from above
    silent[0] = False
    lower[silent], upper[silent] = 0.0, np.inf
    return lower, upper


def _spread(values, mask):
    out = np.full(len(mask), np.nan)
    out[mask] = values
    return out


def run(scan, *, positions=None, n_bootstrap: int = 0, seed=0, assume_randomized: bool = False,
        progress=None, level: float = 0.95, tol: float = 1e-7, max_iter: int = 500,
        should_stop=None, interval: str = "information"):
    """EM estimate from one aggregate query, with its interval.

    ``tol`` 1e-7 (log-likelihood per impression): on large logs it moves theta
    from the 1e-8 fit by far less than theta's sampling error, and saves SQUAREM
    iterations (figures in ``benchmarks/bench_propensity.py``).

    ``interval="information"`` (the default, issue 54): the Wald interval of the fit's
    Fisher information (:func:`information_interval`), which needs nothing but the cells
    the fit read; ``n_bootstrap`` plays no part. ``interval="bootstrap"`` with
    ``n_bootstrap`` > 0: the standard interval on the log scale
    (:func:`ulr.propensity.bootstrap.standard_interval`) of the score bootstrap
    (:func:`score_replicates`): Poisson weights on session buckets, each replicate the
    refit's first-order value, so the B replicates cost one pass over the buckets' cells
    instead of B EM fits (coverage and agreement with the refitting bootstrap in
    tests/propensity/test_propensity_em_interval.py). When position 1 has no clicks the
    scores cannot be formed and every replicate is refitted (:func:`pbm_em_replicates`);
    the information gives no interval then (theta relative to a position without clicks is
    unbounded). The point estimate depends on neither.
    """
    from ulr.propensity import bootstrap as bs
    from ulr.data.scan import cell_stats
    from ulr.propensity.aggregate import connected_to_top, position_counts
    from ulr.propensity.result import PropensityResult

    if interval not in ("information", "bootstrap"):
        raise UlrError(f"em's interval is 'information' or 'bootstrap', not {interval!r}.")
    boot = interval == "bootstrap" and n_bootstrap > 0
    import threading
    prog = bs.Progress(progress)
    prog(0.02, "aggregating impressions and clicks per (query, doc, position) in SQL")
    warm = threading.Thread(target=_warm_kernel, args=(boot,), name="ulr-em-kernel",
                            daemon=True)
    warm.start()  # the kernel loads while the engine scans
    stats = cell_stats(scan, positions=positions, groups=boot)
    warm.join()
    check(should_stop)
    linked = connected_to_top(stats)
    if not linked[1:].any():
        raise UlrError("every query-document pair was shown at a single position, so EM "
                       "cannot tell position from relevance; it needs pairs shown at several "
                       "positions (ranker changes, noise or randomization).")
    fit = pbm_em(stats, tol=tol, max_iter=max_iter,
                 progress=prog.sub(0.1, 0.5 if boot else 0.98), should_stop=should_stop)
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
    lower = upper = None
    samples = None
    if not boot:
        n_bootstrap = 0  # no replicate is drawn
        if interval == "information":
            both = information_interval(stats, fit, linked=linked, level=level)
            if both is None:
                notes.append("position 1 has no clicks, so theta relative to it has no "
                             "interval from the information; a bootstrap can still draw one.")
            else:
                lower, upper = both
    else:
        samples = score_replicates(stats, fit, n_bootstrap=n_bootstrap, seed=seed,
                                   linked=linked, should_stop=should_stop,
                                   progress=prog.sub(0.5, 1.0))
    if samples is not None:
        _, c_k = stats.by_position()
        cols = linked & (c_k > 0)
        lower, upper, more = bs.standard_interval(samples[:, cols], theta[cols], level)
        lower, upper = _spread(lower, cols), _spread(upper, cols)
        silent = linked & ~cols  # no clicks there: the scores do not bound theta from above
        lower[silent], upper[silent] = 0.0, np.inf
        notes += more
    elif boot:  # position 1 without clicks: refit every replicate
        def batch(w):
            # Replicates only feed the interval's spread: 1e-6 moves it by less than the
            # Monte Carlo error of B replicates, in fewer iterations.
            t = pbm_em_replicates(stats, w, tol=max(tol, 1e-6), max_iter=max_iter,
                                  should_stop=should_stop)
            t[:, ~linked] = np.nan
            return t
        samples = bs.replicate(batch, n_groups=stats.groups.n_groups, n_bootstrap=n_bootstrap,
                               seed=seed, progress=prog.sub(0.5, 1.0), batch=25,
                               should_stop=should_stop)
        lower, upper, more = bs.standard_interval(samples, theta, level)
        notes += more
    return PropensityResult.build(
        method="em", positions=stats.positions, theta=theta, lower=lower, upper=upper,
        absolute=fit.theta, loglik=fit.loglik, rows_used=stats.rows, notes=notes,
        extras={"converged": fit.converged, "pairs": stats.n_pairs, "cells": len(stats.pair)},
        n_bootstrap=n_bootstrap, level=level, interval=interval if lower is not None else "",
        **position_counts(stats, positions))
