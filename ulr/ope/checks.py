"""Checks that logged propensities can be a logging policy's action probabilities.

The check holds for a *time-varying* logging policy with *per-slot*
propensities (each row's ``p_i`` is the probability, at the time and in the
context of that row, that its logger put the logged action in that slot), for
logs mixing several loggers, and for a log without a query column, where one
"context" lumps many users.

Averaging propensities per (context, action) and summing them (a tempting check)
is not: a time-varying policy shows an item most when its propensity is high,
so the averages are inflated and their sum exceeds 1 on a legitimate log.
Even the smallest logged propensity of each action can add up to more than 1
(each action's rows come from the times it was likely).

**Mean weight.** Group the rows into decisions ``d`` = (context, slot). The
target policy "uniform over the ``K_d`` actions the logger could choose" has
importance weights ``1 / (K_d p_i)`` whose mean is exactly 1 under any
logging policy, at every moment, for every logger. ``K_d`` is unknown but at
least the number of distinct actions logged in ``d``, ``k_d``, so

``m = (1/n) sum_i 1 / (k_{d(i)} p_i)`` has expectation ``>= 1``.

The check fires when the one-sided upper confidence bound of ``m`` (at
``level``, 0.999; standard error from the resampling clusters, i.e. impressions;
shifted by Johnson's skewness correction ``mu3 / (6 s^2 n)``, as the weights
are right-skewed) is below 1: the propensities are too large to be the probabilities of the
logged actions (e.g. position-bias examination probabilities, probabilities
that add up to far more than 1 within one decision, or another policy's
probabilities that are large where the logger acted).

With propensities per *list* (the probability an item is shown anywhere in a
list of ``L`` slots) the decision is the context and the weights are ``L / (k_d p_i)``.
"""

from __future__ import annotations

import numpy as np

from ulr import validate
from ulr.stats import normal_quantile

LEVEL = 0.999  # one-sided; nominally one false alarm per thousand valid logs


def _codes(*keys) -> tuple[np.ndarray, int]:
    keys = [np.asarray(k, dtype=np.int64) for k in keys]
    stacked = np.stack(keys, axis=1)
    _, inv = np.unique(stacked, axis=0, return_inverse=True)
    inv = inv.ravel()
    return inv, int(inv.max()) + 1


@validate.retired(n_slots="positions")
@validate.params(level=validate.level)
def propensity_checks(*, context, action, propensity, slot=None, cluster=None,
                      per_slot: bool = True, positions: int = 1, level: float = LEVEL) -> dict:
    """The mean-weight check on one log's rows.

    Parameters
    ----------
    context, action : int arrays (n,), the row's context and logged action.
    propensity : float array (n,) in (0, 1].
    slot : optional int array (n,); decisions are (context, slot) when ``per_slot``.
    cluster : optional int array (n,), resampling units (impressions) for the standard error.
    per_slot : whether propensities are per slot (default) or per list.
    positions : list length ``L`` (only used when ``per_slot`` is false).
    level : one-sided confidence level of the mean-weight check's upper bound.

    Returns
    -------
    dict with ``limit`` (1 or ``L``), ``mean_weight`` ``m``, ``upper`` (its upper
    confidence bound), ``lower`` (the symmetric lower bound), ``decisions`` and
    ``fails`` (boolean).
    """
    p = np.asarray(propensity, dtype=float)
    n = len(p)
    limit = 1.0 if per_slot or slot is None else float(positions)
    keys = [context] + ([slot] if per_slot and slot is not None else [])
    dec, n_dec = _codes(*keys)
    da, n_da = _codes(dec, action)  # (decision, action)
    da_dec = np.zeros(n_da, dtype=np.int64)
    da_dec[da] = dec
    k_obs = np.bincount(da_dec, minlength=n_dec).astype(float)
    w = limit / (k_obs[dec] * p)
    m = float(w.mean())
    units = np.arange(n) if cluster is None else np.unique(cluster, return_inverse=True)[1].ravel()
    g = int(units.max()) + 1
    resid = np.bincount(units, weights=w - m, minlength=g)
    se = float(np.sqrt(g / max(g - 1, 1) * np.sum(resid ** 2)) / n) if g > 1 else np.inf
    # Johnson's (1978) skewness correction: right-skewed weights put the sample
    # mean below the true mean more often than not, and the normal bound with it.
    mu3 = float(np.mean((w - m) ** 3))
    var = float(np.var(w))
    shift = mu3 / (6 * var * n) if var > 0 else 0.0
    z = normal_quantile(level)
    upper = m + max(shift, 0.0) + z * se
    return {"limit": limit, "mean_weight": m, "upper": float(upper),
            "lower": float(m - z * se), "decisions": n_dec, "fails": bool(upper < 1.0)}


def per_slot_fact(info) -> bool:
    """Whether the dataset declares its propensities per slot (default: yes).

    Reads the fact defensively from ``info.mapping``: a key
    ``propensity_per_slot`` (or ``facts: {propensity_per_slot: ...}``), as the
    dataset mapping stores it; anything else means per slot.
    """
    mapping = getattr(info, "mapping", None)
    if not isinstance(mapping, dict):
        return True
    facts = mapping.get("facts") if isinstance(mapping.get("facts"), dict) else mapping
    v = facts.get("propensity_per_slot", facts.get("per_slot", True))
    if isinstance(v, str):
        return v.strip().lower() not in ("0", "false", "no", "list", "per_list")
    return bool(v)
