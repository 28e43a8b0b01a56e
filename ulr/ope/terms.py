"""The per-row building blocks of the off-policy estimators: row checks, the default clip,
the weight transforms of the DR variants and SNDR's terms.

They sit below both :mod:`ulr.ope.estimators` (which re-exports them, its public names
unchanged) and :mod:`ulr.ope.registry` (whose records build each estimator's per-row terms
from them), so that the estimators' module can read the registry without an import cycle.
Notation and references: :mod:`ulr.ope.estimators`.
"""

from __future__ import annotations

import numpy as np


def check_rows(reward, weight):
    """``(reward, weight)`` as float arrays of one shape with at least one row."""
    r = np.asarray(reward, dtype=float)
    w = np.asarray(weight, dtype=float)
    if r.shape != w.shape:
        raise ValueError(f"reward {r.shape} and weight {w.shape} differ in shape")
    if r.shape[-1] == 0:
        raise ValueError("the log has no rows")
    return r, w


def default_clip(weight) -> np.ndarray:
    """Default clipping threshold, ``M = sqrt(n) * mean(w)`` and at least 1.

    The truncation level of Ionides, "Truncated importance sampling" (JCGS
    2008): it only trims weights that are extreme for the sample size, and its
    bias vanishes as ``n`` grows. A per-log quantile would clip a fixed share of
    rows and, being itself random, can add variance instead of removing it.
    Works along the last axis (one threshold per log).
    """
    w = np.asarray(weight, dtype=float)
    n = w.shape[-1]
    return np.maximum(1.0, np.sqrt(n) * w.mean(axis=-1))


def model_arrays(q_logged, q_target, like):
    """``(q_logged, q_target)`` as float arrays of the reward's shape."""
    ql = np.asarray(q_logged, dtype=float)
    qt = np.asarray(q_target, dtype=float)
    if ql.shape != like.shape or qt.shape != like.shape:
        raise ValueError("q_logged and q_target need the shape of the reward")
    return ql, qt


def sndr(reward, weight, *, q_logged, q_target) -> np.ndarray:
    """Self-normalized doubly robust estimate.

    ``V_SNDR = (1/n) sum_i q_target_i + sum_i w_i (r_i - q_logged_i) / sum_i w_i``

    The DR correction is normalized by the weights' sum instead of ``n``, as
    SNIPS normalizes IPS (Swaminathan & Joachims, NeurIPS 2015; Kallus &
    Uehara, NeurIPS 2019; OBP ``SelfNormalizedDoublyRobust``). Biased by
    O(1/n), bounded correction. ``nan`` when all weights are zero.
    """
    r, w = check_rows(reward, weight)
    ql, qt = model_arrays(q_logged, q_target, r)
    den = np.sum(w, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.where(den > 0, np.sum(w * (r - ql), axis=-1) / np.where(den > 0, den, 1.0),
                        np.nan)
    return np.mean(qt, axis=-1) + corr


def sndr_terms(reward, weight, *, q_logged, q_target) -> np.ndarray:
    """Per-row terms whose mean has SNDR's standard error (the delta method).

    ``x_i = q_target_i + w_i (r_i - q_logged_i - C) / mean(w)``, ``C`` the SNDR
    correction of :func:`sndr`. Their mean is ``mean(q_target)``, not ``V_SNDR``: use
    them for the spread only. (The ratio form of :func:`~ulr.ope.registry.row_terms` holds ``mean(w)``
    fixed and counts the weights' noise twice.)
    """
    r, w = check_rows(reward, weight)
    ql, qt = model_arrays(q_logged, q_target, r)
    corr = sndr(r, w, q_logged=ql, q_target=qt) - np.mean(qt, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return qt + w * (r - ql - np.expand_dims(corr, -1)) / np.mean(w, axis=-1,
                                                                        keepdims=True)


def switch_weight(weight, *, tau: float) -> np.ndarray:
    """``w_i 1{w_i <= tau}``: the weight Switch-DR keeps (``tau = inf`` keeps all)."""
    if np.isnan(tau) or tau < 0:
        raise ValueError("tau must be a non-negative number (inf = plain DR)")
    w = np.asarray(weight, dtype=float)
    return np.where(w <= tau, w, 0.0)


def shrink_weight(weight, *, lam: float) -> np.ndarray:
    """Optimistic shrinkage ``lam w / (w^2 + lam)`` (``lam = inf``: ``w``; ``lam = 0``: 0)."""
    if np.isnan(lam) or lam < 0:
        raise ValueError("lam must be a non-negative number (inf = plain DR)")
    w = np.asarray(weight, dtype=float)
    if np.isinf(lam):
        return w.copy()
    if lam == 0:
        return np.zeros_like(w)
    return lam * w / (w * w + lam)


def power_weight(weight, *, lam: float) -> np.ndarray:
    """Harmonic correction ``w / (1 - lam + lam w)`` of Metelli et al. (``lam = 0``: ``w``)."""
    if np.isnan(lam) or not 0 <= lam <= 1:
        raise ValueError("lam must lie in [0, 1]")
    w = np.asarray(weight, dtype=float)
    return w / (1 - lam + lam * w)
