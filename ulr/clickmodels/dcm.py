"""Dependent click model (DCM).

A cascade that may go on after a click: the user examines top-down, clicks an
examined result with probability ``alpha_qd``, and after a click at rank
``r`` goes on with probability ``lambda_r`` (after a skip, always)
(Guo, Liu & Wang, "Efficient multiple-click models in web search", WSDM
2009). Cascade is DCM with ``lambda = 0``.

Fitted by EM on the exact likelihood: every rank down to the last click was
examined; below it, the posterior over where the user stopped is closed form
(:func:`ulr.clickmodels.base.chain_posterior`). Then

    alpha_qd <- clicks / sum P(E = 1 | clicks)                 per pair
    lambda_r <- sum P(E_{r+1} = 1 | clicks) / clicks at r       per rank r < n

(a click at a session's bottom rank says nothing about lambda and is left out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.clickmodels import base


@dataclass(frozen=True)
class DCM(base.Model):
    alpha: np.ndarray
    lam: np.ndarray  # continuation after a click, per rank
    iterations: int = 0
    name = "dcm"

    def _chain(self, S):
        a = base.gather(self.alpha, S.pair)
        cc = np.broadcast_to(self.lam[None, :S.ranks], a.shape)
        return a, cc, np.ones_like(a)

    @classmethod
    def fit(cls, S, *, weights=None, max_iter: int = 200, tol: float = 1e-7) -> "DCM":
        S, w = base.weighted(S, weights)
        K = S.ranks
        r = np.arange(1, K + 1)[None, :]
        n = S.length[:, None]
        informative = S.click & (r < n)  # a click with a rank below it
        model = cls(alpha=np.full(S.n_pairs, base.INIT), lam=np.full(K, base.INIT))
        it = 0
        for it in range(1, max_iter + 1):
            a, cc, cs = model._chain(S)
            post_e, _, _, last = base.chain_posterior(a, cc, cs, S.click, S.mask)
            alpha = base.pair_ratio(S.click.astype(float), post_e, S.pair, S.n_pairs,
                                    w[:, None])
            nxt = np.concatenate([post_e[:, 1:], np.zeros((S.sessions, 1))], axis=1)
            num = ((nxt * informative) * w[:, None]).sum(axis=0)
            den = (informative * w[:, None]).sum(axis=0)
            lam = base.ratio(num, den, num.sum() / den.sum() if den.sum() > 0 else base.INIT)
            delta = max(np.abs(alpha - model.alpha).max(), np.abs(lam - model.lam).max())
            model = cls(alpha=alpha, lam=lam, iterations=it)
            if delta < tol:
                break
        return model

    def conditional(self, S):
        return base.chain_conditional(*self._chain(S), S.click, S.mask)

    def examination(self, S):
        a, cc, cs = self._chain(S)
        return base.chain_examination(a, cc, cs, S.mask)

    def marginal(self, S):
        return self.examination(S) * base.gather(self.alpha, S.pair)

    def parameters(self) -> dict:
        """``lambda_r`` for r < K (a click at the bottom rank says nothing about going on)."""
        lam = np.array(self.lam, dtype=float)
        lam[-1] = np.nan
        return {"continuation_after_click": lam}
