"""Regret bounds drawn next to the simulated curves.

- :func:`ucb1_upper_bound` -- finite-time, gap-dependent upper bound on the
  expected regret of the UCB1 index used by :class:`ulr.bandits.policies.RankedUCB1`
  with ``K = 1`` (plain multi-armed bandit), derived in docs/bandits.md.
- :func:`cascade_lower_bound` -- the asymptotic lower bound of Kveton et al.
  (ICML 2015, Theorem 4) for the class ``B_LB(L, K, p, delta)``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy

from ulr import validate
from ulr.errors import UlrError

ZETA3 = 1.2020569031595942  # sum_{t >= 1} t^-3


def kl_bernoulli(p, q) -> np.ndarray:
    """Kullback-Leibler divergence ``KL(p, q)`` of Bernoulli(p) from Bernoulli(q).

    ``KL(p, q) = p log(p / q) + (1 - p) log((1 - p) / (1 - q))``, with
    ``0 log 0 = 0``; infinite when ``q`` is 0 or 1 and differs from ``p``.
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return xlogy(p, p) - xlogy(p, q) + xlogy(1 - p, 1 - p) - xlogy(1 - p, 1 - q)


def ucb1_upper_bound(w, t) -> np.ndarray:
    r"""Upper bound on the expected cumulative regret of UCB1 after ``t`` steps.

    Setting: arms with Bernoulli rewards of means ``w_1..w_L``, gaps
    ``Delta_i = max(w) - w_i``. Before step 1 every arm is observed once for free
    (``T_0(i) = 1``; not counted as regret). At step ``t = 1, 2, ...`` the
    algorithm plays

        I_t = argmax_i  w_hat_i + sqrt(2 ln t / T_{t-1}(i))

    (ties to any arm), where ``T_{t-1}(i) >= 1`` counts the observations of arm
    ``i`` including the free one. Then for every ``n >= 1``

        E[R(n)] <= sum_{i: Delta_i > 0} Delta_i * (ceil(8 ln n / Delta_i^2) - 1 + 2 zeta(3)),

    with ``zeta(3) = sum_t t^-3 = 1.2021``; we also use ``E[R(n)] <= n max_i Delta_i``
    and return the smaller of the two.

    Following Auer, Cesa-Bianchi & Fischer (2002, Thm. 1), redone for this index and
    initialization: a union bound over the ``t`` values of ``T(*)`` and ``T(i)`` with
    Hoeffding's inequality gives ``t^-3`` per step and event, hence the ``2 zeta(3)``;
    the derivation step by step is in docs/bandits.md.

    The index uses ``ln t`` of the current step, not of the horizon, so the
    bound holds at every ``n`` along the run and can be drawn as a curve.

    Parameters
    ----------
    w : array-like of shape (L,)
        Arm means.
    t : int or array-like of int
        Step(s) ``n >= 1`` at which to evaluate the bound.

    Returns
    -------
    ndarray
        The bound, same shape as ``t``.
    """
    w = np.asarray(w, dtype=np.float64).ravel()
    t = np.asarray(t, dtype=np.float64)
    if np.any(t < 1):
        raise UlrError("The UCB1 bound is defined for t >= 1.")
    gaps = w.max() - w
    gaps = gaps[gaps > 0]
    if gaps.size == 0:
        return np.zeros_like(t)
    log_t = np.log(t)[..., None]
    ell = np.maximum(1.0, np.ceil(8.0 * log_t / gaps**2))
    bound = (gaps * (ell - 1.0 + 2.0 * ZETA3)).sum(axis=-1)
    return np.minimum(bound, t * gaps.max())


@validate.retired(k="positions")
def cascade_lower_bound_rate(*, items: int, positions: int, p: float, delta: float) -> float:
    """Constant ``c`` of the Kveton et al. (2015) lower bound ``R(n) >= c log n``.

    For any uniformly efficient algorithm on ``B_LB(L, K, p, delta)`` (Theorem 4), with
    ``L = items`` and the list length ``K = positions``,

        liminf_{n -> inf} R(n) / log n >= (L - K) delta (1 - p)^(K - 1) / KL(p - delta, p).
    """
    k = positions
    if not (0 < delta <= p <= 1) or not (1 <= k < items):
        raise UlrError("The cascade lower bound needs 0 < delta <= p <= 1 and 1 <= K < L.")
    kl = float(kl_bernoulli(p - delta, p))
    return (items - k) * delta * (1 - p) ** (k - 1) / kl


@validate.retired(k="positions")
def cascade_lower_bound(t, *, items: int, positions: int, p: float, delta: float
                        ) -> np.ndarray:
    """Asymptotic lower bound ``c log t`` (see :func:`cascade_lower_bound_rate`).

    It is an asymptotic statement: regret curves eventually grow at least at
    this rate, they need not stay above it at small ``t``.
    """
    c = cascade_lower_bound_rate(items=items, positions=positions, p=p, delta=delta)
    return c * np.log(np.maximum(np.asarray(t, dtype=np.float64), 1.0))


def env_bounds(env, t, *, algorithms=()) -> dict:
    """The bounds that apply to ``env`` and ``algorithms``, evaluated at ``t``.

    Returns ``{"ucb1 upper bound": array, "asymptotic lower bound (Kveton et al.)": array}``
    with only the entries that apply: the UCB1 bound when ``"ucb1"`` is among
    the algorithms and ``env.k == 1`` (the plain bandit), the lower bound for
    the ``kveton`` environment.
    """
    out = {}
    t = np.asarray(t, dtype=np.float64)
    if "ucb1" in algorithms and env.k == 1:
        out["ucb1 upper bound"] = ucb1_upper_bound(env.w, np.maximum(t, 1))
    if env.name == "kveton":
        out["asymptotic lower bound (Kveton et al.)"] = cascade_lower_bound(
            t, items=env.n_items, positions=env.k, p=env.params["p"], delta=env.params["delta"])
    return out

