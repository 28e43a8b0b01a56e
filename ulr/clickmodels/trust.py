"""Trust-bias model: users click irrelevant results near the top because they trust the ranking.

``P(C = 1 | rank k, R) = beta_k + alpha_k R`` with ``alpha_k = theta_k (eps+_k - eps-_k)``
and ``beta_k = theta_k eps-_k`` (Agarwal, Wang, Li, Bendersky & Najork, "Addressing trust
bias for unbiased learning-to-rank", WWW 2019; Vardasbi, Oosterhuis & de Rijke, "When
inverse propensity scoring does not work: affine corrections for unbiased learning to
rank", CIKM 2020). Relevance ``R`` is binary and fixed per (query, document) pair, as in
Agarwal et al.: a pair is relevant with prior probability ``pi``, and all its impressions
share its class. The likelihood of a pair's impressions is then a two-class mixture,

    P(pair) = pi prod_k p1_k^c (1 - p1_k)^(n - c) + (1 - pi) prod_k p0_k^c (1 - p0_k)^(n - c)

with ``p1 = alpha + beta`` and ``p0 = beta``, and EM (Dempster et al. 1977) alternates

    r_qd  <- P(R_qd = 1 | its clicks) = sigmoid(logit pi + L1_qd - L0_qd)
    p1_k  <- sum r c / sum r n           p0_k <- sum (1 - r) c / sum (1 - r) n
    pi    <- mean of r over the pairs seen

over (pair, rank) cells (:mod:`ulr.clickmodels.cells`), one compiled pass each way
(:func:`ulr.clickmodels.trust_jit.trust_step`).

What is identified: because R is 0 or 1, the two classes' click curves ``p0`` and ``p1``
are identified wherever pairs are seen at several ranks (up to the label, which is fixed
so that relevant results are clicked more); ``alpha_k`` and ``beta_k`` are then absolute.
``theta_k``, ``eps+_k`` and ``eps-_k`` separately are not: only their products are. ulr
reports ``alpha``, ``beta`` and ``alpha_k / alpha_1`` (the examination ratio when the
click noise does not depend on the rank). A held-out result is predicted with its pair's
posterior ``r`` from the training sessions (``pi`` for a pair never seen).

Priors (:mod:`ulr.clickmodels.prior`): ``p1``, ``p0`` and ``pi`` are per-rank or global
probabilities, and take the prior's per-rank pseudo-counts (family ``examination``); a
pair's relevance needs none, since its posterior already shrinks to ``pi``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.clickmodels import base
from ulr.clickmodels import prior as priors
from ulr.clickmodels.cells import cells

FLOOR = 1e-6


@dataclass(frozen=True)
class TrustFit:
    """The EM's fixed point over cells: absolute ``alpha``, ``beta`` per rank, the pairs'
    posterior relevance ``relevance`` and prior ``pi``; the log-likelihood per iteration."""

    alpha: np.ndarray
    beta: np.ndarray
    relevance: np.ndarray
    pi: float
    loglik: tuple
    converged: bool


def _start(idx, n, c, k):
    n_k = np.bincount(idx, n, minlength=k)
    c_k = np.bincount(idx, c, minlength=k)
    ctr = np.divide(c_k, n_k, out=np.full(k, 0.1), where=n_k > 0)
    pooled = float(c_k.sum() / max(n_k.sum(), 1e-300))
    ctr = np.where(n_k > 0, ctr, pooled)
    return np.clip(2.0 * ctr, 0.02, 0.98), np.clip(0.25 * ctr, FLOOR, 0.5)


def fit_cells(pair, idx, n, c, *, n_pairs: int, k: int, prior=priors.NONE,
              max_iter: int = 500, tol: float = 1e-7, ll_tol: float | None = 1e-7,
              should_stop=None) -> TrustFit:
    """EM for the trust-bias model over cells (module docstring).

    Parameters
    ----------
    pair, idx : int arrays
        Each cell's pair (0..n_pairs-1) and 0-based rank (0..k-1).
    n, c : float arrays
        Weighted impressions and clicks per cell.
    prior : Prior
        Pseudo-counts added to the per-rank sums (family ``examination``).
    tol, ll_tol : float
        Stop when no probability moves by ``tol``, or when the log-likelihood per
        impression rose by less than ``ll_tol``.
    """
    from ulr.clickmodels.trust_jit import trust_step
    from ulr.errors import check
    pair = np.ascontiguousarray(pair, dtype=np.int64)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    n = np.ascontiguousarray(n, dtype=np.float64)
    c = np.ascontiguousarray(c, dtype=np.float64)
    p1, p0 = _start(idx, n, c, k)
    pi = 0.5
    total = max(float(n.sum()), 1e-300)
    lls, before, converged = [], None, False
    r = np.full(n_pairs, pi)
    for _ in range(int(max_iter)):
        check(should_stop)
        num1, den1, num0, den0, r_sum, live, ll, r = trust_step(pair, idx, n, c, p1, p0, pi,
                                                                n_pairs, k)
        lls.append(float(ll))
        gain = None if before is None else abs(ll / total - before)
        before = ll / total
        new1 = np.clip(prior.update(num1, den1, "examination"), FLOOR, 1 - FLOOR)
        new0 = np.clip(prior.update(num0, den0, "examination"), FLOOR, 1 - FLOOR)
        new_pi = float(np.clip(prior.update(np.array([r_sum]), np.array([live]),
                                            "examination", fallback=0.5)[0], FLOOR, 1 - FLOOR))
        delta = max(np.abs(new1 - p1).max(), np.abs(new0 - p0).max(), abs(new_pi - pi))
        p1, p0, pi = new1, new0, new_pi
        if base.converged(delta, tol, gain, ll_tol):
            converged = True
            break
    # the posterior at the final parameters (what the predictions use)
    *_, r = trust_step(pair, idx, n, c, p1, p0, pi, n_pairs, k)
    n_k = np.bincount(idx, n, minlength=k)
    if float(n_k @ (p1 - p0)) < 0:  # the label: relevant results are clicked more
        p1, p0, pi, r = p0, p1, 1.0 - pi, 1.0 - r
    return TrustFit(alpha=p1 - p0, beta=p0, relevance=r, pi=float(pi), loglik=tuple(lls),
                    converged=converged)


@dataclass(frozen=True)
class Trust(base.Model):
    """A fitted trust-bias model: ``alpha`` and ``beta`` per rank (absolute), each pair's
    posterior relevance ``relevance`` and the prior share of relevant pairs ``pi``."""

    alpha: np.ndarray
    beta: np.ndarray
    relevance: np.ndarray
    pi: float = 0.5
    iterations: int = 0
    prior: priors.Prior | None = None
    name = "trust"

    @classmethod
    def fit(cls, S, *, weights=None, max_iter: int = 500, tol: float = 1e-7,
            ll_tol: float | None = 1e-7, prior=priors.AUTO) -> "Trust":
        """EM on the training cells (module docstring); ``prior`` as the other models'."""
        S, w = base.weighted(S, weights)
        prior = priors.parse(prior).fitted(S, w)
        cl = cells(S, w, with_prev=False)
        f = fit_cells(cl.pair, cl.rank - 1, cl.n, cl.c, n_pairs=S.n_pairs, k=S.ranks,
                      prior=prior, max_iter=max_iter, tol=tol, ll_tol=ll_tol)
        return cls(alpha=f.alpha, beta=f.beta, relevance=f.relevance, pi=f.pi,
                   iterations=len(f.loglik), prior=prior)

    def _p(self, S):
        k = S.ranks
        r = np.where(S.pair >= 0, self.relevance[np.maximum(S.pair, 0)], self.pi)
        p = self.beta[None, :k] + self.alpha[None, :k] * r
        return np.clip(p, 0.0, 1.0) * S.mask

    def conditional(self, S):
        return self._p(S)

    marginal = conditional

    def examination(self, S):
        """``alpha_k + beta_k``: the click probability of a relevant result, the part of
        examination the log identifies (a lower bound on it)."""
        e = np.clip(self.alpha + self.beta, 0.0, 1.0)
        return np.broadcast_to(e[None, :S.ranks], S.pair.shape) * S.mask

    def parameters(self) -> dict:
        return {"alpha": self.alpha, "beta": self.beta}
