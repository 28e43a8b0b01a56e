"""How precisely each position's theta is known: its interval (bootstrap, else from the
click counts) and relative half-width. numpy only, so a result can judge itself when it is
built (:class:`ulr.propensity.result.PropensityResult`) without importing the charts;
:func:`ulr.propensity.plots.with_precision` is the same numbers as a table."""

from __future__ import annotations

import numpy as np

from ulr import validate
from ulr.propensity.registry import spec
from ulr.stats import normal_quantile
from ulr.verdict import WIDE

#: A position's estimate is "thin" when its 95% interval's half-width exceeds
#: this fraction of the estimate (the interval says the value could be half or
#: one and a half times what is drawn).
THIN_RELATIVE_HALF_WIDTH = WIDE


@validate.params(level=validate.level)
def click_count_interval(clicks, impressions, *, level: float = 0.95, center=None):
    """Delta-method interval of ``theta_k / theta_1`` from click counts per position.

    ``theta_k / theta_1 = CTR_k / CTR_1`` for rows in random order; the
    variance of its log is ``(1 - p_k) / c_k + (1 - p_1) / c_1`` (binomial
    counts, Katz et al. 1978). For other methods it is a floor on the
    uncertainty: no estimate is more precise than the clicks it rests on, so
    the same log-scale width is drawn around that method's estimate
    (``center``; default the count ratio ``CTR_k / CTR_1`` itself).
    Returns (lower, upper) arrays; unbounded (inf) where a position has no click.
    """
    z = normal_quantile(0.5 + level / 2)
    c = np.asarray(clicks, dtype=float)
    n = np.asarray(impressions, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n > 0, c / n, np.nan)
        var = (1 - p) / c + (1 - p[0]) / c[0]
        ratio = p / p[0] if center is None else np.asarray(center, dtype=float)
        half = z * np.sqrt(var)
        lower = np.where(c > 0, ratio * np.exp(-half), 0.0)
        upper = np.where((c > 0) & (c[0] > 0), ratio * np.exp(half), np.inf)
    return lower, upper


def precision(result, clicks, impressions) -> dict:
    """``result``'s interval (bootstrap or Fisher information, else the click-count approximation) and which
    positions rest on too little evidence, one array per key: theta, lower, upper,
    interval ("bootstrap", "Fisher information" or "click counts"), relative_half_width, thin, clicks,
    impressions (the counts of positions 1..K the interval rests on)."""
    k = result.positions
    c = np.zeros(k)
    n = np.zeros(k)
    m = min(k, len(clicks))
    c[:m], n[:m] = np.asarray(clicks)[:m], np.asarray(impressions)[:m]
    if spec(result.method).randomized and "randomized_clicks" in result.extras:
        c = np.asarray(result.extras["randomized_clicks"], dtype=float)[:k]
        n = np.asarray(result.extras["randomized_impressions"], dtype=float)[:k]
    theta = np.asarray(result.theta, dtype=float)
    lo, up = click_count_interval(c, n, center=theta)
    with np.errstate(divide="ignore", invalid="ignore"):
        # the click-count floor, relative to the counts' own ratio estimate
        ratio = np.where(n > 0, c / np.maximum(n, 1), np.nan) / (c[0] / n[0] if c[0] else np.nan)
        floor = np.where(ratio > 0, (up - lo) / 2 / ratio, np.inf)
    basis = np.full(k, "click counts", dtype=object)
    if result.lower is not None:
        boot = np.isfinite(result.lower) & np.isfinite(result.upper)
        lo = np.where(boot, result.lower, lo)
        up = np.where(boot, result.upper, up)
        basis[boot] = "Fisher information" if result.interval == "information" else "bootstrap"
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(theta > 0, (up - lo) / 2 / theta, np.inf)
    rel = np.fmax(rel, floor)  # no estimate is more precise than the clicks behind it
    rel[0] = 0.0 if c[0] > 0 else np.inf  # theta_1 = 1 by definition
    thin = ~(rel <= THIN_RELATIVE_HALF_WIDTH) | ~np.isfinite(theta)
    return {"theta": theta, "lower": lo, "upper": up, "interval": basis,
            "relative_half_width": rel, "thin": thin, "clicks": c, "impressions": n}
