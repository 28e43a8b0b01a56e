"""evaluate / evaluate_log with issue 28's estimators, intervals, selection, reward models."""

import numpy as np
import pytest

from ulr.errors import UlrError
from ulr.ope import estimators as est
from ulr.ope.evaluate import evaluate, evaluate_log, reward_predictions
from ulr.ope.feedback import FrameLog
from ulr.ope.simulate import simulate_bandit

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
    assert set(sel) == {"estimator", "hyperparameter", "reason"}
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
        assert np.isnan(t.loc["snips", "lower"])  # self-normalized: no concentration bound
        boot = evaluate(fb, pi, estimators=["ips"], n_bootstrap=100).table.set_index("estimator")
        assert (t.loc["ips", "upper"] - t.loc["ips", "lower"]
                > boot.loc["ips", "upper"] - boot.loc["ips", "lower"])
    assert res.settings["interval"] == interval


def test_unknown_interval(world):
    sim, pi, fb = world
    with pytest.raises(UlrError):
        evaluate(fb, pi, interval="wald", n_bootstrap=100)


def test_reward_column_and_gbdt_through_evaluate_log():
    sim = simulate_bandit(contexts=6, actions=4, features=3, seed=5)
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
