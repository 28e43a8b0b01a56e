"""Several loggers: pooled, balanced and weighted IPS (Agarwal et al., KDD 2017)."""

import numpy as np
import pytest

from ulr.errors import UlrError
from ulr.ope.loggers import (balanced_ips, evaluate_loggers, make_multi_logger_log,
                             mixture_propensity)


def arrays(df, truth):
    """Rows of a simulated log with the target 'uniform over the items in every slot'."""
    names = truth["loggers"]
    items = len(truth["alpha"])
    g = df["logger"].map({nm: j for j, nm in enumerate(names)}).to_numpy()
    lp = df[[f"propensity_{nm}" for nm in names]].to_numpy()
    t = np.full(len(df), 1.0 / items)
    value = float(np.mean(truth["theta"]) * np.mean(truth["alpha"]))  # clicks per row
    return df["click"].to_numpy(float), t, df["propensity"].to_numpy(), g, lp, value


def test_balanced_ips_matches_a_slow_reference():
    df, truth = make_multi_logger_log(sessions=1500, seed=3)
    r, t, p, g, lp, _ = arrays(df, truth)
    n = len(r)
    counts = {}
    for j in g:
        counts[j] = counts.get(j, 0) + 1
    total = 0.0
    for i in range(n):  # the definition, row by row
        mix = 0.0
        for j, nj in counts.items():
            mix += nj / n * lp[i, j]
        total += t[i] * r[i] / mix
    ref = total / n
    assert balanced_ips(r, t, g, lp) == pytest.approx(ref, abs=1e-12, rel=0)
    res = evaluate_loggers(r, t, p, g, logger_propensity=lp, n_bootstrap=100)
    assert res.table.set_index("estimator").loc["balanced-ips", "value"] == \
        pytest.approx(ref, abs=1e-12, rel=0)


def test_wips_is_a_convex_combination_between_the_per_logger_estimates():
    df, truth = make_multi_logger_log(sessions=4000, epsilons=(1.0, 0.2), seed=5)
    r, t, p, g, lp, _ = arrays(df, truth)
    res = evaluate_loggers(r, t, p, g, labels=truth["loggers"], logger_propensity=lp,
                           cluster=df["session_id"].to_numpy(), n_bootstrap=200)
    per = res.per_logger
    lam = per["wips_weight"].to_numpy()
    assert np.all(lam >= 0) and lam.sum() == pytest.approx(1, abs=1e-12)
    wips = res.table.set_index("estimator").loc["wips", "value"]
    assert wips == pytest.approx(float(lam @ per["cv_value"].to_numpy()), abs=1e-12)
    assert per["cv_value"].min() - 1e-15 <= wips <= per["cv_value"].max() + 1e-15
    # the per-logger plain IPS estimates are the logger's own means of w r
    for row in per.itertuples():
        m = g == truth["loggers"].index(row.logger)
        assert row.ips == pytest.approx(np.mean(t[m] / p[m] * r[m]), abs=1e-15)
        assert row.lower <= row.ips <= row.upper


def test_wips_has_lower_bootstrap_variance_than_pooled_ips():
    df, truth = make_multi_logger_log(sessions=8000, epsilons=(1.0, 0.05), seed=11)
    r, t, p, g, lp, _ = arrays(df, truth)
    B = 1000
    res = evaluate_loggers(r, t, p, g, logger_propensity=lp, cluster=df["session_id"].to_numpy(),
                           n_bootstrap=B)
    tab = res.table.set_index("estimator")
    # a bootstrap variance has relative standard error about sqrt(2 / B); demand 4 of them
    assert tab.loc["wips", "variance_ratio"] < 1 - 4 * np.sqrt(2 / B)
    assert tab.loc["ips", "variance_ratio"] == pytest.approx(1.0)


def test_estimators_are_centred_on_the_true_value_over_repeated_logs():
    errs = {"ips": [], "wips": [], "balanced-ips": []}
    for s in range(30):
        df, truth = make_multi_logger_log(sessions=3000, epsilons=(1.0, 0.2), seed=100 + s)
        r, t, p, g, lp, value = arrays(df, truth)
        res = evaluate_loggers(r, t, p, g, logger_propensity=lp, n_bootstrap=50)
        for k, v in res.table.set_index("estimator")["value"].items():
            errs[k].append(v - value)
    for k, e in errs.items():
        e = np.asarray(e)
        assert abs(e.mean()) < 4 * e.std(ddof=1) / np.sqrt(len(e)), k


def test_empirical_variance_weights_are_the_worse_choice_with_rare_clicks():
    """Why the model-based variance is the default: with a few clicks per logger the
    empirical variance moves with the logger's own estimate."""
    df, truth = make_multi_logger_log(sessions=8000, epsilons=(1.0, 0.05), seed=11)
    r, t, p, g, lp, _ = arrays(df, truth)
    kw = dict(logger_propensity=lp, cluster=df["session_id"].to_numpy(), n_bootstrap=400)
    model = evaluate_loggers(r, t, p, g, **kw).table.set_index("estimator")
    emp = evaluate_loggers(r, t, p, g, variance="empirical", **kw).table.set_index("estimator")
    assert model.loc["wips", "se"] < emp.loc["wips", "se"]


def test_balanced_ips_says_what_is_missing():
    df, truth = make_multi_logger_log(sessions=500, seed=2)
    r, t, p, g, lp, _ = arrays(df, truth)
    lp[:, 1] = np.nan
    res = evaluate_loggers(r, t, p, g, labels=truth["loggers"], logger_propensity=lp,
                           n_bootstrap=50)
    assert res.missing.count(".") == 1 and "l1" in res.missing
    assert np.isnan(res.table.set_index("estimator").loc["balanced-ips", "value"])
    with pytest.raises(UlrError, match="every logger's probability"):
        mixture_propensity(g, lp)
    res = evaluate_loggers(r, t, p, g, n_bootstrap=50)
    assert "propensity_<logger>" in res.missing
