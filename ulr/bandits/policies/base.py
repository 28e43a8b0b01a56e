"""The policy interface, its constants, top-K selection and cascade feedback."""

from __future__ import annotations

import numpy as np

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
