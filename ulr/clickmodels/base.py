"""Shared pieces of the click models: the examination chain and EM helpers.

Every model answers three questions about a session matrix
(:class:`~ulr.clickmodels.sessions.Sessions`):

- ``conditional(S)``: ``P(C_r = 1 | C_1..C_{r-1})`` per rank. Their product
  over ranks is the session's likelihood, exactly.
- ``marginal(S)``: ``P(C_r = 1)``, ignoring the other clicks.
- ``examination(S)``: ``P(E_r = 1)``, the marginal examination probability.

Cascade, DCM, DBN and SDBN share one structure, the *examination chain*:
rank 1 is examined; an examined result is clicked with probability
``alpha``; the user then goes on to the next rank with probability
``cont_click`` after a click and ``cont_skip`` after a skip (cascade: 0 and 1;
DCM: ``lambda_r`` and 1; DBN: ``gamma (1 - sigma)`` and ``gamma``; SDBN: DBN
with ``gamma = 1``). Clicks pin examination at every rank up to the last
click; after it, the posterior over where the user stopped is closed form
(:func:`chain_posterior`), which is all their EM needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Probabilities are kept in [FLOOR, 1 - FLOOR] in likelihoods, so a click a
# model calls impossible (a second click under cascade) costs log(FLOOR), not -inf.
FLOOR = 1e-6
INIT = 0.5


def gather(values: np.ndarray, pair: np.ndarray) -> np.ndarray:
    """``values[pair]`` with 0 on empty slots (pair -1)."""
    return np.where(pair >= 0, values[np.maximum(pair, 0)], 0.0)


def weights_of(S, weights) -> np.ndarray:
    """Per-row weights: the given ones, else each training row's count of sessions
    (a row of ``S`` is a pattern shared by ``S.count`` sessions; given weights replace
    the counts, e.g. a bootstrap's Poisson(count) draws)."""
    if weights is None:
        return np.where(S.test, 0.0, S.count.astype(float))
    w = np.asarray(weights, dtype=float)
    if w.shape != (S.sessions,) or np.any(w < 0):
        raise ValueError("weights need one non-negative value per row")
    return w


def weighted(S, weights):
    """The sessions with positive weight and their weights (EM never sees the others,
    so a held-out session the fitted model calls impossible cannot poison a sum)."""
    w = weights_of(S, weights)
    keep = w > 0
    if keep.all():
        return S, w
    return S.subset(keep), w[keep]


def ratio(num: np.ndarray, den: np.ndarray, fallback) -> np.ndarray:
    """``num / den`` where ``den > 0``, else ``fallback``."""
    fb = np.broadcast_to(np.asarray(fallback, dtype=float), np.shape(num))
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), fb)


CHUNK = 65536  # sessions per block in the chain models' E-steps (bounds the temporaries)


def chunks(S, w):
    """``(sessions, weights)`` in blocks of ``CHUNK`` sessions (views, no copies)."""
    for lo in range(0, S.sessions, CHUNK):
        sl = slice(lo, lo + CHUNK)
        yield S.subset(sl), w[sl]


def pair_sums(num_rows, den_rows, pair, n_pairs, wmat):
    """Per-pair weighted sums of ``num_rows`` and ``den_rows`` over non-empty slots."""
    m = pair >= 0
    p = pair[m]
    return (np.bincount(p, (num_rows * wmat)[m], minlength=n_pairs),
            np.bincount(p, (den_rows * wmat)[m], minlength=n_pairs))


def log_probs(p_click: np.ndarray, click: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``log P(C_r = c_r)`` per slot (0 on empty slots); the probability of what was
    observed is floored at ``FLOOR`` (a certainty stays exactly 1)."""
    p = np.where(click, p_click, 1.0 - p_click)
    return np.where(mask, np.log(np.maximum(p, FLOOR)), 0.0)


def session_loglik(model, S) -> np.ndarray:
    """Log-likelihood of each session (natural log)."""
    return log_probs(model.conditional(S), S.click, S.mask).sum(axis=1)


def prev_click_rank(click: np.ndarray) -> np.ndarray:
    """Rank (1-based) of the last click above each slot; 0 when there is none."""
    r = np.arange(1, click.shape[1] + 1)
    last = np.maximum.accumulate(np.where(click, r, 0), axis=1)
    return np.concatenate([np.zeros((click.shape[0], 1), dtype=last.dtype), last[:, :-1]],
                          axis=1)


def last_click_rank(click: np.ndarray) -> np.ndarray:
    """Rank of each session's last click; 0 when it has none."""
    r = np.arange(1, click.shape[1] + 1)
    return np.where(click, r, 0).max(axis=1)


# --------------------------------------------------------------------------- chain


def chain_conditional(a, cc, cs, click, mask) -> np.ndarray:
    """``P(C_r = 1 | C_<r)`` of an examination chain: the filter
    ``eps_1 = 1``; ``eps_{r+1} = cc_r`` after a click, else
    ``eps_r (1 - a_r) cs_r / (1 - eps_r a_r)``; ``P(C_r = 1 | C_<r) = eps_r a_r``."""
    S, K = a.shape
    out = np.zeros((S, K))
    eps = np.ones(S)
    for r in range(K):
        p = eps * a[:, r]
        out[:, r] = p
        skip = eps * (1.0 - a[:, r]) * cs[:, r] / np.maximum(1.0 - p, 1e-300)
        eps = np.where(click[:, r], cc[:, r], skip)
    return np.where(mask, out, 0.0)


def chain_examination(a, cc, cs, mask) -> np.ndarray:
    """``P(E_r = 1)``: ``P(E_1) = 1``, ``P(E_{r+1}) = P(E_r) (a_r cc_r + (1 - a_r) cs_r)``."""
    S, K = a.shape
    e = np.ones((S, K))
    for r in range(1, K):
        e[:, r] = e[:, r - 1] * (a[:, r - 1] * cc[:, r - 1] + (1 - a[:, r - 1]) * cs[:, r - 1])
    return np.where(mask, e, 0.0)


@dataclass(frozen=True)
class Layout:
    """What the chain E-step reads of a block of sessions that no parameter changes: the
    last click ``l`` and length ``n`` of each session and the masks built from them
    (shared by :func:`chain_posterior` and :func:`chain_loglik`)."""

    last: np.ndarray  # (R,) rank of the last click, 0 if none
    n: np.ndarray  # (R,) results shown
    after: np.ndarray  # (R, K) shown and below the last click
    upto: np.ndarray  # (R, K) at or above the last click (examined for sure)
    above: np.ndarray  # (R, K) strictly above the last click
    is_last: np.ndarray  # (R, K) the last click itself
    not_bottom: np.ndarray  # (R, K) shown with a rank below it (r < n)
    idx: np.ndarray  # (R,) column of the last click (0 when none)

    @classmethod
    def of(cls, click, mask) -> "Layout":
        r = np.arange(1, click.shape[1] + 1)[None, :]
        last = last_click_rank(click)
        n = mask.sum(axis=1)
        lc = last[:, None]
        return cls(last=last, n=n, after=(r > lc) & mask, upto=(r <= lc) & mask,
                   above=r < lc, is_last=click & (r == lc), not_bottom=mask & (r < n[:, None]),
                   idx=np.maximum(last - 1, 0))


def chain_posterior(a, cc, cs, click, mask, layout: Layout | None = None):
    """Posterior of the stopping point after each session's last click.

    With ``l`` the last click (0 if none) and ``n`` the session length, the
    user examined every rank ``<= l``; the last examined rank ``L >= l`` has
    ``P(L = l) ∝ 1 - cc_l`` (1 when ``l = n``; 0 when ``l = 0``) and for
    ``m > l``: ``P(L = m) ∝ p0 prod_{l<j<=m} (1 - a_j) prod_{l<j<m} cs_j
    (1 - cs_m if m < n)`` with ``p0 = cc_l`` (1 when ``l = 0``).

    Returns
    -------
    post_e : (S, K) posterior ``P(E_r = 1 | clicks)``.
    z : (S,) ``P(no click after l | clicks up to l)``, the tail's likelihood.
    stop_at_l : (S,) the unnormalized weight ``P(L = l)`` (0 when l = 0 or l = n).
    last : (S,) the last click rank l.
    """
    L = layout if layout is not None else Layout.of(click, mask)
    S, K = a.shape
    U = np.cumprod(np.where(L.after, 1.0 - a, 1.0), axis=1)
    g = np.where(L.after, cs, 1.0)
    Gprev = np.ones((S, K))
    np.cumprod(g[:, :-1], axis=1, out=Gprev[:, 1:])
    cc_l = cc[np.arange(S), L.idx]
    p0 = np.where(L.last > 0, cc_l, 1.0)
    end = np.where(L.not_bottom, 1.0 - g, 1.0)
    w = np.where(L.after, p0[:, None] * U * Gprev * end, 0.0)
    stop_at_l = np.where((L.last > 0) & (L.last < L.n), 1.0 - cc_l, 0.0)
    stop_at_l = np.where((L.last > 0) & (L.last == L.n), 1.0, stop_at_l)
    z = np.maximum(stop_at_l + w.sum(axis=1), 1e-300)
    tail = np.cumsum(w[:, ::-1], axis=1)[:, ::-1] / z[:, None]
    post_e = np.where(L.upto, 1.0, np.where(L.after, tail, 0.0))
    return post_e, z, stop_at_l, L.last


def chain_loglik(a, cc, cs, click, layout: Layout, z) -> np.ndarray:
    """Each session's log-likelihood from the E-step's pieces: the clicks and skips at or
    above the last click, the steps between them, and the tail ``z`` below it."""
    seen = np.where(layout.upto, np.where(click, a, 1.0 - a), 1.0)
    steps = np.where(layout.above, np.where(click, cc, cs), 1.0)
    return np.log(np.maximum(seen * steps, 1e-300)).sum(axis=1) + np.log(z)


def converged(delta: float, tol: float, gain: float | None, ll_tol: float | None) -> bool:
    """EM stops when no parameter moves by ``tol`` or more, or when the log-likelihood per
    training session rose by less than ``ll_tol`` in the last iteration (EM never lowers
    it; ``gain`` is None before the second E-step; ``ll_tol`` None: parameters only)."""
    return delta < tol or (gain is not None and ll_tol is not None and gain < ll_tol)


class Model:
    """Base of the fitted models: likelihood-based summaries shared by all."""

    name = "model"
    needs_sessions = True

    def loglik(self, S) -> np.ndarray:
        return session_loglik(self, S)

    def examination_by_rank(self, S, weights=None) -> np.ndarray:
        """Average ``P(E_r = 1)`` per rank over the (weighted) sessions."""
        w = weights_of(S, weights)
        num, den = np.zeros(S.ranks), np.zeros(S.ranks)
        for C, wc in chunks(S, w):  # block by block: the temporaries stay small
            num += (self.examination(C) * wc[:, None]).sum(axis=0)
            den += (C.mask * wc[:, None]).sum(axis=0)
        return ratio(num, den, np.nan)


class ChainModel(Model):
    """Models of the cascade family (cascade, DCM, DBN, SDBN): the user goes down the
    list, and ``_chain(S)`` gives per rank the attractiveness ``a`` and the chances to go
    on after a click (``cc``) and after a skip (``cs``); the rest follows from them."""

    def _chain(self, S):
        raise NotImplementedError

    def conditional(self, S):
        return chain_conditional(*self._chain(S), S.click, S.mask)

    def examination(self, S):
        return chain_examination(*self._chain(S), S.mask)

    def marginal(self, S):
        return self.examination(S) * gather(self.alpha, S.pair)

