"""Input validation and the shared sorted view (queries, descending score, tie blocks)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ulr.errors import UlrError
from ulr.metrics.result import MetricResult


# ---------------------------------------------------------------------------
# Input validation and the shared sorted view
# ---------------------------------------------------------------------------


def _as_1d_float(x, what: str) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise UlrError(f"The {what} must be numbers ({exc}).") from None
    if arr.ndim != 1:
        raise UlrError(f"The {what} must be a one-dimensional list, got shape {arr.shape}.")
    return arr


def _first_bad(mask: np.ndarray) -> str:
    idx = np.flatnonzero(mask)
    return f"{idx.size} value(s), first at index {int(idx[0])}"


class _Ranked:
    """Labels and scores sorted by (query, descending score); ties are tie blocks.

    ``starts`` holds ``n_groups + 1`` offsets of the contiguous queries in the
    sorted arrays; ``g`` the group number of every sorted element.
    """

    def __init__(self, relevance, scores, query_ids):
        rel = _as_1d_float(relevance, "relevance labels")
        s = _as_1d_float(scores, "scores")
        n = rel.size
        if s.size != n:
            raise UlrError(
                f"relevance and scores have different lengths ({n} and {s.size})."
            )
        if n == 0:
            raise UlrError("There is nothing to evaluate: the lists are empty.")
        if np.isnan(s).any():
            raise UlrError(f"The scores contain NaN ({_first_bad(np.isnan(s))}).")
        bad = ~np.isfinite(rel) | (rel < 0)
        if bad.any():
            raise UlrError(
                "Relevance labels must be finite numbers >= 0 "
                f"({_first_bad(bad)} are not)."
            )

        if query_ids is None:
            codes = np.zeros(n, dtype=np.int64)
            index = pd.Index([0], name="query_id")
        else:
            qids = query_ids.to_numpy() if isinstance(query_ids, pd.Series) else query_ids
            qids = np.asarray(qids)
            if qids.ndim != 1 or qids.size != n:
                raise UlrError(
                    f"query_ids has length {qids.size} but there are {n} scores."
                )
            codes, uniques = pd.factorize(qids, sort=False)
            if (codes < 0).any():
                raise UlrError(f"query_ids contain missing values ({_first_bad(codes < 0)}).")
            codes = codes.astype(np.int64, copy=False)
            index = pd.Index(uniques, name="query_id")

        n_groups = len(index)
        counts = np.bincount(codes, minlength=n_groups)
        starts = np.zeros(n_groups + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        contiguous = n_groups == 1 or bool(np.all(codes[1:] >= codes[:-1]))
        if contiguous:
            order = _stable_desc_within(-s, starts, counts)
        else:
            grouped = _stable_group_order(codes, n_groups)
            order = grouped[_stable_desc_within(-s[grouped], starts, counts)]
        self.n = n
        self.n_groups = n_groups
        self.index = index
        self.counts = counts
        self.starts = starts
        self.rel = rel[order]
        self.s = s[order]
        self.g = np.repeat(np.arange(n_groups, dtype=np.int64), counts)
        self.rank = np.arange(n, dtype=np.int64) - starts[self.g] + 1
        self._blocks = None
        self._ties = None

    # -- per-group helpers -------------------------------------------------
    def gsum(self, x: np.ndarray) -> np.ndarray:
        """Sum of ``x`` (sorted order) per query."""
        return np.add.reduceat(x, self.starts[:-1])

    def result(self, name, per_query, weight, *, flat_error: str) -> MetricResult:
        per_query = np.asarray(per_query, dtype=np.float64)
        weight = np.asarray(weight, dtype=np.float64)
        defined = ~np.isnan(per_query)
        weight = np.where(defined, weight, 0.0)
        wsum = weight.sum()
        if not defined.any() or wsum <= 0:
            raise UlrError(flat_error)
        # exactly rounded sums: the aggregate does not depend on the order of the queries
        value = math.fsum(weight[defined] * per_query[defined]) / math.fsum(weight[defined])
        return MetricResult(
            name=name,
            value=value,
            per_query=pd.Series(per_query, index=self.index, name=name),
            weight=pd.Series(weight, index=self.index, name="weight"),
        )

    # -- tie blocks and pair counts for the AUC family ---------------------
    def tie_blocks(self):
        """Tie blocks (equal score within a query): sorted ``bstart``, ``bend``, ``bgroup``."""
        if self._ties is not None:
            return self._ties
        n = self.n
        new = np.empty(n, dtype=bool)
        new[0] = True
        np.not_equal(self.s[1:], self.s[:-1], out=new[1:])
        new[self.starts[:-1]] = True
        bstart = np.flatnonzero(new)
        bend = np.empty_like(bstart)
        bend[:-1] = bstart[1:]
        bend[-1] = n
        self._ties = dict(bstart=bstart, bend=bend, bgroup=self.g[bstart])
        return self._ties

    def blocks(self):
        """Tie blocks and the pair-count ingredients of the AUC family."""
        if self._blocks is not None:
            return self._blocks
        n = self.n
        pos = self.rel > 0
        # E[i] = number of negatives (resp. positives) before sorted index i
        e_neg = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(~pos, out=e_neg[1:])
        e_pos = np.arange(n + 1, dtype=np.int64) - e_neg
        gstart = self.starts[:-1]
        gend = self.starts[1:]
        self._blocks = dict(
            self.tie_blocks(), pos=pos, e_neg=e_neg, e_pos=e_pos,
            n_pos=e_pos[gend] - e_pos[gstart], n_neg=e_neg[gend] - e_neg[gstart],
        )
        return self._blocks

    def tie_averaged(self, cum_discount: np.ndarray, gain: np.ndarray | None = None) -> np.ndarray:
        """Per query: sum over tie blocks of (block's gain sum) x (mean discount of its ranks).

        ``gain`` (sorted order) defaults to the relevance labels.

        ``cum_discount[r]`` is the discount summed over ranks 1..r (``cum_discount[0] = 0``),
        so a block at ranks a..b has mean discount
        ``(cum_discount[b] - cum_discount[a - 1]) / (b - a + 1)``: the expected discount
        of each of its documents when the tie is put in a uniformly random order
        (McSherry & Najork 2008). Summing relevance per block first makes the result
        independent of the order of the rows inside a tie.
        """
        b = self.tie_blocks()
        first = self.rank[b["bstart"]]
        size = b["bend"] - b["bstart"]
        last = first + size - 1
        mean_disc = (cum_discount[last] - cum_discount[first - 1]) / size
        gain_sum = np.add.reduceat(self.rel if gain is None else gain, b["bstart"])
        return np.bincount(b["bgroup"], weights=gain_sum * mean_disc, minlength=self.n_groups)

    def correct_pairs(self) -> np.ndarray:
        """Per tie block: sum over its positives of #negatives below + 1/2 #tied negatives."""
        b = self.blocks()
        bstart, bend = b["bstart"], b["bend"]
        e_neg, e_pos = b["e_neg"], b["e_pos"]
        gend = self.starts[1:][b["bgroup"]]
        below = e_neg[gend] - e_neg[bend]
        tied = e_neg[bend] - e_neg[bstart]
        return (e_pos[bend] - e_pos[bstart]) * (below + 0.5 * tied)


def _stable_group_order(codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Stable permutation that sorts the group codes (LSD radix sort, 16 bits a pass).

    numpy's stable argsort is a radix sort for 16-bit keys, which is several
    times faster than sorting int64 codes in one go.
    """
    order = None
    shift = 0
    while order is None or (n_groups - 1) >> shift:
        digit = ((codes if order is None else codes[order]) >> shift) & 0xFFFF
        step = np.argsort(digit.astype(np.uint16), kind="stable")
        order = step if order is None else order[step]
        shift += 16
    return order


def _stable_desc_within(key: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Permutation sorting ``key`` ascending (stable) within contiguous groups.

    Uses a row-wise sort of a padded (groups x max size) matrix when the padding
    is small, else ``np.lexsort``.
    """
    n = key.size
    n_groups = counts.size
    width = int(counts.max())
    if n_groups == 1:
        return np.argsort(key, kind="stable")
    if np.all(counts == width):
        rows = np.argsort(key.reshape(n_groups, width), axis=1, kind="stable")
        rows += starts[:-1, None]
        return rows.ravel()
    if n_groups * width <= 2 * n + 1024:
        g = np.repeat(np.arange(n_groups, dtype=np.int64), counts)
        col = np.arange(n, dtype=np.int64) - starts[g]
        mat = np.full((n_groups, width), np.inf)
        mat[g, col] = key
        # padding (+inf) sits after the real entries, so a stable sort keeps
        # real +inf keys ahead of it
        rows = np.argsort(mat, axis=1, kind="stable")
        keep = np.arange(width)[None, :] < counts[:, None]
        return (rows + starts[:-1, None])[keep]
    g = np.repeat(np.arange(n_groups, dtype=np.int64), counts)
    return np.lexsort((key, g))


def _sorted_within(key: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``key`` sorted ascending within contiguous groups (values only, no permutation)."""
    n_groups = counts.size
    width = int(counts.max())
    if np.all(counts == width):
        return np.sort(key.reshape(n_groups, width), axis=1).ravel()
    if n_groups * width <= 2 * key.size + 1024:
        g = np.repeat(np.arange(n_groups, dtype=np.int64), counts)
        mat = np.full((n_groups, width), np.inf)
        mat[g, np.arange(key.size, dtype=np.int64) - starts[g]] = key
        mat.sort(axis=1)
        return mat[np.arange(width)[None, :] < counts[:, None]]
    return key[_stable_desc_within(key, starts, counts)]


def _check_fraction(x, what: str) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        raise UlrError(f"{what} must be a number in (0, 1], got {x!r}.") from None
    if not 0.0 < x <= 1.0:
        raise UlrError(f"{what} must be in (0, 1], got {x}.")
    return x


def _one_class_error(name: str, query_ids) -> str:
    if query_ids is None:
        return (
            f"{name} is undefined for this list: it needs at least one relevant "
            "(relevance > 0) and one non-relevant document."
        )
    return (
        f"{name} is undefined for this log: no query has both a relevant "
        "(relevance > 0) and a non-relevant document."
    )
