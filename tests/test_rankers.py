"""ulr.rankers: click pairs, IPW weights, naive vs IPW on simulated logs, the sweep."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from ulr import rankers as R
from ulr.errors import UlrError
from ulr.simulate import attractiveness, simulate_clicks

# Small logs keep the file fast: 300 queries x 10 docs, 20k sessions (200k rows)
# fit in well under a second per ranker.
Q, S = 300, 20_000


def randomization_theta(df):
    """Relative theta from the randomized sessions: CTR per position / CTR at 1.

    Under the PBM with uniformly shuffled lists, E[click | position k] = theta_k * mean(gamma).
    Add-one smoothing keeps tiny logs away from 0.
    """
    g = df[df["randomized"] == 1].groupby("position")["click"].agg(["sum", "count"]).sort_index()
    ctr = ((g["sum"] + 1) / (g["count"] + 2)).to_numpy()
    return ctr / ctr[0]


# ---------------------------------------------------------------------------
# Pairs and weights against slow references
# ---------------------------------------------------------------------------


def ref_pairs(df, group_col):
    """Double loop over every group: (clicked row, non-clicked row) index pairs."""
    out = set()
    for _, g in df.groupby(group_col, sort=False):
        idx = list(g.index)
        for i in idx:
            if df.at[i, "click"] != 1:
                continue
            for j in idx:
                if df.at[j, "click"] == 1:
                    continue
                if group_col == "query_id" and df.at[i, "doc_id"] == df.at[j, "doc_id"]:
                    continue
                out.add((i, j))
    return out


def small_log(seed=0):
    rng = np.random.default_rng(seed)
    n_sessions, d = 40, 5
    df = pd.DataFrame({
        "query_id": np.repeat(rng.integers(0, 8, size=n_sessions), d),
        "session_id": np.repeat(np.arange(n_sessions), d),
        "position": np.tile(np.arange(1, d + 1), n_sessions),
        "click": (rng.random(n_sessions * d) < 0.3).astype(int),
        "feature_1": rng.normal(size=n_sessions * d),
    })
    df["doc_id"] = df["query_id"] * 10 + rng.integers(0, 6, size=len(df))
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # rows shuffled


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_click_pairs_match_double_loop(seed):
    df = small_log(seed)
    p = R.click_pairs(df)
    got = set(zip(p.clicked.tolist(), p.other.tolist()))
    assert got == ref_pairs(df, "session_id") and len(got) == len(p) == p.total
    # without sessions: pairs within the query, never a document with itself
    dq = df.drop(columns="session_id")
    pq = R.click_pairs(dq)
    assert set(zip(pq.clicked.tolist(), pq.other.tolist())) == ref_pairs(dq, "query_id")


def test_click_pairs_subsample_and_no_pairs():
    df = small_log(0)
    full = R.click_pairs(df)
    sub = R.click_pairs(df, max_pairs=10, seed=3)
    assert len(sub) == 10 and sub.scale == pytest.approx(full.total / 10)
    assert set(zip(sub.clicked, sub.other)) <= set(zip(full.clicked, full.other))
    # sampled pair numbers are uniform: over many seeds every pair turns up about
    # equally often (expected count 200 * 10 / n per pair; allow 5 SD of a binomial)
    n = len(full)
    hits = {}
    for s in range(200):
        r = R.click_pairs(df, max_pairs=10, seed=s)
        for pair in zip(r.clicked.tolist(), r.other.tolist()):
            hits[pair] = hits.get(pair, 0) + 1
    mean = 200 * 10 / n
    sd = np.sqrt(200 * (10 / n) * (1 - 10 / n))
    assert set(hits) <= set(zip(full.clicked.tolist(), full.other.tolist()))
    assert max(abs(v - mean) for v in hits.values()) < 5 * sd
    # by query, sampled pairs never pair a document with itself
    dq = df.drop(columns="session_id")
    sq = R.click_pairs(dq, max_pairs=15, seed=1)
    assert set(zip(sq.clicked.tolist(), sq.other.tolist())) <= ref_pairs(dq, "query_id")
    with pytest.raises(UlrError, match="nothing to learn"):
        R.click_pairs(df.assign(click=0))


def test_ipw_weights_and_clipping():
    theta = [1.0, 0.5, 0.2, 0.05]
    np.testing.assert_allclose(R.ipw_weights([1, 2, 3, 4, 2], theta), [1, 2, 5, 20, 2])
    np.testing.assert_allclose(R.ipw_weights([1, 2, 3, 4], theta, clip=0.25), [1, 2, 4, 4])
    with pytest.raises(UlrError, match="position 5"):
        R.ipw_weights([1, 5], theta)
    with pytest.raises(UlrError, match="> 0"):
        R.ipw_weights([1], [1.0, 0.0])
    with pytest.raises(UlrError, match="clip"):
        R.ipw_weights([1], theta, clip=0)


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
    paired = comp.paired(n_boot=500).set_index("metric")
    assert paired.loc["arp", "better"] == "ipw" and paired.loc["arp", "upper"] < 0
    assert paired.loc["arp", "p_value"] < 0.01
    assert comp.n_test_queries == round(0.3 * sim.df["query_id"].nunique())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_naive_and_ipw_agree_without_position_bias(seed):
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
    row = comp.paired(n_boot=1000).set_index("metric").loc["arp"]
    se = (row["upper"] - row["lower"]) / 3.92
    assert abs(row["delta"]) <= 4 * se
    assert abs(row["delta"]) / row["naive"] < 0.01


def test_boosted_learner_ipw_beats_naive():
    sim = simulate_clicks(queries=600, sessions=30_000, eta=1.5, seed=0)
    comp = R.train_and_evaluate(sim.df, None, sim.theta, learner="gbdt", seed=0)
    m = comp.metrics()
    assert m["ipw"]["arp"] < m["naive"]["arp"]
    assert m["ipw"]["ndcg@10"] > m["naive"]["ndcg@10"]
    # deterministic given the seed
    small = simulate_clicks(queries=60, sessions=3000, eta=1.5, seed=1)
    runs = [R.train_and_evaluate(small.df, None, small.theta, learner="gbdt", seed=4).metrics()
            for _ in range(2)]
    assert runs[0] == runs[1]


def test_clip_at_one_is_naive_and_snips_is_a_regularization_rescale():
    sim = simulate_clicks(queries=100, sessions=5000, eta=1.5, seed=3)
    df = sim.df
    naive = R.LinearPairwiseRanker(loss="logistic").fit(df)
    clipped = R.LinearPairwiseRanker(loss="logistic", clip=1.0).fit(df, sim.theta)
    np.testing.assert_allclose(clipped.coef_, naive.coef_)
    # SNIPS divides the weighted loss by sum(w) instead of n: the same optimum as IPS
    # with lambda scaled by mean(w)
    pairs = R.click_pairs(df)
    mean_w = R.ipw_weights(df["position"].to_numpy()[pairs.clicked], sim.theta).mean()
    snips = R.LinearPairwiseRanker(loss="logistic", alpha=0.01, normalize=True).fit(df, sim.theta)
    ips = R.LinearPairwiseRanker(loss="logistic", alpha=0.01 * mean_w).fit(df, sim.theta)
    np.testing.assert_allclose(snips.coef_, ips.coef_, rtol=1e-3, atol=1e-6)
    assert not np.allclose(snips.coef_, naive.coef_, rtol=1e-2)


def test_linear_ranker_recovers_relevance_direction():
    # at eta = 0 the click preferences follow relevance: the learned weights point
    # along the true relevance weights much more than along the logging ranker's error
    sim = simulate_clicks(queries=Q, sessions=S, eta=0.0, seed=5)
    w = R.LinearPairwiseRanker().fit(sim.df).coef_
    cos = w @ sim.relevance_weights / np.linalg.norm(w) / np.linalg.norm(sim.relevance_weights)
    assert cos > 0.95


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
    assert set(comp.table(n_boot=50)["metric"]) == {"arp", "dcg", "ndcg@10"}


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


# ---------------------------------------------------------------------------
# Results, sweep, figures, validation
# ---------------------------------------------------------------------------


def test_comparison_table_paired_and_figure():
    sim = simulate_clicks(queries=100, sessions=5000, eta=1.0, seed=0)
    comp = R.train_and_evaluate(sim.df, None, sim.theta)
    table = comp.table(n_boot=200)
    assert list(table.columns[:5]) == ["ranker", "metric", "value", "lower", "upper"]
    assert len(table) == 12 and (table["lower"] <= table["value"]).all()
    assert (table["value"] <= table["upper"]).all()
    paired = comp.paired(n_boot=200)
    assert set(paired["metric"]) == set(R.METRICS)
    np.testing.assert_allclose(paired["delta"], paired["ipw"] - paired["naive"])
    fig = R.comparison_figure(table)
    assert isinstance(fig, go.Figure) and len(fig.data) == 12
    assert {t.name for t in fig.data} == {"naive", "ipw"}
    assert comp.settings["max_fpr"] == R.PAUC_MAX_FPR and comp.settings["u"] == R.LOCAL_AUC_U


def test_severity_sweep_small():
    calls = []
    est_calls = []

    def estimate(df):
        est_calls.append(len(df))
        return randomization_theta(df)

    out = R.severity_sweep([0.0, 1.5], queries=60, sessions=3000, estimate_theta=estimate,
                           estimator_name="randomization",
                           progress=lambda done, total, msg: calls.append((done, total, msg)))
    assert list(out.columns[:5]) == ["eta", "run", "ranker", "metric", "value"]
    assert set(out["ranker"]) == {"naive", "ipw (true theta)", "ipw (estimated theta)"}
    assert set(out["eta"]) == {0.0, 1.5} and len(est_calls) == 2
    assert (out.loc[out["ranker"] == "ipw (estimated theta)", "estimator"] == "randomization").all()
    assert len(out) == 2 * 3 * len(R.METRICS)
    assert [c[0] for c in calls] == list(range(1, 9)) and all(c[1] == 8 for c in calls)
    truth = out[out["ranker"] == "ipw (true theta)"]
    assert (truth["theta_error"] == 0).all()
    # the sweep's numbers are train_and_evaluate's numbers on the same simulated log
    sim = simulate_clicks(queries=60, sessions=3000, eta=1.5, seed=0)
    tr, te = R.split_queries(sim.df, seed=0)
    direct = R.train_and_evaluate(tr, te, sim.theta).metrics()
    got = out[(out["eta"] == 1.5) & (out["metric"] == "arp")].set_index("ranker")["value"]
    assert got["naive"] == pytest.approx(direct["naive"]["arp"])
    assert got["ipw (true theta)"] == pytest.approx(direct["ipw"]["arp"])
    fig = R.sweep_figure(out, metric="arp")
    assert len(fig.data) == 3 and list(fig.data[0].x) == [0.0, 1.5]
    with pytest.raises(UlrError, match="no values"):
        R.sweep_figure(out, metric="nope")


def test_sweep_reports_an_unusable_estimate():
    with pytest.raises(UlrError, match="At eta=1 .run 1., the dla estimate"):
        R.severity_sweep([1.0], queries=20, sessions=300, estimator_name="dla",
                         estimate_theta=lambda df: np.zeros(10))


def test_sweep_figure_band_with_runs():
    df = pd.DataFrame({"eta": [0, 0, 1, 1], "run": [0, 1, 0, 1], "ranker": "naive",
                       "metric": "arp", "value": [3.0, 3.2, 3.4, 3.6]})
    fig = R.sweep_figure(df)
    band, line = fig.data
    assert band.fill == "toself" and list(line.y) == pytest.approx([3.1, 3.5])


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
