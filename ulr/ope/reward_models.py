"""Reward models for the model-based estimators (DR, SNDR, Switch-DR, DRos, DM): pluggable.

- ``linear``: logistic regression on the pair features and one-hot slots (ridge
  for non-binary rewards), the default of :func:`reward_predictions`.
- ``gbdt``: gradient-boosted trees (scikit-learn's histogram GBDT), for click
  models that are not linear in the features.
- a user column: the analyst's own predicted reward of each row's action;
  a pair's prediction is the mean over its rows (:func:`pair_predictions`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ulr.errors import UlrError

if TYPE_CHECKING:
    from ulr.ope.feedback import BanditFeedback

REWARD_MODELS = ("linear", "gbdt")


def make_reward_model(kind: str, *, binary: bool = True, seed: int = 0):
    """A scikit-learn estimator for ``kind`` (``None`` = the default linear model)."""
    if kind == "linear":
        return None
    if kind == "gbdt":
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
        cls = HistGradientBoostingClassifier if binary else HistGradientBoostingRegressor
        return cls(max_iter=100, learning_rate=0.1, max_leaf_nodes=15, min_samples_leaf=20,
                   random_state=seed)
    raise UlrError(f"unknown reward model {kind!r}; choose from {', '.join(REWARD_MODELS)}.")


def pair_predictions(feedback, pi, q_pair) -> tuple[np.ndarray, np.ndarray]:
    """``q(x_i, a_i)`` and ``sum_a pi(a|x_i) q(x_i, a)`` per row from one prediction per pair.

    ``q_pair`` (n_pairs,): e.g. the mean of a user's prediction column over each
    pair's rows. No cross-fitting: the predictions are taken as given.
    """
    q = np.asarray(q_pair, dtype=float)
    cand = feedback.candidates
    if q.shape != (cand.n_pairs,):
        raise ValueError("q_pair needs one prediction per pair")
    if not np.all(np.isfinite(q)):
        raise UlrError("the reward prediction column has missing or non-numeric values.")
    return q[feedback.pair], cand.per_context_sum(np.asarray(pi, dtype=float) * q)[
        cand.context[feedback.pair]]


# --------------------------------------------------------------------------- fitted


def _design(feedback: BanditFeedback, pairs: np.ndarray, slots: np.ndarray | None):
    cand = feedback.candidates
    if cand.features.shape[1] > 0:
        X = cand.features[pairs]
    else:  # no features: a tabular model (one-hot pair), shrunk by the regularizer
        X = np.eye(cand.n_pairs)[pairs] if cand.n_pairs <= 2000 else None
        if X is None:
            from scipy import sparse
            X = sparse.csr_matrix((np.ones(len(pairs)), (np.arange(len(pairs)), pairs)),
                                  shape=(len(pairs), cand.n_pairs))
    if slots is None or feedback.n_slots <= 1:
        return X
    S = np.eye(feedback.n_slots)[slots][:, 1:]
    if hasattr(X, "tocsr"):
        from scipy import sparse
        return sparse.hstack([X, sparse.csr_matrix(S)]).tocsr()
    return np.hstack([X, S])


def _default_model(binary: bool):
    if binary:
        from sklearn.linear_model import LogisticRegression
        return LogisticRegression(C=1.0, max_iter=2000)
    from sklearn.linear_model import Ridge
    return Ridge(alpha=1.0)


def reward_predictions(feedback: BanditFeedback, pi: np.ndarray, *, model=None, folds: int = 2,
                       seed=0) -> tuple[np.ndarray, np.ndarray]:
    """Reward model for DR: ``q(x_i, a_i)`` and ``sum_a pi(a|x_i) q(x_i, a)`` per row.

    The model (any scikit-learn estimator; default logistic regression for 0/1
    rewards, ridge otherwise) is fit on the pair features plus one-hot slots.
    With ``folds >= 2`` it is cross-fitted: rows (by impression) are split into
    ``folds`` parts and each part is predicted by a model fit on the others,
    so a row's own reward never enters its prediction.
    """
    from sklearn.base import clone

    if folds < 1:
        raise UlrError("the number of cross-fitting folds must be at least 1.")
    r = feedback.reward
    binary = bool(np.all((r == 0) | (r == 1)))
    base = model if model is not None else _default_model(binary)
    cand = feedback.candidates
    units = feedback.cluster if feedback.cluster is not None else np.arange(feedback.n)
    codes = np.unique(units, return_inverse=True)[1].ravel()
    rng = np.random.default_rng(seed)
    fold_of_unit = rng.permutation(codes.max() + 1) % folds
    fold = fold_of_unit[codes] if folds > 1 else np.zeros(feedback.n, dtype=int)
    n_slots = max(feedback.n_slots, 1)
    all_pairs = np.tile(np.arange(cand.n_pairs), n_slots)
    all_slots = np.repeat(np.arange(n_slots), cand.n_pairs)
    D_all = _design(feedback, all_pairs, all_slots if feedback.slot is not None else None)
    Q = np.empty((max(folds, 1), n_slots, cand.n_pairs))
    for k in range(max(folds, 1)):
        train = fold != k if folds > 1 else np.ones(feedback.n, dtype=bool)
        if not train.any():
            train = np.ones(feedback.n, dtype=bool)
        yk = r[train]
        if binary and len(np.unique(yk)) < 2:
            Q[k] = float(yk.mean())
            continue
        Dk = _design(feedback, feedback.pair[train],
                     feedback.slot[train] if feedback.slot is not None else None)
        m = clone(base)
        m.fit(Dk, yk.astype(int) if binary and hasattr(base, "predict_proba") else yk)
        pred = m.predict_proba(D_all)[:, 1] if hasattr(m, "predict_proba") else m.predict(D_all)
        Q[k] = np.asarray(pred, dtype=float).reshape(n_slots, cand.n_pairs)
    slot = feedback.slot if feedback.slot is not None else np.zeros(feedback.n, dtype=int)
    q_logged = Q[fold, slot, feedback.pair]
    dm = cand.per_context_sum(Q * pi)  # (folds, slots, contexts)
    q_target = dm[fold, slot, feedback.context]
    return q_logged, q_target
