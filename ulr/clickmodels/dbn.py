"""Dynamic Bayesian network model (DBN).

The user examines top-down; an examined result is clicked with probability
``alpha_qd`` (attractiveness); after a click the user is satisfied with
probability ``sigma_qd`` and stops; otherwise goes on with probability
``gamma`` (Chapelle & Zhang, "A dynamic Bayesian network click model for web
search ranking", WWW 2009). So ``P(E_{r+1} | E_r, click) = gamma (1 - sigma)``
and ``P(E_{r+1} | E_r, skip) = gamma``.

EM on the exact likelihood (the stopping point after the last click has a
closed-form posterior, :func:`ulr.clickmodels.base.chain_posterior`):

    alpha_qd <- clicks / sum P(E = 1 | clicks)
    sigma_qd <- sum P(S = 1 | clicks) / clicks     (clicks with a rank below them)
    gamma    <- sum_r P(E_{r+1} = 1 | clicks) / sum_r P(E_r = 1, S_r = 0 | clicks)

where ``P(S_l = 1 | clicks) = sigma_l / P(tail)`` at the last click ``l`` and
0 at the clicks above it (the user went on).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.clickmodels import base
from ulr.clickmodels import prior as priors
from ulr.clickmodels.counts import closed_form_counts


@dataclass(frozen=True)
class DBN(base.ChainModel):
    alpha: np.ndarray
    sigma: np.ndarray
    gamma: float
    iterations: int = 0
    prior: priors.Prior | None = None  # the prior the fit used (strengths filled in)
    name = "dbn"
    fixed_gamma = None  # SDBN: 1.0

    def __post_init__(self):
        if not 0.0 <= float(self.gamma) <= 1.0:
            raise ValueError("gamma must lie in [0, 1]")

    def _chain(self, S):
        a = base.gather(self.alpha, S.pair)
        s = base.gather(self.sigma, S.pair)
        return a, self.gamma * (1.0 - s), np.full_like(a, self.gamma)

    @classmethod
    def start(cls, S, w, prior=priors.NONE):
        """The book's SDBN counting estimate of alpha and sigma
        (:func:`~ulr.clickmodels.counts.closed_form_counts`, with ``prior``'s pseudo-counts;
        a start near the optimum: fewer iterations than from 0.5), gamma 0.5 (SDBN: held
        at 1)."""
        prior = priors.parse(prior).fitted(S, w)
        clicks, exam, lasts = closed_form_counts(S, w)
        return cls(alpha=prior.update(clicks, exam, "attractiveness"),
                   sigma=prior.update(lasts, clicks, "satisfaction"),
                   gamma=cls.fixed_gamma if cls.fixed_gamma is not None else base.INIT,
                   prior=prior)

    @classmethod
    def fit(cls, S, *, weights=None, max_iter: int = 200, tol: float = 1e-7,
            ll_tol: float | None = 1e-6, prior=priors.AUTO) -> "DBN":
        """EM from :meth:`start` until no parameter moves by ``tol`` or the training
        log-likelihood per session moves by less than ``ll_tol`` (:func:`base.converged`);
        ``prior``'s pseudo-counts are added to the expected counts of alpha, sigma and
        gamma (an auto prior centres gamma on itself, so leaves it as it is)."""
        from ulr.clickmodels.dbn_jit import estep  # compiled: one pass per row
        S, w = base.weighted(S, weights)
        prior = priors.parse(prior).fitted(S, w)
        pair, click = np.ascontiguousarray(S.pair), np.ascontiguousarray(S.click)
        total = w.sum()
        model, before, it = cls.start(S, w, prior), None, 0
        for it in range(1, max_iter + 1):
            na, da, ns, ds, ng, dg, ll = estep(pair, click, w, model.alpha, model.sigma,
                                               float(model.gamma))
            ll = ll / total if total > 0 else 0.0
            gain, before = (None if before is None else abs(ll - before)), ll
            alpha = prior.update(na, da, "attractiveness")
            sigma = prior.update(ns, ds, "satisfaction")
            gamma = model.gamma
            if cls.fixed_gamma is None:
                gamma = float(prior.update([ng], [dg], "continuation", fallback=base.INIT)[0])
            delta = max(np.abs(alpha - model.alpha).max(), np.abs(sigma - model.sigma).max(),
                        abs(gamma - model.gamma))
            model = cls(alpha=alpha, sigma=sigma, gamma=gamma, iterations=it, prior=prior)
            if base.converged(delta, tol, gain, ll_tol):
                if not prior.needs_recentre:
                    break
                prior = prior.recentred({"attractiveness": (na, da), "satisfaction": (ns, ds)})
                before = None
        return model

    def _expected(self, S, w, lay=None):
        """Expected sufficient statistics of one block (sums for alpha, sigma, gamma) and
        its weighted log-likelihood under the current parameters: the numpy formulation
        of :func:`ulr.clickmodels.dbn_jit.estep` (which the fit runs), kept as its check."""
        lay = lay if lay is not None else base.Layout.of(S.click, S.mask)
        wm = w[:, None]
        a, cc, cs = self._chain(S)
        post_e, z, _, _ = base.chain_posterior(a, cc, cs, S.click, S.mask, lay)
        na, da = base.pair_sums(S.click, post_e, S.pair, S.n_pairs, wm)
        informative = S.click & lay.not_bottom
        post_s = np.where(lay.is_last, base.gather(self.sigma, S.pair) / z[:, None], 0.0)
        ns, ds = base.pair_sums(post_s * informative, informative, S.pair, S.n_pairs, wm)
        nxt = np.concatenate([post_e[:, 1:], np.zeros((S.sessions, 1))], axis=1)
        unsat = np.where(S.click, np.where(lay.is_last, 1.0 - post_s, 1.0), post_e)
        ll = base.chain_loglik(a, cc, cs, S.click, lay, z)
        return (na, da, ns, ds, ((nxt * lay.not_bottom) * wm).sum(),
                ((unsat * lay.not_bottom) * wm).sum(), float(w @ ll))

    def parameters(self) -> dict:
        return {"continuation": np.array([self.gamma])}
