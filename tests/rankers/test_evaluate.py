"""ulr.rankers.evaluate: split, labels, naive vs IPW on simulated ground truth, validation."""

import numpy as np
import pytest

from ulr import metrics
from ulr import rankers as R
from ulr.errors import UlrError
from ulr.simulate import attractiveness, simulate_clicks


# Small logs keep the file fast: 300 queries x 10 docs, 20k sessions (200k rows)
# fit in well under a second per ranker.
Q, S = 300, 20_000


def test_split_queries_is_seeded_and_disjoint():
    df = simulate_clicks(queries=50, sessions=500, seed=1).df
    tr, te = R.split_queries(df, seed=4)
    tr2, te2 = R.split_queries(df.sample(frac=1.0, random_state=0), seed=4)
    assert set(te["query_id"]) == set(te2["query_id"])  # independent of row order
    assert not set(tr["query_id"]) & set(te["query_id"])
    n_q = df["query_id"].nunique()
    assert te["query_id"].nunique() == round(0.3 * n_q)
    assert len(tr) + len(te) == len(df)


# ---------------------------------------------------------------------------
# Naive vs IPW on simulated ground truth
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ipw_beats_naive_under_strong_position_bias(seed):
    sim = simulate_clicks(queries=Q, sessions=S, eta=1.5, seed=seed)
    comp = R.train_and_evaluate(sim.df, None, sim.theta, seed=seed)
    m = comp.metrics()
    assert set(m["naive"]) == set(R.METRICS) and not comp.estimated
    assert m["ipw"]["arp"] <= 0.95 * m["naive"]["arp"]  # at least 5% lower
    assert m["ipw"]["ndcg@10"] > m["naive"]["ndcg@10"]
    # and not by luck of the test queries: the paired test is significant
    paired = comp.paired(n_bootstrap=500).set_index("metric")
    assert paired.loc["arp", "better"] == "ipw" and paired.loc["arp", "upper"] < 0
    assert paired.loc["arp", "p_value"] < 0.01
    assert comp.n_test_queries == round(0.3 * sim.df["query_id"].nunique())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_naive_and_ipw_agree_without_position_bias(seed, randomization_theta):
    sim = simulate_clicks(queries=Q, sessions=S, eta=0.0, seed=seed)
    train, test = R.split_queries(sim.df, seed=seed)
    # true theta = 1 everywhere: the IPW weights are all 1, so the fits are identical
    exact = R.train_and_evaluate(train, test, sim.theta, seed=seed)
    for key in R.METRICS:
        assert exact.ipw[key].value == exact.naive[key].value
    # an estimated theta is 1 plus estimation noise (CTR ratios over ~2k randomized
    # sessions, a few % error). The IPW fit then differs from the naive one only by
    # that noise, so the ARP difference must lie within 4 paired standard errors
    # (SE = width of the 95% paired bootstrap interval / 3.92), i.e. no detectable
    # effect, in contrast to the >= 5% gain at eta = 1.5.
    comp = R.train_and_evaluate(train, test, randomization_theta(train), seed=seed)
    row = comp.paired(n_bootstrap=1000).set_index("metric").loc["arp"]
    se = (row["upper"] - row["lower"]) / 3.92
    assert abs(row["delta"]) <= 4 * se
    assert abs(row["delta"]) / row["naive"] < 0.01


# ---------------------------------------------------------------------------
# No relevance labels: click-based estimates
# ---------------------------------------------------------------------------


def test_estimated_metrics_without_relevance():
    sim = simulate_clicks(queries=Q, sessions=S, eta=1.5, seed=0)
    comp = R.train_and_evaluate(sim.df.drop(columns="relevance"), None, sim.theta, seed=0)
    m = comp.metrics()
    assert comp.estimated
    assert m["naive"]["auc"] is None and m["ipw"]["pauc"] is None and m["ipw"]["local_auc"] is None
    # the IPW estimate of ARP agrees with the truth: IPW ranks relevant documents higher
    assert m["ipw"]["arp"] < m["naive"]["arp"]
    assert set(comp.table(n_bootstrap=50)["metric"]) == {"arp", "dcg", "ndcg@10"}


def test_click_relevance_estimate_is_unbiased_per_grade():
    sim = simulate_clicks(queries=200, sessions=40_000, eta=1.5, eps=0.05, seed=2)
    docs, estimated = R.held_out_documents(sim.df.drop(columns="relevance"), sim.theta)
    assert estimated
    grade = sim.df.drop_duplicates(["query_id", "doc_id"]).set_index(["query_id", "doc_id"])[
        "relevance"]
    docs = docs.join(grade, on=["query_id", "doc_id"])
    w = 1.0 / sim.theta[sim.df["position"].to_numpy() - 1]
    for g, sub in docs.groupby("relevance"):
        gamma = attractiveness(np.array([g]), eps=0.05)[0]
        # SE of the grade mean: per impression var(c / theta) <= gamma * mean(1/theta);
        # the grade has sum(impressions) of them; allow 4 SE
        n_imp = int(sim.df["relevance"].eq(g).sum())
        se = np.sqrt(gamma * w.mean() / n_imp)
        assert abs(sub["label"].mean() - gamma) < 4 * se + 1e-3, (g, sub["label"].mean(), gamma)


def test_shuffling_the_logs_rows_changes_no_interval_and_no_verdict():
    """The verdict reads the log, not the order of its rows: the per-query bootstrap and the
    paired tests resample queries in one order whatever order they first appear in."""
    sim = simulate_clicks(queries=120, sessions=4000, eta=1.0, seed=5)
    shuffled = sim.df.sample(frac=1.0, random_state=1).reset_index(drop=True)
    a = R.train_and_evaluate(sim.df, None, sim.theta, seed=2)
    b = R.train_and_evaluate(shuffled, None, sim.theta, seed=2)
    cols = ["lower", "upper", "p_value"]
    np.testing.assert_allclose(a.paired(n_bootstrap=300)[cols], b.paired(n_bootstrap=300)[cols],
                               rtol=1e-9)
    np.testing.assert_allclose(a.table(n_bootstrap=300)[["lower", "upper"]],
                               b.table(n_bootstrap=300)[["lower", "upper"]], rtol=1e-9)
    assert a.verdict.to_dict() == b.verdict.to_dict()


# ---------------------------------------------------------------------------
# Results and validation
# ---------------------------------------------------------------------------


def test_comparison_table_and_paired():
    sim = simulate_clicks(queries=100, sessions=5000, eta=1.0, seed=0)
    comp = R.train_and_evaluate(sim.df, None, sim.theta)
    table = comp.table(n_bootstrap=200)
    assert list(table.columns[:5]) == ["ranker", "metric", "value", "lower", "upper"]
    assert len(table) == 12 and (table["lower"] <= table["value"]).all()
    assert (table["value"] <= table["upper"]).all()
    paired = comp.paired(n_bootstrap=200)
    assert set(paired["metric"]) == set(R.METRICS)
    np.testing.assert_allclose(paired["delta"], paired["ipw"] - paired["naive"])
    # one default for the pAUC range and the local AUC fraction: the metrics module's
    assert comp.settings["max_fpr"] == metrics.DEFAULT_MAX_FPR
    assert comp.settings["u"] == metrics.DEFAULT_U
    assert not hasattr(R, "PAUC_MAX_FPR") and not hasattr(R, "LOCAL_AUC_U")


def test_side_by_side_and_within_noise_read_the_table_and_the_paired_tests():
    """One row per metric with both rankers and their difference, checked cell by cell
    against the tidy table and the paired tests; "within noise" is exactly the metrics
    whose paired interval contains 0."""
    sim = simulate_clicks(queries=60, sessions=2000, eta=1.0, seed=1)
    comp = R.train_and_evaluate(sim.df, None, sim.theta)
    table, paired = comp.table(n_bootstrap=100), comp.paired(n_bootstrap=100)
    side = comp.side_by_side(table, paired)
    assert list(side["metric"]) == [m for m in R.METRICS if m in set(table["metric"])]
    for r in side.to_dict("records"):
        for ranker in ("naive", "ipw"):
            t = table[(table["ranker"] == ranker) & (table["metric"] == r["metric"])].iloc[0]
            assert (r[ranker], r[f"{ranker} lower"], r[f"{ranker} upper"]) == \
                (t["value"], t["lower"], t["upper"])
        p = paired[paired["metric"] == r["metric"]].iloc[0]
        assert (r["delta"], r["delta lower"], r["delta upper"], r["better"]) == \
            (p["delta"], p["lower"], p["upper"], p["better"])
    expected = [m for m in ("arp", "ndcg@10", "auc")
                if (paired.loc[paired["metric"] == m, "lower"] <= 0).all()
                and (paired.loc[paired["metric"] == m, "upper"] >= 0).all()]
    assert R.RankerComparison.within_noise(paired) == expected
    shifted = paired.assign(lower=paired["lower"].abs() + 1, upper=paired["upper"].abs() + 2)
    assert R.RankerComparison.within_noise(shifted) == []
    assert R.RankerComparison.within_noise(paired.iloc[:0]) == []


@pytest.mark.parametrize("call, msg", [
    (lambda df, th: R.train_and_evaluate(df, None, th, learner="svm"), "learner"),
    (lambda df, th: R.train_and_evaluate(df, None, th[:3]), "position"),
    (lambda df, th: R.train_and_evaluate(df, None, None), "theta"),
    (lambda df, th: R.train_and_evaluate(df.filter(regex="^(?!feature_)"), None, th), "feature_"),
    (lambda df, th: R.train_and_evaluate(df.drop(columns="click"), None, th), "click"),
    (lambda df, th: R.train_and_evaluate(df.assign(click=2), None, th), "0/1"),
    (lambda df, th: R.split_queries(df, test_fraction=1.0), "test fraction"),
    (lambda df, th: R.LinearPairwiseRanker(loss="square"), "loss"),
    (lambda df, th: R.severity_sweep([-1.0]), "eta"),
])
def test_validation(call, msg):
    sim = simulate_clicks(queries=20, sessions=300, seed=0)
    with pytest.raises(UlrError, match=msg):
        call(sim.df, sim.theta)


# ---------------------------------------------------------------------------
# One count per fact (issue 36)
# ---------------------------------------------------------------------------


def _thin_click_log():
    """No relevance labels and few clicks: many held-out queries have no click at all."""
    sim = simulate_clicks(queries=400, sessions=1200, eta=1.0, seed=3)
    return sim.df.drop(columns=["relevance"]), sim.theta


def test_the_verdict_states_the_scored_test_queries_once():
    df, theta = _thin_click_log()
    comp = R.train_and_evaluate(df, None, theta, seed=0)
    assert comp.estimated and comp.n_compared < comp.n_test_queries  # some have no click
    # the count is the queries with a click among the held-out ones ...
    test_q = R.split_queries(df, seed=0)[1]
    clicked = test_q.groupby("query_id")["click"].max()
    assert comp.n_compared == int((clicked > 0).sum())
    # ... the paired tests rest on exactly those, and the verdict and its caveat say so
    # (DCG is 0, hence defined, on a query without a click; nDCG and ARP are not)
    paired = comp.paired(n_bootstrap=100).set_index("metric")
    assert (paired.loc[["ndcg@10", "arp"], "queries"] == comp.n_compared).all()
    v = comp.verdict
    assert f"{comp.n_compared:,} test queries" in v.takeaway and v.estimate["n"] == comp.n_compared
    assert str(comp.n_test_queries) not in v.takeaway
    few = [r.message for r in v.reasons if r.code == "few_test_queries"]
    assert few == ([f"{comp.n_compared:,} test queries (a paired test needs 32)."]
                   if comp.n_compared < 32 else [])


def test_below_32_scored_queries_is_inconclusive_even_with_more_held_out():
    """Thin evidence is an answer (issue #50): fewer scored test queries than the paired
    test needs give an inconclusive verdict asking for more clicks (queries enough are held
    out), never a refusal; at the floor the comparison is judged as usual."""
    df, theta = _thin_click_log()
    comp = R.train_and_evaluate(df, None, theta, seed=0)
    n_scored, n_test = comp.n_compared, comp.n_test_queries
    assert n_test >= R.MIN_TEST_QUERIES  # the held-out count alone would pass
    need = n_scored + 1
    short = R.train_and_evaluate(df, None, theta, seed=0, min_queries=need)
    v = short.verdict
    assert v.level == "inconclusive"
    assert f"{n_scored:,} of the {n_test:,} held-out queries have a click" in v.takeaway
    clicks = int(df["click"].sum())
    assert v.to_settle.startswith(f"a log with more clicks (the log has {clicks:,} clicks")
    ok = R.train_and_evaluate(df, None, theta, seed=0, min_queries=n_scored)
    assert ok.n_compared == n_scored and "Too few" not in ok.verdict.takeaway


def test_same_score_on_every_query_reads_as_such_not_as_a_zero_difference():
    """Two rankers that order the lists differently but put the one relevant document
    first on every query have the same nDCG on every query: the verdict says so."""
    n_q = 40
    labels = np.tile([1.0, 0.0, 0.0, 0.0], n_q)
    q = np.repeat(np.arange(n_q), 4)
    a = np.tile([4.0, 3.0, 2.0, 1.0], n_q)
    b = np.tile([4.0, 1.0, 2.0, 3.0], n_q)  # another order below the top
    ra = metrics.evaluate(labels, a, query_ids=q, k=10, standardized=True)
    rb = metrics.evaluate(labels, b, query_ids=q, k=10, standardized=True)
    comp = R.RankerComparison(naive=ra, ipw=rb, estimated=False, learner="linear",
                              n_train_queries=100, n_test_queries=n_q,
                              n_test_documents=4 * n_q, n_train_clicks=500,
                              identical_order=False, n_scored_queries=n_q, n_bootstrap=100)
    assert comp.same_scores("ndcg@10") and comp.same_scores("arp")
    v = comp.verdict
    assert v.level == "inconclusive" and "same_scores" in v.codes
    assert f"score the same ndcg@10 on every one of the {n_q} test queries" in v.takeaway
    assert "0.000" not in v.takeaway and "cannot be told apart" not in v.takeaway
