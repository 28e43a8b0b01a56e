"""The study's scoring and verdicts (ulr.study.run): intervals over runs and queries,
rank-identical learners, IPW beating naive where it must, verdicts that agree with
their intervals."""

import numpy as np
import pytest

from tests.study.letor import biased_production_set, linear_set
from ulr import verdict as V
from ulr.study import run as R
from ulr.study import run_study


def test_two_way_interval_is_the_pigeonhole_bootstrap():
    """Against the slow, obvious reference: each replicate repeats runs and queries by
    their multinomial counts and takes the weighted mean of the expanded table."""
    rng = np.random.default_rng(0)
    M = rng.normal(size=(3, 12))
    M[:, 4] = np.nan  # undefined query: left out
    w = rng.uniform(0.5, 2, size=12)
    iv = R.two_way_interval(M, w, n_bootstrap=200, seed=5)
    ok = np.isfinite(M).all(axis=0)
    Mk, wk = M[:, ok], w[ok]
    assert iv.value == pytest.approx((Mk * wk).sum() / (3 * wk.sum()))
    r2 = np.random.default_rng(5)
    a = r2.multinomial(3, np.full(3, 1 / 3), size=200)
    b = r2.multinomial(wk.size, np.full(wk.size, 1 / wk.size), size=200)
    reps = []
    for i in range(200):
        rows = np.repeat(np.arange(3), a[i])
        cols = np.repeat(np.arange(wk.size), b[i])
        T = Mk[np.ix_(rows, cols)]
        ww = np.broadcast_to(wk[cols], T.shape)
        reps.append((T * ww).sum() / ww.sum())
    lo, hi = np.quantile(reps, [0.025, 0.975])
    assert (iv.lower, iv.upper) == pytest.approx((lo, hi))


def test_two_way_interval_covers_the_mean_of_a_crossed_design():
    """Run and query effects both vary: the interval covers the truth about as often as
    it says (the pigeonhole bootstrap is conservative, Owen 2007)."""
    rng = np.random.default_rng(1)
    hits = 0
    for t in range(150):
        M = (rng.normal(0, 0.5, size=(6, 1)) + rng.normal(0, 1, size=(1, 30))
             + rng.normal(0, 0.3, size=(6, 30)))
        iv = R.two_way_interval(M, np.ones(30), n_bootstrap=300, seed=t)
        hits += iv.lower <= 0 <= iv.upper
    assert hits / 150 >= 0.88


def test_a_constant_difference_has_a_zero_width_interval():
    iv = R.two_way_interval(np.full((2, 5), 0.25), np.ones(5), n_bootstrap=50)
    assert (iv.value, iv.lower, iv.upper) == pytest.approx((0.25, 0.25, 0.25))


@pytest.fixture(scope="module")
def no_bias():
    return run_study(linear_set(queries=50, docs=10, seed=3), eta=0.0, sessions=3000, runs=2,
                     learners=["naive-linear", "ipw-linear", "naive-gbdt", "ipw-gbdt"],
                     n_bootstrap=200, seed=0)


def test_at_eta_0_ipw_and_naive_are_said_to_rank_identically(no_bias):
    """Done-when: at η = 0 every IPW weight is 1, so IPW and naive rank identically."""
    assert no_bias.theta_true == pytest.approx([1.0] * 10)
    ipw = [c for c in no_bias.comparisons if c.learner == "ipw-linear"]
    assert ipw and all(c.same_ranking for c in ipw)
    for c in ipw:
        assert (c.delta, c.lower, c.upper) == (0.0, 0.0, 0.0)
        assert c.verdict.level == "inconclusive" and "rank_identically" in c.verdict.codes
        assert "rank identically" in c.verdict.takeaway
    # the other learners' intervals are their own
    assert not any(c.same_ranking for c in no_bias.comparisons if c.learner == "naive-gbdt")


@pytest.fixture(scope="module")
def strong_bias():
    data = biased_production_set(queries=100, seed=1)
    return run_study(data, eta=2.0, sessions=10_000, runs=2, production_feature="feature_5",
                     learners=["naive-linear", "ipw-linear", "production"], n_bootstrap=300,
                     seed=0)


def test_ipw_beats_naive_when_relevance_is_linear_and_bias_strong(strong_bias):
    """Done-when: the naive learner imitates the production ranker's error; IPW does not."""
    by = {(c.learner, c.metric): c for c in strong_bias.comparisons}
    nd, arp = by[("ipw-linear", "ndcg@10")], by[("ipw-linear", "arp")]
    assert nd.lower > 0 and nd.verdict.level == "reliable"
    assert "ipw-linear is better than naive-linear" in nd.verdict.takeaway
    assert arp.upper < 0 and "better" in arp.verdict.takeaway  # ARP: lower is better
    # the headline names the debiasing learner (production is a reference, not a candidate)
    assert strong_bias.verdict.estimate["delta"] == pytest.approx(nd.delta)
    assert strong_bias.verdict.level == "reliable"
    assert strong_bias.learners["production"]["ndcg@10"].value < \
        strong_bias.learners["ipw-linear"]["ndcg@10"].value


@pytest.mark.parametrize("which", ["no_bias", "strong_bias"])
def test_every_verdict_agrees_with_its_interval(which, request):
    res = request.getfixturevalue(which)
    assert res.comparisons
    for c in res.comparisons:
        v = c.verdict
        assert c.lower <= c.delta <= c.upper
        if V.contains_zero(c.lower, c.upper):
            assert v.level == "inconclusive"
            assert "cannot be told apart" in v.takeaway or "rank identically" in v.takeaway
        else:
            good = (c.delta > 0) != (c.metric in R.LOWER_IS_BETTER)
            assert v.level in ("reliable", "directional")
            assert (" better than " if good else " worse than ") in v.takeaway
        if not c.same_ranking:
            assert v.estimate["lower"] == c.lower and v.estimate["upper"] == c.upper


def test_learner_intervals_hold_their_values(strong_bias):
    for name, res in strong_bias.learners.items():
        for m, iv in res.items():
            assert iv.lower <= iv.value <= iv.upper, (name, m)
            if m.startswith("ndcg") or m.endswith("auc"):
                assert 0 <= iv.lower and iv.upper <= 1


def test_the_headline_when_nothing_beats_the_baseline():
    c = R.compare("ipw-linear", "naive-linear", "ndcg@10", np.array([[0.01, -0.02, 0.0]]),
                  np.ones(3), False, runs=1, level=0.95, n_bootstrap=100, seed=0)
    assert "single_run" in c.verdict.codes
    v = R.headline([c], "naive-linear")
    assert v.level == "inconclusive"
    assert v.takeaway.startswith("No learner beats naive-linear on ndcg@10: ipw-linear cannot "
                                 "be told apart from it")


def test_a_separate_test_file_and_a_bad_baseline(tmp_path):
    data = linear_set(queries=30, docs=8, seed=5)
    test = linear_set(queries=10, docs=8, seed=6)
    res = run_study(data, test=test, sessions=500, runs=1, n_bootstrap=50)
    assert res.queries == 40 and res.documents == 320 and res.settings["test"] == "file"
    with pytest.raises(Exception, match="unknown baseline"):
        run_study(data, baseline="svm", sessions=100, runs=1)
    with pytest.raises(Exception, match="propensity must be 'true' or one of"):
        run_study(data, propensity="magic", sessions=100, runs=1)


# --------------------------------------------------------------------------- speed-ups


def test_fits_side_by_side_give_the_same_study_as_one_at_a_time():
    """Every fit is single-threaded and deterministic (liblinear's process-wide generator
    is locked), so the thread pool changes the time, not the result."""
    data = linear_set(queries=40, docs=10, seed=7)
    kw = dict(eta=1.0, sessions=1500, runs=2, n_bootstrap=100, seed=3,
              learners=["naive-linear", "ipw-linear", "lightgbm", "lightgbm-position",
                        "xgboost-unbiased", "oracle", "ipw-gbdt"], options={"rounds": 5})
    one, two = run_study(data, workers=1, **kw), run_study(data, workers=2, **kw)
    a, b = one.to_dict(), two.to_dict()
    a.pop("seconds"), b.pop("seconds")
    assert a == b


def test_the_oracle_is_fitted_once_and_lightgbm_bins_found_once(monkeypatch):
    """The oracle learns from the same true grades in every run; LightGBM's bin
    boundaries come from the training documents, once per study."""
    import dataclasses

    import lightgbm as lgb

    from ulr.study import learners as L
    calls = {"oracle": 0, "bins": 0}
    fit = L.LEARNERS["oracle"].fit

    def counted(ctx):
        calls["oracle"] += 1
        return fit(ctx)
    monkeypatch.setitem(L.LEARNERS, "oracle",
                        dataclasses.replace(L.LEARNERS["oracle"], fit=counted))
    Dataset = lgb.Dataset

    data = linear_set(queries=30, docs=8, seed=2)

    def spy(*args, **kwargs):
        if "label" not in kwargs and "reference" not in kwargs:
            calls["bins"] += 1
        elif "label" not in kwargs:  # a run's session rows, shared by the two learners
            calls["rows"] = calls.get("rows", 0) + 1
        return Dataset(*args, **kwargs)
    monkeypatch.setattr(lgb, "Dataset", spy)
    res = run_study(data, sessions=800, runs=3,
                    learners=["naive-linear", "lightgbm", "lightgbm-position", "oracle"],
                    n_bootstrap=50, options={"rounds": 3})
    assert calls == {"oracle": 1, "bins": 1, "rows": 3}
    table = res.per_query["oracle"]["ndcg@10"]
    assert table.shape[0] == 3 and np.array_equal(table[0], table[2])


# --------------------------------------------------------------------------- click log-likelihood


def _slow_loglik(scorer, log, test, theta):
    """The obvious reference: impression by impression, P(click) from the model's odds
    (times theta_k for the IPW model), clipped, then the mean per query."""
    f = scorer(test.X)
    per = {}
    for i in range(len(log)):
        odds = np.exp(min(f[log.doc[i]], 0.0))
        p = odds * (theta[log.position[i] - 1] if theta is not None else 1.0)
        p = min(max(p, 1e-6), 1 - 1e-6)
        ll = np.log(p) if log.click[i] else np.log(1 - p)
        per.setdefault(int(log.query[i]), []).append(ll)
    return np.array([np.mean(per[q]) if q in per else np.nan for q in range(test.n_queries)])


@pytest.mark.parametrize("name", ["naive-gbdt", "ipw-gbdt"])
def test_held_out_click_loglik_against_a_slow_reference(name):
    from ulr.study import learners as L
    from ulr.study import simulate as S
    from ulr.study.labels import split_queries
    train, test = split_queries(linear_set(queries=40, docs=10, seed=4), seed=0)
    prod = S.production_ranker(train, seed=0)
    log = S.simulate_clicks(train, prod.score(train.X), sessions=1500, eta=1.0, seed=2)
    theta = log.theta_true / log.theta_true[0]
    ctx = L.Context(train=train, log=log, theta=theta, production=prod, seed=0)
    scorer = L.LEARNERS[name].fit(ctx)
    held = S.simulate_clicks(test, prod.score(test.X), sessions=300, eta=1.0, seed=9)
    got = R.click_loglik(scorer, held, test)
    want = _slow_loglik(scorer, held, test, theta if name == "ipw-gbdt" else None)
    np.testing.assert_allclose(got, want, rtol=1e-10, equal_nan=True)


def test_click_loglik_is_reported_and_ipw_predicts_clicks_better_under_strong_bias():
    """Under a strong position bias the naive click model predicts the same probability at
    every position; the IPW model scales it by theta_k and predicts held-out clicks
    better."""
    data = linear_set(queries=60, docs=10, seed=3)
    res = run_study(data, eta=2.0, sessions=4000, runs=2, n_bootstrap=200, seed=0,
                    learners=["naive-gbdt", "ipw-gbdt", "naive-linear"], baseline="naive-gbdt")
    ll = {n: r.get(R.CLICK_LL) for n, r in res.learners.items()}
    assert ll["naive-linear"] is None  # a pairwise ranker predicts no click
    assert ll["ipw-gbdt"].value > ll["naive-gbdt"].value
    assert ll["ipw-gbdt"].value < 0 and ll["naive-gbdt"].lower <= ll["naive-gbdt"].value
    c = next(c for c in res.comparisons if c.learner == "ipw-gbdt" and c.metric == R.CLICK_LL)
    assert c.lower > 0 and " better than " in c.verdict.takeaway
    assert res.to_dict()["learners"]["ipw-gbdt"][R.CLICK_LL]["value"] == ll["ipw-gbdt"].value
    assert res.evidence["held-out sessions"] == 2 * round(4000 * 18 / 42)
