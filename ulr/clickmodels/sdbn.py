"""Simplified DBN (SDBN): the DBN with ``gamma = 1``.

The user never abandons without a reason: after a skip they always go on,
after a click they stop when satisfied (``sigma_qd``) (Chapelle & Zhang 2009,
§5; Chuklin, Markov & de Rijke 2015, §4.2). The book's closed form,

    alpha_qd = clicks / results at or above the last click (all if no click)
    sigma_qd = last clicks / clicks

treats every result below the last click as unexamined, which is the MLE of
that approximation only. ulr starts from it and runs the DBN's EM with
``gamma`` held at 1, so SDBN is fitted on the same exact likelihood it is
scored with, and DBN nests it (DBN's likelihood >= SDBN's on the training log).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr.clickmodels import base
from ulr.clickmodels.dbn import DBN


@dataclass(frozen=True)
class SDBN(DBN):
    name = "sdbn"
    fixed_gamma = 1.0

    @classmethod
    def closed_form(cls, S, *, weights=None) -> "SDBN":
        """The book's counting estimate (see the module docstring)."""
        S, w = base.weighted(S, weights)
        r = np.arange(1, S.ranks + 1)[None, :]
        last = base.last_click_rank(S.click)
        m = S.mask
        pair, wr = S.pair[m], np.broadcast_to(w[:, None], m.shape)[m]  # once, not per sum

        def per_pair(rows):  # weighted count per pair of the slots where ``rows`` holds
            return np.bincount(pair, wr * rows[m], minlength=S.n_pairs)
        clicks = per_pair(S.click)
        exam = per_pair(r <= np.where(last > 0, last, S.ranks)[:, None])
        lasts = per_pair(S.click & (r == last[:, None]))
        return cls(alpha=base.pooled_ratio(clicks, exam), sigma=base.pooled_ratio(lasts, clicks),
                   gamma=1.0)

    def parameters(self) -> dict:
        return {}
