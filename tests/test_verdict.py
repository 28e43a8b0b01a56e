"""Verdict rules (docs/verdicts.md), in both directions, on simulated logs with known truth.

Per result type: plenty of evidence gives ``reliable``, thin evidence
``inconclusive``, a broken mapping ``invalid``; and the takeaway never names an
estimator that one of the result's own caveats calls unreliable.
"""

import math
import re

import numpy as np
import pandas as pd
import pytest

from ulr import verdict as V
from ulr.data import ingest
from ulr.data.scan import scan_of
from ulr.lists import MappingWarning, mapping_warnings
from ulr.simulate import obd_like_log, simulate_clicks, write_log


# --------------------------------------------------------------------------- helpers


def test_verdict_validates_itself():
    with pytest.raises(ValueError):
        V.Verdict("maybe", "x", "b")
    with pytest.raises(ValueError):
        V.Verdict("reliable", "", "b")
    with pytest.raises(ValueError):
        V.Reason("not a code", "m")
    v = V.Verdict("directional", "A sentence.", "snips",
                  reasons=(V.Reason("few_clicks", "m"), V.Reason("few_clicks", "m")),
                  estimate={"value": np.float64(0.5), "lower": float("nan")})
    assert v.codes == ["few_clicks"]  # one reason once
    d = v.to_dict()
    assert d["estimate"] == {"value": 0.5, "lower": None}
    assert V.Verdict.from_dict(d) == V.Verdict.from_dict(V.Verdict.from_dict(d).to_dict())


def test_rounding_follows_the_standard_error():
    assert V.decimals(0.0012) == 3
    assert V.decimals(2.3) == 0
    assert V.fmt(20.808, 2.3) == "21"  # ARP from few held-out clicks: no fake decimals
    assert V.fmt(0.0142, 0.0012) == "0.014"
    assert V.fmt(0.0040, 0.0002, pct=True) == "0.40%"
    # never "-0.000" or "+0.0000": exactly 0 reads unsigned, and a value that is not 0
    # keeps its sign and its first significant digit (issue 50: "-0.32% to +0.003%")
    assert V.fmt(0.0, 0.001, sign=True) == "0.000"
    assert V.fmt(-0.0, 0.001, sign=True) == "0.000"
    assert V.fmt(-0.00001, 0.001, sign=True) == "-0.00001"
    assert V.fmt_interval(-0.0016, -0.0032, 0.000034, pct=True, sign=True) == \
        "-0.16% [-0.32%, +0.003%]"
    assert V.fmt_interval(0.5, 0.4, 0.6) == "0.50 [0.40, 0.60]"


def test_click_rates_are_clipped_with_a_reason():
    v, lo, hi, why = V.clip_rate(-0.0016, -0.0038, 0.0020)
    assert (v, lo, hi) == (0.0, 0.0, 0.0020) and why.code == "clipped_rate"
    assert V.clip_rate(0.2, 0.1, 0.3)[3] is None


def test_told_apart_iff_the_difference_interval_excludes_zero():
    assert V.contains_zero(-0.1, 0.2) and not V.told_apart(-0.1, 0.2)
    assert V.told_apart(0.01, 0.2) and V.told_apart(-0.3, -0.01)
    assert V.contains_zero(float("nan"), 1.0)  # no interval: nothing is told apart
    v = V.difference_verdict(0.01, -0.02, 0.04, a="A", b="B", quantity="q", basis="b",
                             n=100, unit="queries")
    assert v.level == "inconclusive" and "cannot be told apart" in v.takeaway
    v = V.difference_verdict(0.05, 0.02, 0.08, a="A", b="B", quantity="q", basis="b",
                             n=100, unit="queries")
    assert v.level == "reliable" and "better" in v.takeaway
    v = V.difference_verdict(0.05, 0.02, 0.08, a="A", b="B", quantity="q", basis="b",
                             n=100, unit="queries", thin=(V.Reason("few_clicks", "m"),))
    assert v.level == "directional"


def test_more_evidence_to_exclude_zero_scales_as_one_over_sqrt_n():
    """Simulate: with the suggested total the interval of the same difference excludes 0."""
    rng = np.random.default_rng(0)
    delta, sd, n = 0.1, 1.0, 100
    x = rng.normal(delta, sd, n)
    m, lo, hi, _ = V.paired_t_interval(x)
    more = V.more_to_exclude_zero(n, m, lo, hi)
    assert more is not None and more > 0
    hits = 0
    for s in range(200):  # at the suggested size the interval excludes 0 about half the time
        y = np.random.default_rng(s + 1).normal(m, sd, n + more)
        hits += V.told_apart(*V.paired_t_interval(y)[1:3])
    assert 0.3 < hits / 200 < 0.7  # binomial sd over 200 draws ~ 0.035: far from the bounds
    assert V.more_to_exclude_zero(n, 0.0, -1, 1) is None


def test_rank_identically():
    q = ["a", "a", "a", "b", "b"]
    assert V.rank_identically(q, [3, 2, 1, 5, 4], [30, 20, 10, 1, 0])
    assert not V.rank_identically(q, [3, 2, 1, 5, 4], [1, 2, 3, 1, 0])
    assert not V.rank_identically(q, [3, 3, 1, 5, 4], [3, 2, 1, 5, 4])  # a tie is an order


# --------------------------------------------------------------------------- mapping checks


def _open(df, tmp_path, name="log.parquet"):
    path = tmp_path / name
    write_log(df, str(path))
    return ingest.open_file(path)


def test_load_warns_when_sessions_do_not_group_lists(tmp_path):
    df = obd_like_log(impressions=600, row_timestamps=True)
    path = tmp_path / "rows.csv"
    df.to_csv(path, index=False)
    res = ingest.load_log(path, "r", db_path=tmp_path / "s.duckdb",
                         mapping={"query_id": "user_feature_0", "session_id": "timestamp",
                                  "doc_id": "item_id"})
    codes = [w.code for w in res.warnings]
    assert codes == ["single_row_sessions"]
    assert "map a column that groups one shown list" in res.warnings[0].message
    # the same log whose slots share the timestamp: no warning
    df = obd_like_log(impressions=600)
    df.to_csv(path, index=False)
    res = ingest.load_log(path, "s", db_path=tmp_path / "s.duckdb",
                         mapping={"query_id": "user_feature_0", "session_id": "timestamp",
                                  "doc_id": "item_id"})
    assert res.warnings == ()


def test_repeated_positions_and_single_document_queries(tmp_path):
    df = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q3"], "doc_id": ["a", "b", "c", "d"],
                       "position": [1, 1, 1, 1], "click": [0, 1, 0, 0],
                       "session_id": ["s", "s", "t", "u"]})
    w = {x.code: x for x in mapping_warnings(_open(df, tmp_path))}
    assert set(w) == {"repeated_position", "single_document_queries"}
    assert "rankers" in w["single_document_queries"].blocks
    assert all("map a column that groups one shown list" in x.message for x in w.values())
    good = pd.DataFrame({"query_id": ["q1"] * 4, "doc_id": list("abcd"),
                         "position": [1, 2, 1, 2], "click": [0, 1, 0, 0],
                         "session_id": ["s", "s", "t", "t"]})
    assert mapping_warnings(_open(good, tmp_path, "g.parquet")) == ()


def _warning(code):
    return MappingWarning(code, "broken mapping; map a column that groups one shown list",
                          share=0.9)


# --------------------------------------------------------------------------- position bias


@pytest.fixture(scope="module")
def pbm_logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("pbm")
    out = {}
    for name, sessions in (("big", 30_000), ("thin", 150)):
        sim = simulate_clicks(queries=100, positions=4, sessions=sessions, eta=1.0,
                              randomized_fraction=1.0, seed=3)
        path = d / f"{name}.parquet"
        write_log(sim.df.drop(columns=["true_theta"], errors="ignore"), str(path))
        out[name] = ingest.open_file(path)
    return out


def test_position_bias_verdict_both_directions(pbm_logs):
    from ulr import propensity
    from dataclasses import replace
    big = propensity.estimate(pbm_logs["big"], method="randomization", n_bootstrap=100)
    v = big.verdict
    assert v.level == "reliable", v
    assert v.estimate["relative_half_width"] <= V.PRECISE
    thin = propensity.estimate(pbm_logs["thin"], method="randomization", n_bootstrap=100)
    v = thin.verdict
    assert v.level == "inconclusive", v
    assert v.to_settle and "more randomized rows" in v.to_settle
    # to_settle's count, derived from 1/sqrt(n), is of the order of what "big" needed
    more = int(re.search(r"about ([\d,]+)", v.to_settle).group(1).replace(",", ""))
    assert more > 10 * thin.rows_used
    assert propensity.estimate(pbm_logs["big"], method="randomization", n_bootstrap=100,
                               mapping=[_warning("repeated_position")]).verdict.level == "invalid"
    assert big.to_dict()["verdict"] == big.verdict.to_dict()
    no_ci = propensity.estimate(pbm_logs["big"], method="randomization")
    uncounted = replace(no_ci, clicks=None, impressions=None)
    assert uncounted.verdict.level == "inconclusive"  # no interval, no claim of precision


# --------------------------------------------------------------------------- rankers


def _comparison(queries, sessions, eta=1.5, seed=1, **kw):
    from ulr.rankers.evaluate import train_and_evaluate
    sim = simulate_clicks(queries=queries, positions=10, sessions=sessions, eta=eta,
                          seed=seed)
    return train_and_evaluate(sim.df, None, sim.theta, min_queries=0, seed=seed, **kw)


def test_ranker_verdict_both_directions():
    big = _comparison(300, 30_000, n_bootstrap=500)
    v = big.verdict
    assert v.level == "reliable" and v.takeaway.startswith("IPW is better"), v
    thin = _comparison(40, 400, seed=1, n_bootstrap=500)
    v = thin.verdict
    assert v.level == "inconclusive" and "cannot be told apart" in v.takeaway, v
    assert v.to_settle is None or "more test queries" in v.to_settle
    for seed in (2, 3):  # thin evidence never reads as reliable (12 test queries)
        v = _comparison(40, 400, seed=seed, n_bootstrap=300).verdict
        assert v.level != "reliable" and ("few_test_queries" in v.codes
                                          or v.level == "inconclusive"), v
    blocked = _comparison(60, 3000, mapping=[_warning("single_document_queries")])
    assert blocked.verdict.level == "invalid"


def test_ranker_verdict_is_set_when_the_comparison_is_built():
    """The verdict is a field: the paired bootstrap of nDCG@10 with the comparison's own
    replicates and seed, computed once; the evidence is a field too."""
    comp = _comparison(60, 3000, seed=4, n_bootstrap=300)
    row = comp.paired(n_bootstrap=300, seed=4).set_index("metric").loc["ndcg@10"]
    v = comp.verdict
    assert isinstance(v, V.Verdict) and v is comp.verdict  # no recomputation
    assert (v.estimate["delta"], v.estimate["lower"], v.estimate["upper"]) == (
        row["delta"], row["lower"], row["upper"])
    assert v.estimate["n"] == row["queries"] == comp.n_compared
    assert comp.evidence == {"rows": comp.n_train_rows, "clicks": comp.n_train_clicks,
                             "training queries": comp.n_train_queries,
                             "test queries": comp.n_compared,
                             "sessions": comp.n_train_sessions}


def test_rankers_that_order_every_list_identically():
    """With theta = 1 everywhere IPW equals naive: the verdict says so, not "+0.0000"."""
    from ulr.rankers.evaluate import train_and_evaluate
    sim = simulate_clicks(queries=120, positions=5, sessions=3000, eta=1.0, seed=2)
    comp = train_and_evaluate(sim.df, None, np.ones(5), min_queries=0, n_bootstrap=200)
    assert comp.identical_order
    v = comp.verdict
    assert v.level == "inconclusive" and "rank identically" in v.takeaway
    assert "rank_identically" in v.codes


# --------------------------------------------------------------------------- sweep


def test_sweep_verdict_needs_several_runs():
    from ulr.rankers.sweep import severity_sweep, sweep_summary
    one = severity_sweep((2.0,), queries=80, sessions=4000, runs=1)
    v = one.verdicts["ndcg@10"]
    assert v.level == "inconclusive" and "single_run" in v.codes
    strong = severity_sweep((2.0,), queries=150, sessions=10_000, runs=4).verdicts["ndcg@10"]
    # an interval that excludes 0 on 4 runs: the sign holds, but few runs cap it (issue 50)
    assert strong.level == "directional" and "probably better" in strong.takeaway, strong
    assert strong.codes == ["few_runs"] and strong.estimate["lower"] > 0
    many = severity_sweep((0.0, 2.0), queries=150, sessions=15_000, runs=4)
    s = sweep_summary(many.rows)
    assert s["lower"].notna().all() and (s["lower"] <= s["mean"]).all()
    v = many.verdicts["ndcg@10"]
    assert v.estimate["runs"] == 4 and v.level in V.LEVELS
    lo, hi = v.estimate["lower"], v.estimate["upper"]
    assert (v.level == "inconclusive") == V.contains_zero(lo, hi)


# --------------------------------------------------------------------------- replay, bandits


def _randomized(tmp_path, sessions, name):
    rng = np.random.default_rng(0)
    w = np.array([0.05, 0.1, 0.15, 0.2, 0.6])
    order = np.argsort(rng.random((sessions, 5)), axis=1)
    click = rng.random((sessions, 5)) < (1 / np.arange(1, 6)) * w[order]
    df = pd.DataFrame({"query_id": "q", "doc_id": np.char.add("d", order.ravel().astype(str)),
                       "position": np.tile(np.arange(1, 6), sessions),
                       "click": click.ravel().astype(int), "randomized": 1,
                       "session_id": np.repeat(np.arange(sessions), 5)})
    return _open(df, tmp_path, name)


def test_replay_verdict_both_directions(tmp_path):
    from ulr.bandits.replay import replay
    from dataclasses import replace
    big = replay(_randomized(tmp_path, 20_000, "big.parquet"), "ucb1", positions=1)
    v = big.verdict  # set when the replay result is built
    assert v.level == "reliable" and "better" in v.takeaway, v
    assert big.evidence == {"sessions": big.events, "clicks": big.clicks}
    thin = replay(_randomized(tmp_path, 30, "thin.parquet"), "ucb1", positions=1)
    v = thin.verdict
    assert v.level == "inconclusive", v
    assert "Replayed CTR" in v.takeaway and "%" in v.takeaway
    blocked = replay(_randomized(tmp_path, 200, "blocked.parquet"), "ucb1", positions=1,
                     mapping=[_warning("single_row_sessions")])
    assert blocked.verdict.level == "invalid"
    assert replace(big, mapping=[_warning("single_row_sessions")]).verdict.level == "invalid"
    d = big.to_dict()
    assert d["verdict"] == big.verdict.to_dict() and "mapping" not in d and "evidence" not in d


def test_bandit_runs_verdict():
    from ulr.bandits.envs import make_env
    from ulr.bandits.simulate import simulate
    env = make_env("kveton", items=8, positions=2, p=0.2, delta=0.15, seed=0)
    one = simulate("ucb1", env, steps=300, runs=1)
    assert one.verdict.level == "inconclusive"
    many = simulate("ucb1", env, steps=2000, runs=20)
    assert many.verdict.level in ("reliable", "directional")
    assert "verdict" in many.summary()


# --------------------------------------------------------------------------- OPE


def _ope_log(tmp_path, rows, ctr, name, *, target_good=True):
    from ulr.ope.simulate import make_sample_log
    df = make_sample_log(rows=rows, ctr=ctr, seed=4)
    return _open(df, tmp_path, name)


def _unreliable_named(v, caveats) -> list[str]:
    """Estimators a caveat calls unreliable that the takeaway names (as a whole word)."""
    from ulr.ope.verdicts import LABELS, UNRELIABLE
    bad = {e for c in caveats for e in UNRELIABLE.get(c, ())}
    named = []
    for e in bad:
        label = LABELS[e]
        if re.search(rf"(?<![\w-]){re.escape(label)}(?![\w-])", v.takeaway) and not \
                re.search(rf"\w+ {re.escape(label)}|{re.escape(label)}\w", v.takeaway):
            named.append(e)
        if e == v.basis:
            named.append(e)
    return named


def test_ope_verdict_both_directions(tmp_path):
    from ulr.ope.evaluate import evaluate_log
    big = evaluate_log(_ope_log(tmp_path, 60_000, 0.2, "big.parquet"), target="fitted",
                       temperature=0.2, n_bootstrap=200)
    v = big.verdict
    assert v.level == "reliable" and "beats" in v.takeaway, v
    thin = evaluate_log(_ope_log(tmp_path, 3000, 0.006, "thin.parquet"), target="fitted",
                        temperature=0.2, n_bootstrap=200)
    v = thin.verdict
    assert v.level == "inconclusive" and "cannot be told apart" in v.takeaway, v
    assert v.to_settle and re.search(r"more (logged rows|shown lists)", v.to_settle)
    thinish = evaluate_log(_ope_log(tmp_path, 2000, 0.01, "thinish.parquet"), target="fitted",
                           temperature=0.2, n_bootstrap=200)
    v = thinish.verdict  # the interval excludes 0, but on under 30 effective clicks
    assert v.level == "directional" and "few_clicks" in v.codes and "probably" in v.takeaway
    assert big.to_dict()["verdict"]["level"] == "reliable"


def _heavy_tailed(estimators=("ips", "clipped-ips", "snips", "dr")):
    """A log where three rows had a logging probability of 0.001 (weights near 1000)."""
    from ulr.ope.evaluate import evaluate
    from ulr.ope.feedback import BanditFeedback
    from ulr.ope.simulate import simulate_bandit
    sim = simulate_bandit(contexts=6, actions=4, n_features=3, positions=1, base_rate=0.3,
                          logging="softmax", seed=0)
    fb = sim.sample(800, seed=1).feedback(0)
    p = fb.propensity.copy()
    p[:3] = 0.001
    heavy = BanditFeedback(candidates=fb.candidates, pair=fb.pair, reward=fb.reward,
                           propensity=p)
    return evaluate(heavy, sim.policy(temperature=0.3), n_bootstrap=200,
                    estimators=estimators)


def test_ope_takeaway_never_rests_on_an_estimator_its_caveats_distrust():
    res = _heavy_tailed()
    codes = [w.code for w in res.warnings]
    assert "heavy_tailed" in codes  # the case of the issue: IPS called unreliable
    v = res.verdict
    assert v.basis == "snips"
    assert _unreliable_named(v, codes) == []
    assert "IPS and its interval are unreliable" in " ".join(r.message for r in v.reasons)
    only_ips = _heavy_tailed(("ips",))
    v = only_ips.verdict
    assert v.level == "inconclusive" and v.basis == "none"
    assert not re.search(r"(?<![\w-])IPS(?![\w-])", v.takeaway.replace("SNIPS", ""))


def test_ope_invalid_without_reachable_clicks():
    from ulr.ope.verdicts import ope_verdict
    from ulr.ope.evaluate import OPEWarning
    table = pd.DataFrame({"estimator": ["snips", "logging"], "value": [0.0, 0.0],
                          "lower": [0.0, 0.0], "upper": [0.0, 0.0], "se": [0.0, 0.0]})
    v = ope_verdict(table, [OPEWarning("no_clicks", "No clicked row...")], {"n": 100})
    assert v.level == "invalid"


def test_a_gain_on_a_handful_of_effective_clicks_is_never_claimed():
    """The issue's case: 0.0142 vs 0.0040 on 2.7 effective clicks, interval excluding 0."""
    from ulr.ope.verdicts import ope_verdict
    table = pd.DataFrame({"estimator": ["snips", "logging"], "value": [0.0142, 0.0040],
                          "lower": [0.0060, 0.0030], "upper": [0.0300, 0.0050],
                          "se": [0.006, 0.0005], "diff_lower": [0.002, np.nan],
                          "diff_upper": [0.026, np.nan]})
    v = ope_verdict(table, [], {"n": 5000, "effective_clicks": 2.7}, target="the learned policy")
    assert v.level == "inconclusive" and "cannot be told apart" in v.takeaway
    assert "too_few_clicks" in v.codes and "2.7 effective clicks" in v.takeaway
    v = ope_verdict(table, [], {"n": 5000, "effective_clicks": 300.0})
    assert v.level == "reliable"  # the same interval on plenty of clicks


def test_dr_below_zero_is_clipped_with_a_reason():
    from ulr.ope.verdicts import ope_verdict
    table = pd.DataFrame({"estimator": ["dr", "logging"], "value": [-0.0016, 0.004],
                          "lower": [-0.0038, 0.003], "upper": [0.0020, 0.005],
                          "se": [0.0015, 0.0005]})
    v = ope_verdict(table, [], {"n": 10_000})
    assert v.basis == "dr" and "clipped_rate" in v.codes
    assert v.estimate["value"] >= 0 and v.estimate["lower"] >= 0
    assert "-" not in v.takeaway.split("(by")[1].split("clicks")[0]


def test_a_clipped_estimate_shows_no_difference_and_carries_no_verdict():
    """The issue's case: DR -0.00073 shown clipped (0 [0, 0.00427], logging's 0.00379 inside)
    beside a difference [-0.0078, -0.00003] computed unclipped. One estimate reads one way:
    the shown table has no difference for it, and the verdict rests on another estimator."""
    from ulr.ope.evaluate import OPEResult, OPEWarning, clipped_message
    table = pd.DataFrame({"estimator": ["snips", "dr", "logging"],
                          "value": [0.0036, -0.00073, 0.00379],
                          "lower": [0.0020, -0.0040, 0.0031], "upper": [0.0052, 0.00427, 0.0045],
                          "se": [0.0008, 0.002, 0.0003],
                          "diff_lower": [-0.0018, -0.0078, np.nan],
                          "diff_upper": [0.0014, -0.00003, np.nan]})
    res = OPEResult(table=table, diagnostics={"n": 10_000, "clicks": 38},
                    warnings=[OPEWarning("clipped_rate", clipped_message(["dr"]))])
    shown = res.estimates_table().set_index("method")
    assert shown.loc["DR", "value"] == 0 and shown.loc["DR", "lower"] == 0
    assert np.isnan(shown.loc["DR", "minus logging, lower"])
    assert np.isnan(shown.loc["DR", "minus logging, upper"])
    assert shown.loc["SNIPS", "minus logging, lower"] == -0.0018  # others untouched
    raw = res.estimates_table(clipped=False).set_index("method")
    assert raw.loc["DR", "minus logging, upper"] == -0.00003
    assert res.verdict.basis == "snips" and "DR" not in res.verdict.takeaway.split(" (")[0]
    assert "cannot be told apart" in res.verdict.takeaway


def test_several_loggers_rest_on_wips(tmp_path):
    from ulr.ope.evaluate import evaluate_log
    from ulr.ope.loggers import make_multi_logger_log
    df, _ = make_multi_logger_log(sessions=3000)
    log = _open(df, tmp_path, "multi.parquet")
    res = evaluate_log(log, target="fitted", n_bootstrap=200,
                       estimators=("ips", "snips", "dr", "wips"))
    v = res.verdict
    assert v.basis == "wips" and "WIPS" in v.takeaway and "several_loggers" in v.codes
    assert not re.search(r"(?<![\w-])IPS(?![\w-])", v.takeaway.replace("WIPS", ""))


def test_learned_policy_verdict_both_directions():
    from ulr.ope.study import crm_study
    big = crm_study(None, steps=80, rows=20_000, seed=0)["result"]
    assert big.verdict.level == "reliable"
    thin = crm_study(None, steps=80, rows=600, base_rate=0.01, seed=0)["result"]
    v = thin.verdict
    assert v.level == "inconclusive" and "cannot be told apart" in v.takeaway
    assert v.takeaway.startswith("The learned policy")
    assert _unreliable_named(v, [w.code for w in thin.evaluation.warnings]) == []


def test_study_verdict():
    from ulr.ope.study import simulation_study
    out = simulation_study(rows=300, runs=60, estimators=("ips", "snips"), seed=0,
                           logging="softmax", temperature=0.3, contexts=12)
    v = out.verdict  # set when the study is built
    assert isinstance(v, V.Verdict) and v.level in V.LEVELS and "smallest RMSE" in v.takeaway
    assert v.estimate["n"] == 60 and v.basis == "squared error over 60 simulated logs"
    assert out.evidence == {"rows": 300 * 60, "clicks": None, "queries": 12, "sessions": None}
    assert (v.level == "inconclusive") == V.contains_zero(v.estimate["lower"],
                                                           v.estimate["upper"])


def test_slate_verdict(tmp_path):
    from ulr.ope.simulate import make_sample_log
    from ulr.ope.slate import slate_from_log
    log = _open(make_sample_log(rows=30_000, ctr=0.2, seed=1), tmp_path, "slate.parquet")
    out = slate_from_log(log, temperature=1.0)
    v = out.verdict  # set when the slate estimates are built
    assert "slate_assumption" in v.codes and v.level == "reliable", v
    assert v.takeaway.startswith("The target ranking is better")
    assert out.evidence == {"sessions": out.sessions, "clicks": out.clicks}
    thin = slate_from_log(_open(make_sample_log(rows=900, ctr=0.01, seed=1),
                                tmp_path, "thin_slate.parquet")).verdict
    assert thin.level == "inconclusive" and "cannot be told apart" in thin.takeaway
    blocked = slate_from_log(log, temperature=1.0, mapping=[_warning("single_row_sessions")])
    assert blocked.verdict.level == "invalid"


# --------------------------------------------------------------------------- recommendation


def test_recommend_verdict_over_seeds():
    from ulr.recommend.data import simulate_mnar
    from ulr.recommend.experiment import compare_seeds, run_experiment
    from ulr.recommend.models import MFConfig
    exps = [run_experiment(simulate_mnar(users=200, items=150, seed=s),
                           models=("naive-mf", "propensity-mf"),
                           base=MFConfig(seed=s, epochs=20)) for s in range(3)]
    seeds = compare_seeds(exps)
    v = seeds.verdict  # set when the comparison of the worlds is built
    assert isinstance(v, V.Verdict) and v.estimate["n"] == 3
    assert (v.level == "inconclusive") == V.contains_zero(v.estimate["lower"],
                                                           v.estimate["upper"])
    s = exps[0].summary
    assert seeds.first is exps[0] and seeds.evidence == {
        "rows": s["mnar_ratings"] + s["random_ratings"], "test ratings": s["test_ratings"],
        "worlds": 3}
    assert compare_seeds(exps[:1]).verdict.level == "inconclusive"
    # without naive MF (or with it alone) there is nothing to compare: an inconclusive
    # verdict that says so (every result carries one, ulr.result)
    alone = run_experiment(simulate_mnar(users=40, items=30, seed=0), models=("naive-mf",),
                           base=MFConfig(seed=0, epochs=2))
    v = compare_seeds([alone]).verdict
    assert v.level == "inconclusive" and v.codes == ["one_model"]


# --------------------------------------------------------------------------- report items


def test_report_item_stores_and_shows_the_verdict():
    from ulr.report import ReportItem, build_deck, build_html
    v = V.Verdict("inconclusive", "IPW and naive cannot be told apart on ndcg@10.", "paired")
    it = ReportItem.from_result("Compare rankers", verdict=v)
    assert it.takeaway == v.takeaway and it.verdict["level"] == "inconclusive"
    assert ReportItem.from_dict(it.to_dict()).verdict == v.to_dict()
    assert ReportItem.from_result("x", verdict=v, takeaway="edited").takeaway == "edited"
    for html in (build_html([it]), build_deck([it])):
        assert 'class="verdict verdict-inconclusive"' in html and "Inconclusive" in html
    with pytest.raises(ValueError):
        ReportItem(title="x", verdict={"level": "sure"})
    assert ReportItem(title="old item").verdict is None  # items saved before verdicts load


def test_click_rate_chart_never_goes_below_zero():
    from ulr.ope.figures import estimates_figure
    table = pd.DataFrame({"estimator": ["dr", "logging"], "value": [-0.0016, 0.004],
                          "lower": [-0.0038, 0.003], "upper": [0.0020, 0.005],
                          "se": [0.0015, 0.0005]})
    fig = estimates_figure(table)
    tr = fig.data[0]
    assert tr.y[0] >= 0 and tr.y[0] - tr.error_y.arrayminus[0] >= 0
    assert fig.layout.yaxis.rangemode == "nonnegative"


def test_ctr_caption_is_computed_from_the_data():
    from ulr.data.summary import CtrByPosition
    ctr = pd.DataFrame({"position": [1, 2, 3], "impressions": [3334] * 3,
                        "clicks": [12, 20, 9]})  # randomized log, position 2 highest
    v = CtrByPosition(ctr, randomized_share=1.0).verdict
    assert "better documents on top" not in v.takeaway and "randomized" in v.takeaway
    assert "cannot be told apart" in v.takeaway and v.level == "inconclusive"
    big = pd.DataFrame({"position": [1, 2, 3], "impressions": [100_000] * 3,
                        "clicks": [3000, 1500, 900]})
    v = CtrByPosition(big).verdict
    assert v.level == "reliable" and v.takeaway.startswith("Clicks fall with position")
    assert "better documents on top" in v.takeaway


def test_cli_report_items_carry_the_verdict():
    from ulr.commands.report import build_items
    log = ingest.open_file(ingest.SAMPLE_CSV)
    items, status = build_items(log, ["propensity", "rankers"], n_bootstrap=20)
    assert set(status.values()) == {"ok"}
    for it in items:
        assert it.verdict and it.takeaway == it.verdict["takeaway"]


# --------------------------------------------------------------------------- every result type

_DISTRUST = re.compile(r"((?:clipped |balanced )?(?<![A-Za-z])(?:SNIPS|WIPS|IPS|DR|DM))"
                       r"(?: and its interval)? (?:is|are) unreliable")


def _verdicts_of_every_type(tmp):
    """One verdict per result type, from small simulated inputs (thin on purpose: caveats)."""
    from ulr import propensity
    from ulr.bandits.envs import make_env
    from ulr.bandits.replay import replay
    from ulr.bandits.simulate import simulate
    from ulr.data.summary import CtrByPosition
    from ulr.ope.simulate import make_sample_log
    from ulr.ope.slate import slate_from_log
    from ulr.ope.study import crm_study, simulation_study
    from ulr.rankers.sweep import severity_sweep
    from ulr.recommend.data import simulate_mnar
    from ulr.recommend.experiment import compare_seeds, run_experiment
    from ulr.recommend.models import MFConfig
    sim = simulate_clicks(queries=60, positions=4, sessions=2000, randomized_fraction=1.0,
                          seed=5)
    pb_log = _open(sim.df.drop(columns=["true_theta"], errors="ignore"), tmp, "pb.parquet")
    sample = _open(make_sample_log(rows=3000, ctr=0.02, seed=2), tmp, "ope.parquet")
    env = make_env("kveton", items=6, positions=2, p=0.2, delta=0.15, seed=0)
    return {
        "position bias": propensity.estimate(pb_log, method="randomization",
                                             n_bootstrap=30).verdict,
        "rankers": _comparison(40, 600, n_bootstrap=200).verdict,
        "sweep": severity_sweep((1.0,), queries=60, sessions=2000, runs=2).verdicts["ndcg@10"],
        "replay": replay(_randomized(tmp, 200, "r.parquet"), "ucb1", positions=1).verdict,
        "bandit": simulate("ucb1", env, steps=200, runs=3).verdict,
        "ope": _heavy_tailed().verdict,
        "learned policy": crm_study(None, steps=40, rows=800, base_rate=0.02)["result"].verdict,
        "slate": slate_from_log(sample).verdict,
        "study": simulation_study(rows=200, runs=30, estimators=("ips", "snips"),
                                  logging="softmax", temperature=0.3).verdict,
        "recommend": compare_seeds([run_experiment(
            simulate_mnar(users=80, items=60, seed=s), models=("naive-mf", "propensity-mf"),
            base=MFConfig(seed=s, epochs=5)) for s in range(2)]).verdict,
        "ctr by position": CtrByPosition(
            pd.DataFrame({"position": [1, 2], "impressions": [500, 500], "clicks": [6, 3]})
        ).verdict,
    }


def test_no_takeaway_names_an_estimator_its_own_caveats_distrust(tmp_path):
    from ulr.ope.verdicts import LABELS
    ids = {v: k for k, v in LABELS.items()}
    seen_distrust = False
    for kind, v in _verdicts_of_every_type(tmp_path).items():
        assert v.level in V.LEVELS and v.takeaway.strip(), kind
        for r in v.reasons:
            for name in _DISTRUST.findall(r.message):
                seen_distrust = True
                assert v.basis != ids.get(name), (kind, v.basis)
                assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])",
                                     v.takeaway.replace(f"clipped {name}", "")
                                     .replace(f"balanced {name}", "")), (kind, v.takeaway)
        assert "--" not in v.takeaway and (v.to_settle is None or "--" not in v.to_settle)
        assert v.to_dict()["level"] == v.level
    assert seen_distrust  # the heavy-tailed OPE case is among them: the test can fail


def test_bandit_lab_verdict_names_the_least_regret():
    from ulr.bandits.envs import make_env
    from ulr.bandits.simulate import BanditLab
    env = make_env("kveton", items=8, positions=2, p=0.2, delta=0.15, seed=0)
    lab = BanditLab(env=env, algorithms=("ucb1", "cascade-klucb"), steps=3000, runs=10)
    while not lab.done:
        lab.advance(1.0)
    v = lab.verdict
    assert v.level in V.LEVELS and "cumulative regret" in v.takeaway
    lo, hi = v.estimate["lower"], v.estimate["upper"]
    assert (v.level == "inconclusive") == V.contains_zero(lo, hi)
    one = BanditLab(env=env, algorithms=("ucb1", "cascade-klucb"), steps=200, runs=1)
    one.advance(1.0)
    assert one.verdict.level == "inconclusive"


# --------------------------------------------------------------------------- command line


def _cli(capsys, *args):
    import json
    from ulr.cli import main
    capsys.readouterr()
    rc = main([str(a) for a in args] + ["--json"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    return json.loads(cap.out)


def test_every_json_result_carries_its_verdict(tmp_path, capsys):
    path = tmp_path / "rows.csv"
    obd_like_log(row_timestamps=True).to_csv(path, index=False)
    db = tmp_path / "cli.duckdb"
    out = _cli(capsys, "load", path, "--db", db, "--name", "r",
               "--map", "query_id=user_feature_0+user_feature_1+user_feature_2+user_feature_3",
               "--map", "session_id=timestamp", "--const", "randomized=1",
               "--features", "user-item_affinity_*")
    assert [w["code"] for w in out["warnings"]] == ["single_row_sessions"]
    assert "replay" in out["warnings"][0]["blocks"]
    log = ["--db", db, "--name", "r"]
    rep = _cli(capsys, "bandit", "--replay", *log, "--algorithm", "ucb1")
    assert rep["verdict"]["level"] == "invalid"  # sessions are not shown lists
    assert "single_row_sessions" in [r["code"] for r in rep["verdict"]["reasons"]]
    ope = _cli(capsys, "ope", *log, "--bootstrap", "100", "--learn", "snips", "--steps", "20")
    assert ope["verdict"]["level"] in ("inconclusive", "directional")  # 40 clicks
    assert ope["verdict"]["basis"] in ("snips", "dr")
    # the learned policy is judged on the same log: its verdict weighs the same mapping
    codes = {k: [r["code"] for r in v["reasons"]]
             for k, v in (("target", ope["verdict"]), ("learned", ope["learned"]["verdict"]))}
    assert "single_row_sessions" in codes["target"] and "single_row_sessions" in codes["learned"]
    prop = _cli(capsys, "propensity", *log, "--method", "randomization", "--bootstrap", "50")
    assert prop["verdict"]["level"] == "inconclusive" and prop["verdict"]["to_settle"]
    sim = tmp_path / "sim.csv"
    _cli(capsys, "simulate", "--out", sim, "--queries", "150", "--sessions", "4000",
         "--seed", "1")
    rk = _cli(capsys, "rankers", "--input", sim, "--theta", "1,0.5,0.33,0.25,0.2,0.17,0.14,"
              "0.125,0.11,0.1")
    assert rk["verdict"]["level"] in V.LEVELS and rk["rank_identically"] is False
    paired = {p["metric"]: p for p in rk["paired"]}  # always, with intervals
    assert paired["ndcg@10"]["lower"] <= paired["ndcg@10"]["delta"] <= paired["ndcg@10"]["upper"]
    same = _cli(capsys, "rankers", "--input", sim, "--theta", ",".join(["1"] * 10))
    assert same["rank_identically"] and same["verdict"]["level"] == "inconclusive"


def test_slides_and_powerpoint_show_the_verdict_level():
    from ulr.report import ReportItem, build_deck
    v = V.Verdict("directional", "IPW is probably better than naive.", "paired")
    it = ReportItem.from_result("Compare rankers", verdict=v)
    deck = build_deck([it])
    assert 'class="verdict verdict-directional"' in deck and "{" not in deck.split(
        'class="verdict verdict-directional"')[1][:60]
    from ulr.report import powerpoint
    assert powerpoint._takeaway(it).startswith("DIRECTIONAL: IPW is probably")


def test_pbm_based_results_carry_the_user_model_gap(tmp_path):
    """A log made by a cascade-type model: the click-model comparison (ulr.clickmodels'
    public API) finds the PBM worse beyond noise, and a PBM-based verdict carries that gap
    (and is capped at directional); a PBM log gives no caveat."""
    from ulr.clickmodels import evaluate, sessions
    from ulr.simulate import simulate_click_model

    def comparison(model):
        sim = simulate_click_model(model, sessions=4000, queries=20, positions=5, seed=1)
        path = str(tmp_path / f"{model}.parquet")
        write_log(sim.df, path)
        lg = ingest.open_file(path)
        S = sessions.collect(scan_of(lg), test_fraction=0.2, seed=0)
        return evaluate.compare(S, ["pbm", "dcm"], n_bootstrap=30, seed=0, test_fraction=0.2,
                                refit_intervals=False)

    cmp = comparison("dcm")
    pbm = cmp.score("pbm")
    assert cmp.best == "dcm" and pbm.gap_interval[0] > 0
    r = V.pbm_misfit(cmp)
    assert r is not None and r.code == "pbm_misfit"
    se = V.se_of(*pbm.gap_interval)
    assert f"worse than DCM by {V.fmt(pbm.gap, se)} nats per session" in r.message
    assert f"{cmp.test_sessions:,} held-out sessions" in r.message
    v = V.Verdict("reliable", "θ is known.", "theta (em)")
    w = V.with_reason(v, r)
    assert w.level == "directional" and w.codes == ["pbm_misfit"]
    assert V.with_reason(v, None) is v
    assert V.pbm_misfit(comparison("pbm")) is None
    assert V.pbm_misfit(None) is None


# --------------------------------------------------------------------------- one count per fact


def _counts(v, unit: str) -> set:
    """Every number stated before ``unit`` in a verdict's sentence, reasons and advice."""
    text = " ".join([v.takeaway, v.to_settle or "", *(r.message for r in v.reasons)])
    return {float(m.replace(",", "")) for m in re.findall(
        rf"(\d[\d,]*(?:\.\d+)?) {re.escape(unit)}\b", text)}  # not "N more ..."


def test_each_verdict_states_the_counts_of_its_result():
    """For every result type: each count a verdict states (test queries, runs, worlds,
    held-out sessions, effective clicks) is the result's own field, and the same one its
    evidence shows."""
    from ulr import rankers
    from ulr.recommend.data import simulate_mnar
    from ulr.recommend.experiment import compare_seeds, run_experiment
    from ulr.recommend.models import MFConfig

    # Compare rankers: one count of test queries, in the verdict, its reasons, the evidence
    sim = simulate_clicks(queries=200, sessions=800, eta=1.0, seed=3)
    comp = rankers.train_and_evaluate(sim.df.drop(columns=["relevance"]), None, sim.theta,
                                      n_bootstrap=200)
    v = comp.verdict
    assert _counts(v, "test queries") == {comp.n_compared}
    assert comp.evidence["test queries"] == comp.n_compared
    assert f"evaluated on {comp.n_compared:,} test queries" in comp.evidence_line()

    # Severity sweep: the runs behind the interval
    sw = rankers.severity_sweep((0.0, 1.5), queries=30, positions=5, sessions=600, runs=2)
    v = sw.verdicts["arp"]
    assert sw.verdict == v and sw.metric == "arp"  # the page's and the CLI's default metric
    assert _counts(v, "runs") == {2.0} and v.estimate["n"] == 2

    # Debiased recommendation: the worlds behind the interval
    exps = [run_experiment(simulate_mnar(users=40, items=30, seed=s), models=["naive-mf", "cause"],
                           base=MFConfig(epochs=2, seed=s)) for s in (0, 1)]
    v = compare_seeds(exps).verdict
    assert _counts(v, "seeds") == {2.0} and v.estimate["n"] == 2

    # Position bias: the rows the advice adds to are the rows the estimate used
    from ulr.propensity import PropensityResult
    r = PropensityResult.build(method="em", positions=3, theta=[1.0, 0.5, 0.3], lower=[1, 0.3, 0.2],
                         upper=[1, 0.7, 0.4], rows_used=5000)
    v = r.verdict
    more = V.more_for_precision(r.rows_used, v.estimate["relative_half_width"])
    assert f"about {V.about(more)} more rows" in v.to_settle


def test_bandit_ope_and_clickmodel_verdicts_state_their_results_counts(tmp_path):
    """Read-only checks of the packages others own: the runs of a bandit verdict, the
    effective clicks of an off-policy verdict and the held-out sessions of a click-model
    comparison are their results' own fields."""
    from ulr.bandits.envs import make_env
    from ulr.bandits.simulate import simulate
    from ulr.clickmodels import evaluate as cm
    from ulr.clickmodels import sessions
    from ulr.ope.evaluate import evaluate_log

    env = make_env("kveton", items=8, positions=2, seed=0)
    runs = simulate("cascade-ucb1", env, steps=300, runs=3, seed=0)
    v = runs.verdict
    assert _counts(v, "runs") == {3.0} and v.estimate["runs"] == runs.runs

    from pathlib import Path
    sample = Path(__file__).resolve().parents[1] / "data" / "sample_ope.csv"
    ope = evaluate_log(ingest.open_file(sample), n_bootstrap=100)
    v = ope.verdict
    k = ope.diagnostics["effective_clicks"]
    assert _counts(v, "effective clicks") <= {round(k, 1)}

    sim = simulate_clicks(queries=20, positions=5, sessions=600, seed=2)
    path = str(tmp_path / "s.parquet")
    write_log(sim.df, path)
    S = sessions.collect(scan_of(ingest.open_file(path)), test_fraction=0.2, seed=0)
    comp = cm.compare(S, ["pbm", "ubm"], n_bootstrap=10, seed=0, test_fraction=0.2,
                      refit_intervals=False)
    assert f"on {comp.test_sessions:,} sessions" in comp.verdict.basis
