"""The book's counting estimate of a simplified DBN, shared by DBN's start, SDBN and the
priors' empirical Bayes (:mod:`ulr.clickmodels.prior`).

Chuklin, Markov & de Rijke (*Click Models for Web Search*, 2015, §4.2) treat every result
down to a session's last click as examined (every result of a session without clicks), so
per (query, doc) pair

    clicks = clicks on it
    exam   = times it was shown at or above its session's last click (always, without one)
    lasts  = times its click was the session's last

and SDBN's closed form is ``alpha = clicks / exam``, ``sigma = lasts / clicks``.
"""

from __future__ import annotations

import numpy as np

from ulr.clickmodels import base


def closed_form_counts(S, w):
    """Weighted ``(clicks, exam, lasts)`` per pair over the rows of ``S`` with weights ``w``."""
    r = np.arange(1, S.ranks + 1)[None, :]
    last = base.last_click_rank(S.click)
    m = S.mask
    pair, wr = S.pair[m], np.broadcast_to(w[:, None], m.shape)[m]  # once, not per sum

    def per_pair(rows):  # weighted count per pair of the slots where ``rows`` holds
        return np.bincount(pair, wr * rows[m], minlength=S.n_pairs)
    clicks = per_pair(S.click)
    exam = per_pair(r <= np.where(last > 0, last, S.ranks)[:, None])
    lasts = per_pair(S.click & (r == last[:, None]))
    return clicks, exam, lasts
