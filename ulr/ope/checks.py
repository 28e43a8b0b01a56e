"""Checks that logged propensities can be a logging policy's action probabilities.

Both checks hold for a *time-varying* logging policy with *per-slot*
propensities (each row's ``p_i`` is the probability, at the time and in the
context of that row, that the logger put the logged action in that slot), and
for a log without a query column, where one "context" lumps many users.

1. **Bound** (exact, never a false alarm). Group the rows into decisions
   ``d`` = (context, slot). For any fixed moment ``t0`` the logger's
   probabilities of the distinct logged actions add up to at most 1, and each
   action's smallest logged propensity is at most its propensity at ``t0``, so

   ``B_d = sum_{a logged in d} min_{i: a_i = a} p_i <= 1``.

   Averaging propensities per pair instead (the old check) inflates the sum
   when a time-varying policy shows an item most when its propensity is high.

2. **Mean weight** (statistical). The target policy "uniform over the ``K_d``
   actions the logger could choose" has importance weights ``1 / (K_d p_i)``
   whose mean is exactly 1 under the logging policy. ``K_d`` is unknown but at
   least the number of distinct actions logged in ``d``, ``k_d``, so

   ``m = (1/n) sum_i 1 / (k_{d(i)} p_i)`` has expectation ``>= 1``.

   The check fires when the one-sided upper confidence bound of ``m`` (level
   ``1 - alpha``; standard error from the resampling clusters, i.e. impressions)
   is below 1: the propensities are too large to be probabilities of the
   logged actions (e.g. position-bias examination probabilities, or
   probabilities that add up to far more than 1 within one decision).

With propensities per *list* (the probability an item is shown anywhere in a
list of ``L`` slots) the decision is the context and both bounds are ``L``.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

ALPHA = 0.001
BOUND_TOLERANCE = 1e-6


def _codes(*keys) -> tuple[np.ndarray, int]:
    keys = [np.asarray(k, dtype=np.int64) for k in keys]
    stacked = np.stack(keys, axis=1)
    _, inv = np.unique(stacked, axis=0, return_inverse=True)
    inv = inv.ravel()
    return inv, int(inv.max()) + 1


def propensity_checks(*, context, action, propensity, slot=None, cluster=None,
                      per_slot: bool = True, n_slots: int = 1, alpha: float = ALPHA) -> dict:
    """Both checks on one log's rows.

    Parameters
    ----------
    context, action : int arrays (n,), the row's context and logged action.
    propensity : float array (n,) in (0, 1].
    slot : optional int array (n,); decisions are (context, slot) when ``per_slot``.
    cluster : optional int array (n,), resampling units (impressions) for the standard error.
    per_slot : whether propensities are per slot (default) or per list.
    n_slots : list length ``L`` (only used when ``per_slot`` is false).
    alpha : one-sided level of the mean-weight check.

    Returns
    -------
    dict with ``max_bound`` (largest ``B_d``), ``limit`` (1 or ``L``),
    ``mean_weight`` ``m``, ``upper`` (its upper confidence bound), ``decisions``,
    ``bound_fails`` and ``weight_fails`` (booleans).
    """
    p = np.asarray(propensity, dtype=float)
    n = len(p)
    limit = 1.0 if per_slot or slot is None else float(n_slots)
    keys = [context] + ([slot] if per_slot and slot is not None else [])
    dec, n_dec = _codes(*keys)
    da, n_da = _codes(dec, action)  # (decision, action)
    pmin = np.full(n_da, np.inf)
    np.minimum.at(pmin, da, p)
    da_dec = np.zeros(n_da, dtype=np.int64)
    da_dec[da] = dec
    bound = np.bincount(da_dec, weights=pmin, minlength=n_dec)
    k_obs = np.bincount(da_dec, minlength=n_dec).astype(float)
    w = limit / (k_obs[dec] * p)
    m = float(w.mean())
    units = np.arange(n) if cluster is None else np.unique(cluster, return_inverse=True)[1].ravel()
    g = int(units.max()) + 1
    resid = np.bincount(units, weights=w - m, minlength=g)
    se = float(np.sqrt(g / max(g - 1, 1) * np.sum(resid ** 2)) / n) if g > 1 else np.inf
    upper = m + norm.ppf(1 - alpha) * se
    return {"max_bound": float(bound.max()), "limit": limit, "mean_weight": m,
            "upper": float(upper), "decisions": n_dec,
            "bound_fails": bool(bound.max() > limit + BOUND_TOLERANCE),
            "weight_fails": bool(upper < 1.0)}


def per_slot_fact(info) -> bool:
    """Whether the dataset declares its propensities per slot (default: yes).

    Reads the fact defensively from ``info.mapping``: a key
    ``propensity_per_slot`` (or ``facts: {propensity_per_slot: ...}``), as the
    mapping work of issue 11 stores it; anything else means per slot.
    """
    mapping = getattr(info, "mapping", None)
    if not isinstance(mapping, dict):
        return True
    facts = mapping.get("facts") if isinstance(mapping.get("facts"), dict) else mapping
    v = facts.get("propensity_per_slot", facts.get("per_slot", True))
    if isinstance(v, str):
        return v.strip().lower() not in ("0", "false", "no", "list", "per_list")
    return bool(v)
