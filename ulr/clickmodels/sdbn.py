"""Simplified DBN (SDBN): the DBN with ``gamma = 1``.

The user never abandons without a reason: after a skip they always go on,
after a click they stop when satisfied (``sigma_qd``) (Chapelle & Zhang 2009,
§5; Chuklin, Markov & de Rijke 2015, §4.2). The book's closed form,

    alpha_qd = clicks / results at or above the last click (all if no click)
    sigma_qd = last clicks / clicks

(:mod:`ulr.clickmodels.counts`) treats every result below the last click as unexamined,
which is the MLE of that approximation only. ulr starts from it and runs the DBN's EM with
``gamma`` held at 1, so SDBN is fitted on the same exact likelihood it is scored with, and
DBN nests it (DBN's likelihood >= SDBN's on the training log).
"""

from __future__ import annotations

from dataclasses import dataclass

from ulr.clickmodels import base
from ulr.clickmodels import prior as priors
from ulr.clickmodels.dbn import DBN


@dataclass(frozen=True)
class SDBN(DBN):
    name = "sdbn"
    fixed_gamma = 1.0

    @classmethod
    def closed_form(cls, S, *, weights=None, prior=priors.NONE) -> "SDBN":
        """The book's counting estimate (see the module docstring), with ``prior``'s
        pseudo-counts (none by default)."""
        S, w = base.weighted(S, weights)
        return cls.start(S, w, prior)

    def parameters(self) -> dict:
        return {}
