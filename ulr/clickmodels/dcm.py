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
from ulr.clickmodels import prior as priors
from ulr.clickmodels.counts import closed_form_counts


@dataclass(frozen=True)
class DCM(base.ChainModel):
    alpha: np.ndarray
    lam: np.ndarray  # continuation after a click, per rank
    iterations: int = 0
    prior: priors.Prior | None = None  # the prior the fit used (strengths filled in)
    name = "dcm"

    def _chain(self, S):
        a = base.gather(self.alpha, S.pair)
        cc = np.broadcast_to(self.lam[None, :S.ranks], a.shape)
        return a, cc, np.ones_like(a)

    @classmethod
    def fit(cls, S, *, weights=None, max_iter: int = 200, tol: float = 1e-7,
            ll_tol: float | None = 1e-6, prior=priors.AUTO) -> "DCM":
        """EM until no parameter moves by ``tol`` or the training log-likelihood per session
        moves by less than ``ll_tol`` (:func:`base.converged`, as DBN's); ``prior``'s
        pseudo-counts are added to the expected counts of alpha and lambda."""
        from ulr.clickmodels.dcm_jit import estep  # compiled: one pass per row
        S, w = base.weighted(S, weights)
        prior = priors.parse(prior).fitted(S, w)
        K = S.ranks
        pair, click = np.ascontiguousarray(S.pair), np.ascontiguousarray(S.click)
        model = cls(alpha=np.full(S.n_pairs, base.INIT), lam=np.full(K, base.INIT))
        it, before, total = 0, None, max(w.sum(), 1e-300)
        for it in range(1, max_iter + 1):
            na, da, nl, dl, ll = estep(pair, click, w, model.alpha, model.lam)
            gain, before = (None if before is None else abs(ll / total - before)), ll / total
            alpha = prior.update(na, da, "attractiveness")
            lam = prior.update(nl, dl, "continuation")
            delta = max(np.abs(alpha - model.alpha).max(), np.abs(lam - model.lam).max())
            model = cls(alpha=alpha, lam=lam, iterations=it, prior=prior)
            if base.converged(delta, tol, gain, ll_tol):
                if not prior.needs_recentre:
                    break
                prior, before = prior.recentred({"attractiveness": (na, da)}), None
        return model

    def _expected(self, S, w):
        """Expected sufficient statistics of one block: alpha's and lambda's sums and the
        weighted log-likelihood (the numpy formulation of
        :func:`ulr.clickmodels.dcm_jit.estep`, which the fit runs, kept as its check)."""
        r = np.arange(1, S.ranks + 1)[None, :]
        informative = S.click & (r < S.length[:, None])  # a click with a rank below it
        a, cc, cs = self._chain(S)
        lay = base.Layout.of(S.click, S.mask)
        post_e, z, _, _ = base.chain_posterior(a, cc, cs, S.click, S.mask, lay)
        na, da = base.pair_sums(S.click, post_e, S.pair, S.n_pairs, w[:, None])
        nxt = np.concatenate([post_e[:, 1:], np.zeros((S.sessions, 1))], axis=1)
        return (na, da, ((nxt * informative) * w[:, None]).sum(axis=0),
                (informative * w[:, None]).sum(axis=0),
                float(w @ base.chain_loglik(a, cc, cs, S.click, lay, z)))

    def parameters(self) -> dict:
        """``lambda_r`` for r < K (a click at the bottom rank says nothing about going on)."""
        lam = np.array(self.lam, dtype=float)
        lam[-1] = np.nan
        return {"continuation_after_click": lam}


@dataclass(frozen=True)
class DCMCounts(DCM):
    """DCM by counting alone (PyClick's DCM; Guo, Liu & Wang 2009, who assume the user is
    satisfied at the last click): every result down to the last click examined, none below.

    ``alpha = clicks / results at or above the last click`` per pair, ``lambda_r = clicks at
    r that are not the session's last / clicks at r``, with the prior's pseudo-counts
    (``"1,1"`` is PyClick's). Like :class:`~ulr.clickmodels.sdbn.SDBNCounts` it differs from
    :class:`DCM`'s EM by definition: counting treats results below the last click as
    unexamined, which suits users who abandon a list; DCM's EM keeps the user going after
    every skip (tests/clickmodels/test_pyclick_sdbn.py; docs/clickmodels.md).
    """

    name = "dcm-counts"

    @classmethod
    def fit(cls, S, *, weights=None, prior=priors.AUTO, **_) -> "DCMCounts":
        S, w = base.weighted(S, weights)
        prior = priors.parse(prior).fitted(S, w)
        clicks, exam, _ = closed_form_counts(S, w)
        r = np.arange(1, S.ranks + 1)[None, :]
        last = base.last_click_rank(S.click)[:, None]
        wm = w[:, None]
        at_r = (S.click * wm).sum(axis=0)
        on_r = ((S.click & (r != last)) * wm).sum(axis=0)
        return cls(alpha=prior.update(clicks, exam, "attractiveness"),
                   lam=prior.update(on_r, at_r, "continuation", fallback=base.INIT),
                   prior=prior)
