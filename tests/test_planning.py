"""ulr.planning: the 1/sqrt(n) planner behind every off-policy ``to_settle``."""

import numpy as np
import pytest

from ulr.planning import plan_to_exclude_zero


def test_the_rule_and_what_it_cannot_say():
    p = plan_to_exclude_zero(1000, 0.01, -0.002, 0.022)
    assert (p.more, p.total, p.reason) == (440, 1440, "exclude_zero")
    # asymmetric interval: the side towards 0 is what must shrink
    assert plan_to_exclude_zero(1000, -0.01, -0.05, 0.002).more == 440
    assert plan_to_exclude_zero(1000, 0.0, -1, 1).reason == "no_difference"
    assert plan_to_exclude_zero(1000, 0.01, np.nan, 1).more is None
    # the real log: 19 clicked rows, 6.1 effective clicks: the width is not trusted
    p = plan_to_exclude_zero(10_000, -0.0016, -0.0032, 0.00003, effective_clicks=6.1)
    assert p.reason == "few_effective_clicks" and p.more == int(np.ceil(10_000 * 30 / 6.1
                                                                        - 10_000))


def test_planned_rows_exclude_zero_in_about_half_of_the_logs():
    """Simulation: a log of n rows (clicks ~ Bernoulli, a paired difference of two
    policies' per-row terms), its normal 95% interval, the planned size; then logs of the
    planned size with the true difference equal to the estimate exclude 0 in 35%-65%."""
    n, base, delta = 2000, 0.05, 0.006
    for seed in range(100):  # the first log whose interval holds 0 but not by far
        rng = np.random.default_rng(seed)
        x = (rng.random(n) < base + delta).astype(float) - (rng.random(n) < base).astype(float)
        est, se = x.mean(), x.std(ddof=1) / np.sqrt(n)
        if 0.4 * 1.96 * se < est < 0.9 * 1.96 * se:
            break
    plan = plan_to_exclude_zero(n, est, est - 1.96 * se, est + 1.96 * se,
                                effective_clicks=x.size * base)
    assert plan.reason == "exclude_zero" and plan.more > 0
    total, draws = plan.total, 400
    a = rng.random((draws, total)) < base + est
    b = rng.random((draws, total)) < base
    d = a.astype(np.float32) - b.astype(np.float32)
    m, s = d.mean(axis=1), d.std(axis=1, ddof=1) / np.sqrt(total)
    share = float(np.mean(np.abs(m) > 1.96 * s))
    assert 0.35 <= share <= 0.65, (share, plan)


def test_the_ope_verdict_uses_it():
    from ulr.ope.verdicts import settle_text
    t = settle_text(10_000, -0.0016, -0.0032, 0.00003, 6.1)
    assert t.startswith("no size can be planned from this interval") and "30 effective" in t
    t = settle_text(1000, 0.01, -0.002, 0.022, 100.0)
    assert t.startswith("about 440 more logged rows") and "about half" in t
