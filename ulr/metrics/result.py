"""Result containers of the ranking metrics and the project-wide metric defaults."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


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
