"""Issue 53: one record per click model (ulr.clickmodels.records). The lists the package kept
by hand are derived from the records, and every simulator dispatches through a record's hook:
its logs are checked against a slow obvious reference (one session and one rank at a time)
and, for every simulator, against fingerprints taken from the code before the records."""

import hashlib

import numpy as np
import pytest

from ulr import clickmodels
from ulr.clickmodels import records
from ulr.errors import UlrError
from ulr.ope import slate
from ulr.simulate import CLICK_MODELS, simulate_click_model, simulate_clicks
from ulr.study import simulate as S


def test_the_derived_views_are_what_the_lists_were():
    assert list(clickmodels.MODELS) == ["pbm", "cascade", "dcm", "dbn", "sdbn", "ubm", "trust",
                                        "sdbn-counts", "dcm-counts"]
    assert clickmodels.MODELS["pbm"] is clickmodels.PBM
    assert clickmodels.MODELS["dcm-counts"] is clickmodels.DCMCounts
    assert clickmodels.LABELS == {
        "pbm": "PBM", "cascade": "cascade", "dcm": "DCM", "dbn": "DBN", "sdbn": "SDBN",
        "ubm": "UBM", "trust": "trust bias", "sdbn-counts": "SDBN (counting)",
        "dcm-counts": "DCM (counting)"}
    assert clickmodels.DEFAULT == ("pbm", "cascade", "dcm", "dbn", "sdbn", "ubm")
    assert clickmodels.CASCADE_TYPE == ("cascade", "dcm", "dbn", "sdbn", "sdbn-counts",
                                        "dcm-counts")
    assert CLICK_MODELS == ("pbm", "cascade", "dcm", "dbn", "sdbn", "ubm", "trust")
    assert S.CLICK_MODELS == ("pbm", "cascade", "dbn", "ubm", "trust")
    assert records.flagged("graded") == ("pbm", "cascade", "trust")
    assert records.flagged("slate") == ("pbm", "cascade")
    assert records.flagged("position_type") == ("pbm", "ubm")
    assert records.assumed() == "pbm"


def _reference(model, *, sessions, queries, docs, seed, orders=0, randomized=0.0):
    """The world of simulate_click_model, drawn in the same order, then every session
    walked rank by rank with scalars. Returns clicks (S, D) and P(rank examined) (S, D)."""
    S_, D, Q = sessions, docs, queries
    rng = np.random.default_rng(seed)
    alpha = rng.beta(1.0, 2.0, size=Q * D)
    sigma = rng.uniform(0.2, 0.8, size=Q * D)
    q = rng.integers(0, Q, size=S_)
    if orders:
        lists = np.argsort(rng.random((Q, orders, D)), axis=2)
        doc = q[:, None] * D + lists[q, rng.integers(0, orders, size=S_)]
        if randomized > 0:
            rand = rng.random(S_) < randomized
            doc[rand] = q[rand, None] * D + np.argsort(rng.random((int(rand.sum()), D)), axis=1)
    else:
        doc = q[:, None] * D + np.argsort(rng.random((S_, D)), axis=1)
    u = rng.random((S_, D, 3))
    click = np.zeros((S_, D), dtype=bool)
    exam = np.zeros((S_, D))
    for i in range(S_):
        last, looking, p_exam = 0, True, 1.0
        for k in range(D):
            rank = k + 1
            a, s = alpha[doc[i, k]], sigma[doc[i, k]]
            if model == "trust":  # P(click) = theta (eps+ R + eps- (1 - R))
                th = rank ** -0.8
                ep, em = min(max(0.98 - 0.02 * k, 0.5), 1.0), 0.35 / rank
                rel = a > records.sim.RELEVANT_ABOVE
                p = th * em + th * (ep - em) * rel
                click[i, k] = u[i, k, 0] < p
                exam[i, k] = th
            elif model in ("pbm", "ubm"):
                e = rank ** -0.8 if model == "pbm" else (
                    0.9 * rank ** -0.6 if last == 0 else (rank - last) ** -0.6)
                exam[i, k] = e
                click[i, k] = u[i, k, 0] < e * a
                last = rank if click[i, k] else last
            else:  # after a click go on w.p. c, after none w.p. n
                c, n = {"cascade": (0.0, 1.0), "dcm": (0.7 - 0.03 * rank, 1.0),
                        "dbn": (0.85 * (1 - s), 0.85), "sdbn": (1 - s, 1.0)}[model]
                exam[i, k] = p_exam
                click[i, k] = looking and u[i, k, 0] < a
                go = u[i, k, 1] < c if click[i, k] else u[i, k, 2] < n
                looking = looking and go
                p_exam *= a * c + (1 - a) * n
    return doc, click, exam


@pytest.mark.parametrize("model", ["pbm", "ubm", "cascade", "dcm", "dbn", "sdbn", "trust"])
@pytest.mark.parametrize("orders", [0, 3])
def test_each_record_simulates_its_model_as_the_slow_reference_does(model, orders):
    kw = dict(sessions=120, queries=9, docs=5, seed=11, orders=orders,
              randomized=0.3 if orders else 0.0)
    doc, click, exam = _reference(model, **kw)
    sim = simulate_click_model(model, sessions=120, queries=9, positions=5, seed=11,
                               orders=orders, randomized=kw["randomized"])
    np.testing.assert_array_equal(sim.df["doc_id"].to_numpy(), doc.ravel())
    np.testing.assert_array_equal(sim.df["click"].to_numpy(), click.ravel().astype(np.int8))
    np.testing.assert_allclose(sim.theta, exam.mean(axis=0), rtol=1e-12)


def test_a_simulator_offers_the_models_whose_record_has_its_hook():
    with pytest.raises(UlrError, match="model must be 'pbm', 'cascade' or 'trust', not 'dbn'"):
        simulate_clicks(model="dbn", queries=3, positions=3, sessions=5)
    with pytest.raises(UlrError, match="one of pbm, cascade, dcm, dbn, sdbn, ubm, trust, not"):
        simulate_click_model("dcm-counts", sessions=5, queries=2, positions=3)
    with pytest.raises(UlrError, match="the click model must be 'pbm' or 'cascade'"):
        slate.simulate_slates(click_model="ubm")
    with pytest.raises(UlrError, match="go with the trust model"):
        simulate_click_model("pbm", sessions=5, queries=2, positions=3, theta=[1, 1, 1])


def _h(*arrays) -> str:
    m = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        m.update(str(a.dtype).encode())
        m.update(str(a.shape).encode())
        m.update(a.tobytes())
    return m.hexdigest()[:16]


# sha256 prefixes of each simulator's log (and the truth's keys), computed with the code
# before the records (commit 5352bcd) by _fingerprints below: the move changed no draw
# and no operation. (The slow reference above covers simulate_click_model's logic; these
# cover the other simulators and the session_seed / query_weights paths.)
BEFORE = {
    'graded/cascade/0':
        '1ec15caea056c145',
    'graded/cascade/5':
        '00f38a384a945187',
    'graded/pbm/0':
        'bdfa3547f1df5ce9',
    'graded/pbm/5':
        'e8d931b76db62e69',
    'graded/trust/0':
        'a3adac000aecd72a',
    'graded/trust/5':
        '460847da96731bb6',
    'slate/cascade':
        '380782782542f651',
    'slate/pbm':
        'f5d074d1c50f16f9',
    'study/cascade':
        '9f71b467a7de89d5',
    'study/dbn':
        '44ba436598ce7595',
    'study/pbm':
        'd4d0f08b93093d74',
    'study/trust':
        'a00c8d391b716815',
    'study/ubm':
        '458b4ee83c0160d9',
    "ucm/cascade/['orders', 'query_weights', 'session_seed']":
        '0a88bf1db2cb9ded/alpha,sigma',
    "ucm/cascade/['orders', 'randomized']":
        '73f355c4fd052b78/alpha,sigma',
    'ucm/cascade/[]':
        'c442c77911e1412c/alpha,sigma',
    "ucm/dbn/['orders', 'query_weights', 'session_seed']":
        '342a2eca999c4d7a/alpha,gamma,sigma',
    "ucm/dbn/['orders', 'randomized']":
        '4dfa01537557873c/alpha,gamma,sigma',
    'ucm/dbn/[]':
        'ef41d436039bba9b/alpha,gamma,sigma',
    "ucm/dcm/['orders', 'query_weights', 'session_seed']":
        '8a5f48ff9912fb79/alpha,lam,sigma',
    "ucm/dcm/['orders', 'randomized']":
        '85c0d41575e0b95f/alpha,lam,sigma',
    'ucm/dcm/[]':
        'a34ee0c59b8b7ba7/alpha,lam,sigma',
    "ucm/pbm/['orders', 'query_weights', 'session_seed']":
        '69f1d1d038ca9854/alpha,sigma,theta',
    "ucm/pbm/['orders', 'randomized']":
        'eb72679e83b150fb/alpha,sigma,theta',
    'ucm/pbm/[]':
        '7914c184ba7b8dfd/alpha,sigma,theta',
    "ucm/sdbn/['orders', 'query_weights', 'session_seed']":
        '8649bdf6280958b7/alpha,gamma,sigma',
    "ucm/sdbn/['orders', 'randomized']":
        'e59ddc853571e00f/alpha,gamma,sigma',
    'ucm/sdbn/[]':
        '8e1ea0813910ed73/alpha,gamma,sigma',
    "ucm/trust/['orders', 'query_weights', 'session_seed']":
        '9aa2689336cb5a8c/alpha,alpha_rank,beta_rank,eps_minus,eps_plus,relevant,sigma,theta',
    "ucm/trust/['orders', 'randomized']":
        '38cd03f8d2c61ad4/alpha,alpha_rank,beta_rank,eps_minus,eps_plus,relevant,sigma,theta',
    'ucm/trust/[]':
        '67fbf6b49c83fc6f/alpha,alpha_rank,beta_rank,eps_minus,eps_plus,relevant,sigma,theta',
    'ucm/trust/given':
        'd88511007d2eec60',
    "ucm/ubm/['orders', 'query_weights', 'session_seed']":
        'e69f550622555349/alpha,gamma,sigma',
    "ucm/ubm/['orders', 'randomized']":
        '68dbcfbbbfbaaafa/alpha,gamma,sigma',
    'ucm/ubm/[]':
        '1e7a605a864907fd/alpha,gamma,sigma',
}


def _fingerprints() -> dict:
    from tests.study.letor import linear_set
    from ulr.study.labels import split_queries
    out = {}
    for model in ("pbm", "cascade", "dcm", "dbn", "sdbn", "ubm", "trust"):
        for kw in ({}, {"orders": 3, "randomized": 0.2},
                   {"orders": 2, "session_seed": 5, "query_weights": np.arange(1, 21)}):
            sim = simulate_click_model(model, sessions=300, queries=20, positions=6,
                                       seed=7, **kw)
            tr = sim.extra["truth"]
            out[f"ucm/{model}/{sorted(kw)}"] = _h(
                *[sim.df[c].to_numpy() for c in sim.df.columns], sim.theta,
                *[np.asarray(tr[k]) for k in sorted(tr)]) + "/" + ",".join(sorted(tr))
    sim = simulate_click_model("trust", sessions=200, queries=10, positions=4, seed=1,
                               theta=[1, .7, .5, .3], eps_plus=[1, .9, .9, .8],
                               eps_minus=[.2, .1, .1, .05])
    out["ucm/trust/given"] = _h(*[sim.df[c].to_numpy() for c in sim.df.columns], sim.theta)
    for model in ("pbm", "cascade", "trust"):
        for feats in (5, 0):
            sim = simulate_clicks(model=model, queries=30, positions=5, sessions=400,
                                  features=feats, seed=3)
            out[f"graded/{model}/{feats}"] = _h(*[sim.df[c].to_numpy() for c in sim.df.columns],
                                                sim.theta)
    train = split_queries(linear_set(queries=60, docs=14, seed=2), seed=0)[0]
    scores = S.production_ranker(train, seed=1).score(train.X)
    for model in ("pbm", "cascade", "dbn", "ubm", "trust"):
        log = S.simulate_clicks(train, scores, sessions=500, model=model, eta=1.3, positions=6,
                                seed=4)
        out[f"study/{model}"] = _h(log.doc, log.query, log.session, log.position, log.click,
                                   log.randomized, log.theta_true)
    for cm in ("pbm", "cascade"):
        w = slate.simulate_slates(click_model=cm, seed=2)
        d = w.sample(300, seed=3)
        out[f"slate/{cm}"] = _h(*[d[k] for k in sorted(d)], np.float64(w.true_value()))
    return out


def test_every_simulator_gives_the_logs_it_gave_before_the_records():
    assert _fingerprints() == BEFORE
