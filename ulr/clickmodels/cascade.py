"""Cascade model.

The user scans top-down, examines every result until the first click and
stops there: ``P(C_r = 1 | no click above) = alpha_qd``, and nothing is
clicked below a click (Craswell, Zoeter, Taylor & Ramsey, "An experimental
comparison of click position-bias models", WSDM 2008). Examination is
observed, so the maximum-likelihood estimate is closed form:

    alpha_qd = clicks at the first click / results shown at or above the first click
    (every result of a session without clicks)

A second click in a session is impossible under the model; the likelihood
charges it ``log(FLOOR)`` (see :mod:`ulr.clickmodels.base`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.clickmodels import base
from ulr.clickmodels import prior as priors


@dataclass(frozen=True)
class Cascade(base.ChainModel):
    alpha: np.ndarray
    iterations: int = 0
    prior: priors.Prior | None = None  # the prior the fit used (strengths filled in)
    name = "cascade"

    @classmethod
    def fit(cls, S, *, weights=None, prior=priors.AUTO, **_) -> "Cascade":
        """The closed form above, with ``prior``'s pseudo-counts added to both counts."""
        S, w = base.weighted(S, weights)
        prior = priors.parse(prior).fitted(S, w)
        r = np.arange(1, S.ranks + 1)[None, :]
        first = np.where(S.click.any(axis=1), S.click.argmax(axis=1) + 1, S.ranks)
        exam = (r <= first[:, None]) & S.mask
        first_click = S.click & (r == first[:, None])
        num, den = base.pair_sums(first_click.astype(float), exam.astype(float), S.pair,
                                  S.n_pairs, w[:, None])
        if prior.needs_recentre:  # its own counts' pooled ratio: no EM to wait for
            prior = prior.recentred({"attractiveness": (num, den)})
        return cls(alpha=prior.update(num, den, "attractiveness"), iterations=0, prior=prior)

    def _chain(self, S):
        a = base.gather(self.alpha, S.pair)
        return a, np.zeros_like(a), np.ones_like(a)

    def parameters(self) -> dict:
        return {}
