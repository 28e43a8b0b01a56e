"""Position-based model (PBM).

``P(C_r = 1) = theta_r * alpha_qd``: a result at rank ``r`` is examined with
probability ``theta_r`` whatever else happens, and clicked if examined and
attractive (Richardson et al. 2007; Chuklin, Markov & de Rijke 2015, §3.3).
This is the model behind :mod:`ulr.propensity` (which estimates theta only);
here it is fitted jointly with alpha by EM on cell counts (Dempster et al.
1977; Wang et al. 2018): with ``q = 1 - theta alpha`` on unclicked cells,

    alpha <- sum(c + (n - c) alpha (1 - theta) / q) / sum(n)   per pair
    theta <- sum(c + (n - c) theta (1 - alpha) / q) / sum(n)   per rank
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.clickmodels import base
from ulr.clickmodels import prior as priors
from ulr.clickmodels.cells import cells


@dataclass(frozen=True)
class PBM(base.Model):
    """A fitted PBM: ``alpha`` per pair, ``theta`` per rank (absolute)."""

    alpha: np.ndarray
    theta: np.ndarray
    iterations: int = 0
    prior: priors.Prior | None = None  # the prior the fit used (strengths filled in)
    name = "pbm"

    def __post_init__(self):
        if np.any((self.alpha < 0) | (self.alpha > 1)) or np.any((self.theta < 0) | (self.theta > 1)):
            raise ValueError("PBM probabilities must lie in [0, 1]")

    @classmethod
    def fit(cls, S, *, weights=None, max_iter: int = 200, tol: float = 1e-7,
            ll_tol: float | None = 1e-6, prior=priors.AUTO) -> "PBM":
        """EM on cell counts; ``prior`` (:mod:`ulr.clickmodels.prior`) adds pseudo-counts
        to the M-step's expected counts."""
        from ulr.clickmodels.cells_jit import cell_step  # compiled: one pass over the cells
        S, w = base.weighted(S, weights)
        prior = priors.parse(prior).fitted(S, w)
        cl = cells(S, w, with_prev=False)
        alpha = np.full(S.n_pairs, base.INIT)
        theta = np.full(S.ranks, base.INIT)
        idx = cl.rank - 1
        den_a = np.bincount(cl.pair, cl.n, minlength=S.n_pairs)  # the same every iteration
        den_t = np.bincount(idx, cl.n, minlength=S.ranks)
        it, before, total = 0, None, max(w.sum(), 1e-300)  # per training session
        for it in range(1, max_iter + 1):
            num_a, num_t, ll = cell_step(cl.pair, idx, cl.n, cl.c, alpha, theta)
            gain, before = (None if before is None else abs(ll / total - before)), ll / total
            new_a = prior.update(num_a, den_a, "attractiveness")
            new_t = prior.update(num_t, den_t, "examination", fallback=base.INIT)
            delta = max(np.abs(new_a - alpha).max(), np.abs(new_t - theta).max())
            alpha, theta = new_a, new_t
            if base.converged(delta, tol, gain, ll_tol):
                if not prior.needs_recentre:
                    break
                prior, before = prior.recentred({"attractiveness": (num_a, den_a)}), None
        return cls(alpha=alpha, theta=theta, iterations=it, prior=prior)

    def conditional(self, S):
        return base.gather(self.alpha, S.pair) * self.theta[None, :S.ranks] * S.mask

    marginal = conditional

    def examination(self, S):
        return np.broadcast_to(self.theta[None, :S.ranks], S.pair.shape) * S.mask

    def parameters(self) -> dict:
        return {"examination": self.theta}
