"""Off-policy estimators of a target policy's value from logged bandit feedback.

Every estimator here is a ratio of two sums over logged rows,
``V = sum_i num_i / sum_i den_i``, which lets one bootstrap routine serve all
of them and lets the point estimates broadcast over a leading "draws" axis
(arrays of shape ``(..., n)``; the last axis is the rows of one log).

Notation: row ``i`` logged context ``x_i``, action ``a_i``, reward ``r_i`` and
the logging policy's probability ``p_i = pi_0(a_i | x_i)`` (the propensity).
The target policy gives ``pi(a_i | x_i)``; the importance weight is
``w_i = pi(a_i | x_i) / p_i``.

References
----------
Horvitz & Thompson (1952); Strehl, Langford, Li & Kakade, "Learning from
logged implicit exploration data", NeurIPS 2010 (clipping); Swaminathan &
Joachims, "The self-normalized estimator for counterfactual learning",
NeurIPS 2015 (SNIPS); Dudik, Langford & Li, "Doubly robust policy evaluation
and learning", ICML 2011 (DR); Kish, "Survey Sampling" (1965) (effective
sample size).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ulr import validate
from ulr.ope import registry
from ulr.ope.terms import (check_rows, default_clip, model_arrays as _model,  # noqa: F401
                           power_weight, shrink_weight, sndr, sndr_terms, switch_weight)


def importance_weights(target_prob, propensity) -> np.ndarray:
    """``w_i = pi(a_i | x_i) / p_i``.

    Parameters
    ----------
    target_prob : array (..., n), target probabilities of the logged actions, in [0, 1].
    propensity : array (..., n), logging probabilities of the logged actions, in (0, 1].
    """
    t = np.asarray(target_prob, dtype=float)
    p = np.asarray(propensity, dtype=float)
    if t.shape != p.shape:
        raise ValueError(f"target_prob {t.shape} and propensity {p.shape} differ in shape")
    if np.any(~np.isfinite(p)) or np.any(p <= 0) or np.any(p > 1):
        raise ValueError("propensities must lie in (0, 1]")
    if np.any(~np.isfinite(t)) or np.any(t < 0) or np.any(t > 1 + 1e-9):
        raise ValueError("target probabilities must lie in [0, 1]")
    return t / p


def ips(reward, weight) -> np.ndarray:
    """Inverse propensity scoring, ``V_IPS = (1/n) sum_i w_i r_i``.

    Unbiased when ``p_i > 0`` wherever the target policy has mass
    (Horvitz & Thompson 1952). Shape ``(..., n) -> (...)``.
    """
    r, w = check_rows(reward, weight)
    return np.mean(w * r, axis=-1)


def clipped_ips(reward, weight, *, clip: float) -> np.ndarray:
    """Clipped IPS, ``(1/n) sum_i min(w_i, M) r_i`` (Strehl et al. 2010).

    For non-negative rewards the clipped weight never exceeds ``w_i``, so the
    estimator is biased downwards by ``E[(w - M)_+ r]`` and has lower variance.
    """
    if np.isnan(clip) or clip <= 0:
        raise ValueError("clip must be a positive number (inf = no clipping)")
    r, w = check_rows(reward, weight)
    return np.mean(np.minimum(w, clip) * r, axis=-1)


def snips(reward, weight) -> np.ndarray:
    """Self-normalized IPS, ``sum_i w_i r_i / sum_i w_i`` (Swaminathan & Joachims 2015).

    Invariant to adding a constant to all rewards (equivariant); biased by
    O(1/n) but usually of much lower variance than IPS. ``nan`` when all
    weights are zero.
    """
    r, w = check_rows(reward, weight)
    num = np.sum(w * r, axis=-1)
    den = np.sum(w, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def doubly_robust(reward, weight, *, q_logged, q_target) -> np.ndarray:
    """Doubly robust estimate (Dudik et al. 2011).

    ``V_DR = (1/n) sum_i [ sum_a pi(a | x_i) q(x_i, a) + w_i (r_i - q(x_i, a_i)) ]``

    Parameters
    ----------
    q_logged : array (..., n), the reward model at the logged action, ``q(x_i, a_i)``.
    q_target : array (..., n), the reward model averaged over the target
        policy, ``sum_a pi(a | x_i) q(x_i, a)`` (the direct-method term).

    Unbiased if either the propensities or the reward model are correct.
    """
    r, w = check_rows(reward, weight)
    ql = np.asarray(q_logged, dtype=float)
    qt = np.asarray(q_target, dtype=float)
    return np.mean(qt + w * (r - ql), axis=-1)


def direct_method(q_target) -> np.ndarray:
    """Direct method, ``(1/n) sum_i sum_a pi(a | x_i) q(x_i, a)``: the reward model alone."""
    return np.mean(np.asarray(q_target, dtype=float), axis=-1)


def ratio_terms(estimator: str, reward, weight, *, clip: float | None = None,
                q_logged=None, q_target=None) -> tuple[np.ndarray, np.ndarray]:
    """Per-row numerator and denominator terms: ``V = sum num / sum den``.

    The terms of ``estimator``'s record in :mod:`ulr.ope.registry` (e.g. ``ips``:
    ``(w r, 1)``; ``snips``: ``(w r, w)``; ``dr``: ``(q_target + w (r - q_logged), 1)``);
    ``clip`` is its hyperparameter (clipped IPS's ``M``, Switch-DR's ``tau``, ...), ignored
    by an estimator without one. See :func:`ulr.ope.registry.row_terms`.
    """
    return registry.row_terms(estimator, reward, weight, hyperparameter=clip,
                              q_logged=q_logged, q_target=q_target)


def effective_sample_size(weight) -> np.ndarray:
    """Kish's effective sample size, ``(sum_i w_i)^2 / sum_i w_i^2``.

    Equals ``n`` when all weights are equal; ``0`` when all are zero.
    """
    w = np.asarray(weight, dtype=float)
    s2 = np.sum(w * w, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s2 > 0, np.sum(w, axis=-1) ** 2 / np.where(s2 > 0, s2, 1.0), 0.0)


@dataclass(frozen=True)
class Interval:
    """Bootstrap percentile interval per estimator (arrays of shape ``(m,)``)."""

    lower: np.ndarray
    upper: np.ndarray
    se: np.ndarray  # standard deviation of the bootstrap replicates
    n_bootstrap: int
    level: float


#: draws x units above which :func:`resample_counts` counts by a compiled loop
#: (:mod:`ulr.ope.resample_jit`): below it numpy's ``bincount`` is as quick and loading the
#: compiled loop (about a second on a fresh install) would slow a small log
COMPILED_COUNTS = 5_000_000


@validate.params(n_bootstrap=validate.n_bootstrap)
def resample_counts(units: int, n_bootstrap: int, rng, *, chunk: int = 250):
    """Multinomial bootstrap counts, ``chunk`` draws at a time.

    Yields ``(rows, C)``: ``rows`` the slice of draws and ``C`` (draws x units)
    how often each resampling unit is drawn in each of them (``units`` draws
    with replacement), so per-unit sums ``S`` give the replicates as ``C @ S``.
    The counts are the same whichever way they are tallied (numpy's ``bincount``, one per
    draw, or, for large chunks, the compiled loop of :mod:`ulr.ope.resample_jit`, one
    replicate's draws at a time: the generator gives the same numbers in rows as in one
    block).
    For large chunks ``C`` is one matrix refilled for the next chunk: use it before
    asking for the next (a million-row log otherwise maps and faults 0.7 GB per chunk).
    """
    done = 0
    buf = None
    while done < n_bootstrap:
        b = min(chunk, n_bootstrap - done)
        if b * units >= COMPILED_COUNTS:
            from ulr.ope.resample_jit import count_into
            if buf is None or buf.shape[0] != b:
                buf = np.empty((b, units))
                scratch = np.zeros(units, dtype=np.uint16)
            for i in range(b):
                count_into(rng.integers(0, units, size=units), buf[i], scratch)
            counts = buf
        else:
            # one bincount per draw: a row of counts stays in the cache, where one bincount
            # of the whole block (offset indices) scattered over b x units int64 counts and
            # copied them to floats: 1.3-2.5x slower, the same counts (issue 54)
            idx = rng.integers(0, units, size=(b, units))
            counts = np.empty((b, units))
            for i in range(b):
                counts[i] = np.bincount(idx[i], minlength=units)
            del idx
        yield slice(done, done + b), counts
        done += b


def unit_sums(num, den, cluster):
    """Per-unit sums ``(S_num, S_den)`` (units x m): the rows, or their ``cluster`` sums."""
    m, n = num.shape
    if cluster is None:
        return num.T, den.T
    codes = np.unique(np.asarray(cluster), return_inverse=True)[1].ravel()
    if len(codes) != n:
        raise ValueError("cluster must have one entry per row")
    g = int(codes.max()) + 1
    s_num = np.zeros((g, m))
    s_den = np.zeros((g, m))
    np.add.at(s_num, codes, num.T)
    np.add.at(s_den, codes, den.T)
    return s_num, s_den


@validate.params(n_bootstrap=validate.required_bootstrap)
def ratio_replicates(num, den, *, cluster=None, n_bootstrap: int = 1000, seed=0,
                     chunk: int = 250) -> np.ndarray:
    """The ``(n_bootstrap, m)`` bootstrap replicates of ``sum num / sum den`` per row of
    ``num`` (NaN where a replicate's ``den`` sums to 0): what :func:`bootstrap_ratio` and
    :func:`ulr.ope.verdicts.bootstrap_difference` read (pass them as ``replicates=`` to
    draw them once for both)."""
    num = np.atleast_2d(np.asarray(num, dtype=float))
    den = np.atleast_2d(np.asarray(den, dtype=float))
    if num.shape != den.shape:
        raise ValueError("num and den differ in shape")
    s_num, s_den = unit_sums(num, den, cluster)
    rng = np.random.default_rng(seed)
    reps = np.empty((n_bootstrap, num.shape[0]))
    for rows, counts in resample_counts(s_num.shape[0], n_bootstrap, rng, chunk=chunk):
        nb = counts @ s_num
        db = counts @ s_den
        with np.errstate(invalid="ignore", divide="ignore"):
            reps[rows] = np.where(db > 0, nb / np.where(db > 0, db, 1.0), np.nan)
    return reps


@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap)
def bootstrap_ratio(num, den, *, cluster=None, n_bootstrap: int = 1000, level: float = 0.95,
                    seed=0, chunk: int = 250, replicates=None) -> Interval:
    """Percentile bootstrap interval for ratio estimators ``sum num / sum den``.

    The resampling units are the rows, or the clusters given by ``cluster``
    (e.g. the impression a row belongs to: rows shown together are not
    independent). All estimators share the same resamples. Vectorized over
    the bootstrap draws: per chunk of draws a count matrix ``C`` (draws x
    units) from multinomial resampling gives every replicate as
    ``(C @ S_num) / (C @ S_den)``, with ``S`` the per-unit sums.

    Parameters
    ----------
    num, den : arrays (m, n) (or (n,)) of per-row terms (see :func:`ratio_terms`).
    cluster : optional int array (n,) of resampling units.
    n_bootstrap : number of bootstrap draws (>= 50).
    level : two-sided confidence level in (0, 1).
    seed : seed or ``numpy.random.Generator``.
    replicates : optional (n_bootstrap, m) array of :func:`ratio_replicates` already drawn
        with these arguments (the paired difference reads the same ones).
    """
    reps = (ratio_replicates(num, den, cluster=cluster, n_bootstrap=n_bootstrap, seed=seed,
                             chunk=chunk) if replicates is None else replicates)
    m = reps.shape[1]
    a = (1 - level) / 2
    lower, upper, se = np.full(m, np.nan), np.full(m, np.nan), np.full(m, np.nan)
    ok = np.isfinite(reps).any(axis=0)  # e.g. SNIPS is undefined when all weights are 0
    if ok.any():
        r = reps[:, ok]
        lower[ok] = np.nanquantile(r, a, axis=0)
        upper[ok] = np.nanquantile(r, 1 - a, axis=0)
        se[ok] = np.nanstd(r, axis=0, ddof=1)
    return Interval(lower=np.atleast_1d(lower), upper=np.atleast_1d(upper),
                    se=np.atleast_1d(se), n_bootstrap=n_bootstrap, level=level)


# --------------------------------------------------------------------------- DR variants
#
# Each takes the reward model as ``q_logged = q(x_i, a_i)`` and
# ``q_target = sum_a pi(a | x_i) q(x_i, a)``, like :func:`doubly_robust`, and
# has per-row terms in its :mod:`ulr.ope.registry` record so intervals and SLOPE can use it.
# The formulas are those of Open Bandit Pipeline (Saito et al. 2021) given the
# same reward predictions.

def switch_dr(reward, weight, *, q_logged, q_target, tau: float) -> np.ndarray:
    """Switch doubly robust estimate (Wang, Agarwal & Dudik, "Optimal and adaptive
    off-policy evaluation in contextual bandits", ICML 2017, Switch-DR).

    ``V = (1/n) sum_i [ q_target_i + 1{w_i <= tau} w_i (r_i - q_logged_i) ]``

    DR where the weight is at most ``tau``; the reward model alone (direct
    method) where it is larger. ``tau = inf`` is DR, ``tau = 0`` is DM.
    Biased by the model's error on the switched-off actions.
    """
    r, w = check_rows(reward, weight)
    ql, qt = _model(q_logged, q_target, r)
    return np.mean(qt + switch_weight(w, tau=tau) * (r - ql), axis=-1)


def dros(reward, weight, *, q_logged, q_target, lam: float) -> np.ndarray:
    """Doubly robust with optimistic shrinkage (Su, Dimakopoulou, Krishnamurthy &
    Dudik, "Doubly robust off-policy evaluation with shrinkage", ICML 2020, the
    optimistic shrinkage; formula as in OBP `DoublyRobustWithShrinkage`).

    ``V = (1/n) sum_i [ q_target_i + w_i(lam) (r_i - q_logged_i) ]``,
    ``w_i(lam) = lam w_i / (w_i^2 + lam)``.

    The shrunk weight minimizes a bound on the mean squared error;
    ``lam = inf`` is DR, ``lam = 0`` is DM.
    """
    r, w = check_rows(reward, weight)
    ql, qt = _model(q_logged, q_target, r)
    return np.mean(qt + shrink_weight(w, lam=lam) * (r - ql), axis=-1)


def sg_ips(reward, weight, *, lam: float) -> np.ndarray:
    """Sub-Gaussian IPS (Metelli, Russo & Restelli, "Subgaussian and differentiable
    importance sampling for off-policy evaluation and learning", NeurIPS 2021, the
    power-mean correction; formula as in OBP `SubGaussianInverseProbabilityWeighting`).

    ``V = (1/n) sum_i w_i / (1 - lam + lam w_i) r_i``, ``lam`` in [0, 1].

    The corrected weight is at most ``1 / lam``; ``lam`` of order
    ``sqrt(log(1/delta) / n)`` gives sub-Gaussian concentration.
    """
    r, w = check_rows(reward, weight)
    return np.mean(power_weight(w, lam=lam) * r, axis=-1)


def sg_dr(reward, weight, *, q_logged, q_target, lam: float) -> np.ndarray:
    """Sub-Gaussian DR: DR with the corrected weight of :func:`sg_ips` (OBP
    ``SubGaussianDoublyRobust``). ``V = (1/n) sum_i [q_target_i + w_i(lam) (r_i - q_logged_i)]``.
    """
    r, w = check_rows(reward, weight)
    ql, qt = _model(q_logged, q_target, r)
    return np.mean(qt + power_weight(w, lam=lam) * (r - ql), axis=-1)
