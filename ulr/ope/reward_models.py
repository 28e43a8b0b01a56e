"""Reward models for the model-based estimators (DR, SNDR, Switch-DR, DRos, DM): pluggable.

- ``linear``: logistic regression on the pair features and one-hot slots (ridge
  for non-binary rewards), the default of :func:`ulr.ope.evaluate.reward_predictions`.
- ``gbdt``: gradient-boosted trees (scikit-learn's histogram GBDT), for click
  models that are not linear in the features.
- a user column: the analyst's own predicted reward of each row's action;
  a pair's prediction is the mean over its rows (:func:`pair_predictions`).
"""

from __future__ import annotations

import numpy as np

from ulr.errors import UlrError

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
