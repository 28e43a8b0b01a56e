"""Ranking metrics: ARP, DCG, nDCG@k, AUC, partial AUC and local AUC.

Every metric takes graded ``relevance`` labels and ranker ``scores`` for one flat
list, or for a whole ranked log when ``query_ids`` is given. Per query, documents
are ranked by descending score; ranks are 1-based. Tied scores are averaged, not
ordered: ARP, DCG and nDCG score the documents of a tie by their expectation over a
uniformly random order of the tie (McSherry & Najork 2008; what sklearn's
``dcg_score``/``ndcg_score`` do), and the AUC family counts a tied pair as 1/2, so
no metric depends on the order of the input rows. A document is *relevant* when
its relevance is > 0.

Each function returns a :class:`MetricResult` with the aggregate ``value`` and the
per-query values (``per_query``) with the weights that make up the aggregate, so
that confidence intervals and paired tests can resample queries
(:func:`bootstrap_ci`, :func:`paired_test`).

All computations are vectorized over queries with group offsets: one sort of the
log (within-row sort of a padded matrix when queries are contiguous), then
``np.add.reduceat`` / cumulative sums. There is no per-query Python loop.

References
----------
Joachims, Swaminathan, Schnabel. "Unbiased Learning-to-Rank with Biased Feedback".
WSDM 2017 (ARP, DCG in the 1/rank form).
Jarvelin, Kekalainen. "Cumulated gain-based evaluation of IR techniques". TOIS 2002.
Burges et al. "Learning to rank using gradient descent". ICML 2005 (the 2^rel - 1 gain).
McSherry, Najork. "Computing information retrieval performance measures efficiently
in the presence of tied scores". ECIR 2008.
Hanley, McNeil. "The meaning and use of the area under a ROC curve". Radiology 1982.
McClish. "Analyzing a portion of the ROC curve". Medical Decision Making 1989.
Clemencon, Vayatis. "Ranking the best instances". JMLR 8, 2007.
Smucker, Allan, Carterette. "A comparison of statistical significance tests for
information retrieval evaluation". CIKM 2007 (randomization test).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ulr.errors import UlrError

__all__ = [
    "MetricResult",
    "PairedTest",
    "arp",
    "dcg",
    "ndcg",
    "auc",
    "partial_auc",
    "local_auc",
    "evaluate",
    "bootstrap_ci",
    "paired_test",
    "DEFAULT_MAX_FPR",
    "DEFAULT_U",
]

# Defaults of the partial AUC range and the local AUC top fraction, one value for
# the whole project. Click logs have about 10 documents per query and the metrics
# are computed per query: 0.3 covers about the first three results (the first
# screen), while at 0.1 a per-query ROC curve over ~5 non-relevant documents
# degenerates to "relevant documents above the first non-relevant one".
DEFAULT_MAX_FPR = 0.3
DEFAULT_U = 0.3


# ---------------------------------------------------------------------------
# Result containers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricResult:
    """A metric's aggregate and its per-query decomposition.

    The aggregate is the weighted mean of the defined per-query values,
    ``value = sum_q w_q v_q / sum_q w_q``. For ARP the weight of a query is its
    total relevance (ARP is a ratio over the whole log); for the other metrics it
    is 1 for every query where the metric is defined. Undefined queries (no
    relevant document for nDCG and ARP, a single class for the AUC-type metrics)
    have ``per_query`` NaN and weight 0; they are counted in ``n_excluded``.

    Attributes
    ----------
    name : str
        Metric name, e.g. ``"auc"`` or ``"ndcg@10"``.
    value : float
        The aggregate.
    per_query : pandas.Series
        Per-query values (float, NaN where undefined), indexed by query id in
        order of first appearance. A flat list is the single query ``0``.
    weight : pandas.Series
        Per-query weights of the aggregate, same index.
    """

    name: str
    value: float
    per_query: pd.Series
    weight: pd.Series

    def __post_init__(self):
        if len(self.per_query) != len(self.weight):
            raise ValueError("per_query and weight must have the same length")
        if not self.per_query.index.equals(self.weight.index):
            raise ValueError("per_query and weight must share their index")

    @property
    def n_queries(self) -> int:
        """Number of queries (defined or not)."""
        return len(self.per_query)

    @property
    def n_excluded(self) -> int:
        """Number of queries where the metric is undefined."""
        return int(self.per_query.isna().sum())

    def __float__(self) -> float:
        return float(self.value)


@dataclass(frozen=True)
class PairedTest:
    """Paired comparison of two rankers on the same queries (``b - a``).

    Attributes
    ----------
    metric : str
    a, b : float
        Aggregates of the two systems on the common defined queries.
    delta : float
        ``b - a``.
    lower, upper : float
        Paired percentile-bootstrap confidence interval of ``delta``.
    p_value : float
        Two-sided paired randomization (sign-flip) test of ``delta == 0``.
    n_queries : int
        Number of queries both systems are defined on.
    """

    metric: str
    a: float
    b: float
    delta: float
    lower: float
    upper: float
    p_value: float
    n_queries: int

    def __post_init__(self):
        if not 0.0 <= self.p_value <= 1.0:
            raise ValueError("p_value must be in [0, 1]")


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


# ---------------------------------------------------------------------------
# Metrics (public functions build the sorted view, private ones reuse it)
# ---------------------------------------------------------------------------


def _arp(r: _Ranked) -> MetricResult:
    ranks = np.arange(int(r.counts.max()) + 1, dtype=np.float64)
    num = r.tie_averaged(np.cumsum(ranks))  # a tie at ranks a..b: expected rank (a + b) / 2
    den = r.gsum(r.rel)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_query = np.where(den > 0, num / den, np.nan)
    return r.result("arp", per_query, den, flat_error=(
        "ARP is undefined: there is no relevant document (relevance > 0)."))


def arp(relevance, scores, *, query_ids=None) -> MetricResult:
    """Average relevant position (lower is better).

    .. math::
        \\mathrm{ARP} = \\frac{\\sum_q \\sum_{d \\in q} rel_d \\, rank_q(d)}
                             {\\sum_q \\sum_{d \\in q} rel_d}

    The aggregate is a ratio over the whole log, i.e. the mean of the per-query
    ARPs weighted by each query's total relevance. Queries without a relevant
    document are undefined (NaN, weight 0). A document in a tie of scores at
    ranks a..b counts at its expected rank (a + b) / 2 (McSherry & Najork 2008).

    Parameters
    ----------
    relevance : array-like of shape (n,)
        Graded relevance labels, finite and >= 0.
    scores : array-like of shape (n,)
        Ranker scores (higher ranks first); NaN is refused.
    query_ids : array-like of shape (n,), optional
        Query of every row; without it the rows are one list.

    Returns
    -------
    MetricResult

    References
    ----------
    Joachims, Swaminathan, Schnabel. "Unbiased Learning-to-Rank with Biased
    Feedback". WSDM 2017, Section 4.
    """
    return _arp(_Ranked(relevance, scores, query_ids))


def _dcg(r: _Ranked) -> MetricResult:
    inv = np.zeros(int(r.counts.max()) + 1)
    inv[1:] = 1.0 / np.arange(1, inv.size)
    per_query = r.tie_averaged(np.cumsum(inv))
    return r.result("dcg", per_query, np.ones(r.n_groups), flat_error="DCG is undefined.")


def dcg(relevance, scores, *, query_ids=None) -> MetricResult:
    """Discounted cumulative gain in the 1/rank form (higher is better).

    .. math::
        \\mathrm{DCG}_q = \\sum_{d \\in q} \\frac{rel_d}{rank_q(d)}, \\qquad
        \\mathrm{DCG} = \\frac{1}{|Q|} \\sum_q \\mathrm{DCG}_q

    averaged over all queries (a query without relevant documents scores 0). A
    document in a tie of scores gets the mean of 1/rank over the tie's ranks, its
    expectation over a random order of the tie (McSherry & Najork 2008).

    Parameters
    ----------
    relevance, scores, query_ids
        As in :func:`arp`.

    Returns
    -------
    MetricResult

    References
    ----------
    Joachims, Swaminathan, Schnabel. "Unbiased Learning-to-Rank with Biased
    Feedback". WSDM 2017 (the 1/rank DCG used with propensity SVM-Rank).
    McSherry, Najork. "Computing information retrieval performance measures
    efficiently in the presence of tied scores". ECIR 2008.
    """
    return _dcg(_Ranked(relevance, scores, query_ids))


def _check_k(k) -> tuple[int | None, str]:
    if k is None:
        return None, "ndcg"
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise UlrError(f"k must be a whole number >= 1, got {k!r}.")
    return int(k), f"ndcg@{int(k)}"


def _ndcg(r: _Ranked, k) -> MetricResult:
    k, name = _check_k(k)
    if k is None:
        k = int(r.counts.max())
    gain = np.exp2(r.rel) - 1.0
    disc_at = np.zeros(int(r.counts.max()) + 1)  # discount of rank 0..max, 0 beyond k
    top = np.arange(1, min(k, disc_at.size - 1) + 1)
    disc_at[top] = 1.0 / np.log2(1.0 + top)
    actual = r.tie_averaged(np.cumsum(disc_at), gain)
    # ideal: gains sorted descending within each query (values only; ties in gain are harmless)
    ideal = r.gsum(-_sorted_within(-gain, r.starts, r.counts) * disc_at[r.rank])
    with np.errstate(invalid="ignore", divide="ignore"):
        per_query = np.where(ideal > 0, actual / ideal, np.nan)
    return r.result(name, per_query, np.ones(r.n_groups), flat_error=(
        "nDCG is undefined: there is no relevant document (relevance > 0)."))


def ndcg(relevance, scores, *, query_ids=None, k: int | None = 10) -> MetricResult:
    """Normalized discounted cumulative gain at cut-off ``k``.

    .. math::
        \\mathrm{DCG@k}_q = \\sum_{d \\in q,\\ rank_q(d) \\le k}
            \\frac{2^{rel_d} - 1}{\\log_2(1 + rank_q(d))}, \\qquad
        \\mathrm{nDCG@k}_q = \\frac{\\mathrm{DCG@k}_q}{\\mathrm{IDCG@k}_q}

    where IDCG is the DCG of the relevance-sorted list. A tie of scores at ranks
    a..b gives each of its documents the mean discount over those ranks (0 beyond
    ``k``), its expectation over a random order of the tie (McSherry & Najork
    2008); this equals ``sklearn.metrics.ndcg_score([2**rel - 1], [scores], k=k)``
    per query. The aggregate averages over queries with at least one relevant
    document; the others are NaN.

    Parameters
    ----------
    relevance, scores, query_ids
        As in :func:`arp`.
    k : int or None, default 10
        Cut-off; ``None`` uses the whole list.

    Returns
    -------
    MetricResult
        Named ``"ndcg@k"`` (``"ndcg"`` without a cut-off).

    References
    ----------
    Jarvelin, Kekalainen. "Cumulated gain-based evaluation of IR techniques".
    ACM TOIS 20(4), 2002 (discounted cumulative gain).
    Burges, Shaked, Renshaw, Lazier, Deeds, Hamilton, Hullender. "Learning to
    rank using gradient descent". ICML 2005 (the exponential gain 2^rel - 1).
    McSherry, Najork. "Computing information retrieval performance measures
    efficiently in the presence of tied scores". ECIR 2008.
    """
    return _ndcg(_Ranked(relevance, scores, query_ids), k)


def _auc(r: _Ranked, query_ids) -> MetricResult:
    b = r.blocks()
    pairs = b["n_pos"] * b["n_neg"]
    correct = np.bincount(b["bgroup"], weights=r.correct_pairs(), minlength=r.n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_query = np.where(pairs > 0, correct / pairs, np.nan)
    return r.result("auc", per_query, np.ones(r.n_groups),
                    flat_error=_one_class_error("AUC", query_ids))


def auc(relevance, scores, *, query_ids=None) -> MetricResult:
    """Area under the ROC curve (fraction of correctly ordered pairs).

    .. math::
        \\mathrm{AUC}_q = \\frac{1}{n_+ n_-} \\sum_{i: rel_i > 0} \\sum_{j: rel_j = 0}
            \\left( [s_i > s_j] + \\tfrac12 [s_i = s_j] \\right)

    equal to ``sklearn.metrics.roc_auc_score(relevance > 0, scores)``. For a
    ranked log it is averaged over the queries with both classes; one-class
    queries are NaN and counted in ``n_excluded``. A flat list with one class
    raises :class:`~ulr.errors.UlrError` (AUC is undefined there, not 0.5).

    Parameters
    ----------
    relevance, scores, query_ids
        As in :func:`arp`.

    Returns
    -------
    MetricResult

    References
    ----------
    Hanley, McNeil. "The meaning and use of the area under a receiver operating
    characteristic (ROC) curve". Radiology 143, 1982.
    """
    return _auc(_Ranked(relevance, scores, query_ids), query_ids)


def _partial_auc_raw(r: _Ranked, max_fpr: float) -> tuple[np.ndarray, np.ndarray]:
    """Raw partial area per query and the number of pairs per query."""
    b = r.blocks()
    bgroup = b["bgroup"]
    e_neg, e_pos = b["e_neg"], b["e_pos"]
    gstart = r.starts[:-1]
    # ROC in counts: x = false positives, y = true positives, one segment per tie block;
    # only blocks starting left of max_fpr contribute
    x0 = e_neg[b["bstart"]] - e_neg[gstart][bgroup]
    xm = max_fpr * b["n_neg"]
    keep = np.flatnonzero(x0 < xm[bgroup])
    bgroup = bgroup[keep]
    bstart, bend = b["bstart"][keep], b["bend"][keep]
    x0 = x0[keep].astype(np.float64)
    x1 = x0 + (e_neg[bend] - e_neg[bstart])
    y0 = (e_pos[bstart] - e_pos[gstart][bgroup]).astype(np.float64)
    y1 = y0 + (e_pos[bend] - e_pos[bstart])
    xm = xm[bgroup]
    cx1 = np.minimum(x1, xm)
    dx = x1 - x0  # > 0 unless the block has no negative (then cx1 == x0: no area)
    with np.errstate(invalid="ignore", divide="ignore"):
        y_at = np.where(dx > 0, y0 + (y1 - y0) * (cx1 - x0) / dx, y0)
    area = (cx1 - x0) * (y0 + y_at) * 0.5
    area_counts = np.bincount(bgroup, weights=area, minlength=r.n_groups)
    pairs = (b["n_pos"] * b["n_neg"]).astype(np.float64)
    return area_counts, pairs


def _partial_auc(r: _Ranked, max_fpr, standardized: bool, query_ids) -> MetricResult:
    max_fpr = _check_fraction(max_fpr, "max_fpr")
    area_counts, pairs = _partial_auc_raw(r, max_fpr)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(pairs > 0, area_counts / pairs, np.nan)
    if standardized:
        min_area = 0.5 * max_fpr ** 2
        per_query = 0.5 * (1.0 + (raw - min_area) / (max_fpr - min_area))
    else:
        per_query = raw
    return r.result("pauc", per_query, np.ones(r.n_groups),
                    flat_error=_one_class_error("Partial AUC", query_ids))


def partial_auc(relevance, scores, *, max_fpr: float, query_ids=None,
                standardized: bool = False) -> MetricResult:
    """Partial area under the ROC curve for FPR in ``[0, max_fpr]``.

    .. math::
        \\mathrm{pAUC}_q(m) = \\int_0^{m} \\mathrm{TPR}_q(\\mathrm{FPR})\\, d\\mathrm{FPR}

    with the ROC curve's tie segments drawn as straight lines and linear
    interpolation at ``max_fpr``; the raw value lies in ``[0, max_fpr]``. With
    ``standardized=True`` McClish's standardization

    .. math::
        \\frac12 \\left(1 + \\frac{\\mathrm{pAUC} - m^2/2}{m - m^2/2}\\right)

    maps a random ranker to 0.5 and a perfect one to 1; it equals
    ``sklearn.metrics.roc_auc_score(..., max_fpr=m)``. One-class queries are
    handled as in :func:`auc`.

    Parameters
    ----------
    relevance, scores, query_ids
        As in :func:`arp`.
    max_fpr : float in (0, 1]
        Upper end of the false positive rate range.
    standardized : bool, default False
        Return McClish's standardized value instead of the raw area.

    Returns
    -------
    MetricResult
        Named ``"pauc"``.

    References
    ----------
    McClish. "Analyzing a portion of the ROC curve". Medical Decision Making
    9(3), 1989.
    """
    return _partial_auc(_Ranked(relevance, scores, query_ids), max_fpr, standardized, query_ids)


def _local_auc(r: _Ranked, u, query_ids) -> MetricResult:
    u = _check_fraction(u, "u")
    b = r.blocks()
    # size of the top set: ceil(u * n_q); round first so 0.3 * 10 is 3, not 4
    top = np.ceil(np.round(u * r.counts, 9)).astype(np.int64)
    top = np.clip(top, 1, r.counts)
    threshold = r.s[r.starts[:-1] + top - 1]
    # the top set is a union of whole tie blocks
    in_top = r.s[b["bstart"]] >= threshold[b["bgroup"]]
    correct = np.bincount(b["bgroup"], weights=np.where(in_top, r.correct_pairs(), 0.0),
                          minlength=r.n_groups)
    pairs = b["n_pos"] * b["n_neg"]
    with np.errstate(invalid="ignore", divide="ignore"):
        per_query = np.where(pairs > 0, correct / pairs, np.nan)
    return r.result("local_auc", per_query, np.ones(r.n_groups),
                    flat_error=_one_class_error("Local AUC", query_ids))


def local_auc(relevance, scores, *, u: float, query_ids=None) -> MetricResult:
    """Local AUC of Clemencon & Vayatis: AUC restricted to the top of the list.

    Let :math:`t` be the ``ceil(u * n)``-th highest score of the list and
    :math:`T = \\{i : s_i \\ge t\\}` (the top set, with all its ties). Then

    .. math::
        \\mathrm{LocAUC}(s, u) = \\frac{1}{n_+ n_-} \\sum_{i \\in T,\\ rel_i > 0}
            \\sum_{j: rel_j = 0} \\left([s_i > s_j] + \\tfrac12 [s_i = s_j]\\right)
        = \\mathrm{PartAUC}(s, \\alpha) + \\beta (1 - \\alpha)

    where :math:`\\alpha` and :math:`\\beta` are the false and true positive rates
    of ``T`` and PartAUC is the raw partial area up to FPR :math:`\\alpha`. For a
    ranked log ``n`` is each query's list length; one-class queries are handled
    as in :func:`auc`.

    Parameters
    ----------
    relevance, scores, query_ids
        As in :func:`arp`.
    u : float in (0, 1]
        Fraction of the list that counts as "the best instances".

    Returns
    -------
    MetricResult
        Named ``"local_auc"``.

    References
    ----------
    Clemencon, Vayatis. "Ranking the best instances". Journal of Machine
    Learning Research 8, 2007.
    """
    return _local_auc(_Ranked(relevance, scores, query_ids), u, query_ids)


def evaluate(relevance, scores, *, query_ids=None, k: int = 10,
             max_fpr: float = DEFAULT_MAX_FPR, u: float = DEFAULT_U,
             standardized: bool = False) -> dict[str, MetricResult]:
    """All six metrics from a single sort of the log.

    Returns a dict with keys ``arp``, ``dcg``, ``ndcg@k``, ``auc``, ``pauc`` and
    ``local_auc``. A metric that is undefined on the whole input (no relevant
    document, or no query with both classes) is left out rather than invented.

    Parameters
    ----------
    relevance, scores, query_ids
        As in :func:`arp`.
    k : int, default 10
        nDCG cut-off.
    max_fpr : float, default DEFAULT_MAX_FPR (0.3)
        Partial AUC range (see :func:`partial_auc`).
    u : float, default DEFAULT_U (0.3)
        Local AUC top fraction (see :func:`local_auc`).
    standardized : bool, default False
        McClish-standardized partial AUC.
    """
    max_fpr = _check_fraction(max_fpr, "max_fpr")
    u = _check_fraction(u, "u")
    _check_k(k)
    r = _Ranked(relevance, scores, query_ids)
    out: dict[str, MetricResult] = {}
    makers = [
        lambda: _arp(r),
        lambda: _dcg(r),
        lambda: _ndcg(r, k),
        lambda: _auc(r, query_ids),
        lambda: _partial_auc(r, max_fpr, standardized, query_ids),
        lambda: _local_auc(r, u, query_ids),
    ]
    for make in makers:
        try:
            res = make()
        except UlrError:  # undefined on this input (options were checked above)
            continue
        out[res.name] = res
    return out


# ---------------------------------------------------------------------------
# Resampling: bootstrap confidence intervals and paired tests over queries
# ---------------------------------------------------------------------------


def _weighted_means(v: np.ndarray, w: np.ndarray, n_bootstrap: int, rng) -> np.ndarray:
    """Weighted means of ``n_bootstrap`` query resamples (drawn with replacement)."""
    m = v.size
    out = np.empty(n_bootstrap)
    chunk = max(1, int(5_000_000 // max(m, 1)))
    wv = w * v
    for lo in range(0, n_bootstrap, chunk):  # chunks bound the memory, not a data loop
        hi = min(n_bootstrap, lo + chunk)
        idx = rng.integers(0, m, size=(hi - lo, m))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[lo:hi] = wv[idx].sum(axis=1) / w[idx].sum(axis=1)
    return out


def _check_bootstrap(n_bootstrap, level):
    if (isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, (int, np.integer))
            or n_bootstrap < 1):
        raise UlrError(f"n_bootstrap must be a whole number >= 1, got {n_bootstrap!r}.")
    if not 0.0 < float(level) < 1.0:
        raise UlrError(f"level must be in (0, 1), got {level!r}.")


def bootstrap_ci(result: MetricResult, *, n_bootstrap: int = 1000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of a metric over queries.

    Queries (with their weights) are resampled with replacement and the
    aggregate ``sum w v / sum w`` is recomputed; the interval is the
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles (Efron & Tibshirani 1993).
    Undefined queries are dropped first.
    """
    _check_bootstrap(n_bootstrap, level)
    v = result.per_query.to_numpy(dtype=np.float64)
    w = result.weight.to_numpy(dtype=np.float64)
    ok = ~np.isnan(v) & (w > 0)
    if not ok.any():
        raise UlrError(f"{result.name} has no defined query to resample.")
    stats = _weighted_means(v[ok], w[ok], n_bootstrap, np.random.default_rng(seed))
    a = (1.0 - level) / 2.0
    lo, hi = np.nanquantile(stats, [a, 1.0 - a])
    return float(lo), float(hi)


def paired_test(a: MetricResult, b: MetricResult, *, n_bootstrap: int = 2000,
                level: float = 0.95, seed: int = 0) -> PairedTest:
    """Paired comparison ``b - a`` of two rankers evaluated on the same queries.

    On the queries where both are defined, with weights ``w_q`` (ARP: the
    query's total relevance, identical for both rankers; else 1):

    - ``delta = sum_q w_q (b_q - a_q) / sum_q w_q``;
    - a paired percentile-bootstrap interval: queries are resampled jointly;
    - a two-sided randomization (sign-flip) test: under the null each
      per-query difference is as likely to have the opposite sign;
      ``p = (1 + #{|delta*| >= |delta|}) / (1 + n_bootstrap)``
      (Smucker, Allan & Carterette, CIKM 2007).
    """
    _check_bootstrap(n_bootstrap, level)
    if a.name != b.name:
        raise UlrError(f"Cannot pair different metrics ({a.name} and {b.name}).")
    joined = pd.concat(
        [a.per_query.rename("a"), b.per_query.rename("b"), a.weight.rename("w")],
        axis=1, join="inner",
    ).dropna()
    joined = joined[joined["w"] > 0]
    if joined.empty:
        raise UlrError(f"{a.name}: the two rankers share no query where it is defined.")
    va = joined["a"].to_numpy()
    vb = joined["b"].to_numpy()
    w = joined["w"].to_numpy()
    wsum = w.sum()
    d = vb - va
    delta = float(np.dot(w, d) / wsum)
    rng = np.random.default_rng(seed)
    boot = _weighted_means(d, w, n_bootstrap, rng)
    q = (1.0 - level) / 2.0
    lo, hi = np.nanquantile(boot, [q, 1.0 - q])
    # sign flips, chunked to bound memory
    m = d.size
    wd = w * d
    extreme = 0
    chunk = max(1, int(2_000_000 // m))
    for start in range(0, n_bootstrap, chunk):
        size = min(chunk, n_bootstrap - start)
        signs = rng.integers(0, 2, size=(size, m), dtype=np.int8) * 2 - 1
        flipped = np.abs(signs @ wd) / wsum
        extreme += int(np.sum(flipped >= abs(delta) - 1e-12 * max(1.0, abs(delta))))
    p = (1 + extreme) / (1 + n_bootstrap)
    return PairedTest(metric=a.name, a=float(np.dot(w, va) / wsum), b=float(np.dot(w, vb) / wsum),
                      delta=delta, lower=float(lo), upper=float(hi), p_value=float(p),
                      n_queries=int(m))
