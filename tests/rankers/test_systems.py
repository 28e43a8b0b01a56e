"""Several learners' naive and IPW rankers: pairs, corrections, significance table, verdict."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from ulr.errors import UlrError
from ulr.metrics import MetricResult
from ulr.rankers import significance as S
from ulr.rankers.evaluate import RankerComparison
from ulr.rankers.systems import SystemsComparison, parse_learners, significance_wide

N = 100


def _res(name, values, weights=None):
    idx = pd.Index([f"q{i}" for i in range(len(values))])
    w = np.ones(len(values)) if weights is None else np.asarray(weights, float)
    return MetricResult(name, float(np.dot(w, values) / w.sum()), pd.Series(values, index=idx),
                        pd.Series(w, index=idx))


def _comparison(naive: dict, ipw: dict, **kw) -> RankerComparison:
    base = dict(estimated=False, learner="linear", n_train_queries=300, n_test_queries=N,
                n_test_documents=10 * N, settings={"k": 10}, n_train_clicks=5000,
                identical_order=False)
    base.update(kw)
    return RankerComparison(naive=naive, ipw=ipw, **base)


def _systems(shift_linear=0.0, shift_gbdt=0.0, seed=0, **kw) -> SystemsComparison:
    """Four systems on N queries: a shared query effect, small independent noise, and
    IPW shifted by ``shift_*`` on nDCG (ARP moves the opposite way: lower is better)."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.9, N)
    rel = rng.integers(1, 5, N).astype(float)  # ARP's weights: total relevance per query

    def system(shift):
        noise = rng.normal(0, 0.05, N)
        return {"ndcg@10": _res("ndcg@10", np.clip(base + shift + noise, 0, 1)),
                "arp": _res("arp", 3 + 2 * (1 - base) - 4 * shift + noise, rel)}
    comps = {"linear": _comparison(system(0.0), system(shift_linear)),
             "gbdt": _comparison(system(0.0), system(shift_gbdt), learner="gbdt")}
    return SystemsComparison(comps, **kw)


def test_every_pair_of_every_metric_with_corrections_per_metric():
    sc = _systems(shift_linear=0.05)
    assert list(sc.systems) == ["naive linear", "ipw linear", "naive gbdt", "ipw gbdt"]
    assert sc.metric_names() == ["arp", "ndcg@10"]
    pairs = sc.pairs(test="t", correction="holm")
    assert len(pairs) == 2 * 6
    for m, block in pairs.groupby("metric"):
        np.testing.assert_allclose(block["p_adjusted"],
                                   multipletests(block["p_value"], method="holm")[1])
        for r in block.to_dict("records"):  # delta = b - a, with ARP's relevance weights
            a, b = sc.systems[r["a"]][m], sc.systems[r["b"]][m]
            assert r["delta"] == pytest.approx(b.value - a.value)
    bh = sc.pairs(test="t", correction="bh")
    np.testing.assert_allclose(bh["p_value"], pairs["p_value"])
    assert (bh["p_adjusted"] <= pairs["p_adjusted"] + 1e-12).all()  # BH never stricter
    row = pairs.set_index(["metric", "a", "b"]).loc[("arp", "naive linear", "ipw linear")]
    assert row["delta"] < 0 and row["better"] == "ipw linear" and row["separated"]


def test_significance_table_letters_the_systems_each_beats():
    sc = _systems(shift_linear=0.05, shift_gbdt=-0.03)
    pairs = sc.pairs(correction="holm", n_resamples=2000)
    long = sc.significance(pairs)
    letter = {"naive linear": "a", "ipw linear": "b", "naive gbdt": "c", "ipw gbdt": "d"}
    for r in long.to_dict("records"):  # slow reference: scan every pair
        expected = []
        for p in pairs.to_dict("records"):
            if p["metric"] == r["metric"] and p["separated"] and p["better"] == r["system"]:
                other = p["a"] if p["b"] == r["system"] else p["b"]
                expected.append(letter[other])
        assert r["beats"] == "".join(sorted(expected))
        assert r["shown"].endswith("".join(S.SUPERSCRIPTS[c] for c in r["beats"]))
    by = long.set_index(["system", "metric"])["beats"]
    # IPW linear (+0.05) beats every other system on both metrics; IPW gbdt (-0.03) none
    assert by[("ipw linear", "ndcg@10")] == "acd" and by[("ipw linear", "arp")] == "acd"
    assert by[("ipw gbdt", "ndcg@10")] == "" and by[("naive linear", "ndcg@10")] == "d"
    wide = significance_wide(long)
    assert list(wide.columns) == ["letter", "system", "arp", "ndcg@10"]
    assert list(wide["letter"]) == list("abcd") and wide.loc[1, "ndcg@10"].endswith("ᵃᶜᵈ")


def test_tukey_rows_per_metric_and_pair_on_unweighted_means():
    sc = _systems(shift_linear=0.05)
    tk = sc.tukey()
    assert len(tk) == 12 and set(tk["metric"]) == {"arp", "ndcg@10"}
    r = tk.set_index(["metric", "a", "b"]).loc[("ndcg@10", "naive linear", "ipw linear")]
    x = {s: sc.systems[s]["ndcg@10"].per_query for s in ("naive linear", "ipw linear")}
    assert r["diff"] == pytest.approx(x["ipw linear"].mean() - x["naive linear"].mean())
    assert r["separated"] and r["better"] == "ipw linear"
    assert sc.significance(tk).set_index(["system", "metric"]).loc[
        ("ipw linear", "ndcg@10"), "beats"] == "acd"


def _barely_linear(seed=3, **kw):
    """IPW linear is shifted by a difference whose raw paired t p-value is about 0.02."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.9, N)
    d = rng.normal(0, 0.05, N)
    d = d - d.mean() + 2.4 * d.std(ddof=1) / np.sqrt(N)  # t = 2.4 on 99 df: p ~ 0.018

    def sys(values):
        return {"ndcg@10": _res("ndcg@10", values)}
    comps = {"linear": _comparison(sys(base), sys(base + d)),
             "gbdt": _comparison(sys(base + rng.normal(0, 0.05, N)),
                                 sys(base + rng.normal(0, 0.05, N)), learner="gbdt")}
    return SystemsComparison(comps, **kw)


def test_verdict_rests_on_the_corrected_p_value():
    sc = _barely_linear(test="t", correction="holm")
    holm = sc.pair_table  # computed once, when the comparison was built
    pd.testing.assert_frame_equal(holm, sc.pairs(test="t", correction="holm"))
    row = holm.set_index(["a", "b"]).loc[("naive linear", "ipw linear")]
    assert row["p_value"] < 0.05 < row["p_adjusted"]
    v = sc.verdict
    assert v.level == "inconclusive" and "cannot be told apart for any learner" in v.takeaway
    assert "Holm" in v.takeaway and "Holm-corrected" in v.basis
    assert v.estimate["linear_p_adjusted"] == pytest.approx(row["p_adjusted"])
    v = _barely_linear(test="t", correction="none").verdict  # linear told apart, gbdt not
    assert v.level == "directional" and "mixed_learners" in v.codes
    assert "linear: IPW better" in v.takeaway and "gbdt: cannot be told apart" in v.takeaway


def test_verdict_reliable_when_every_learner_is_told_apart_and_capped_when_thin():
    sc = _systems(shift_linear=0.05, shift_gbdt=0.05, correction="holm", n_resamples=2000)
    v = sc.verdict
    assert v.level == "reliable" and "IPW ranks better than naive for every learner" in v.takeaway
    thin = SystemsComparison({k: _comparison(c.naive, c.ipw, estimated=True)
                              for k, c in sc.comparisons.items()}, n_resamples=2000)
    v = thin.verdict
    assert v.level == "directional" and "estimated_labels" in v.codes and "probably" in v.takeaway
    worse = _systems(shift_linear=-0.05, shift_gbdt=-0.05, test="t")
    v = worse.verdict
    assert v.level == "reliable" and "IPW ranks worse" in v.takeaway


def test_one_learner_carries_its_comparison_verdict_and_no_pairs():
    one = SystemsComparison({"linear": _systems(shift_linear=0.05).comparisons["linear"]})
    assert one.pair_table is None and one.verdict is one.first.verdict


def test_parse_learners():
    assert parse_learners("linear, gbdt") == ("linear", "gbdt")
    assert parse_learners(["gbdt"]) == ("gbdt",)
    for bad, msg in (("linear,svm", "not 'svm'"), ("linear,linear", "once"), (" , ", "at least")):
        with pytest.raises(UlrError, match=msg):
            parse_learners(bad)
