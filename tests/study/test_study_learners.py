"""The study's learners (ulr.study.learners): ulr's rankers on aggregated data, and the
debiasing options really handed to LightGBM and XGBoost."""

import json

import numpy as np
import pandas as pd
import pytest

from tests.study.letor import linear_set
from ulr.rankers import BoostedClickRanker, LinearPairwiseRanker
from ulr.study import learners as L
from ulr.study import simulate as S
from ulr.study.labels import split_queries


@pytest.fixture(scope="module")
def ctx():
    train = split_queries(linear_set(queries=40, docs=10, seed=4), seed=0)[0]
    prod = S.production_ranker(train, seed=0)
    log = S.simulate_clicks(train, prod.score(train.X), sessions=1500, eta=1.0, seed=2)
    theta = log.theta_true / log.theta_true[0]
    return L.Context(train=train, log=log, theta=theta, production=prod, seed=0,
                     options={"rounds": 5})


def _frame(ctx):
    df = ctx.log.frame(ctx.train, features=True)
    return df.drop(columns=["relevance", "randomized"])


@pytest.mark.parametrize("ipw", [False, True])
def test_the_aggregated_linear_learner_is_ulrs_pairwise_ranker(ctx, ipw):
    """Merging identical document pairs keeps the objective: the weights are those of
    LinearPairwiseRanker trained on the full impression log."""
    ref = LinearPairwiseRanker(seed=0).fit(_frame(ctx), ctx.theta if ipw else None)
    mine = L.LEARNERS["ipw-linear" if ipw else "naive-linear"].fit(ctx)
    X = ctx.train.X
    a, b = ref.score(pd.DataFrame(X, columns=ctx.train.features)), mine(X)
    assert np.corrcoef(a, b)[0, 1] > 0.999
    np.testing.assert_allclose(b, a, atol=0.02 * np.abs(a).max())


def test_the_aggregated_gbdt_learner_is_ulrs_boosted_ranker(ctx):
    ref = BoostedClickRanker(seed=0).fit(_frame(ctx), ctx.theta)
    mine = L.LEARNERS["ipw-gbdt"].fit(ctx)
    X = ctx.train.X
    a, b = ref.score(pd.DataFrame(X, columns=ctx.train.features)), mine(X)
    assert np.corrcoef(a, b)[0, 1] > 0.99


class Spy:
    """Records the calls of a library function and still calls it."""

    def __init__(self, fn):
        self.fn, self.calls = fn, []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return self.fn(*args, **kwargs)


def _click_dataset(spy):
    """The one Dataset built on clicks (the other, if any, is the training documents' bin
    reference, built without labels)."""
    calls = [c for c in spy.calls if "label" in c[1]]
    assert len(calls) == 1
    return calls[0]


def test_lightgbm_position_passes_every_rows_shown_position(ctx, monkeypatch):
    import lightgbm as lgb
    ds, train = Spy(lgb.Dataset), Spy(lgb.train)
    monkeypatch.setattr(lgb, "Dataset", ds)
    monkeypatch.setattr(lgb, "train", train)
    L.LEARNERS["lightgbm-position"].fit(ctx)
    (X, ), kw = _click_dataset(ds)
    log = ctx.log
    rows = L._sessions_with_pairs(log)
    # one group per session, rows in shown order; position is the 0-based shown position
    np.testing.assert_array_equal(kw["position"], log.position[rows] - 1)
    np.testing.assert_array_equal(kw["label"], log.click[rows])
    np.testing.assert_array_equal(X, ctx.train.X[log.doc[rows]])
    assert kw["group"].sum() == rows.size
    assert kw["weight"] is None
    params = train.calls[0][0][0]
    assert params["objective"] == "lambdarank"
    assert "lambdarank_position_bias_regularization" in params
    # and LightGBM took it: the booster's own dataset holds the positions
    booster_ds = train.calls[0][0][1]
    np.testing.assert_array_equal(booster_ds.get_position(), log.position[rows] - 1)


def test_plain_lightgbm_gets_no_position(ctx, monkeypatch):
    import lightgbm as lgb
    ds = Spy(lgb.Dataset)
    monkeypatch.setattr(lgb, "Dataset", ds)
    L.LEARNERS["lightgbm"].fit(ctx)
    kw = _click_dataset(ds)[1]
    assert kw["position"] is None and kw["weight"] is None


def test_lightgbm_ipw_weighs_each_clicks_group_by_its_inverse_propensity(ctx, monkeypatch):
    import lightgbm as lgb
    ds = Spy(lgb.Dataset)
    monkeypatch.setattr(lgb, "Dataset", ds)
    L.LEARNERS["lightgbm-ipw"].fit(ctx)
    (X, ), kw = _click_dataset(ds)
    log = ctx.log
    # the slow, obvious reference: per session, per click, the click and the non-clicks
    want_rows, want_w, want_g = [], [], []
    for s in np.unique(log.session):
        r = np.flatnonzero(log.session == s)
        r = r[np.argsort(log.position[r])]
        c = log.click[r]
        if c.all() or not c.any():
            continue
        for i in r[c]:
            want_rows += [i, *r[~c]]
            want_w += [1 / ctx.theta[log.position[i] - 1]] * (1 + (~c).sum())
            want_g.append(1 + (~c).sum())
    np.testing.assert_array_equal(X, ctx.train.X[log.doc[want_rows]])
    np.testing.assert_allclose(kw["weight"], want_w, rtol=1e-6)
    np.testing.assert_array_equal(kw["group"], want_g)
    np.testing.assert_array_equal(kw["label"], log.click[want_rows])


def test_xgboost_unbiased_is_passed_and_rows_are_in_shown_order(ctx, monkeypatch):
    import xgboost as xgb
    train, dm = Spy(xgb.train), Spy(xgb.QuantileDMatrix)
    monkeypatch.setattr(xgb, "train", train)
    monkeypatch.setattr(xgb, "QuantileDMatrix", dm)
    L.LEARNERS["xgboost-unbiased"].fit(ctx)
    params, dtrain = train.calls[0][0][:2]
    assert params["lambdarank_unbiased"] is True and params["objective"] == "rank:ndcg"
    # the cut points are sketched once, on the training documents, and shared as ``ref``
    (docs, ), ref_kw = dm.calls[0]
    np.testing.assert_array_equal(docs, ctx.train.X)
    assert "qid" not in ref_kw
    ref = dm.calls[1][1]["ref"]
    assert ref.num_row() == ctx.train.n_documents and ref.num_col() == ctx.train.X.shape[1]
    # XGBoost reads a row's position from its order in its query group
    kw = dm.calls[1][1]
    qid = kw["qid"]
    assert np.all(np.diff(qid) >= 0)
    rows = L._sessions_with_pairs(ctx.log)
    pos = ctx.log.position[rows]
    first = np.r_[True, np.diff(qid) != 0]
    starts = np.maximum.accumulate(np.where(first, np.arange(qid.size), 0))
    np.testing.assert_array_equal(pos, np.arange(qid.size) - starts + 1)
    # and XGBoost took it: the trained booster's objective is unbiased
    booster = train.fn(params, dtrain, num_boost_round=1)
    cfg = json.loads(booster.save_config())["learner"]["objective"]["lambdarank_param"]
    assert cfg["lambdarank_unbiased"] == "1"


def test_plain_xgboost_is_not_unbiased(ctx, monkeypatch):
    import xgboost as xgb
    train = Spy(xgb.train)
    monkeypatch.setattr(xgb, "train", train)
    L.LEARNERS["xgboost"].fit(ctx)
    assert "lambdarank_unbiased" not in train.calls[0][0][0]


def test_references_and_names(ctx):
    assert L.parse_learners("ipw-linear, oracle,ipw-linear") == ["ipw-linear", "oracle"]
    with pytest.raises(Exception, match="unknown learner 'svm'"):
        L.parse_learners("svm")
    np.testing.assert_allclose(L.LEARNERS["production"].fit(ctx)(ctx.train.X),
                               ctx.production.score(ctx.train.X))
    oracle = L.LEARNERS["oracle"].fit(ctx)(ctx.train.X)
    assert np.corrcoef(oracle, ctx.train.relevance)[0, 1] > 0.5


@pytest.mark.parametrize("name", L.SESSION_ROW_LEARNERS)
def test_shared_session_rows_give_the_same_booster_byte_for_byte(ctx, monkeypatch, name):
    """When a study fits both LightGBM learners, a run's click rows are binned once and
    each learner trains on its own subset of them: the booster is the one a Dataset
    built from the rows gives (the slow, obvious path), byte for byte, and LightGBM
    holds the labels, groups and positions of the rows in shown order."""
    import lightgbm as lgb
    boosters, datasets = [], []
    train = lgb.train

    def keep(params, ds, *args, **kwargs):
        datasets.append(ds)
        boosters.append(train(params, ds, *args, **kwargs))
        return boosters[-1]
    monkeypatch.setattr(lgb, "train", keep)
    import dataclasses
    alone = L.LEARNERS[name].fit(ctx)
    shared_ctx = dataclasses.replace(ctx, shared={"lightgbm_rows": True})
    together = L.LEARNERS[name].fit(shared_ctx)
    assert ("lightgbm_rows", ctx.seed) in shared_ctx.shared
    a, b = boosters[0].model_to_string(), boosters[1].model_to_string()
    assert a == b
    X = ctx.train.X
    np.testing.assert_array_equal(alone(X), together(X))
    log = ctx.log
    rows = L._sessions_with_pairs(log)
    ds = datasets[1]
    np.testing.assert_array_equal(ds.get_label(), log.click[rows])
    np.testing.assert_array_equal(np.diff(ds.get_field("group")), L._group_sizes(log.session[rows]))
    want = log.position[rows] - 1 if name == "lightgbm-position" else None
    got = ds.get_position()
    if want is None:
        assert got is None
    else:
        np.testing.assert_array_equal(got, want)
