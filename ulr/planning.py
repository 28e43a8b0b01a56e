"""How much more data would settle a question: one planner for every ``to_settle``.

A mean over ``n`` independent units has a standard error that scales as
``1 / sqrt(n)``. An interval ``[lower, upper]`` around an estimate ``delta`` at
``n`` units shrinks to ``[delta - h sqrt(n / N), ...]`` at ``N`` units, ``h`` the
half-width on the side of 0. It excludes 0 once ``h sqrt(n / N) < |delta|``:

    N = n (h / |delta|)^2.

At ``N`` units an estimate whose true value is ``delta`` excludes 0 in about half
of the logs (its interval then just reaches 0): the plan is the size at which the
difference, *if it is real and this large*, becomes visible about half the time;
not a guarantee.

The rule needs an interval to scale: where the estimate rests on too few effective
clicks for its interval to be trusted (below ``min_effective_clicks``), no size is
derived from its width; the plan says so and gives the rows that would bring that
many effective clicks instead (effective clicks grow in proportion to rows).

Reference: the usual sample-size rule, e.g. Kohavi, Tang & Xu, "Trustworthy Online
Controlled Experiments" (2020), ch. 17.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Plan", "plan_to_exclude_zero"]


@dataclass(frozen=True)
class Plan:
    """A planned sample size.

    Attributes
    ----------
    more : int or None
        Units to add (``None`` when the planner cannot say).
    total : int or None
        Units in all, ``n + more``.
    reason : str
        ``"exclude_zero"`` (the 1/sqrt(n) rule), ``"few_effective_clicks"`` (the
        interval cannot be trusted; ``more`` brings enough effective clicks), or
        ``"no_difference"`` / ``"no_interval"`` (nothing to plan from).
    """

    more: int | None
    total: int | None
    reason: str


def plan_to_exclude_zero(n: float, delta: float, lower: float, upper: float, *,
                         effective_clicks: float | None = None,
                         min_effective_clicks: float = 30) -> Plan:
    """Units to add so that the interval of ``delta`` excludes 0, if ``delta`` stays.

    Parameters
    ----------
    n : units behind the interval now (rows, or the resampled impressions).
    delta : the estimated difference.
    lower, upper : its interval (may be asymmetric: the side towards 0 is used).
    effective_clicks : the effective clicks behind the estimate, when known.
    min_effective_clicks : below this many the interval's width is not trusted.

    Returns
    -------
    Plan
        ``more = ceil(n (h / |delta|)^2 - n)`` with ``h`` the distance from ``delta``
        to the bound on the side of 0 (see the module docstring).

    Examples
    --------
    >>> plan_to_exclude_zero(1000, 0.01, -0.002, 0.022).more
    440
    """
    n = float(n)
    if not (np.isfinite(n) and n > 0):
        return Plan(None, None, "no_interval")
    if effective_clicks is not None and effective_clicks < min_effective_clicks:
        k = max(float(effective_clicks), 0.0)
        if k <= 0:
            return Plan(None, None, "few_effective_clicks")
        more = max(1, math.ceil(n * min_effective_clicks / k - n))
        return Plan(more, int(n) + more, "few_effective_clicks")
    if not (np.isfinite(delta) and np.isfinite(lower) and np.isfinite(upper)):
        return Plan(None, None, "no_interval")
    if delta == 0:
        return Plan(None, None, "no_difference")
    h = (delta - lower) if delta > 0 else (upper - delta)
    if h <= 0:
        return Plan(None, None, "no_interval")
    total = n * (h / abs(delta)) ** 2
    more = max(0, math.ceil(total - n))
    return Plan(more, int(n) + more, "exclude_zero")
