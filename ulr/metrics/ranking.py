"""ARP, DCG and nDCG@k (Joachims et al. 2017; Jarvelin & Kekalainen 2002; McSherry & Najork 2008)."""

from __future__ import annotations

import numpy as np

from ulr.errors import UlrError
from ulr.metrics._ranked import _Ranked, _sorted_within
from ulr.metrics.result import MetricResult


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
