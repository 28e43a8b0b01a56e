"""evaluate(): the whole estimate against a slow reference; diagnostics and warnings."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from ulr.data import ingest
from ulr.errors import UlrError
from ulr.ope import estimators as est
from ulr.ope.evaluate import evaluate, evaluate_log, reward_predictions
from ulr.ope.feedback import BanditFeedback, FrameLog, feedback_from_log
from ulr.ope.simulate import simulate_bandit

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_ope.csv"


def sim_feedback(rows=600, slots=2, seed=0, **kw):
    sim = simulate_bandit(contexts=6, actions=4, n_features=3, positions=slots, base_rate=0.3,
                          logging="softmax", seed=seed, **kw)
    return sim, sim.sample(rows, seed=seed + 1).feedback(0)


def test_evaluate_matches_a_slow_reference():
    sim, fb = sim_feedback()
    pi = sim.policy(temperature=0.7)
    res = evaluate(fb, pi, estimators=("ips", "clipped-ips", "snips", "dr", "dm"), clip=1.5,
                   folds=1, n_bootstrap=100)
    c = fb.candidates
    # reference: loops over rows, the same logistic model refit here on features + slot dummy
    w, X, y = [], [], []
    for i in range(fb.n):
        j = fb.pair[i]
        w.append(pi[j] / fb.propensity[i])
        X.append(list(c.features[j]) + [1.0 if fb.slot[i] == 1 else 0.0])
        y.append(int(fb.reward[i]))
    model = LogisticRegression(C=1.0, max_iter=2000).fit(np.array(X), np.array(y))
    q = lambda j, s: model.predict_proba(np.array([list(c.features[j]) + [float(s == 1)]]))[0, 1]
    n = fb.n
    ips = sum(w[i] * fb.reward[i] for i in range(n)) / n
    clipped = sum(min(w[i], 1.5) * fb.reward[i] for i in range(n)) / n
    snips = sum(w[i] * fb.reward[i] for i in range(n)) / sum(w)
    dm_terms, dr_terms = [], []
    for i in range(n):
        ctx, s = c.context[fb.pair[i]], fb.slot[i]
        dm_i = sum(pi[j] * q(j, s) for j in range(c.n_pairs) if c.context[j] == ctx)
        dm_terms.append(dm_i)
        dr_terms.append(dm_i + w[i] * (fb.reward[i] - q(fb.pair[i], s)))
    want = {"ips": ips, "clipped-ips": clipped, "snips": snips, "dr": np.mean(dr_terms),
            "dm": np.mean(dm_terms), "logging": fb.reward.mean()}
    got = res.table.set_index("estimator")["value"]
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=1e-6), k
    assert res.diagnostics["ess"] == pytest.approx(sum(w) ** 2 / sum(x * x for x in w))
    t = res.table
    assert np.all((t["lower"] <= t["value"]) & (t["value"] <= t["upper"]))


def test_cross_fitting_keeps_a_rows_reward_out_of_its_prediction():
    sim, fb = sim_feedback(rows=400)
    pi = sim.policy()
    i = 17
    flipped = BanditFeedback(candidates=fb.candidates, pair=fb.pair,
                             reward=np.where(np.arange(fb.n) == i, 1 - fb.reward, fb.reward),
                             propensity=fb.propensity, slot=fb.slot)
    a, _ = reward_predictions(fb, pi, folds=2, seed=1)
    b, _ = reward_predictions(flipped, pi, folds=2, seed=1)
    assert a[i] == b[i]
    assert not np.allclose(a, b)  # ... though it moves the other fold's predictions
    a1, _ = reward_predictions(fb, pi, folds=1)
    b1, _ = reward_predictions(flipped, pi, folds=1)
    assert a1[i] != b1[i]  # without cross-fitting it leaks into its own prediction


def test_user_target_column_equals_the_same_policy_given_directly():
    sim, fb = sim_feedback(rows=500)
    pi = sim.policy(temperature=0.5)
    df = sim.sample(500, seed=1).to_frame(0).assign(target=lambda d: 0.0)
    fb2, _ = feedback_from_log(FrameLog(df))
    # target probability of each row's logged action under pi (pairs carry the same labels)
    key = {(fb.candidates.context_labels[fb.candidates.context[j]],
            fb.candidates.action_labels[j]): pi[j] for j in range(fb.candidates.n_pairs)}
    df["target"] = [key[(q, d)] for q, d in zip(df["query_id"], df["doc_id"])]
    res_col = evaluate_log(FrameLog(df), target_column="target", n_bootstrap=100,
                           estimators=("ips", "snips"))
    res_pi = evaluate(fb2, np.array([key[(fb2.candidates.context_labels[fb2.candidates.context[j]],
                                          fb2.candidates.action_labels[j])]
                                     for j in range(fb2.candidates.n_pairs)]),
                      n_bootstrap=100, estimators=("ips", "snips"))
    assert res_col.estimate("ips") == pytest.approx(res_pi.estimate("ips"))
    assert res_col.estimate("snips") == pytest.approx(res_pi.estimate("snips"))
    assert res_col.settings["policy"] == {"target_from": "column"}


def codes(res):
    return [w.code for w in res.warnings]


def test_sample_log_warnings_make_sense():
    log = ingest.open_file(SAMPLE)
    res = evaluate_log(log, n_bootstrap=200)
    d = res.diagnostics
    # ~55 clicks in 10k rows; half the impressions fit the scorer, so ~25 clicks remain
    assert d["n"] < 5200 and d["ctr"] < 0.01
    assert 10 < d["clicks"] < 40
    assert "few_clicks" in codes(res)
    assert "heavy_tailed" not in codes(res)  # uniform logging over 10 docs: weights <= 10
    assert d["ess_fraction"] > 0.3
    # near-greedy target: weights of 0 or ~10, fewer effective rows and clicks
    sharp = evaluate_log(log, temperature=0.05, fit_fraction=0.5, n_bootstrap=200)
    assert sharp.diagnostics["effective_clicks"] < d["effective_clicks"]
    assert sharp.diagnostics["ess_fraction"] < 0.15
    # on-policy: the uniform target reproduces the logging policy, all weights 1
    uni = evaluate_log(log, target="uniform", n_bootstrap=200)
    assert uni.diagnostics["ess_fraction"] == pytest.approx(1.0)
    assert uni.estimate("ips") == pytest.approx(uni.estimate("logging"))
    assert "few_clicks" not in codes(uni)  # all ~55 clicks count


def test_heavy_tails_no_clicks_and_self_fit_warnings():
    sim, fb = sim_feedback(rows=800, slots=1)
    pi = sim.policy(temperature=0.3)
    p = fb.propensity.copy()
    p[:3] = 0.001  # three rows the logging policy almost never takes
    heavy = BanditFeedback(candidates=fb.candidates, pair=fb.pair, reward=fb.reward,
                           propensity=p)
    res = evaluate(heavy, pi, n_bootstrap=100)
    assert "heavy_tailed" in codes(res)
    assert res.diagnostics["max_weight_share"] > 0.05
    none = BanditFeedback(candidates=fb.candidates, pair=fb.pair,
                          reward=np.zeros(fb.n), propensity=fb.propensity)
    assert "no_clicks" in codes(evaluate(none, pi, n_bootstrap=100))
    res = evaluate_log(ingest.open_file(SAMPLE), fit_fraction=0, n_bootstrap=100,
                       estimators=("snips",))
    assert "self_fit" in codes(res)
    assert res.diagnostics["n"] == 10_000


def test_user_errors():
    sim, fb = sim_feedback(rows=100)
    pi = sim.policy()
    with pytest.raises(UlrError, match="unknown estimator"):
        evaluate(fb, pi, estimators=("ips", "magic"))
    with pytest.raises(UlrError, match="n_bootstrap must be between 2 and"):
        evaluate(fb, pi, n_bootstrap=1)
    with pytest.raises(UlrError, match="level"):
        evaluate(fb, pi, level=1.5)
    no_feat = pd.read_csv(SAMPLE).drop(columns=[f"feature_{k}" for k in range(1, 6)])
    with pytest.raises(UlrError, match="no feature columns"):
        evaluate_log(FrameLog(no_feat))


def test_estimates_table_clips_to_click_rates_and_names_what_left_the_range():
    """The table the page and the report show: a readable method first, values and bounds
    clipped to [0, 1], and out_of_range() names exactly the rows the clipping changed."""
    from ulr.ope.evaluate import OPEResult
    raw = pd.DataFrame({"estimator": ["ips", "dr", "snips", "logging"],
                        "value": [0.2, -0.01, 0.5, 0.3], "lower": [0.1, -0.05, 0.4, 0.2],
                        "upper": [0.3, 0.02, 1.2, 0.4], "se": [0.05, 0.02, 0.2, 0.05],
                        "diff_lower": [-0.1, -0.4, 0.0, 0.0], "diff_upper": [0.0, 0.0, 0.9, 0.0]})
    res = OPEResult(table=raw, diagnostics={}, warnings=[])
    shown = res.estimates_table()
    assert list(shown["method"])[:3] == ["IPS", "DR", "SNIPS"] and "logging" in shown["method"].iloc[3]
    assert {"minus logging, lower", "minus logging, upper"} <= set(shown.columns)
    # words only: no estimator code, no abbreviated header (the codes stay in res.table)
    assert list(shown.columns[:5]) == ["method", "value", "lower", "upper", "standard error"]
    assert "estimator" not in shown and "se" not in shown
    for c in ("value", "lower", "upper"):
        assert [min(1.0, max(0.0, v)) for v in raw[c]] == list(shown[c])
    assert res.out_of_range() == ["dr", "snips"]
    unclipped = res.estimates_table(clipped=False)
    assert list(unclipped["value"]) == list(raw["value"]) and res.table.equals(raw)


# issue 28's estimators, intervals, selection and reward models

NEW = ["ips", "snips", "dr", "sndr", "switch-dr", "dros", "auto"]


@pytest.fixture(scope="module")
def world():
    sim = simulate_bandit(contexts=10, actions=5, seed=1)
    pi = sim.policy(temperature=0.5)
    return sim, pi, sim.sample(1500, seed=2).feedback(0)


def test_new_estimators_in_the_table_match_the_functions(world):
    sim, pi, fb = world
    res = evaluate(fb, pi, estimators=NEW, n_bootstrap=100, seed=3)
    w = pi[fb.pair] / fb.propensity
    ql, qt = reward_predictions(fb, pi, folds=2, seed=3)
    kw = dict(q_logged=ql, q_target=qt)
    h = res.settings["hyperparameters"]
    assert res.estimate("sndr") == pytest.approx(est.sndr(fb.reward, w, **kw), abs=1e-12)
    assert res.estimate("switch-dr") == pytest.approx(
        est.switch_dr(fb.reward, w, tau=h["switch-dr"], **kw), abs=1e-12)
    assert res.estimate("dros") == pytest.approx(est.dros(fb.reward, w, lam=h["dros"], **kw),
                                                 abs=1e-12)
    sel = res.settings["selected"]
    assert set(sel) == {"estimator", "hyperparameter", "reason", "excluded", "bias_allowance"}
    assert not sel["excluded"]
    assert res.to_dict()["estimates"]["auto"]["value"] == pytest.approx(res.estimate("auto"))


@pytest.mark.parametrize("interval", ["t", "hoeffding", "bernstein"])
def test_intervals_contain_the_estimate_and_bounds_are_wider(world, interval):
    sim, pi, fb = world
    res = evaluate(fb, pi, estimators=["ips", "dr", "snips"], n_bootstrap=100,
                   interval=interval)
    t = res.table.set_index("estimator")
    for e in ("ips", "dr"):
        assert t.loc[e, "lower"] <= t.loc[e, "value"] <= t.loc[e, "upper"]
    if interval != "t":
        # self-normalized: no concentration bound, so the bootstrap's, and a warning says so
        boot = evaluate(fb, pi, estimators=["ips", "snips"],
                        n_bootstrap=100).table.set_index("estimator")
        # the same bootstrap (summation order may differ in the last bit between the calls)
        assert t.loc["snips", "lower"] == pytest.approx(boot.loc["snips", "lower"], rel=1e-12)
        assert [w.code for w in res.warnings].count("interval_replaced") == 1
        assert "SNIPS" in next(w.message for w in res.warnings if w.code == "interval_replaced")
        # the difference from logging uses the same (finite-sample) bound: it holds the point
        # difference and is wider than the bootstrap's
        for e in ("ips", "dr"):
            d = t.loc[e, "value"] - t.loc["logging", "value"]
            assert t.loc[e, "diff_lower"] <= d <= t.loc[e, "diff_upper"]
            assert t.loc[e, "diff_upper"] - t.loc[e, "diff_lower"] > \
                boot.loc["ips", "diff_upper"] - boot.loc["ips", "diff_lower"] or e != "ips"
        assert (t.loc["ips", "upper"] - t.loc["ips", "lower"]
                > boot.loc["ips", "upper"] - boot.loc["ips", "lower"])
    assert res.settings["interval"] == interval


def test_unknown_interval(world):
    sim, pi, fb = world
    with pytest.raises(UlrError):
        evaluate(fb, pi, interval="wald", n_bootstrap=100)


def test_reward_column_and_gbdt_through_evaluate_log():
    sim = simulate_bandit(contexts=6, actions=4, n_features=3, seed=5)
    df = sim.sample(1200, seed=6).to_frame(0)
    df["my_prediction"] = sim.q[0][sim.sample(1200, seed=6).pair[0]]  # the true click model
    log = FrameLog(df)
    col = evaluate_log(log, target="uniform", estimators=["dm", "dr"], n_bootstrap=100,
                       reward_column="my_prediction")
    uniform = np.full(sim.candidates.n_pairs, 1 / 4)
    assert col.estimate("dm") == pytest.approx(float(sim.true_value(uniform)), abs=0.02)
    assert col.settings["reward_model"] == "column"
    gb = evaluate_log(log, target="uniform", estimators=["dr"], n_bootstrap=100,
                      reward_model="gbdt")
    assert gb.settings["reward_model"].startswith("HistGradientBoosting")


def _mapping_warning():
    from ulr.lists import MappingWarning
    return MappingWarning("repeated_position", "broken mapping; map a column that groups one "
                          "shown list", share=0.9)


def test_the_verdict_is_computed_from_the_fields_once():
    """No verdict method: the policy's name and the mapping warnings are the result's
    inputs, and its verdict is the one ope_verdict gives them, computed once."""
    import dataclasses

    from ulr.ope.evaluate import OPEResult
    from ulr.ope.verdicts import ope_verdict

    fields = {f.name: f for f in dataclasses.fields(OPEResult)}
    assert "verdict" not in fields  # computed from the fields, never set (ulr.result)
    assert fields["target_name"].init and fields["mapping"].init
    assert not callable(OPEResult.__dict__.get("verdict"))

    sim, fb = sim_feedback()
    warn = _mapping_warning()
    res = evaluate(fb, sim.policy(temperature=0.7), estimators=("ips", "snips", "dr"),
                   n_bootstrap=100, target_name="policy B", mapping=[warn])
    assert res.mapping == (warn,) and res.verdict is res.verdict
    assert res.verdict == ope_verdict(res.table, res.warnings, res.diagnostics, level=0.95,
                                      target="policy B", mapping=(warn,))
    assert res.verdict.takeaway.startswith("Policy B") and "repeated_position" in \
        res.verdict.codes
    d = res.to_dict()
    assert d["verdict"] == res.verdict.to_dict()
    assert "target_name" not in d and "mapping" not in d
    # a result rebuilt with other inputs gets their verdict
    plain = dataclasses.replace(res, target_name="the target policy", mapping=())
    assert plain.verdict == ope_verdict(res.table, res.warnings, res.diagnostics,
                                        target="the target policy")
    assert "repeated_position" not in plain.verdict.codes


def test_evaluate_log_builds_the_verdict_of_its_inputs():
    """The defaults (the sample, auto's choice named in the takeaway) and the level."""
    from ulr.ope.verdicts import ope_verdict

    res = evaluate_log(ingest.open_file(SAMPLE), estimators=["ips", "snips", "auto"],
                       n_bootstrap=100, level=0.9)
    chosen = res.settings["selected"]["estimator"]
    assert res.verdict == ope_verdict(res.table, res.warnings, res.diagnostics, level=0.9,
                                      chosen=chosen)
    warn = _mapping_warning()
    mapped = evaluate_log(ingest.open_file(SAMPLE), estimators=["ips", "snips", "auto"],
                          n_bootstrap=100, level=0.9, mapping=(warn,),
                          target_name="the new ranker")
    assert mapped.verdict == ope_verdict(res.table, res.warnings, res.diagnostics, level=0.9,
                                         chosen=chosen, mapping=(warn,),
                                         target="the new ranker")
    assert mapped.to_dict()["estimates"] == res.to_dict()["estimates"]
