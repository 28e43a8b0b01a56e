"""The affine correction of trust bias in the gbdt learner (Vardasbi et al. 2020)."""

import numpy as np
import pytest

from ulr.errors import UlrError
from ulr.rankers.learners import BoostedClickRanker
from ulr.simulate import simulate_clicks


@pytest.fixture(scope="module")
def trust_df():
    return simulate_clicks(model="trust", queries=150, sessions=6000, features=5, seed=2).df


def test_without_trust_it_is_ipw(trust_df):
    """alpha = theta, beta = 0: (click - 0) / theta is IPW's weight, the same fit."""
    theta = 1.0 / np.arange(1, 11)
    a = BoostedClickRanker(seed=1).fit(trust_df, theta)
    b = BoostedClickRanker(seed=1).fit(trust_df, affine=(theta, np.zeros(10)))
    np.testing.assert_allclose(a.score(trust_df), b.score(trust_df), atol=1e-12)


def test_positive_mass_is_the_affine_relevance_estimate(trust_df, monkeypatch):
    """Each document's positive weight is sum (click - beta_k) / alpha_k over its rows, kept
    at 0 when negative (a per-row reference in plain Python)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    seen = {}
    real = HistGradientBoostingClassifier.fit

    def spy(self, X, y, sample_weight=None):
        seen["X"], seen["y"], seen["w"] = X, y, sample_weight
        return real(self, X, y, sample_weight=sample_weight)
    monkeypatch.setattr(HistGradientBoostingClassifier, "fit", spy)
    alpha = np.linspace(0.6, 0.2, 10)
    beta = np.linspace(0.3, 0.01, 10)
    BoostedClickRanker(seed=0).fit(trust_df, affine=(alpha, beta))
    feats = [c for c in trust_df if c.startswith("feature_")]
    ref = {}
    for row in trust_df.itertuples():
        key = tuple(getattr(row, f) for f in feats)
        ref[key] = ref.get(key, 0.0) + (row.click - beta[row.position - 1]) / alpha[
            row.position - 1]
    pos = {tuple(x): w for x, y, w in zip(seen["X"], seen["y"], seen["w"]) if y == 1}
    for key, v in ref.items():
        if v > 0:
            assert pos[key] == pytest.approx(v, rel=1e-9)
        else:
            assert key not in pos


def test_beats_naive_on_a_trust_log(trust_df):
    from ulr.rankers.evaluate import evaluate_scores, held_out_documents, split_queries
    from ulr.simulate import trust_truth
    train, test = split_queries(trust_df, test_fraction=0.3, seed=0)
    tt = trust_truth(10, theta=1.0 / np.arange(1, 11))
    docs, _ = held_out_documents(test)
    docs = docs.assign(label=(docs["label"] >= 1).astype(float))
    naive = BoostedClickRanker(seed=0).fit(train)
    aff = BoostedClickRanker(seed=0).fit(train, affine=(tt["alpha"], tt["beta"]))
    n = evaluate_scores(docs, naive.score(docs))["ndcg@10"].value
    a = evaluate_scores(docs, aff.score(docs))["ndcg@10"].value
    assert a > n


def test_refuses_what_it_cannot_correct(trust_df):
    with pytest.raises(UlrError, match="every position up to 10"):
        BoostedClickRanker().fit(trust_df, affine=(np.ones(3), np.zeros(3)))
    with pytest.raises(UlrError, match="alpha > 0"):
        BoostedClickRanker().fit(trust_df, affine=(np.zeros(10), np.zeros(10)))


def test_rankers_cli_debias_affine(cli, tmp_path, trust_df):
    import json

    from ulr.simulate import write_log
    path = tmp_path / "trust.csv"
    write_log(trust_df.drop(columns=["true_theta"]), str(path))
    r = cli("rankers", "--input", path, "--propensity", "trust-em", "--debias", "affine",
            "--learner", "gbdt", "--json")
    assert r.rc == 0, r.err
    out = json.loads(r.out)
    assert out["debias"] == "affine" and len(out["alpha"]) == len(out["beta"]) == 10
    assert "affine-corrected" in out["verdict"]["takeaway"] or \
        "affine-corrected" in out["verdict"]["basis"]
    r = cli("rankers", "--input", path, "--propensity", "trust-em", "--debias", "affine",
            "--json")
    assert r.rc == 2 and "gbdt learner" in r.err
    r = cli("rankers", "--input", path, "--propensity", "em", "--debias", "affine")
    assert r.rc == 2 and r.err.startswith("error:")
