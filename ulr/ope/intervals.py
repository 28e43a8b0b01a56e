"""Intervals for off-policy estimates: bootstrap, Student t, Hoeffding, empirical Bernstein.

Every estimator is a ratio ``V = sum_i num_i / sum_i den_i`` of per-row terms
(:func:`ulr.ope.registry.row_terms`); ``den = 1`` for the linear ones (IPS,
clipped IPS, DR, DM, Switch-DR, DRos, sub-Gaussian IPS/DR), ``den = w`` for
the self-normalized ones (SNIPS, SNDR).

- ``bootstrap``: percentile bootstrap over rows (or clusters), any estimator.
- ``t``: Student t on the mean of the terms; for a ratio the terms are the
  delta-method residuals ``(num_i - V den_i) / mean(den)``. Asymptotic.
- ``hoeffding`` (Hoeffding 1963) and ``bernstein`` (empirical Bernstein,
  Maurer & Pontil, "Empirical Bernstein bounds and sample variance
  penalization", COLT 2009, Theorem 4): finite-sample bounds that hold for
  every ``n`` when each term lies in a known range ``[lo, hi]``. The range
  comes from the rewards' range and the largest importance weight
  (:func:`term_range`); with the log's own largest weight (the default) the
  bound is a plug-in, with the largest weight the policies allow it is exact.
  Linear estimators only: self-normalized ones get ``nan``.

All functions work along the last axis, so many logs are handled at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr import validate
from ulr.ope import estimators as est
from ulr.ope import registry

INTERVALS = ("bootstrap", "t", "hoeffding", "bernstein")
CONCENTRATION = ("hoeffding", "bernstein")


@dataclass(frozen=True)
class Bounds:
    """Point estimate and interval (arrays of the leading shape; scalars for one log)."""

    value: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    method: str
    level: float
    note: str = ""


def _alpha(level: float) -> float:
    return 1 - float(level)  # checked by the public callers (validate.params)


@validate.params(level=validate.level)
def t_halfwidth(num, den=None, *, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Estimate and Student-t half-width ``t_{n-1, 1-alpha/2} s / sqrt(n)``.

    ``s`` is the standard deviation (ddof 1) of ``num`` when ``den`` is None,
    else of the ratio's linearization ``(num_i - V den_i) / mean(den)``.
    """
    a = _alpha(level)
    num = np.asarray(num, dtype=float)
    n = num.shape[-1]
    if den is None:
        v, resid = num.mean(axis=-1), num
    else:
        den = np.asarray(den, dtype=float)
        sden = den.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            v = num.sum(axis=-1) / sden
            resid = (num - v[..., None] * den) / (sden / n)[..., None]
    s = resid.std(axis=-1, ddof=1) if n > 1 else np.full(np.shape(v), np.nan)
    from scipy.stats import t as student_t  # here: scipy.stats takes most of a second to import
    return v, student_t.ppf(1 - a / 2, max(n - 1, 1)) * s / np.sqrt(n)


@validate.params(level=validate.level)
def hoeffding_halfwidth(n: int, *, width, level: float = 0.95) -> np.ndarray:
    """Two-sided Hoeffding half-width ``(hi - lo) sqrt(log(2/alpha) / (2n))``."""
    a = _alpha(level)
    return np.asarray(width, dtype=float) * np.sqrt(np.log(2 / a) / (2 * n))


@validate.params(level=validate.level)
def bernstein_halfwidth(terms, *, width, level: float = 0.95) -> np.ndarray:
    """Two-sided empirical Bernstein half-width (Maurer & Pontil 2009, Theorem 4).

    ``sqrt(2 V_n L / n) + 7 (hi - lo) L / (3 (n - 1))``, ``L = log(4 / alpha)``
    (``alpha / 2`` per side), ``V_n`` the sample variance (ddof 1) of the terms.
    """
    a = _alpha(level)
    x = np.asarray(terms, dtype=float)
    n = x.shape[-1]
    if n < 2:
        return np.full(x.shape[:-1], np.inf)
    L = np.log(4 / a)
    return np.sqrt(2 * x.var(axis=-1, ddof=1) * L / n) + 7 * np.asarray(width) * L / (3 * (n - 1))


def effective_max_weight(estimator: str, max_weight, hyperparameter=None):
    """Largest weight an estimator can put on a row, given the largest importance weight ``W``.

    Its record's ``max_weight(W, h)`` (:mod:`ulr.ope.registry`): ``min(W, M)`` (clipped
    IPS), ``min(W, tau)`` (Switch-DR), ``max_{w <= W} lam w / (w^2 + lam)`` (DRos:
    ``sqrt(lam) / 2`` once ``W >= sqrt(lam)``), ``W / (1 - lam + lam W)`` (sub-Gaussian),
    ``0`` (DM); ``W`` for a record without one.
    """
    W = np.asarray(max_weight, dtype=float)
    bound = registry.get(estimator).max_weight
    return W if bound is None else bound(W, hyperparameter)


def term_range(estimator: str, *, max_weight, hyperparameter=None,
               reward_range=(0.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """``[lo, hi]`` containing every per-row term of a linear estimator.

    With rewards (and reward-model predictions) in ``[a, b]`` and effective
    largest weight ``W'`` (:func:`effective_max_weight`): IPS-type terms
    ``w' r`` lie in ``[min(0, W' a), max(0, W' b)]``; DR-type terms
    ``q_t + w' (r - q_l)`` in ``[a - W' (b - a), b + W' (b - a)]``.
    """
    a, b = map(float, reward_range)
    if not b > a:
        raise ValueError("reward_range must be (low, high) with low < high")
    Wp = effective_max_weight(estimator, max_weight, hyperparameter)
    if not registry.get(estimator).needs_reward_model:  # IPS-type
        return np.minimum(0.0, Wp * a), np.maximum(0.0, Wp * b)
    return a - Wp * (b - a), b + Wp * (b - a)


@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap, seed=validate.seed)
def interval(estimator: str, reward, weight, *, method: str = "bootstrap", level: float = 0.95,
             hyperparameter=None, q_logged=None, q_target=None, max_weight=None,
             reward_range=(0.0, 1.0), n_bootstrap: int = 1000, cluster=None,
             seed=0) -> Bounds:
    """Estimate of ``estimator`` with a ``method`` interval at ``level``.

    Parameters
    ----------
    estimator : a name in :data:`ulr.ope.registry.REGISTRY`.
    reward, weight, q_logged, q_target : arrays (n,) (or (draws, n) except for bootstrap).
    method : ``bootstrap``, ``t``, ``hoeffding`` or ``bernstein``.
    hyperparameter : the family's clip, tau or lam.
    max_weight : largest importance weight the two policies allow (concentration
        bounds); default the largest in the log (a plug-in).
    reward_range : ``(a, b)``: rewards and reward-model predictions lie in it.
    n_bootstrap, cluster, seed : as in :func:`ulr.ope.estimators.bootstrap_ratio`.
    """
    if method not in INTERVALS:
        raise ValueError(f"unknown interval {method!r}; choose from {', '.join(INTERVALS)}")
    num, den = registry.row_terms(estimator, reward, weight, hyperparameter=hyperparameter,
                                  q_logged=q_logged, q_target=q_target)
    ratio = registry.get(estimator).self_normalized
    if method == "bootstrap":
        value = num.sum(axis=-1) / den.sum(axis=-1)
        b = est.bootstrap_ratio(num, den, cluster=cluster, n_bootstrap=n_bootstrap, level=level,
                                seed=seed)
        shape = np.shape(value)
        return Bounds(value, b.lower.reshape(shape), b.upper.reshape(shape), method, level)
    if method == "t":
        v, h = t_halfwidth(num, den if ratio else None, level=level)
        influence = registry.get(estimator).influence
        if influence is not None:  # e.g. SNDR's delta method (its ratio form double-counts)
            h = t_halfwidth(influence(np.asarray(reward, float), np.asarray(weight, float),
                                      hyperparameter, q_logged, q_target), level=level)[1]
        return Bounds(v, v - h, v + h, method, level)
    value = num.mean(axis=-1)
    if ratio:
        nan = np.full(np.shape(value), np.nan)
        return Bounds(num.sum(axis=-1) / den.sum(axis=-1), nan, nan, method, level,
                      note=f"{method} bounds need a linear estimator; {estimator} is "
                           "self-normalized")
    W = np.max(weight, axis=-1) if max_weight is None else max_weight
    lo, hi = term_range(estimator, max_weight=W, hyperparameter=hyperparameter,
                        reward_range=reward_range)
    n = num.shape[-1]
    h = (hoeffding_halfwidth(n, width=hi - lo, level=level) if method == "hoeffding"
         else bernstein_halfwidth(num, width=hi - lo, level=level))
    note = "" if max_weight is not None else "the largest weight is the log's own (a plug-in)"
    a, b = map(float, reward_range)  # every policy's value lies in the rewards' range
    lower = np.maximum(value - h, np.maximum(lo, a))
    upper = np.minimum(value + h, np.minimum(hi, b))
    return Bounds(value, lower, upper, method, level, note)


@validate.params(level=validate.level)
def difference_bound(estimator: str, reward, weight, reference, *, method: str,
                     level: float = 0.95, hyperparameter=None, q_logged=None, q_target=None,
                     max_weight=None, reward_range=(0.0, 1.0)) -> tuple[float, float]:
    """Concentration bound of ``V_estimator - mean(reference)``, paired on the rows.

    ``reference`` (n,): per-row terms of the other value (e.g. the logging policy's
    rewards, in ``reward_range``). The paired terms ``num_i - reference_i`` lie in
    ``[lo - b, hi - a]`` (``[lo, hi]`` from :func:`term_range`, ``[a, b]`` the
    rewards' range), and the bound (``hoeffding`` or ``bernstein``) is taken on them,
    so it agrees with the bounds on each value. Linear estimators only.
    """
    if method not in CONCENTRATION:
        raise ValueError(f"{method} is not a concentration bound")
    if registry.get(estimator).self_normalized:
        raise ValueError(f"{estimator} is self-normalized: no {method} bound")
    num, _ = registry.row_terms(estimator, reward, weight, hyperparameter=hyperparameter,
                                q_logged=q_logged, q_target=q_target)
    d = num - np.asarray(reference, dtype=float)
    W = np.max(weight, axis=-1) if max_weight is None else max_weight
    lo, hi = term_range(estimator, max_weight=W, hyperparameter=hyperparameter,
                        reward_range=reward_range)
    a, b = map(float, reward_range)
    width = (hi - lo) + (b - a)
    n = d.shape[-1]
    h = (hoeffding_halfwidth(n, width=width, level=level) if method == "hoeffding"
         else bernstein_halfwidth(d, width=width, level=level))
    v = d.mean(axis=-1)
    return float(np.maximum(v - h, a - b)), float(np.minimum(v + h, b - a))
