"""Bandit algorithms for ranking, every one batched over ``R`` independent runs.

Each policy keeps its statistics in arrays whose first axis is the run
(shape ``(R, L)`` for per-item statistics, ``(R, d, d)`` for Gram matrices)
and does O(R * L) numpy work per step, with no Python loop over items. The
simulation (:mod:`ulr.bandits.simulate`) loops over time only.

Interface (Open Bandit Pipeline style)::

    lists = policy.select(t)                 # (R, K) item indices, best first
    policy.update(lists, observed, clicks)   # cascade feedback, (R, K) bool each

Algorithms
----------
``cascade-ucb1``, ``cascade-klucb``
    Kveton, Szepesvari, Wen & Ashkan, "Cascading bandits: learning to rank in
    the cascade model", ICML 2015. Index ``w_hat + sqrt(1.5 log t / T)`` and
    the KL-UCB index with rate ``log t + 3 log log t``; both start with one
    free observation of every item.
``cascade-ts``
    Thompson sampling with a Beta(1, 1) prior per item and the Beta-Bernoulli
    posterior updated from cascade feedback (CascadeTS / "TS-Cascade with
    Beta updates", Zhong, Cheung & Tan, 2021).
``cascade-linucb``, ``cascade-lints``
    Zong, Ni, Sung, Ke, Wen & Kveton, "Cascading bandits for large-scale
    recommendation problems", UAI 2016: attraction ``x_e' theta``, Gram matrix
    ``M = I + sigma^-2 sum x x'``, ``theta_bar = sigma^-2 M^-1 B``.
    CascadeLinTS draws ONE ``theta ~ N(theta_bar, M^-1)`` per step (not one
    per item); CascadeLinUCB scores ``x' theta_bar + c sqrt(x' M^-1 x)``.
    ``M^-1`` is kept up to date with Sherman-Morrison rank-1 updates, one per
    observed item (for several runs the updates of one step are applied together
    through the equivalent Woodbury identity, see :func:`sequential_rank1_update`).
``ucb1``, ``ts``
    Plain multi-armed bandit algorithms (UCB1, Auer et al. 2002; Bernoulli
    Thompson sampling with Beta(1, 1) priors). With ``K = 1`` they are exactly
    the plain bandit: the arm is the one shown item and the reward its click.
    With ``K > 1`` they are applied as *ranked bandits* (Radlinski, Kleinberg
    & Joachims, ICML 2008): one independent bandit per position; the bandit of
    position ``k`` picks the best-index item not already placed above it and
    is rewarded 1 if the user clicked at position ``k``, else 0. They ignore
    the cascade structure (an unexamined position counts as "no click"), which
    is what the cascade algorithms improve on.
"""

from __future__ import annotations

import bisect
import heapq
import math

import numpy as np
from scipy.linalg.lapack import dpotrf
from scipy.special import xlogy

from ulr.errors import UlrError

ALGORITHMS = ("ucb1", "ts", "cascade-ucb1", "cascade-klucb", "cascade-ts",
              "cascade-linucb", "cascade-lints")
LINEAR_ALGORITHMS = ("cascade-linucb", "cascade-lints")

# 1/sqrt(T) of an item never observed: a finite "infinite" bonus (0 * inf is nan).
_UNSEEN = 1e12
# Largest environment for which a linear algorithm falls back to one-hot features.
MAX_ONE_HOT_ITEMS = 100


# --------------------------------------------------------------------------- helpers
_ROWS: dict = {}


def _rows(r: int) -> np.ndarray:
    rows = _ROWS.get(r)
    if rows is None:
        rows = _ROWS[r] = np.arange(r)[:, None]
    return rows


def topk(scores: np.ndarray, k: int, *, overwrite: bool = False) -> np.ndarray:
    """Indices of the ``k`` largest scores of each row, best first.

    For ``k <= 8``: ``k`` rounds of ``argmax`` over each row, masking each
    winner with ``-inf`` (O(k L) per row). For larger ``k``: ``np.argpartition``
    (O(L) per row) and a sort of the ``k`` winners. The argmax rounds are about
    twice as fast as ``argpartition`` for the small ``k`` of ranked lists and do
    not slow down on the many tied scores of UCB indices (introselect does).
    Ties go to the lower index.

    Parameters
    ----------
    scores : ndarray of shape (R, n)
    k : int, 1 <= k <= n
    overwrite : bool
        Allow the argmax rounds to write ``-inf`` into ``scores``.

    Returns
    -------
    ndarray of shape (R, k), dtype intp
    """
    r, n = scores.shape
    if k == 1:
        return scores.argmax(axis=1)[:, None]
    rows = _rows(r)
    if k <= 8 and r == 1:   # one run: 1-d argmax and scalar writes are ~2x cheaper
        s = scores[0] if overwrite else scores[0].copy()
        out = []
        for _ in range(k):
            a = int(s.argmax())
            out.append(a)
            s[a] = -np.inf
        return np.array([out], dtype=np.intp)
    if k <= 8:
        s = scores if overwrite else scores.copy()
        out = np.empty((r, k), dtype=np.intp)
        flat_rows = rows[:, 0]
        for j in range(k):   # loop over list positions, not items
            a = s.argmax(axis=1)
            out[:, j] = a
            s[flat_rows, a] = -np.inf
        return out
    part = np.argpartition(scores, n - k, axis=1)[:, n - k:]
    order = np.argsort(-scores[rows, part], axis=1, kind="stable")
    return part[rows, order]


_FEEDBACK: dict = {}


def _feedback_tables(k: int):
    """Observed / clicked masks for each click position 0..k-1 and k (no click),
    and the same as one-row (1, K) views per position."""
    tables = _FEEDBACK.get(k)
    if tables is None:
        c = np.arange(k + 1)[:, None]
        pos = np.arange(k)[None, :]
        obs, click = pos <= c, pos == c
        for a in (obs, click):
            a.setflags(write=False)
        rows = tuple((obs[j:j + 1], click[j:j + 1]) for j in range(k + 1))
        tables = _FEEDBACK[k] = (obs, click, rows)
    return tables


def cascade_feedback(attracted: np.ndarray):
    """Cascade-model feedback of shown lists.

    The user scans the list top-down and clicks the first attractive item.
    Items above the click are observed as not attractive, the clicked item as
    attractive, items below it are not observed; without a click all ``K``
    items are observed as not attractive.

    Parameters
    ----------
    attracted : bool ndarray of shape (R, K)
        Whether the item at each position would attract the user.

    Returns
    -------
    observed : bool ndarray of shape (R, K)
        Positions whose attraction was revealed: up to and including the click.
    clicks : bool ndarray of shape (R, K)
        The click (at most one True per row, at the first attractive position).
        Both are looked up in per-``K`` tables: treat them as read-only.
    """
    r, k = attracted.shape
    obs_table, click_table, one_row = _feedback_tables(k)
    if r == 1:   # a list of K booleans: cheaper in plain Python than two reductions
        row = attracted[0].tolist()
        return one_row[row.index(True) if True in row else k]
    c = np.where(attracted.any(axis=1), attracted.argmax(axis=1), k)
    return obs_table[c], click_table[c]


def klucb_rate(t: int) -> float:
    """Exploration rate ``log t + 3 log log t`` of CascadeKL-UCB (Kveton et al. 2015).

    The formula is undefined at ``t = 1`` and negative at ``t = 2``; there it is
    0 (the index is the empirical mean).
    """
    if t < 3:
        return 0.0
    lt = math.log(t)
    return max(0.0, lt + 3.0 * math.log(lt))


def klucb_index(p_hat, n, rate, *, tol: float = 1e-10, max_iter: int = 50) -> np.ndarray:
    """KL-UCB index ``max{q in [p_hat, 1] : n KL(p_hat, q) <= rate}``, vectorized.

    Solves ``g(q) = n KL(p_hat, q) - rate = 0`` by Newton's method in the
    variable ``y = -log(1 - q)``, where ``g`` is increasing and convex
    (``dg/dy = n (q - p_hat) / q``). The iteration starts from an upper bound of
    the root, the smaller of Pinsker's ``p + sqrt(r / 2)`` and
    ``p + r + sqrt(r^2 + 2 p r)`` (from ``KL(p, q) >= (q - p)^2 / (2 q)``,
    ``q >= p``), with ``r = rate / n``; from there Newton's iterates decrease
    monotonically to the root, so every iterate is a valid (conservative) upper
    confidence bound. Usually 3-6 iterations reach ``tol``.

    Parameters
    ----------
    p_hat : array-like in [0, 1]
        Empirical means.
    n : array-like
        Numbers of observations (0 gives index 1).
    rate : float or array-like
        Exploration rate (``log t + 3 log log t`` in CascadeKL-UCB).
    tol : float
        Stop when no index moves by more than ``tol``.

    Returns
    -------
    ndarray
        The indices, shape of ``broadcast(p_hat, n)``.
    """
    p = np.clip(np.asarray(p_hat, dtype=np.float64), 0.0, 1.0)
    n = np.asarray(n, dtype=np.float64)
    p, n = np.broadcast_arrays(p, n)
    out = np.ones(p.shape)
    rate = float(rate)
    if rate <= 0:
        return np.where(n > 0, p, 1.0)
    todo = (n > 0) & (p < 1.0)
    if not todo.all():
        if not todo.any():
            return out
        p, n = p[todo], n[todo]
    r = rate / n
    q = np.minimum(p + np.sqrt(0.5 * r), p + r + np.sqrt(r * r + 2.0 * p * r))
    q = np.minimum(q, 1.0 - 1e-15)
    y = -np.log1p(-q)
    h = xlogy(p, p) + xlogy(1.0 - p, 1.0 - p)  # negative entropy, fixed
    one_m_p = 1.0 - p
    for _ in range(max_iter):
        g = h - p * np.log(q) + one_m_p * y - r        # KL(p, q) - rate / n
        y -= g * q / np.maximum(q - p, 1e-300)          # Newton step in y
        q_new = -np.expm1(-y)
        done = np.max(np.abs(q_new - q)) <= tol
        q = q_new
        if done:
            break
    if todo.all():
        return q.reshape(out.shape)
    out[todo] = q  # unobserved items and p_hat = 1 keep the index 1
    return out


def sherman_morrison_update(m_inv: np.ndarray, x: np.ndarray, *, scale: float = 1.0,
                            mask: np.ndarray | None = None) -> None:
    """In-place rank-1 update ``M^-1 <- (M + scale x x')^-1`` for every run.

    Sherman-Morrison: with ``u = M^-1 x``,

        (M + s x x')^-1 = M^-1 - u u' / (1/s + x' u).

    Parameters
    ----------
    m_inv : ndarray of shape (R, d, d)
        Symmetric inverse Gram matrices, updated in place.
    x : ndarray of shape (R, d)
        One vector per run.
    scale : float
        ``s > 0`` (``sigma^-2`` in CascadeLinUCB/TS).
    mask : bool ndarray of shape (R,), optional
        Runs to update; the others are left unchanged.
    """
    u = np.matmul(m_inv, x[:, :, None])                       # (R, d, 1)
    denom = 1.0 / scale + np.matmul(x[:, None, :], u)[:, 0, 0]
    coef = 1.0 / denom
    if mask is not None:
        coef = coef * mask
    m_inv -= np.matmul(u * coef[:, None, None], u.transpose(0, 2, 1))


def sequential_rank1_update(m_inv: np.ndarray, xs: np.ndarray, *, scale: float = 1.0,
                            mask: np.ndarray | None = None) -> None:
    """In place: the ``m`` Sherman-Morrison steps ``M^-1 <- (M + scale x_j x_j')^-1``,
    ``j = 1..m``, for every run, applied together.

    The product of the sequential rank-1 updates equals the Woodbury identity

        (M + s X'X)^-1 = M^-1 - P (I/s + X M^-1 X')^-1 P',   P = M^-1 X',

    so one batched (m, m) solve per run replaces ``m`` rounds of (d, d) work.
    Masked-out vectors are zeroed and contribute nothing.

    Parameters
    ----------
    m_inv : ndarray of shape (R, d, d)
        Symmetric inverse Gram matrices, updated in place.
    xs : ndarray of shape (R, m, d)
        The vectors of each run.
    scale : float
        ``s > 0``.
    mask : bool ndarray of shape (R, m), optional
        Which vectors to add.
    """
    if mask is not None:
        xs = xs * mask[:, :, None]
    p = np.matmul(m_inv, xs.transpose(0, 2, 1))                 # (R, d, m)
    g = np.matmul(xs, p)                                         # (R, m, m)
    g[:, np.arange(xs.shape[1]), np.arange(xs.shape[1])] += 1.0 / scale
    m_inv -= np.matmul(p, np.linalg.solve(g, p.transpose(0, 2, 1)))


# --------------------------------------------------------------------------- base
class Policy:
    """Base class: ``R`` runs of one algorithm over ``L`` items and ``K`` positions.

    Parameters
    ----------
    n_items : int
        ``L``.
    k : int
        ``K``, length of the ranked list.
    runs : int
        ``R``, number of independent runs held as the batch axis.
    seed : int, SeedSequence or Generator
        Randomness of the algorithm itself (Thompson samples).
    """

    name = ""
    needs_init = False  # wants one free observation of every item before step 1

    def __init__(self, *, n_items: int, k: int, runs: int = 1, seed=None):
        if not (1 <= k <= n_items):
            raise UlrError(f"The list length k must be between 1 and the number of items "
                           f"({n_items}), got {k}.")
        if runs < 1:
            raise UlrError(f"The number of runs must be at least 1, got {runs}.")
        self.n_items, self.k, self.runs = int(n_items), int(k), int(runs)
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self._rows = np.arange(self.runs)[:, None]
        self._offsets = self._rows * self.n_items

    def initialize(self, attracted: np.ndarray) -> None:
        """Record one observation ``attracted[r, e]`` of every item (if used)."""

    def scores(self, t: int, items: np.ndarray | None = None) -> np.ndarray:
        """Score of every item (or of ``items``) at step ``t``, shape (R, n).

        The array may be an internal buffer that :meth:`select` overwrites.
        """
        raise NotImplementedError

    def select(self, t: int, items: np.ndarray | None = None) -> np.ndarray:
        """The list to show at step ``t`` (1-based): the ``K`` best-scored items.

        ``items`` restricts the choice to candidate items (replay evaluation);
        the result is always in item indices.
        """
        k = self.k if items is None else min(self.k, len(items))
        pos = topk(self.scores(t, items), k, overwrite=True)
        return pos if items is None else np.asarray(items)[pos]

    def update(self, lists: np.ndarray, observed: np.ndarray, clicks: np.ndarray) -> None:
        """Learn from cascade feedback on ``lists`` (all arrays of shape (R, K))."""
        raise NotImplementedError


# --------------------------------------------------------------------------- per-item counts
class _CountingPolicy(Policy):
    """Per-item observation counts ``T`` and empirical means ``w_hat``, shape (R, L).

    The four statistics live in one (4, R * L) array (``pulls``, ``wins``,
    ``mean`` and ``1 / sqrt(pulls)``) so an update is one gather and one scatter.
    """

    needs_init = True

    def __init__(self, **kw):
        super().__init__(**kw)
        self._stats = np.zeros((4, self.runs * self.n_items))
        self._stats[3] = _UNSEEN
        shape = (self.runs, self.n_items)
        self.pulls, self.wins, self.mean, self._isq = (a.reshape(shape) for a in self._stats)
        self._buf = np.empty(shape)

    def initialize(self, attracted):
        self.pulls[:] = 1.0
        self.wins[:] = attracted
        self.mean[:] = attracted
        self._isq[:] = 1.0

    def update(self, lists, observed, clicks):
        idx = (lists if self.runs == 1 else lists + self._offsets)[observed]  # distinct
        st = self._stats[:, idx]
        pulls, wins, mean, isq = st
        pulls += 1.0
        wins += clicks[observed]
        np.divide(wins, pulls, out=mean)
        np.sqrt(pulls, out=isq)
        np.divide(1.0, isq, out=isq)
        self._stats[:, idx] = st


class CascadeUCB1(_CountingPolicy):
    """CascadeUCB1 (Kveton et al. 2015): ``U_t(e) = w_hat(e) + sqrt(1.5 log t / T(e))``."""

    name = "cascade-ucb1"

    def scores(self, t, items=None):
        c = math.sqrt(1.5 * math.log(t))
        if items is not None:
            return self.mean[:, items] + c * self._isq[:, items]
        np.multiply(self._isq, c, out=self._buf)
        np.add(self._buf, self.mean, out=self._buf)
        return self._buf


def klucb_start(p_hat, n, rate) -> np.ndarray:
    """The upper bound of the KL-UCB index that :func:`klucb_index` starts Newton from.

    ``min(p + sqrt(r / 2), p + r + sqrt(r^2 + 2 p r))`` with ``r = rate / n``; it
    is increasing in ``rate``, and every Newton iterate (hence the index returned)
    lies below it. ``n = 0`` or ``p = 1`` give 1, as the index does.
    """
    p = np.asarray(p_hat, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = rate / np.asarray(n, dtype=np.float64)
        q = np.minimum(p + np.sqrt(0.5 * r), p + r + np.sqrt(r * r + 2.0 * p * r))
        # near 1: KL(p, q) >= h(p) + (1 - p) y with y = -log(1 - q), h the negative entropy
        h = xlogy(p, p) + xlogy(1.0 - p, 1.0 - p)
        q = np.minimum(q, -np.expm1(-(r - h) / (1.0 - p)))
    return np.where((np.asarray(n) > 0) & (p < 1.0), np.minimum(q, 1.0), 1.0)


def _xlogx(x: float) -> float:
    return x * math.log(x) if x > 0.0 else 0.0


def klucb_index_one(p: float, n: float, rate: float, *, tol: float = 1e-10,
                    max_iter: int = 50, start: float | None = None) -> float:
    """:func:`klucb_index` for one item, in plain floats (no array overhead).

    Same start, same Newton iteration in ``y = -log(1 - q)`` and same stopping
    rule as the vectorized solver; used where only a handful of indices are
    needed per step, which numpy's per-call cost would dominate. ``start``
    (optional) is a point in ``[p, root]``, e.g. the index at a smaller rate:
    ``g`` is convex and increasing in ``y``, so the first Newton step lands at
    or above the root and the iterates then decrease to it, as from the
    closed-form start, usually in 2-3 steps instead of 5-8.
    """
    if rate <= 0.0:
        return p if n > 0 else 1.0
    if n <= 0 or p >= 1.0:
        return 1.0
    r = rate / n
    if start is not None and p < start < 1.0 - 1e-15:
        q = start
    else:
        q = min(p + math.sqrt(0.5 * r), p + r + math.sqrt(r * r + 2.0 * p * r),
                1.0 - 1e-15)
    y = -math.log1p(-q)
    h = _xlogx(p) + _xlogx(1.0 - p)
    one_m_p = 1.0 - p
    log_q = math.log
    for _ in range(max_iter):
        g = h - p * log_q(q) + one_m_p * y - r
        y -= g * q / max(q - p, 1e-300)
        q_new = -math.expm1(-y)
        done = abs(q_new - q) <= tol
        q = q_new
        if done:
            break
    return q


def klucb_start_one(p: float, n: float, rate: float) -> float:
    """:func:`klucb_start` for one item, in plain floats."""
    if n <= 0 or p >= 1.0:
        return 1.0
    r = rate / n
    q = min(p + math.sqrt(0.5 * r), p + r + math.sqrt(r * r + 2.0 * p * r))
    h = _xlogx(p) + _xlogx(1.0 - p)
    q = min(q, -math.expm1(-(r - h) / (1.0 - p)))
    return min(q, 1.0)


_TIE = 1e-12  # bounds closer than this may differ by rounding only: treated as overlapping


def _klucb_slope(q: float, p: float, n: float) -> float:
    """``dU/d rate`` of the KL-UCB index ``U = q``: ``q (1 - q) / (n (q - p))``.

    The index is the inverse of ``q -> n KL(p, q)``, whose derivative is
    ``n (q - p) / (q (1 - q))``.
    """
    return q * (1.0 - q) / (n * max(q - p, 1e-300))


class _KLUCBGroups:
    """One run of CascadeKL-UCB with its items grouped by their ``(wins, pulls)`` pair.

    Parameters
    ----------
    wins, pulls : list of int
        Clicks and observations of every item (``L`` each); the lists are
        owned and updated by :meth:`move`.

    Attributes
    ----------
    ones : list of int
        Items whose index is exactly 1 (``w_hat = 1`` or never observed), in
        ascending id order: they lead every list.
    groups : dict
        ``(wins, pulls) -> ascending item ids`` of the other items.
    ub : dict
        ``pair -> float``: an upper bound of the pair's index for every rate up
        to ``rate_end``, the rate at the end of the current time window.
    heap : list
        A max-heap (negated keys) with one entry ``(-ub[pair], pair)`` per pair
        in ``ub``; a pair whose group empties keeps its entry until it surfaces.
    memo : dict
        ``pair -> (rate0, index0, slope0)``: its last exact solve and
        ``dU/d rate`` there (:func:`_klucb_slope`).
    solves, refresh_solves : int
        Exact solves in :meth:`select` and in :meth:`refresh` (diagnostics).

    Notes
    -----
    Why the lists equal the full computation (every index solved, stable top
    ``K``):

    1. The index ``U(w/n, n, rate)`` depends on an item only through its pair,
       so all items of a group are tied, and the full computation orders a tie
       by item id: a group contributes its members in id order.
    2. ``U`` is increasing and concave in the rate: it is the inverse of
       ``q -> n KL(p, q)``, increasing and convex on ``[p, 1)``. So for every
       ``rate >= rate0`` (the rate grows with ``t``)

           index0 <= U(rate) <= index0 + (rate - rate0) * slope0,

       and the tangent at the window start, taken to ``rate_end``, bounds the
       index for the whole window (``ub``).
    3. A new pair reached without a click, ``(w, n + 1)`` from ``(w, n)``, has
       a lower mean and more observations, so ``U(w, n + 1) <= U(w, n)``: it
       inherits its parent's bound. Otherwise its bound is the tangent of its
       last solve or the closed form :func:`klucb_start_one` at ``rate_end``.
    4. :meth:`select` takes pairs off the heap, best bound first, until the next
       bound is below ``tau``, the ``need``-th largest lower bound among the
       items taken off: at least ``need`` items have an index >= ``tau``, so no
       pair left on the heap can enter the list. Among the pairs taken, two
       whose intervals are disjoint are ordered without solving; overlapping
       ones are solved exactly (:meth:`_order`).

    Bounds within ``_TIE`` (1e-12) of each other count as overlapping, so
    rounding in the bounds (a few ulps) cannot order two pairs wrongly; exactly
    solved pairs are ordered by their value, and exactly equal values merge
    into one tie ordered by id.
    """

    def __init__(self, wins: list, pulls: list):
        self.wins, self.pulls = wins, pulls
        self.ones: list[int] = []           # index exactly 1, ascending ids
        self.groups: dict = {}              # (wins, pulls) -> ascending ids
        for e, (w, n) in enumerate(zip(wins, pulls)):
            if w == n:
                self.ones.append(e)
            else:
                self.groups.setdefault((w, n), []).append(e)
        self.memo: dict = {}
        self.ub: dict = {}
        self.heap: list | None = None       # built by refresh()
        self.rate_end = 0.0
        self.solves = 0                     # exact solves in select (diagnostics)
        self.refresh_solves = 0             # pairs solved by refresh (diagnostics)

    def refresh(self, rate: float, rate_end: float) -> None:
        """Start a time window: solve every nonempty pair at ``rate`` (one
        vectorized :func:`klucb_index`), bound it up to ``rate_end`` by its
        tangent, and rebuild the heap (dropping the entries of empty pairs)."""
        self.rate_end = rate_end
        pairs = list(self.groups)
        self.ub = {}
        self.refresh_solves += len(pairs)
        if pairs:
            n = np.array([pr[1] for pr in pairs], dtype=np.float64)
            p = np.array([pr[0] for pr in pairs], dtype=np.float64) / n
            q = klucb_index(p, n, rate)
            s = q * (1.0 - q) / (n * np.maximum(q - p, 1e-300))
            bound = np.minimum(q + (rate_end - rate) * s, 1.0)
            self.memo.update(zip(pairs, zip([rate] * len(pairs), q.tolist(), s.tolist())))
            self.ub = dict(zip(pairs, bound.tolist()))
        self.heap = [(-b, pr) for pr, b in self.ub.items()]
        heapq.heapify(self.heap)

    def select(self, rate: float, k: int) -> list:
        """The ``k`` items of largest index at ``rate``, best first, ties to lower ids.

        After the ``ones``, ``need`` more items come from the groups. Pairs
        leave the heap, best bound first, until the next bound is below
        ``tau``, the ``need``-th largest lower bound of the items taken out: no
        pair left can reach the top ``need`` (Notes of the class, item 4).
        Candidate ``[lo, hi, members, pair]`` holds bounds of the pair's index
        at ``rate`` (``lo = hi`` once solved at this rate); the popped pairs go
        back on the heap with their (possibly tightened) bounds.

        Parameters
        ----------
        rate : float
            ``log t + 3 log log t``, no larger than ``rate_end`` and no smaller
            than the rate of the last :meth:`refresh`.
        k : int
            List length.

        Returns
        -------
        list of int
            ``k`` item ids, best first.
        """
        ones = self.ones
        if len(ones) >= k:
            return ones[:k]
        need = k - len(ones)
        heap, ub, groups, memo = self.heap, self.ub, self.groups, self.memo
        pop = heapq.heappop
        cands = []
        total, limit = 0, -math.inf   # limit = tau - _TIE
        while heap:
            neg, pair = heap[0]
            if -neg < limit:
                break
            pop(heap)
            members = groups.get(pair)
            if members is None:          # emptied since it was bounded
                del ub[pair]
                continue
            hit = memo.get(pair)
            if hit is None or hit[0] > rate:
                lo, hi = pair[0] / pair[1], -neg
            elif hit[0] == rate:
                lo = hi = hit[1]
            else:
                lo, hi = hit[1], min(-neg, hit[1] + (rate - hit[0]) * hit[2])
            cands.append([lo, hi, members, pair])
            if total < need:
                total += len(members)
                if total >= need:
                    limit = (lo if len(cands) == 1 else _kth_lower(cands, need)) - _TIE
            elif lo > limit + _TIE:   # only a lower bound above tau can raise it
                limit = _kth_lower(cands, need) - _TIE
        rel = cands if len(cands) == 1 else [c for c in cands if c[1] >= limit]
        if len(rel) == 1:
            out = rel[0][2][:need]
        elif len(rel) == 2 and _separated(rel):   # the usual case: no solve needed
            a, b = rel if rel[0][0] > rel[1][0] else rel[::-1]
            out = a[2][:need]
            if len(out) < need:
                out += b[2][:need - len(out)]
        else:
            out = self._order(rel, need, rate)
        for c in cands:
            heapq.heappush(heap, (-ub[c[3]], c[3]))
        return ones + out

    def _order(self, rel: list, need: int, rate: float) -> list:
        """The top ``need`` items of the candidates, solving only pairs whose intervals
        overlap another's (after which two exact equal values are a tie)."""
        while True:
            rel.sort(key=_lower_of, reverse=True)
            todo = [c for c in _overlapping(rel) if c[0] != c[1]]
            if not todo:
                break
            for c in todo:
                c[0] = c[1] = self._solve(c[3], rate)
            tau = _kth_lower(rel, need)
            rel = [c for c in rel if c[1] >= tau - _TIE]
        out: list = []
        i = 0
        while len(out) < need:   # rel is in index order; exact equal values are merged
            j = i + 1
            while j < len(rel) and rel[j][0] == rel[j][1] == rel[i][0] == rel[i][1]:
                j += 1
            if j == i + 1:
                out += rel[i][2][:need - len(out)]
            else:
                tied = sorted(e for c in rel[i:j] for e in c[2][:need - len(out)])
                out += tied[:need - len(out)]
            i = j
        return out

    def _solve(self, pair, rate: float) -> float:
        """Exact index of ``pair`` at ``rate``, warm-started from its last solve."""
        w, n = pair
        p = w / n
        hit = self.memo.get(pair)
        q = klucb_index_one(p, n, rate, start=None if hit is None or hit[0] > rate else hit[1])
        s = _klucb_slope(q, p, n)
        self.memo[pair] = (rate, q, s)
        bound = q + (self.rate_end - rate) * s
        if bound < self.ub[pair]:
            self.ub[pair] = bound
        self.solves += 1
        return q

    def move(self, e: int, click: int) -> tuple:
        """Item ``e`` was observed (``click`` 0 or 1): move it to its new pair.

        Returns its new ``(wins, pulls)``.
        """
        w, n = self.wins[e], self.pulls[e]
        w2, n2 = w + click, n + 1
        self.wins[e], self.pulls[e] = w2, n2
        groups = self.groups
        if w == n:
            old = self.ones
        else:
            old = groups[(w, n)]
        del old[bisect.bisect_left(old, e)]
        if not old and w != n:
            del groups[(w, n)]
        pair = (w2, n2)
        if w2 == n2:
            bisect.insort(self.ones, e)
            return pair
        dest = groups.get(pair)
        if dest is not None:
            bisect.insort(dest, e)
            return pair
        groups[pair] = [e]
        if self.heap is not None and pair not in self.ub:
            # U(w, n + 1) <= U(w, n): a pair without a click inherits the old bound
            bound = self._new_bound(pair, None if click or w == n else self.ub.get((w, n)))
            self.ub[pair] = bound
            heapq.heappush(self.heap, (-bound, pair))
        return pair

    def _new_bound(self, pair, parent: float | None) -> float:
        """An upper bound of a new pair's index up to ``rate_end``."""
        hit = self.memo.get(pair)
        bound = 1.0 if parent is None else parent
        if hit is not None:
            bound = min(bound, hit[1] + max(self.rate_end - hit[0], 0.0) * hit[2])
        elif parent is None:
            bound = klucb_start_one(pair[0] / pair[1], pair[1], self.rate_end)
        return min(bound, 1.0)


def _lower_of(c: list) -> float:
    return c[0]


def _kth_lower(cands: list, need: int) -> float:
    """The ``need``-th largest lower bound over the candidates' items (-inf if fewer)."""
    acc = 0
    for c in sorted(cands, key=_lower_of, reverse=True):
        acc += len(c[2])
        if acc >= need:
            return c[0]
    return -math.inf


def _separated(two: list) -> bool:
    """Whether two candidates' intervals are apart (so their order is known)."""
    (lo_a, hi_a, *_), (lo_b, hi_b, *_) = two
    return hi_b < lo_a - _TIE or hi_a < lo_b - _TIE


def _overlapping(rel: list) -> list:
    """Candidates (sorted by lower bound, descending) whose interval meets another's."""
    hit = [False] * len(rel)
    for i in range(len(rel) - 1):
        lo = rel[i][0] - _TIE
        for j in range(i + 1, len(rel)):
            if rel[j][1] >= lo:
                hit[i] = hit[j] = True
    return [c for c, h in zip(rel, hit) if h]


class CascadeKLUCB(_CountingPolicy):
    """CascadeKL-UCB (Kveton et al. 2015).

    ``U_t(e) = max{q in [w_hat(e), 1] : T(e) KL(w_hat(e), q) <= log t + 3 log log t}``,
    the ``K`` largest indices shown best first, ties to the lower item index.

    Parameters
    ----------
    path : {"full", "groups", "bounds"} or None, default None
        How :meth:`select` finds the lists; all three give the lists of the full
        computation. ``"full"``: every index every step (vectorized
        :func:`klucb_index`, then the top ``K``). ``"groups"``: per run in Python,
        items grouped by their ``(wins, pulls)`` pair (one index per group), each
        pair carrying an upper bound of its index until the end of a time window
        (``t * WINDOW + 1``) and a lower bound (its last exact solve), and only
        pairs whose bounds leave their rank in the top ``K`` open solved again
        (the argument is in the Notes of :class:`_KLUCBGroups`). ``"bounds"``:
        the same idea per item, all runs in one numba-compiled loop
        (:mod:`ulr.bandits.klucb_jit`; numba is imported on first use). None
        chooses by shape (:meth:`choose_path`); ``benchmarks/bench_bandits.py
        --kveton`` prints the per-step cost of each path on several shapes.
    **kw
        ``n_items``, ``k``, ``runs``, ``seed`` of :class:`Policy`.

    Notes
    -----
    :meth:`scores` and :meth:`select` with ``items`` (replay) always solve every
    index asked for, as do the first two steps (rate 0: the index is the mean).
    The per-item statistics (``pulls``, ``wins``, ``mean``) are kept up to date
    on every path.
    """

    name = "cascade-klucb"
    PATHS = ("full", "groups", "bounds")
    WINDOW = 1.05  # a bound window ends at t * WINDOW (+ 1): ~1 refresh per 20 t steps

    # "groups" costs Python time per run and per step, so it wins with many items (where
    # the other paths touch all L items per step) and is within ~20 us/step of "bounds" for
    # one run (too little to repay numba's start); "bounds" wins elsewhere, "full" only
    # where numba is missing (benchmarks/bench_bandits.py --kveton prints the figures).
    GROUPS_MAX_RUNS = 2
    GROUPS_MIN_ITEMS = 200
    # CPU seconds: numba's start, and what "groups" and "full" cost per step beyond "bounds"
    # (benchmarks/bench_bandits.py --kveton prints all of them)
    NUMBA_START = 0.6
    GROUPS_RUN = 20e-6
    FULL_STEP, FULL_CELL = 40e-6, 0.05e-6

    def __init__(self, *, path: str | None = None, **kw):
        super().__init__(**kw)
        if path is not None and path not in self.PATHS:
            raise UlrError(f"Unknown CascadeKL-UCB path {path!r}; choose one of "
                           f"{', '.join(self.PATHS)}.")
        self.path = self.choose_path(self.n_items, self.runs) if path is None else path
        self._groups: list | None = None   # one _KLUCBGroups per run, built on first use
        self._window_end = 0
        self._stat_rows = tuple(self._stats)   # pulls, wins, mean, 1/sqrt(pulls) (one run)
        self._bounds: tuple | None = None   # state and scratch of the "bounds" path
        self._bound_solves = 0
        self.bounds_from = self.bounds_start(self.n_items, self.runs)

    def initialize(self, attracted):
        super().initialize(attracted)
        self._groups, self._window_end, self._bounds = None, 0, None

    @classmethod
    def choose_path(cls, n_items: int, runs: int) -> str:
        """The path ``path=None`` takes for ``runs`` runs of ``n_items`` items."""
        if n_items >= cls.GROUPS_MIN_ITEMS or runs == 1:
            return "groups"
        if _has_numba():
            return "bounds"
        return "groups" if runs <= cls.GROUPS_MAX_RUNS else "full"

    @classmethod
    def path_before_bounds(cls, runs: int) -> str:
        """The path ``"bounds"`` takes until its compiled loop starts (:meth:`bounds_start`)."""
        return "groups" if runs <= cls.GROUPS_MAX_RUNS else "full"

    @classmethod
    def bounds_start(cls, n_items: int, runs: int) -> int:
        """The step from which the ``"bounds"`` path runs compiled.

        Importing numba and loading the compiled loop costs about
        ``NUMBA_START`` seconds of CPU once per process. Before it, the path
        runs :meth:`path_before_bounds`, which costs about ``GROUPS_RUN * runs``
        (groups) or ``FULL_STEP + FULL_CELL * runs * n_items`` (full) seconds
        per step more than the compiled loop. Starting once that excess adds
        up to the start's cost (ski rental) keeps a short run from paying it
        and a long one within about twice the cheaper of the two.
        """
        if cls.path_before_bounds(runs) == "groups":
            saving = cls.GROUPS_RUN * runs
        else:
            saving = cls.FULL_STEP + cls.FULL_CELL * runs * n_items
        return max(3, int(cls.NUMBA_START / saving))

    @property
    def solves(self) -> int:
        """Exact index solves so far outside the window refreshes, over all runs."""
        return sum(g.solves for g in self._groups or ()) + self._bound_solves

    @property
    def refresh_solves(self) -> int:
        """Pair indices solved by the window refreshes so far, over all runs."""
        return sum(g.refresh_solves for g in self._groups or ())

    def scores(self, t, items=None):
        rate = klucb_rate(t)
        if items is not None:
            return klucb_index(self.mean[:, items], self.pulls[:, items], rate)
        return klucb_index(self.mean, self.pulls, rate)

    def select(self, t, items=None):
        rate = klucb_rate(t)
        path = self.path
        if path == "bounds":
            if t >= self.bounds_from and rate > 0 and items is None:
                self._groups = None   # update() stops moving items between groups
                return self._select_bounds(rate)
            path = self.path_before_bounds(self.runs)
        if items is not None or path == "full" or rate <= 0:
            return super().select(t, items)
        if self._groups is None:
            self._groups = [_KLUCBGroups([int(v) for v in self.wins[r].tolist()],
                                         [int(v) for v in self.pulls[r].tolist()])
                            for r in range(self.runs)]
        if t > self._window_end:
            self._window_end = int(t * self.WINDOW) + 1
            rate_end = klucb_rate(self._window_end)
            for g in self._groups:
                g.refresh(rate, rate_end)
        if self.runs == 1:
            return np.array([self._groups[0].select(rate, self.k)], dtype=np.intp)
        return np.array([g.select(rate, self.k) for g in self._groups], dtype=np.intp)

    def _select_bounds(self, rate: float) -> np.ndarray:
        """The lists by :func:`ulr.bandits.klucb_jit.select_lists` (compiled, all runs)."""
        from ulr.bandits.klucb_jit import select_lists

        if self._bounds is None:
            self._bounds = (np.empty((4, self.runs, self.n_items)),
                            np.empty((self.runs, self.k), dtype=np.intp),
                            np.empty(self.n_items, dtype=np.intp),
                            np.empty(self.n_items), np.empty(self.n_items), [math.inf])
        st, out, cand, lo, hi, last = self._bounds
        if rate < last[0]:   # first call, or t went back: the lower bounds do not hold
            st[3] = -1.0     # pulls no item has: every item is solved afresh
        last[0] = rate
        self._bound_solves += select_lists(self.wins, self.pulls, rate, st, out, cand, lo, hi)
        return out.copy()

    def update(self, lists, observed, clicks):
        groups = self._groups
        if self.runs > 1 or groups is None:
            super().update(lists, observed, clicks)
            if groups is None:
                return
            for g, items, obs, clk in zip(groups, lists.tolist(), observed.tolist(),
                                          clicks.tolist()):
                for e, o, c in zip(items, obs, clk):
                    if o:
                        g.move(e, c)
            return
        # one run: the few observed items in plain floats, counts from the groups
        move, (pulls, wins, mean, isq) = groups[0].move, self._stat_rows
        sqrt = math.sqrt
        for e, o, c in zip(lists.tolist()[0], observed.tolist()[0], clicks.tolist()[0]):
            if o:
                w, n = move(e, c)
                pulls[e], wins[e], mean[e], isq[e] = n, w, w / n, 1.0 / sqrt(n)


def _has_numba() -> bool:
    """Whether numba can be imported (checked without importing it)."""
    import importlib.util
    return importlib.util.find_spec("numba") is not None


class CascadeTS(Policy):
    """CascadeTS: Beta(alpha, beta) posterior per item, one sample per item per step.

    Prior Beta(1, 1); an observed item adds 1 to ``alpha`` if it was clicked and
    to ``beta`` if it was examined and skipped.
    """

    name = "cascade-ts"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.alpha = np.ones((self.runs, self.n_items))
        self.beta = np.ones((self.runs, self.n_items))
        self._af, self._bf = self.alpha.reshape(-1), self.beta.reshape(-1)

    def scores(self, t, items=None):
        if items is not None:
            return self.rng.beta(self.alpha[:, items], self.beta[:, items])
        return self.rng.beta(self.alpha, self.beta)

    def update(self, lists, observed, clicks):
        idx = (lists + self._offsets)[observed]
        c = clicks[observed]
        self._af[idx] += c
        self._bf[idx] += ~c


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


# --------------------------------------------------------------------------- linear
class _LinearPolicy(Policy):
    """Shared statistics of CascadeLinUCB / CascadeLinTS (Zong et al. 2016).

    ``M = I_d + sigma^-2 sum x x'`` over observed items (only its inverse is
    stored, shape (R, d, d)) and ``B = sum x * click``; ``theta_bar = sigma^-2 M^-1 B``.
    """

    default_sigma = 1.0

    def __init__(self, *, features, sigma: float | None = None, **kw):
        super().__init__(**kw)
        x = np.ascontiguousarray(features, dtype=np.float64)
        if x.ndim != 2 or x.shape[0] != self.n_items:
            raise UlrError("Linear bandits need one feature row per item.")
        sigma = self.default_sigma if sigma is None else sigma
        if not sigma > 0:
            raise UlrError(f"sigma must be positive, got {sigma}.")
        self.x = x
        self._xt = np.ascontiguousarray(x.T)
        self.d = x.shape[1]
        self.sigma = float(sigma)
        self._scale = self.sigma ** -2
        self.m_inv = np.broadcast_to(np.eye(self.d), (self.runs, self.d, self.d)).copy()
        self.b = np.zeros((self.runs, self.d))
        self._buf = np.empty((self.runs, self.n_items))

    def theta_bar(self) -> np.ndarray:
        """Posterior mean ``sigma^-2 M^-1 B``, shape (R, d)."""
        return np.matmul(self.m_inv, self.b[:, :, None])[:, :, 0] * self._scale

    def update(self, lists, observed, clicks):
        if self.runs == 1:
            return self._update_one(lists[0], observed[0], clicks[0])
        # several runs: the rank-1 updates of the observed items of a step, applied
        # together (identical result, one small solve instead of K rounds)
        depth = int(observed.sum(axis=1).max())   # observations are a prefix of the list
        xs = self.x[lists[:, :depth]]              # (R, depth, d)
        sequential_rank1_update(self.m_inv, xs, scale=self._scale, mask=observed[:, :depth])
        self.b += np.matmul(clicks[:, None, :depth].astype(np.float64), xs)[:, 0, :]

    def _update_one(self, items, observed, clicks):
        """One run: a Sherman-Morrison rank-1 update per observed item, on 2-d arrays."""
        m_inv, b, sigma2 = self.m_inv[0], self.b[0], self.sigma ** 2
        for j in range(items.shape[0]):
            if not observed[j]:
                break                                   # observations are a prefix
            x = self.x[items[j]]
            u = m_inv @ x                               # M^-1 x
            m_inv -= np.multiply.outer(u / (sigma2 + float(x @ u)), u)
            if clicks[j]:
                b += x


class CascadeLinUCB(_LinearPolicy):
    """CascadeLinUCB: ``x_e' theta_bar + c sqrt(x_e' M^-1 x_e)``.

    Zong et al. cap the index at 1; the cap only creates ties and is left out.
    Their theory uses ``c = sigma^-1 sqrt(d log(1 + nK / (d sigma^2)) + 2 log(nK))
    + ||theta*||``; the default ``c = 1`` is the usual practical choice.
    """

    name = "cascade-linucb"

    def __init__(self, *, c: float = 1.0, **kw):
        super().__init__(**kw)
        if not c >= 0:
            raise UlrError(f"The exploration constant c must be >= 0, got {c}.")
        self.c = float(c)

    def scores(self, t, items=None):
        x = self.x if items is None else self.x[items]
        mean = self.theta_bar() @ (self._xt if items is None else x.T)
        xm = np.matmul(x, self.m_inv)                       # (R, n, d)
        width = np.einsum("rnd,nd->rn", xm, x)
        np.maximum(width, 0.0, out=width)
        return mean + self.c * np.sqrt(width)


class CascadeLinTS(_LinearPolicy):
    """CascadeLinTS: one ``theta ~ N(theta_bar, M^-1)`` per run and step.

    The sample is ``theta_bar + chol(M^-1) z`` with ``z ~ N(0, I_d)``; the items
    are then ranked by ``x_e' theta``, an (R, d) x (d, L) product.
    """

    name = "cascade-lints"
    default_sigma = 0.5  # clicks are Bernoulli, hence 1/2-sub-Gaussian

    def sample_theta(self) -> np.ndarray:
        """One draw ``theta ~ N(theta_bar, M^-1)`` per run, shape (R, d)."""
        if self.runs == 1:    # LAPACK potrf directly: a quarter of np.linalg's overhead
            chol, info = dpotrf(self.m_inv[0], lower=1, clean=1)
            chol = chol[None] if info == 0 else self._robust_sqrt()
        else:
            try:
                chol = np.linalg.cholesky(self.m_inv)
            except np.linalg.LinAlgError:
                chol = self._robust_sqrt()
        z = self.rng.standard_normal((self.runs, self.d, 1))
        v = np.matmul(self.m_inv, self.b[:, :, None])
        v *= self._scale
        v += np.matmul(chol, z)
        return v[:, :, 0]

    def _robust_sqrt(self) -> np.ndarray:
        """A square root of ``M^-1`` when rounding broke positive definiteness."""
        self.m_inv = 0.5 * (self.m_inv + self.m_inv.transpose(0, 2, 1))
        vals, vecs = np.linalg.eigh(self.m_inv)
        return vecs * np.sqrt(np.maximum(vals, 0.0))[:, None, :]

    def scores(self, t, items=None):
        theta = self.sample_theta()
        if items is not None:
            return theta @ self._xt[:, items]
        return np.matmul(theta, self._xt, out=self._buf)


# --------------------------------------------------------------------------- factory
_CLASSES = {c.name: c for c in (RankedUCB1, RankedTS, CascadeUCB1, CascadeKLUCB, CascadeTS,
                                CascadeLinUCB, CascadeLinTS)}


def make_policy(name: str, *, n_items: int, k: int, runs: int = 1, seed=None,
                features: np.ndarray | None = None, **options) -> Policy:
    """Build the policy ``name`` (one of :data:`ALGORITHMS`).

    The linear algorithms use ``features``; without features they fall back to
    one-hot item vectors (``d = L``, then CascadeLinTS is Gaussian Thompson
    sampling per item) for at most :data:`MAX_ONE_HOT_ITEMS` items.
    ``options`` are passed on (``sigma`` for the linear algorithms, ``c`` for
    CascadeLinUCB).
    """
    if name not in _CLASSES:
        raise UlrError(f"Unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}.")
    cls = _CLASSES[name]
    kw = dict(n_items=n_items, k=k, runs=runs, seed=seed)
    if name in LINEAR_ALGORITHMS:
        if features is None:
            if n_items > MAX_ONE_HOT_ITEMS:
                raise UlrError(f"{name} needs item features; this environment has none and "
                               f"more than {MAX_ONE_HOT_ITEMS} items for one-hot features. "
                               "Use the linear environment or a log with feature_* columns.")
            features = np.eye(n_items)
        kw["features"] = features
    elif options:
        raise UlrError(f"{name} takes no options, got {', '.join(options)}.")
    return cls(**kw, **options)
