"""The KL-UCB index of Kveton et al. (2015): vectorized and scalar Newton solvers, and the
per-run grouped bound structure that lets CascadeKL-UCB solve only the indices that matter."""

from __future__ import annotations

import bisect
import heapq
import math

import numpy as np
from scipy.special import xlogy

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
