"""Ranked bandits (Radlinski, Kleinberg & Joachims 2008): one UCB1 or Thompson bandit
per position."""

from __future__ import annotations

import math

import numpy as np

from ulr.bandits.policies.base import _UNSEEN, Policy


# --------------------------------------------------------------------------- ranked bandits
class _RankedPolicy(Policy):
    """One bandit per position (Radlinski et al. 2008); statistics of shape (R, K, L)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self._pos_offsets = (self._rows * self.k + np.arange(self.k)) * self.n_items

    def position_scores(self, t, items=None) -> np.ndarray:
        raise NotImplementedError

    def select(self, t, items=None):
        s = self.position_scores(t, items)          # fresh (R, K, n) array
        k = self.k if items is None else min(self.k, s.shape[2])
        lists = np.empty((self.runs, k), dtype=np.intp)
        for j in range(k):                           # loop over positions, not items
            sj = s[:, j, :]
            if j:
                sj[self._rows, lists[:, :j]] = -np.inf
            lists[:, j] = sj.argmax(axis=1)
        return lists if items is None else np.asarray(items)[lists]

    def _flat(self, lists):
        return lists + self._pos_offsets[:, : lists.shape[1]]


class RankedUCB1(_RankedPolicy):
    """UCB1 (Auer et al. 2002), index ``w_hat + sqrt(2 ln t / T)``, one per position.

    Like the cascade UCB algorithms it starts with one free observation of every
    item (for every position's bandit). With ``K = 1`` this is plain UCB1 and
    :func:`ulr.bandits.bounds.ucb1_upper_bound` bounds its expected regret.
    """

    name = "ucb1"
    needs_init = True

    def __init__(self, **kw):
        super().__init__(**kw)
        shape = (self.runs, self.k, self.n_items)
        self.pulls = np.zeros(shape)
        self.wins = np.zeros(shape)
        self.mean = np.zeros(shape)
        self._isq = np.full(shape, _UNSEEN)
        self._pf, self._wf = self.pulls.reshape(-1), self.wins.reshape(-1)
        self._mf, self._if = self.mean.reshape(-1), self._isq.reshape(-1)

    def initialize(self, attracted):
        self.pulls[:] = 1.0
        self.wins[:] = attracted[:, None, :]
        self.mean[:] = attracted[:, None, :]
        self._isq[:] = 1.0

    def position_scores(self, t, items=None):
        c = math.sqrt(2.0 * math.log(t))
        if items is not None:
            return self.mean[:, :, items] + c * self._isq[:, :, items]
        return self.mean + c * self._isq

    def update(self, lists, observed, clicks):
        idx = self._flat(lists)          # every position's bandit learns each step
        self._pf[idx] += 1.0
        self._wf[idx] += clicks
        n = self._pf[idx]
        self._mf[idx] = self._wf[idx] / n
        self._if[idx] = 1.0 / np.sqrt(n)


class RankedTS(_RankedPolicy):
    """Bernoulli Thompson sampling (Beta(1, 1) priors), one bandit per position."""

    name = "ts"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.alpha = np.ones((self.runs, self.k, self.n_items))
        self.beta = np.ones((self.runs, self.k, self.n_items))
        self._af, self._bf = self.alpha.reshape(-1), self.beta.reshape(-1)

    def position_scores(self, t, items=None):
        if items is not None:
            return self.rng.beta(self.alpha[:, :, items], self.beta[:, :, items])
        return self.rng.beta(self.alpha, self.beta)

    def update(self, lists, observed, clicks):
        idx = self._flat(lists)
        self._af[idx] += clicks
        self._bf[idx] += ~clicks
