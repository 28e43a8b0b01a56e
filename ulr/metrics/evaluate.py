"""All six metrics from a single sort of the log."""

from __future__ import annotations

from ulr.errors import UlrError
from ulr.metrics._ranked import _Ranked, _check_fraction
from ulr.metrics.auc import _auc, _local_auc, _partial_auc
from ulr.metrics.ranking import _arp, _check_k, _dcg, _ndcg
from ulr.metrics.result import DEFAULT_MAX_FPR, DEFAULT_U, MetricResult


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
        As in :func:`~ulr.metrics.ranking.arp`.
    k : int, default 10
        nDCG cut-off.
    max_fpr : float, default DEFAULT_MAX_FPR (0.3)
        Partial AUC range (see :func:`~ulr.metrics.auc.partial_auc`).
    u : float, default DEFAULT_U (0.3)
        Local AUC top fraction (see :func:`~ulr.metrics.auc.local_auc`).
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
