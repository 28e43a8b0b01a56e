"""AUC, partial AUC and local AUC (Hanley & McNeil 1982; McClish 1989; Clemencon & Vayatis 2007)."""

from __future__ import annotations

import numpy as np

from ulr.metrics._ranked import _Ranked, _check_fraction, _one_class_error
from ulr.metrics.result import MetricResult


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
        As in :func:`~ulr.metrics.ranking.arp`.

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
        As in :func:`~ulr.metrics.ranking.arp`.
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
        As in :func:`~ulr.metrics.ranking.arp`.
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
