"""The two learners, each trained naively or with IPW weights (see :mod:`ulr.rankers`)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ulr.errors import UlrError
from ulr.rankers.clicks import (MAX_PAIRS, _clicks, _features, _positions, _require,
                                click_pairs, ipw_weights)

LEARNERS = ("linear", "gbdt")


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

    def fit(self, df: pd.DataFrame, theta=None, *, affine=None) -> BoostedClickRanker:
        """Fit on a click log; ``theta`` (per position) turns on IPW, ``None`` is naive.

        ``affine=(alpha, beta)`` (absolute, per position; ``propensity --method trust-em``)
        turns on the affine correction of trust bias instead (Vardasbi, Oosterhuis & de
        Rijke, CIKM 2020): each row adds ``(click - beta_k) / alpha_k``, an unbiased estimate
        of its relevance under ``P(click) = beta_k + alpha_k R``, to the positive weight of
        its feature vector (kept at 0 where the sum is negative), so the weighted log-loss
        is minimized at odds ``P(R = 1 | x)``. IPW's ``click / theta_k`` has expectation
        ``(beta_k + alpha_k R) / theta_k`` instead, which keeps the top positions' trust
        clicks.
        """
        from sklearn.ensemble import HistGradientBoostingClassifier
        from threadpoolctl import threadpool_limits

        self._fit_columns(df)
        X = self._X(df)
        c = _clicks(df)
        if not c.any():
            raise UlrError("The training log has no click, so there is nothing to learn from.")
        if affine is not None:
            return self._fit_affine(df, X, c, affine)
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

    def _fit_affine(self, df, X, c, affine) -> BoostedClickRanker:
        from sklearn.ensemble import HistGradientBoostingClassifier
        from threadpoolctl import threadpool_limits
        alpha, beta = (np.asarray(a, dtype=np.float64) for a in affine)
        pos = _positions(df)
        if alpha.shape != beta.shape or pos.max() > alpha.size:
            raise UlrError(f"the affine correction needs alpha and beta for every position up "
                           f"to {int(pos.max())}.")
        if not (np.all(np.isfinite(alpha)) and np.all(alpha > 0) and np.all(np.isfinite(beta))):
            raise UlrError("the affine correction needs alpha > 0 at every position (clicks "
                           "must depend on relevance there).")
        a = np.maximum(alpha, self.clip) if self.clip is not None else alpha
        r_hat = (c.astype(np.float64) - beta[pos - 1]) / a[pos - 1]
        codes = pd.DataFrame(X).groupby(list(range(X.shape[1])), sort=False).ngroup().to_numpy()
        n_u = int(codes.max()) + 1
        first = np.full(n_u, -1, dtype=np.int64)
        first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
        Xu = X[first]
        neg_w = np.bincount(codes, minlength=n_u).astype(np.float64)
        pos_w = np.maximum(np.bincount(codes, weights=r_hat, minlength=n_u), 0.0)
        if self.normalize and pos_w.sum() > 0:
            pos_w = pos_w * (c.sum() / pos_w.sum())
        has_pos = pos_w > 0
        if not has_pos.any():
            raise UlrError("After the affine correction no document has more clicks than "
                           "trust alone explains, so there is nothing to learn from.")
        Xa = np.vstack([Xu, Xu[has_pos]])
        ya = np.r_[np.zeros(n_u), np.ones(int(has_pos.sum()))]
        wa = np.r_[neg_w, pos_w[has_pos]]
        self.model_ = HistGradientBoostingClassifier(
            early_stopping=False, random_state=self.seed, **self.params)
        with threadpool_limits(limits=1, user_api="openmp"):
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
