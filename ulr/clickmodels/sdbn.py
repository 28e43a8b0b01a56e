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


@dataclass(frozen=True)
class SDBNCounts(SDBN):
    """SDBN by the book's counting estimate alone (PyClick's SDBN): every result down to the
    last click examined, none below it, no EM.

    ``alpha = clicks / results at or above the last click``, ``sigma = last clicks /
    clicks`` per pair, with the prior's pseudo-counts (``prior="1,1"`` is PyClick's: one
    click in two results, one last click in two clicks). Scored with the same exact
    likelihood and marginal click probabilities as every model, so with ``"1,1"`` its
    held-out perplexity is PyClick's. It differs from :class:`SDBN` by definition, not by
    fit: treating the results below the last click as unexamined suits users who abandon a
    list (most real logs; a DBN with ``gamma < 1``), where it predicts held-out clicks
    better than SDBN's EM; on a log where users never abandon, the EM is better
    (tests/clickmodels/test_pyclick_sdbn.py; docs/clickmodels.md).
    """

    name = "sdbn-counts"

    @classmethod
    def fit(cls, S, *, weights=None, prior=priors.AUTO, **_) -> "SDBNCounts":
        S, w = base.weighted(S, weights)
        return cls.start(S, w, priors.parse(prior).fitted(S, w))
