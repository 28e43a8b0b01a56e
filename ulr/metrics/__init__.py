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

from ulr.metrics.auc import auc, local_auc, partial_auc
from ulr.metrics.bootstrap import bootstrap_ci, paired_test
from ulr.metrics.evaluate import evaluate
from ulr.metrics.ranking import arp, dcg, ndcg
from ulr.metrics.result import DEFAULT_MAX_FPR, DEFAULT_U, MetricResult, PairedTest

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
