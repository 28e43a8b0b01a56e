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


@dataclass(frozen=True)
class DBN(base.ChainModel):
    alpha: np.ndarray
    sigma: np.ndarray
    gamma: float
    iterations: int = 0
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
    def start(cls, S, w):
        return cls(alpha=np.full(S.n_pairs, base.INIT), sigma=np.full(S.n_pairs, base.INIT),
                   gamma=cls.fixed_gamma if cls.fixed_gamma is not None else base.INIT)

    @classmethod
    def fit(cls, S, *, weights=None, max_iter: int = 200, tol: float = 1e-7) -> "DBN":
        S, w = base.weighted(S, weights)
        model = cls.start(S, w)
        it = 0
        for it in range(1, max_iter + 1):
            acc = None
            for C, wc in base.chunks(S, w):  # E-step block by block, sums accumulated
                part = model._expected(C, wc)
                acc = part if acc is None else [x + y for x, y in zip(acc, part)]
            na, da, ns, ds, ng, dg = acc
            alpha = base.pooled_ratio(na, da)
            sigma = base.pooled_ratio(ns, ds)
            gamma = model.gamma
            if cls.fixed_gamma is None:
                gamma = float(ng / dg) if dg > 0 else base.INIT
            delta = max(np.abs(alpha - model.alpha).max(), np.abs(sigma - model.sigma).max(),
                        abs(gamma - model.gamma))
            model = cls(alpha=alpha, sigma=sigma, gamma=gamma, iterations=it)
            if delta < tol:
                break
        return model

    def _expected(self, S, w):
        """Expected sufficient statistics of one block (sums for alpha, sigma, gamma)."""
        wm = w[:, None]
        r = np.arange(1, S.ranks + 1)[None, :]
        n = S.length[:, None]
        informative = S.click & (r < n)
        a, cc, cs = self._chain(S)
        post_e, z, _, last = base.chain_posterior(a, cc, cs, S.click, S.mask)
        na, da = base.pair_sums(S.click, post_e, S.pair, S.n_pairs, wm)
        is_last = S.click & (r == last[:, None])
        post_s = np.where(is_last, base.gather(self.sigma, S.pair) / z[:, None], 0.0)
        ns, ds = base.pair_sums(post_s * informative, informative, S.pair, S.n_pairs, wm)
        before_end = S.mask & (r < n)
        nxt = np.concatenate([post_e[:, 1:], np.zeros((S.sessions, 1))], axis=1)
        unsat = np.where(S.click, np.where(is_last, 1.0 - post_s, 1.0), post_e)
        return (na, da, ns, ds, ((nxt * before_end) * wm).sum(),
                ((unsat * before_end) * wm).sum())

    def parameters(self) -> dict:
        return {"continuation": np.array([self.gamma])}
