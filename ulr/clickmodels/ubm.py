"""User browsing model (UBM).

``P(C_r = 1 | C_<r) = gamma_{r, r'} * alpha_qd`` where ``r'`` is the rank of
the last click above ``r`` (0 if none): examination depends on the rank and on
the distance from the previous click (Dupret & Piwowarski, "A user browsing
model to predict search engine click data from past observations", SIGIR
2008). Given the earlier clicks, rows are independent, so EM runs on cell
counts per (pair, rank, previous-click rank), exactly as the PBM's with
``theta_r`` replaced by ``gamma_{r, r'}``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.clickmodels import base
from ulr.clickmodels import prior as priors
from ulr.clickmodels.cells import cells


@dataclass(frozen=True)
class UBM(base.Model):
    """A fitted UBM: ``alpha`` per pair, ``gamma[r - 1, r']`` (rank r, previous click r')."""

    alpha: np.ndarray
    gamma: np.ndarray  # (K, K): [r - 1, r'] for r' < r
    iterations: int = 0
    prior: priors.Prior | None = None  # the prior the fit used (strengths filled in)
    name = "ubm"

    def __post_init__(self):
        if self.gamma.ndim != 2 or self.gamma.shape[0] != self.gamma.shape[1]:
            raise ValueError("gamma must be a K x K matrix")

    @classmethod
    def fit(cls, S, *, weights=None, max_iter: int = 200, tol: float = 1e-7,
            ll_tol: float | None = 1e-6, prior=priors.AUTO) -> "UBM":
        """EM on cell counts, as the PBM's; an auto prior centres each ``gamma[r, r']`` on
        its rank's pooled value."""
        from ulr.clickmodels.cells_jit import cell_step  # compiled: one pass over the cells
        S, w = base.weighted(S, weights)
        prior = priors.parse(prior).fitted(S, w)
        cl = cells(S, w, with_prev=True)
        K = S.ranks
        alpha = np.full(S.n_pairs, base.INIT)
        gamma = np.full((K, K), base.INIT)
        g_idx = (cl.rank - 1) * K + cl.prev
        den_a = np.bincount(cl.pair, cl.n, minlength=S.n_pairs)  # the same every iteration
        den_g = np.bincount(g_idx, cl.n, minlength=K * K)
        it, before, total = 0, None, max(w.sum(), 1e-300)  # per training session
        for it in range(1, max_iter + 1):
            num_a, num_g, ll = cell_step(cl.pair, g_idx, cl.n, cl.c, alpha, gamma.ravel())
            gain, before = (None if before is None else abs(ll / total - before)), ll / total
            new_a = prior.update(num_a, den_a, "attractiveness")
            # an unseen (rank, previous click) falls back to its rank's pooled value
            by_rank = np.repeat(base.ratio(num_g.reshape(K, K).sum(1),
                                           den_g.reshape(K, K).sum(1), base.INIT), K)
            new_g = prior.update(num_g, den_g, "examination", centre=by_rank,
                                 fallback=by_rank).reshape(K, K)
            delta = max(np.abs(new_a - alpha).max(), np.abs(new_g - gamma).max())
            alpha, gamma = new_a, new_g
            if base.converged(delta, tol, gain, ll_tol):
                if not prior.needs_recentre:
                    break
                prior, before = prior.recentred({"attractiveness": (num_a, den_a)}), None
        return cls(alpha=alpha, gamma=gamma, iterations=it, prior=prior)

    def conditional(self, S):
        K = S.ranks
        prev = base.prev_click_rank(S.click)
        g = self.gamma[np.arange(K)[None, :], prev]
        return base.gather(self.alpha, S.pair) * g * S.mask

    def _state_pass(self, S):
        """Forward pass over the rank of the last click: marginal click and examination."""
        Sn, K = S.pair.shape
        a = base.gather(self.alpha, S.pair)
        dist = np.zeros((Sn, K + 1))
        dist[:, 0] = 1.0  # P(last click so far = j), j = 0..K
        click = np.zeros((Sn, K))
        exam = np.zeros((Sn, K))
        for r in range(K):
            g = self.gamma[r, :r + 1]  # previous click 0..r
            e = dist[:, :r + 1] @ g
            exam[:, r] = e
            pc = dist[:, :r + 1] * g[None, :] * a[:, r:r + 1]
            click[:, r] = pc.sum(axis=1)
            dist[:, :r + 1] -= pc
            dist[:, r + 1] += click[:, r]
        return click * S.mask, exam * S.mask

    def marginal(self, S):
        return self._state_pass(S)[0]

    def examination(self, S):
        return self._state_pass(S)[1]

    def parameters(self) -> dict:
        K = self.gamma.shape[0]
        first = np.array([self.gamma[r, 0] for r in range(K)])  # no click above
        after = np.array([self.gamma[r, r] if r > 0 else np.nan for r in range(K)])
        return {"examination": first, "examination_after_click_above": after,
                "gamma": self.gamma}
