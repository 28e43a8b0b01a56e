"""Naive vs. IPW learning to rank from clicks (Joachims, Swaminathan & Schnabel 2017).

Two learners, each trained twice on the same clicks, once naively and once with
inverse propensity weights (IPW) ``1 / theta_k`` from a position-bias estimate:

``"linear"`` -- a linear pairwise ranker in the style of propensity SVM-Rank.
    Every clicked document is preferred to each non-clicked document shown in
    the same session (or of the same query when the log has no ``session_id``).
    The model ``s(x) = w . x`` (standardized ``feature_*`` columns) minimizes

    .. math::
        \\frac{1}{Z} \\sum_{(c, n)} \\omega_{c}\\, \\ell\\big(w \\cdot (x_c - x_n)\\big)
        + \\frac{\\lambda}{2} \\|w\\|^2

    with the hinge loss (SVM-Rank, solved exactly by liblinear) or the logistic
    loss (RankNet-style, L-BFGS). Naive: ``omega = 1``. IPW: ``omega = 1 /
    theta_{k(c)}`` at the clicked document's position ``k(c)``, optionally with
    ``theta`` clipped from below (``clip``). ``Z`` is the number of pairs (IPS)
    or, with ``normalize=True``, the sum of the weights (SNIPS, Swaminathan &
    Joachims 2015); for one linear objective self-normalization is a constant
    factor, i.e. it ties the regularization to the effective sample size.

``"gbdt"`` -- pointwise gradient boosting (scikit-learn
    ``HistGradientBoostingClassifier``) with IPW sample weights: every shown
    row is a negative with weight 1, every click is also a positive with weight
    ``1 / theta_k`` (1 for naive). The population minimizer of this weighted
    log-loss has odds ``E[click / theta_k | x] = P(click | examined, x)``, a
    position-free relevance score (the IPW pointwise loss of Wang et al. 2016,
    in its positive-weight form); naive training learns ``P(click | x)``,
    which favours whatever the logging ranker put on top. With
    ``normalize=True`` the positive weights are rescaled to sum to the number
    of clicks.

Evaluation uses relevance labels (rows deduplicated to one per query and
document) on a given test log or a seeded held-out 30% of the queries. Without
labels, relevance is estimated from clicks as ``mean(click / theta_k)`` per
query-document (an unbiased IPW estimate of ``P(click | examined)``) and the
result is flagged ``estimated``: ARP and DCG are then consistent (ratio-)IPW
estimates of the metrics with that relevance (Joachims et al. 2017, Sec. 4),
nDCG@k is a plug-in value, and the AUC family is not reported (binarizing the
estimate at 0 would call every clicked document relevant, a position-biased
label).

References
----------
Joachims, Swaminathan, Schnabel. "Unbiased Learning-to-Rank with Biased
Feedback". WSDM 2017.
Wang, Bendersky, Metzler, Najork. "Learning to Rank with Selection Bias in
Personal Search". SIGIR 2016.
Swaminathan, Joachims. "The Self-Normalized Estimator for Counterfactual
Learning". NeurIPS 2015.
Burges et al. "Learning to Rank using Gradient Descent". ICML 2005 (RankNet).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ulr import metrics, theme
from ulr.errors import UlrError

__all__ = [
    "LEARNERS",
    "METRICS",
    "LOWER_IS_BETTER",
    "ClickPairs",
    "LinearPairwiseRanker",
    "BoostedClickRanker",
    "RankerComparison",
    "make_ranker",
    "click_pairs",
    "ipw_weights",
    "check_theta",
    "split_queries",
    "held_out_documents",
    "evaluate_scores",
    "train_and_evaluate",
    "severity_sweep",
    "log_frame",
    "propensity_theta",
    "propensity_estimator",
    "available_propensity_methods",
    "comparison_figure",
    "sweep_figure",
]

LEARNERS = ("linear", "gbdt")
METRICS = ("arp", "dcg", "ndcg@10", "auc", "pauc", "local_auc")
LOWER_IS_BETTER = frozenset({"arp"})
# Defaults of the reported partial and local AUC. The logs have ~10 documents
# per query; 0.3 covers about the first three results (the first screen). At
# 0.1 a per-query ROC curve over ~5 non-relevant documents degenerates to
# "relevant documents above the first non-relevant one".
PAUC_MAX_FPR = 0.3
LOCAL_AUC_U = 0.3
TEST_FRACTION = 0.3
# Without relevance labels: binarizing the IPW relevance estimate at 0 marks every
# document ever clicked as relevant, which favours the logging ranker, so the
# AUC family has no click-based estimate here and is reported as missing.
ESTIMATE_UNDEFINED = ("auc", "pauc", "local_auc")
MAX_PAIRS = 2_000_000

ProgressFn = Callable[[int, int, str], None]


# ---------------------------------------------------------------------------
# Inputs: columns, theta, weights, pairs
# ---------------------------------------------------------------------------


def _require(df: pd.DataFrame, cols, what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise UlrError(f"The {what} needs the column(s) {', '.join(missing)}.")


def _features(df: pd.DataFrame) -> list[str]:
    feats = [c for c in df.columns if str(c).startswith("feature_")]
    if not feats:
        raise UlrError("Training a ranker needs feature_* columns in the log.")
    return feats


def _clicks(df: pd.DataFrame) -> np.ndarray:
    c = df["click"].to_numpy()
    if c.dtype == bool:
        return c
    c = pd.to_numeric(df["click"], errors="coerce").to_numpy(dtype=float)
    if np.isnan(c).any() or not np.isin(c, (0.0, 1.0)).all():
        raise UlrError("The click column must hold 0/1 (or true/false).")
    return c == 1.0


def _positions(df: pd.DataFrame) -> np.ndarray:
    p = pd.to_numeric(df["position"], errors="coerce").to_numpy(dtype=float)
    if np.isnan(p).any() or (p < 1).any() or (p != np.round(p)).any():
        raise UlrError("The position column must hold whole numbers >= 1.")
    return p.astype(np.int64)


def check_theta(theta, *, max_position: int | None = None) -> np.ndarray:
    """Validate a position-bias vector (``theta[k-1]`` for position ``k``).

    Any positive scale is accepted (relative, ``theta_1 = 1``, or absolute); the
    vector must cover every position of the log.
    """
    if theta is None:
        raise UlrError("IPW needs a propensity (theta) per position.")
    try:
        t = np.asarray(theta, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise UlrError("theta must be a list of numbers, one per position.") from None
    if t.size == 0:
        raise UlrError("theta is empty; give one value per position.")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise UlrError("theta values must be finite and > 0.")
    if max_position is not None and t.size < max_position:
        raise UlrError(
            f"theta has {t.size} value(s) but the log shows documents down to position "
            f"{max_position}; give one value per position."
        )
    return t


def ipw_weights(positions, theta, *, clip: float | None = None) -> np.ndarray:
    """Inverse propensity weights ``1 / max(theta_k, clip)`` for 1-based positions ``k``.

    Clipping small propensities bounds the weights (and the variance) at the
    price of some bias (Joachims et al. 2017, Section 5; Strehl et al. 2010).
    """
    pos = np.asarray(positions, dtype=np.int64)
    t = check_theta(theta, max_position=int(pos.max()) if pos.size else None)
    if clip is not None:
        clip = float(clip)
        if not clip > 0:
            raise UlrError(f"clip must be > 0, got {clip}.")
        t = np.maximum(t, clip)
    return 1.0 / t[pos - 1]


@dataclass(frozen=True)
class ClickPairs:
    """Preference pairs ``clicked > not clicked``: row indices into the log.

    ``total`` counts all candidate pairs (before dropping a document paired
    with itself when grouping by query); ``scale`` is the inverse sampling rate
    when they were subsampled (1 when all are kept).
    """

    clicked: np.ndarray
    other: np.ndarray
    total: int
    scale: float = 1.0

    def __post_init__(self):
        if self.clicked.shape != self.other.shape:
            raise ValueError("clicked and other must have the same shape")

    def __len__(self) -> int:
        return int(self.clicked.size)


def click_pairs(df: pd.DataFrame, *, max_pairs: int = MAX_PAIRS, seed: int = 0) -> ClickPairs:
    """All (clicked, non-clicked) row pairs shown together.

    Rows are grouped by ``session_id`` when present, else by ``query_id``
    (then pairs of a document with itself are dropped). Vectorized: rows are
    sorted by (group, click) so every group's non-clicked rows are contiguous
    and each clicked row is paired with that range. More than ``max_pairs``
    pairs are subsampled uniformly (seeded); ``scale`` records the rate.
    """
    _require(df, ["query_id", "click"], "click log")
    by_session = "session_id" in df.columns and df["session_id"].notna().all()
    group = df["session_id"] if by_session else df["query_id"]
    codes, _ = pd.factorize(group.to_numpy(), sort=False)
    if (codes < 0).any():
        raise UlrError("query_id must not be missing.")
    c = _clicks(df)
    order = np.lexsort((c, codes))  # per group: non-clicks first, then clicks
    g = codes[order]
    cs = c[order]
    n_groups = int(codes.max()) + 1 if codes.size else 0
    counts = np.bincount(g, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    n_nonclick = np.bincount(g, weights=~cs, minlength=n_groups).astype(np.int64)
    clicked_sorted = np.flatnonzero(cs)
    m = n_nonclick[g[clicked_sorted]]
    total = int(m.sum())
    if total == 0 and by_session:
        # Sessions that hold one item each (e.g. taken from a timestamp) pair nothing;
        # the documents shown for the same query still compare.
        return click_pairs(df.drop(columns=["session_id"]), max_pairs=max_pairs, seed=seed)
    if total == 0:
        raise UlrError(
            "The log has no (clicked, not clicked) pair in a session or query, so there "
            "is nothing to learn from.")
    # pair number p belongs to clicked element k(p) and is its j-th non-click
    end = np.cumsum(m)
    if total <= max_pairs:
        k = np.repeat(np.arange(clicked_sorted.size), m)
        within = np.arange(total, dtype=np.int64) - np.repeat(end - m, m)
        scale = 1.0
    else:  # sample pair numbers without materializing all pairs
        p = np.sort(np.random.default_rng(seed).choice(total, size=max_pairs, replace=False))
        k = np.searchsorted(end, p, side="right")
        within = p - (end - m)[k]
        scale = total / max_pairs
    left = clicked_sorted[k]
    right = starts[g[left]] + within
    clicked, other = order[left], order[right]
    if not by_session and "doc_id" in df.columns:
        doc = pd.factorize(df["doc_id"].to_numpy(), sort=False)[0]
        keep = doc[clicked] != doc[other]
        clicked, other = clicked[keep], other[keep]
        if not clicked.size:
            raise UlrError("Every clicked document is only paired with itself, so there is "
                           "nothing to learn from.")
    return ClickPairs(clicked=clicked, other=other, total=total, scale=scale)


# ---------------------------------------------------------------------------
# Learners
# ---------------------------------------------------------------------------


class _ClickRanker:
    """Shared options and validation of the two learners."""

    name = ""

    def __init__(self, *, clip: float | None = None, normalize: bool = False, seed: int = 0):
        if clip is not None and not float(clip) > 0:
            raise UlrError(f"clip must be > 0, got {clip}.")
        self.clip = None if clip is None else float(clip)
        self.normalize = bool(normalize)
        self.seed = int(seed)
        self.features_: list[str] | None = None

    def _weights(self, positions: np.ndarray, theta) -> np.ndarray:
        if theta is None:
            return np.ones(positions.size)
        return ipw_weights(positions, theta, clip=self.clip)

    def _X(self, df: pd.DataFrame) -> np.ndarray:
        if self.features_ is None:
            raise RuntimeError("fit the ranker first")
        _require(df, self.features_, "scored log")
        X = df[self.features_].to_numpy(dtype=np.float64)
        if not np.isfinite(X).all():
            raise UlrError("feature_* columns must be finite numbers (no missing values).")
        return X

    def _fit_columns(self, df: pd.DataFrame) -> None:
        _require(df, ["query_id", "position", "click"], "training log")
        if len(df) == 0:
            raise UlrError("The training log is empty.")
        self.features_ = _features(df)


class LinearPairwiseRanker(_ClickRanker):
    """Linear pairwise ranker on click preferences (propensity SVM-Rank style).

    Parameters
    ----------
    loss : {"hinge", "logistic"}, default "hinge"
        Hinge (SVM-Rank; liblinear dual coordinate descent) or logistic
        (RankNet-style; L-BFGS) loss on ``w . (x_clicked - x_other)``.
    alpha : float, default 1e-2
        L2 regularization ``lambda`` (per unit of average pair loss).
    clip : float, optional
        Lower bound on theta (bounds the IPW weights by ``1 / clip``).
    normalize : bool, default False
        Self-normalize the weights (SNIPS) instead of dividing by the number of
        pairs (IPS).
    seed : int, default 0
        Seed of the solver (and of pair subsampling).
    """

    name = "linear"

    def __init__(self, *, loss: str = "hinge", alpha: float = 1e-2, clip: float | None = None,
                 normalize: bool = False, seed: int = 0, max_pairs: int = MAX_PAIRS):
        super().__init__(clip=clip, normalize=normalize, seed=seed)
        if loss not in ("hinge", "logistic"):
            raise UlrError(f"loss must be 'hinge' or 'logistic', not {loss!r}.")
        if not float(alpha) > 0:
            raise UlrError(f"alpha must be > 0, got {alpha}.")
        self.loss = loss
        self.alpha = float(alpha)
        self.max_pairs = int(max_pairs)
        self.coef_: np.ndarray | None = None
        self.n_pairs_ = 0

    def fit(self, df: pd.DataFrame, theta=None) -> LinearPairwiseRanker:
        """Fit on a click log; ``theta`` (per position) turns on IPW, ``None`` is naive."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.svm import LinearSVC

        self._fit_columns(df)
        X = self._X(df)
        self.mean_ = X.mean(axis=0)
        sd = X.std(axis=0)
        self.scale_ = np.where(sd > 0, sd, 1.0)
        Xs = (X - self.mean_) / self.scale_
        pairs = click_pairs(df, max_pairs=self.max_pairs, seed=self.seed)
        w = self._weights(_positions(df)[pairs.clicked], theta)
        n = len(pairs)
        z = w.sum() if self.normalize else float(n)
        sample_weight = w * (n / z)  # mean 1 with SNIPS, mean(w) with IPS
        diff = Xs[pairs.clicked] - Xs[pairs.other]
        # two classes for the solver: flip every other pair (no intercept, so
        # the problem is unchanged)
        sign = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
        diff *= sign[:, None]
        C = 1.0 / (self.alpha * n)
        if self.loss == "hinge":
            model = LinearSVC(loss="hinge", dual=True, C=C, fit_intercept=False,
                              random_state=self.seed, max_iter=20_000, tol=1e-4)
        else:
            model = LogisticRegression(C=C, fit_intercept=False, max_iter=1000)
        if np.unique(sign).size < 2:  # a single pair: duplicate it mirrored
            diff = np.vstack([diff, -diff])
            sign = np.r_[sign, -sign]
            sample_weight = np.r_[sample_weight, sample_weight]
        with warnings.catch_warnings():
            # a slowly converging dual solver still ranks well; the tolerance is tight
            warnings.filterwarnings("ignore", message=".*converge.*")
            model.fit(diff, sign, sample_weight=sample_weight)
        self.coef_ = model.coef_.ravel() / self.scale_
        self.n_pairs_ = n
        return self

    def score(self, df: pd.DataFrame) -> np.ndarray:
        """Scores ``w . x`` (higher ranks first)."""
        if self.coef_ is None:
            raise RuntimeError("fit the ranker first")
        return self._X(df) @ self.coef_


class BoostedClickRanker(_ClickRanker):
    """Pointwise gradient-boosted click model with IPW sample weights.

    Rows are negatives with weight 1; clicks are also positives with weight
    ``1 / theta_k`` (1 when naive). The weighted log-loss is minimized at odds
    ``P(click | examined, x)`` (see the module docstring).

    Parameters
    ----------
    max_iter, learning_rate, max_leaf_nodes, min_samples_leaf
        Passed to ``sklearn.ensemble.HistGradientBoostingClassifier``
        (no early stopping, so fits are deterministic given ``seed``).
    clip, normalize, seed
        As in :class:`LinearPairwiseRanker`.
    """

    name = "gbdt"

    def __init__(self, *, max_iter: int = 100, learning_rate: float = 0.1,
                 max_leaf_nodes: int = 7, min_samples_leaf: int = 50,
                 clip: float | None = None, normalize: bool = False, seed: int = 0):
        super().__init__(clip=clip, normalize=normalize, seed=seed)
        self.params = dict(max_iter=int(max_iter), learning_rate=float(learning_rate),
                           max_leaf_nodes=int(max_leaf_nodes),
                           min_samples_leaf=int(min_samples_leaf))
        self.model_ = None

    def fit(self, df: pd.DataFrame, theta=None) -> BoostedClickRanker:
        """Fit on a click log; ``theta`` (per position) turns on IPW, ``None`` is naive."""
        from sklearn.ensemble import HistGradientBoostingClassifier
        from threadpoolctl import threadpool_limits

        self._fit_columns(df)
        X = self._X(df)
        c = _clicks(df)
        if not c.any():
            raise UlrError("The training log has no click, so there is nothing to learn from.")
        w_pos = self._weights(_positions(df)[c], theta)
        if self.normalize:
            w_pos = w_pos * (w_pos.size / w_pos.sum())
        # The log-loss is additive over rows with equal features, so aggregate them
        # (one negative per distinct feature vector with weight = impressions, one
        # positive with weight = sum of click weights): the same objective, far
        # fewer rows, and min_samples_leaf counts documents, not impressions.
        codes = pd.DataFrame(X).groupby(list(range(X.shape[1])), sort=False).ngroup().to_numpy()
        n_u = int(codes.max()) + 1
        first = np.full(n_u, -1, dtype=np.int64)
        first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
        Xu = X[first]
        neg_w = np.bincount(codes, minlength=n_u).astype(np.float64)
        pos_w = np.bincount(codes[c], weights=w_pos, minlength=n_u)
        has_pos = pos_w > 0
        Xa = np.vstack([Xu, Xu[has_pos]])
        ya = np.r_[np.zeros(n_u), np.ones(int(has_pos.sum()))]
        wa = np.r_[neg_w, pos_w[has_pos]]
        self.model_ = HistGradientBoostingClassifier(
            early_stopping=False, random_state=self.seed, **self.params)
        with threadpool_limits(limits=1, user_api="openmp"):
            # OpenMP threads spin on a shared machine; the aggregated data are small
            self.model_.fit(Xa, ya, sample_weight=wa)
        return self

    def score(self, df: pd.DataFrame) -> np.ndarray:
        """Log-odds of relevance (higher ranks first)."""
        if self.model_ is None:
            raise RuntimeError("fit the ranker first")
        return self.model_.decision_function(self._X(df))


def make_ranker(learner: str = "linear", **options) -> _ClickRanker:
    """A fresh learner by name (``"linear"`` or ``"gbdt"``) with its options."""
    if learner == "linear":
        return LinearPairwiseRanker(**options)
    if learner == "gbdt":
        return BoostedClickRanker(**options)
    raise UlrError(f"learner must be one of {', '.join(LEARNERS)}, not {learner!r}.")


# ---------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------


def split_queries(df: pd.DataFrame, *, test_fraction: float = TEST_FRACTION,
                  seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hold out a seeded ``test_fraction`` of the queries (all their rows)."""
    _require(df, ["query_id"], "click log")
    if not 0.0 < float(test_fraction) < 1.0:
        raise UlrError(f"test fraction must be in (0, 1), got {test_fraction}.")
    # ids as text, sorted: the split depends on the seed, not on row order or dtype
    key = df["query_id"].astype(str)
    queries = np.sort(key.unique().astype(object).astype(str))
    if queries.size < 2:
        raise UlrError("Holding out test queries needs at least two queries.")
    n_test = min(max(1, int(round(test_fraction * queries.size))), queries.size - 1)
    rng = np.random.default_rng(seed)
    test_q = queries[rng.permutation(queries.size)[:n_test]]
    in_test = key.isin(test_q).to_numpy()
    return df[~in_test], df[in_test]


def held_out_documents(df: pd.DataFrame, theta=None, *, clip: float | None = None
                       ) -> tuple[pd.DataFrame, bool]:
    """One row per (query, document) with the label used for evaluation.

    With a ``relevance`` column the first row's label is used (labels belong to
    the query-document, not the impression); unlabelled documents are left out
    (judged documents only). Without any label, the label is the IPW
    click estimate ``mean(click / theta_k)`` over the document's impressions and
    the second return value is ``True`` (estimated).
    """
    _require(df, ["query_id", "doc_id"], "test log")
    if len(df) == 0:
        raise UlrError("The test log is empty.")
    if "relevance" in df.columns and df["relevance"].notna().any():
        labelled = df[df["relevance"].notna()]
        docs = labelled.drop_duplicates(["query_id", "doc_id"]).copy()
        docs["label"] = pd.to_numeric(docs["relevance"], errors="coerce")
        if docs["label"].isna().any() or (docs["label"] < 0).any():
            raise UlrError("relevance labels must be numbers >= 0.")
        return docs, False
    _require(df, ["position", "click"], "test log without relevance labels")
    w = ipw_weights(_positions(df), theta, clip=clip)
    est = pd.Series(_clicks(df) * w, index=df.index)
    label = est.groupby([df["query_id"], df["doc_id"]], sort=False).mean()
    docs = df.drop_duplicates(["query_id", "doc_id"]).copy()
    docs["label"] = label.reindex(pd.MultiIndex.from_frame(docs[["query_id", "doc_id"]])).to_numpy()
    return docs, True


def evaluate_scores(docs: pd.DataFrame, scores, *, k: int = 10, max_fpr: float = PAUC_MAX_FPR,
                    u: float = LOCAL_AUC_U) -> dict[str, metrics.MetricResult]:
    """The six metrics of ``scores`` against ``docs['label']`` per query.

    The partial AUC is McClish-standardized (0.5 = random, 1 = perfect), so it
    reads on the same scale as the AUC.
    """
    return metrics.evaluate(docs["label"].to_numpy(), scores, query_ids=docs["query_id"].to_numpy(),
                            k=k, max_fpr=max_fpr, u=u, standardized=True)


@dataclass(frozen=True)
class RankerComparison:
    """Naive and IPW rankers evaluated on the same test queries.

    Attributes
    ----------
    naive, ipw : dict[str, MetricResult]
        Metrics keyed ``arp``, ``dcg``, ``ndcg@10``, ``auc``, ``pauc``,
        ``local_auc`` (a metric undefined on the test set is missing).
    estimated : bool
        True when the labels are IPW click estimates (no relevance column).
    learner : str
    n_train_queries, n_test_queries, n_test_documents : int
    settings : dict
        The options used (clip, normalize, seed, max_fpr, u, ...).
    """

    naive: dict
    ipw: dict
    estimated: bool
    learner: str
    n_train_queries: int
    n_test_queries: int
    n_test_documents: int
    settings: dict = field(default_factory=dict)
    n_train_clicks: int = 0
    n_train_rows: int = 0
    n_train_sessions: int | None = None

    def metrics(self) -> dict[str, dict[str, float | None]]:
        """``{"naive": {metric: value}, "ipw": {...}}`` (None where undefined)."""
        out = {}
        for name, res in (("naive", self.naive), ("ipw", self.ipw)):
            out[name] = {m: (float(res[m].value) if m in res else None) for m in self._keys()}
        return out

    def _keys(self) -> list[str]:
        k = self.settings.get("k", 10)
        return [f"ndcg@{k}" if m == "ndcg@10" else m for m in METRICS]

    def table(self, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
        """Tidy table: ranker, metric, value, lower, upper (per-query bootstrap), queries."""
        rows = []
        for name, res in (("naive", self.naive), ("ipw", self.ipw)):
            for m in self._keys():
                if m not in res:
                    continue
                lo, hi = metrics.bootstrap_ci(res[m], n_bootstrap=n_boot, level=level, seed=seed)
                rows.append(dict(ranker=name, metric=m, value=res[m].value, lower=lo, upper=hi,
                                 queries=res[m].n_queries - res[m].n_excluded,
                                 estimated=self.estimated))
        return pd.DataFrame(rows)

    def paired(self, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
        """Paired per-query tests IPW vs naive: delta = ipw - naive, CI, p-value, winner."""
        rows = []
        for m in self._keys():
            if m not in self.naive or m not in self.ipw:
                continue
            t = metrics.paired_test(self.naive[m], self.ipw[m], n_bootstrap=n_boot, level=level,
                                    seed=seed)
            if t.delta == 0:
                better = "tie"
            else:
                ipw_better = (t.delta < 0) if m in LOWER_IS_BETTER else (t.delta > 0)
                better = "ipw" if ipw_better else "naive"
            rows.append(dict(metric=m, naive=t.a, ipw=t.b, delta=t.delta, lower=t.lower,
                             upper=t.upper, p_value=t.p_value, queries=t.n_queries,
                             better=better))
        return pd.DataFrame(rows)


def min_test_queries(*, effect: float = 0.5, alpha: float = 0.05, power: float = 0.8) -> int:
    """Fewest held-out queries for a paired comparison that can mean anything.

    The paired test compares per-query differences. To detect a standardized
    per-query effect ``d`` (mean difference / its standard deviation) with
    the given power in a two-sided test at level ``alpha`` it needs about
    ``n = ((z_{1-alpha/2} + z_{power}) / d)^2`` queries (normal
    approximation; Cohen 1988, ch. 2). The defaults (a medium effect, 5%,
    80%) give 32. It is never below the exact sign-flip test's own floor:
    with ``n`` queries its smallest p-value is ``2 / 2^n``.
    """
    from scipy.stats import norm

    n = int(np.ceil(((norm.ppf(1 - alpha / 2) + norm.ppf(power)) / effect) ** 2))
    floor = int(np.ceil(np.log2(2 / alpha))) + 1  # 2 / 2^n < alpha
    return max(n, floor)


MIN_TEST_QUERIES = min_test_queries()


def train_and_evaluate(train_df: pd.DataFrame, test_df: pd.DataFrame | None = None,
                       theta=None, *, learner: str = "linear", clip: float | None = None,
                       normalize: bool = False, seed: int = 0,
                       test_fraction: float = TEST_FRACTION, k: int = 10,
                       max_fpr: float = PAUC_MAX_FPR, u: float = LOCAL_AUC_U,
                       learner_options: dict | None = None,
                       naive_model=None,
                       min_queries: int = 0) -> RankerComparison:
    """Train the naive and the IPW ranker on clicks and evaluate both.

    Parameters
    ----------
    train_df : DataFrame
        Click log (canonical columns: query_id, doc_id, position, click,
        optional session_id, relevance, feature_*).
    test_df : DataFrame, optional
        Evaluation log. Without it a seeded ``test_fraction`` of the queries of
        ``train_df`` is held out (and not trained on).
    theta : array-like
        Propensity per position (``theta[k-1]`` for position ``k``), any scale.
    learner : {"linear", "gbdt"}
    clip, normalize
        IPW weight clipping and SNIPS self-normalization (see the module doc).
    seed : int
        Seeds the split and the learners.
    k, max_fpr, u
        nDCG cut-off, partial AUC range (reported McClish-standardized) and
        local AUC top fraction.
    learner_options : dict, optional
        Extra options of the learner (e.g. ``loss``, ``alpha``, ``max_iter``).
    naive_model : fitted ranker, optional
        Reuse an already fitted naive model (the severity sweep trains it once).
    min_queries : int
        Refuse when fewer test queries remain (0: no check). The page and the
        ``rankers`` command pass :data:`MIN_TEST_QUERIES` (:func:`min_test_queries`).

    Returns
    -------
    RankerComparison
    """
    if learner not in LEARNERS:
        raise UlrError(f"learner must be one of {', '.join(LEARNERS)}, not {learner!r}.")
    _require(train_df, ["query_id", "doc_id", "position", "click"], "training log")
    if test_df is None:
        train_df, test_df = split_queries(train_df, test_fraction=test_fraction, seed=seed)
    n_test = int(test_df["query_id"].nunique())
    if n_test < min_queries:
        raise UlrError(
            f"Only {n_test} test quer{'y' if n_test == 1 else 'ies'} would be held out, and a "
            f"paired comparison needs at least {min_queries} to detect even a medium "
            "per-query difference (80% power at the 5% level), so the rankers are not "
            "compared; the log needs more distinct queries.")
    theta = check_theta(theta, max_position=int(_positions(train_df).max()))
    opts = dict(learner_options or {})
    naive = naive_model or make_ranker(learner, seed=seed, **opts).fit(train_df)
    ipw = make_ranker(learner, clip=clip, normalize=normalize, seed=seed, **opts).fit(
        train_df, theta)
    docs, estimated = held_out_documents(test_df, theta, clip=clip)
    res_naive = evaluate_scores(docs, naive.score(docs), k=k, max_fpr=max_fpr, u=u)
    res_ipw = evaluate_scores(docs, ipw.score(docs), k=k, max_fpr=max_fpr, u=u)
    if estimated:
        for res in (res_naive, res_ipw):
            for m in ESTIMATE_UNDEFINED:
                res.pop(m, None)
    return RankerComparison(
        naive=res_naive, ipw=res_ipw, estimated=estimated, learner=learner,
        n_train_queries=int(train_df["query_id"].nunique()),
        n_test_queries=int(docs["query_id"].nunique()),
        n_test_documents=int(len(docs)),
        n_train_clicks=int(_clicks(train_df).sum()),
        n_train_rows=int(len(train_df)),
        n_train_sessions=(int(train_df["session_id"].nunique())
                          if "session_id" in train_df else None),
        settings=dict(clip=clip, normalize=normalize, seed=seed, k=k, max_fpr=max_fpr, u=u,
                      pauc="mcclish-standardized", theta=[float(t) for t in theta],
                      learner_options=opts),
    )


# ---------------------------------------------------------------------------
# Stored logs and propensity estimates (adapters to ulr.store / ulr.propensity)
# ---------------------------------------------------------------------------

_LOG_COLUMNS = ("query_id", "doc_id", "position", "click", "session_id", "relevance")


def log_frame(log) -> pd.DataFrame:
    """The columns of a :class:`ulr.store.Log` the rankers use, as a DataFrame."""
    cols = [c for c in _LOG_COLUMNS if log.info.has(c)] + list(log.info.features)
    return log.df(columns=cols)


def propensity_theta(log, method: str, *, seed: int = 0, progress=None) -> np.ndarray:
    """Relative theta per position from ``ulr.propensity.estimate(log, method=...)``.

    The one place the rankers call the position-bias estimators. Positions the
    method cannot estimate (NaN) are refused with a readable message.
    """
    from ulr import propensity

    try:
        res = propensity.estimate(log, method=method, seed=seed, progress=progress)
    except ModuleNotFoundError as exc:
        if not str(getattr(exc, "name", "")).startswith("ulr.propensity"):
            raise
        raise UlrError(f"The propensity method {method!r} is not available in this "
                       "build yet; choose another method or give theta explicitly.") from None
    theta = np.asarray(res.theta, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(theta) | (theta <= 0)) + 1
    if bad.size:
        shown = ", ".join(map(str, bad[:10])) + (" ..." if bad.size > 10 else "")
        raise UlrError(f"The {method} estimate has no usable theta for position(s) {shown}; "
                       "choose another method or give theta explicitly.")
    return theta


def available_propensity_methods() -> list[str]:
    """The ``ulr.propensity`` methods whose implementation is installed."""
    import importlib.util

    from ulr import propensity

    modules = getattr(propensity, "_MODULES", {})
    out = []
    for m in propensity.METHODS:
        mod = modules.get(m)
        try:
            if mod is None or importlib.util.find_spec(mod) is not None:
                out.append(m)
        except ModuleNotFoundError:
            pass
    return out


def propensity_estimator(method: str, *, seed: int = 0) -> Callable[[pd.DataFrame], np.ndarray]:
    """``DataFrame -> theta`` with a propensity method, for :func:`severity_sweep`.

    The frame is written to a temporary Parquet file and opened with
    :func:`ulr.store.open_file`, so the estimator sees a validated log exactly
    as the CLI would.
    """
    import os
    import tempfile

    from ulr import store
    from ulr.simulate import write_log

    def estimate(df: pd.DataFrame) -> np.ndarray:
        with tempfile.TemporaryDirectory(prefix="ulr_sweep_") as tmp:
            path = os.path.join(tmp, "train.parquet")
            write_log(df.drop(columns=["true_theta"], errors="ignore"), path)
            log = store.open_file(path)
            return propensity_theta(log, method, seed=seed)

    estimate.__name__ = f"estimate_{method}"
    return estimate


# ---------------------------------------------------------------------------
# Severity sweep (Joachims et al. 2017, Figure 2)
# ---------------------------------------------------------------------------


def _check_sweep(etas, runs, learner: str) -> list[float]:
    """The checked eta values of :func:`severity_sweep` (its other options checked too)."""
    etas = [float(e) for e in etas]
    if not etas:
        raise UlrError("Give at least one eta.")
    if any(not np.isfinite(e) or e < 0 for e in etas):
        raise UlrError("eta values must be finite numbers >= 0.")
    if int(runs) < 1:
        raise UlrError("runs must be at least 1.")
    if learner not in LEARNERS:
        raise UlrError(f"learner must be one of {', '.join(LEARNERS)}, not {learner!r}.")
    return etas


def severity_sweep(etas=(0.0, 0.5, 1.0, 1.5, 2.0), *, queries: int = 300,
                   docs_per_query: int = 10, sessions: int = 20_000, runs: int = 1,
                   learner: str = "linear", clip: float | None = None, normalize: bool = False,
                   estimate_theta: Callable[[pd.DataFrame], np.ndarray] | None = None,
                   estimator_name: str = "estimated", model: str = "pbm",
                   features: int = 5, randomized_fraction: float = 0.1, seed: int = 0,
                   learner_options: dict | None = None,
                   progress: ProgressFn | None = None) -> pd.DataFrame:
    """IPW vs naive as position bias grows: simulate, train, evaluate per eta.

    For every ``eta`` (and run ``r``) a log is simulated with
    ``theta_k = (1/k)^eta`` (seed ``seed + r``, the same for all etas, so runs
    differ only by eta), 30% of its queries are held out, and the learner is
    trained naively and with IPW using the true theta and, if
    ``estimate_theta`` is given, with the theta it estimates from the training
    clicks (a callable ``DataFrame -> theta``).

    Returns
    -------
    DataFrame
        Tidy: ``eta``, ``run``, ``ranker`` (``naive``, ``ipw (true theta)``,
        ``ipw (estimated theta)``), ``metric``, ``value``; plus ``theta_error``
        (mean absolute error of the relative theta used, 0 for the truth, NaN
        for naive) and ``estimator``.
    """
    from ulr.simulate import simulate_clicks

    etas = _check_sweep(etas, runs, learner)
    steps_per = 3 + (estimate_theta is not None)
    total = len(etas) * int(runs) * steps_per
    done = 0

    def tick(msg):
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, msg)

    rows = []
    opts = dict(learner_options or {})
    for run in range(int(runs)):
        for eta in etas:
            sim = simulate_clicks(model=model, queries=queries, docs_per_query=docs_per_query,
                                  sessions=sessions, eta=eta, features=features,
                                  randomized_fraction=randomized_fraction, seed=seed + run)
            train, test = split_queries(sim.df, seed=seed + run)
            true_rel = sim.theta / sim.theta[0]
            tick(f"eta={eta:g}, run {run + 1}: simulated {len(sim.df):,} rows")
            naive = make_ranker(learner, seed=seed, **opts).fit(train)
            tick(f"eta={eta:g}, run {run + 1}: trained naive")
            comp = train_and_evaluate(train, test, sim.theta, learner=learner, clip=clip,
                                      normalize=normalize, seed=seed, learner_options=opts,
                                      naive_model=naive)
            tick(f"eta={eta:g}, run {run + 1}: trained IPW with the true theta")
            results = [("naive", comp.naive, np.nan), ("ipw (true theta)", comp.ipw, 0.0)]
            if estimate_theta is not None:
                try:
                    est = check_theta(estimate_theta(train), max_position=docs_per_query)
                except UlrError as exc:
                    raise UlrError(f"At eta={eta:g} (run {run + 1}), the {estimator_name} "
                                   f"estimate of theta is not usable: {exc}") from None
                est_rel = est[:docs_per_query] / est[0]
                comp_est = train_and_evaluate(train, test, est, learner=learner, clip=clip,
                                              normalize=normalize, seed=seed,
                                              learner_options=opts, naive_model=naive)
                results.append(("ipw (estimated theta)", comp_est.ipw,
                                float(np.mean(np.abs(est_rel - true_rel)))))
                tick(f"eta={eta:g}, run {run + 1}: trained IPW with the {estimator_name} theta")
            for ranker, res, err in results:
                for m, r in res.items():
                    rows.append(dict(eta=eta, run=run, ranker=ranker, metric=m,
                                     value=float(r.value), theta_error=err,
                                     estimator=estimator_name if "estimated" in ranker else None))
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------

_METRIC_TITLES = {
    "arp": "ARP (lower is better)",
    "dcg": "DCG (1/rank)",
    "auc": "AUC",
    "pauc": "partial AUC (McClish)",
    "local_auc": "local AUC",
}


def _metric_title(m: str) -> str:
    return _METRIC_TITLES.get(m, m.replace("ndcg", "nDCG"))


def comparison_figure(table: pd.DataFrame, *, title: str = "Naive vs IPW ranker",
                      estimated: bool = False) -> go.Figure:
    """Bar chart per metric, naive next to IPW, with the bootstrap intervals.

    ``table`` is :meth:`RankerComparison.table`. Metrics have different scales,
    so each gets its own panel.
    """
    metric_names = list(dict.fromkeys(table["metric"]))
    cols = 3
    nrows = max(1, -(-len(metric_names) // cols))
    fig = make_subplots(rows=nrows, cols=cols, subplot_titles=[_metric_title(m) for m in metric_names],
                        horizontal_spacing=0.08, vertical_spacing=0.18)
    for i, ranker in enumerate(dict.fromkeys(table["ranker"])):
        color = theme.color_for(ranker, i)
        for j, m in enumerate(metric_names):
            row = table[(table["ranker"] == ranker) & (table["metric"] == m)]
            if row.empty:
                continue
            r = row.iloc[0]
            fig.add_trace(go.Bar(
                x=[ranker], y=[r["value"]], name=ranker, marker_color=color,
                legendgroup=ranker, showlegend=(j == 0),
                error_y=dict(type="data", symmetric=False, array=[r["upper"] - r["value"]],
                             arrayminus=[r["value"] - r["lower"]], color="#333"),
                hovertemplate=f"{ranker}<br>{m} %{{y:.4f}}<br>CI [{r['lower']:.4f}, "
                              f"{r['upper']:.4f}]<extra></extra>"),
                row=j // cols + 1, col=j % cols + 1)
    suffix = " (click-based IPW estimates)" if estimated else ""
    theme.apply(fig, title=title + suffix)
    # Subplot titles sit where the theme puts the legend: move it to the title row.
    fig.update_layout(height=320 * nrows, bargap=0.35,
                      legend=dict(yref="container", y=0.99, yanchor="top", x=1.0,
                                  xanchor="right"))
    return theme.dots_for_bars(fig)  # dots + intervals on fitted axes (0.93 vs 0.95 visible)


def sweep_figure(df: pd.DataFrame, *, metric: str = "arp",
                 title: str | None = None) -> go.Figure:
    """Test ``metric`` against eta, one line per ranker (mean over runs, min-max band)."""
    sub = df[df["metric"] == metric]
    if sub.empty:
        raise UlrError(f"The sweep has no values for {metric}.")
    fig = go.Figure()
    for i, (ranker, g) in enumerate(sub.groupby("ranker", sort=False)):
        color = theme.color_for(ranker, i)
        agg = g.groupby("eta")["value"].agg(["mean", "min", "max"]).reset_index()
        if g["run"].nunique() > 1:
            fig.add_trace(go.Scatter(
                x=np.r_[agg["eta"], agg["eta"][::-1]], y=np.r_[agg["max"], agg["min"][::-1]],
                fill="toself", fillcolor=theme.band_color(color), line=dict(width=0),
                hoverinfo="skip", showlegend=False, legendgroup=ranker))
        fig.add_trace(go.Scatter(
            x=agg["eta"], y=agg["mean"], mode="lines+markers", name=ranker, legendgroup=ranker,
            line=dict(color=color),
            hovertemplate=f"{ranker}<br>eta %{{x}}<br>{metric} %{{y:.4f}}<extra></extra>"))
    theme.apply(fig, title=title or f"Test {_metric_title(metric)} vs severity of position bias",
                x="eta (position bias severity, theta_k = (1/k)^eta)", y=_metric_title(metric))
    return fig
