"""Logged feedback from click logs, and softmax target policies."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ulr.data import ingest
from ulr.errors import UlrError
from ulr.ope.feedback import (Candidates, LinearScorer, feedback_from_frame, feedback_from_log,
                              policy_from_scorer, softmax_policy, uniform_policy)

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_ope.csv"


def ref_softmax(scores, context, tau):
    out = [0.0] * len(scores)
    groups = {}
    for j, c in enumerate(context):
        groups.setdefault(c, []).append(j)
    for idx in groups.values():
        if tau == 0:
            m = max(scores[j] for j in idx)
            top = [j for j in idx if scores[j] == m]
            for j in top:
                out[j] = 1.0 / len(top)
            continue
        e = [math.exp(scores[j] / tau) for j in idx]
        for j, ej in zip(idx, e):
            out[j] = ej / sum(e)
    return np.array(out)


def cands(sizes, d=2, seed=0):
    rng = np.random.default_rng(seed)
    ctx = np.repeat(np.arange(len(sizes)), sizes)
    n = len(ctx)
    return Candidates(context=ctx, features=rng.standard_normal((n, d)),
                      context_labels=np.array([f"q{i}" for i in range(len(sizes))]),
                      action_labels=np.array([f"d{j}" for j in range(n)]),
                      feature_names=tuple(f"feature_{k}" for k in range(d)))


@pytest.mark.parametrize("tau", [0.3, 1.0, 4.0])
def test_softmax_matches_reference_and_normalizes(tau):
    c = cands([3, 1, 5, 2])
    s = np.random.default_rng(1).standard_normal(c.n_pairs) * 3
    pi = softmax_policy(s, c, temperature=tau)
    assert np.allclose(pi, ref_softmax(s, c.context, tau), atol=1e-12)
    assert np.allclose(c.per_context_sum(pi), 1)


def test_temperature_limits():
    c = cands([4, 3])
    s = np.array([1.0, 3.0, 3.0, 0.0, -1.0, 2.0, 0.5])
    greedy = softmax_policy(s, c, temperature=0)
    assert np.allclose(greedy, [0, 0.5, 0.5, 0, 0, 1, 0])  # ties share the mass
    assert np.allclose(softmax_policy(s, c, temperature=1e6), uniform_policy(c), atol=1e-5)
    with pytest.raises(UlrError):
        softmax_policy(s, c, temperature=-1)


def test_policy_from_scorer_standardizes_scores():
    c = cands([5, 5], d=3)
    sc = LinearScorer(coef=np.array([1.0, -2.0, 0.5]), intercept=3.0)
    a = policy_from_scorer(c, sc, temperature=1.0)
    b = policy_from_scorer(c, LinearScorer(coef=10 * sc.coef, intercept=-7.0), temperature=1.0)
    assert np.allclose(a, b)  # scale and shift of the scorer do not matter


def small_log():
    return pd.DataFrame({
        "session_id": ["s1", "s1", "s2", "s2", "s3", "s3", "s4"],
        "query_id": ["b", "b", "a", "a", "b", "b", "a"],
        "doc_id": ["x", "y", "x", "z", "y", "x", "x"],
        "position": [1, 2, 1, 2, 1, 2, 1],
        "click": [1, 0, 0, 1, 0, 0, 1],
        "propensity": [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
        "feature_1": [1.0, 2.0, 3.0, 4.0, 6.0, 5.0, 7.0],
        "feature_2": [0.0, 1.0, 0.0, 1.0, 1.0, 2.0, 2.0],
        "target": [0.2, 0.8, 0.6, 0.4, 0.8, 0.2, 0.6],
    })


def test_feedback_from_frame_builds_pairs_and_rows():
    df = small_log()
    fb, scores = feedback_from_frame(df, target_column="target")
    c = fb.candidates
    assert scores is None
    assert list(c.context_labels) == ["a", "b"]
    assert list(c.action_labels) == ["x", "z", "x", "y"]
    # pair features are the means over the pair's rows (pandas groupby as reference)
    ref = df.groupby(["query_id", "doc_id"])[["feature_1", "feature_2"]].mean()
    for j in range(c.n_pairs):
        key = (c.context_labels[c.context[j]], c.action_labels[j])
        assert np.allclose(c.features[j], ref.loc[key].to_numpy())
    # every row maps back to its own (query, doc); the other columns come along
    got = set()
    for i in range(fb.n):
        j = fb.pair[i]
        got.add((c.context_labels[c.context[j]], c.action_labels[j], fb.reward[i],
                 fb.target_prob[i], fb.slot[i]))
    want = {(q, d, float(k), t, p - 1) for q, d, k, t, p in
            df[["query_id", "doc_id", "click", "target", "position"]].itertuples(index=False)}
    assert got == want
    assert len(np.unique(fb.cluster)) == 4  # one resampling unit per session
    assert fb.n_slots == 2


def test_position_as_action_and_score_column():
    df = small_log().assign(score=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    fb, scores = feedback_from_frame(df, action="position", score_column="score")
    assert list(fb.candidates.action_labels) == ["1", "2", "1", "2"]
    assert fb.slot is None
    assert np.allclose(scores, [5.0, 4.0, 3.0, 4.0])  # a/1: rows 3, 7; a/2: row 4; b/1: 1, 5


def test_missing_or_bad_propensity_is_a_clear_user_error():
    df = small_log().drop(columns="propensity")
    with pytest.raises(UlrError, match="no propensity column.*logging policy"):
        feedback_from_frame(df)
    df = small_log()
    df.loc[2, "propensity"] = np.nan
    with pytest.raises(UlrError, match="1 of 7 rows have no propensity"):
        feedback_from_frame(df)


def test_bad_target_column_is_a_user_error():
    df = small_log()
    with pytest.raises(UlrError, match="no column 'nope'"):
        feedback_from_frame(df, target_column="nope")
    df["target"] = ["0.2", "x", "0.6", "0.4", "0.8", "0.2", "0.6"]
    with pytest.raises(UlrError, match="1 missing or non-numeric"):
        feedback_from_frame(df, target_column="target")


def test_seven_rows_are_too_few_to_call_propensities_wrong():
    """(Replaced by tests/ope/test_checks.py, which flags position-bias propensities on a
    realistic log: on 7 rows the mean-weight bound cannot exclude valid propensities.)"""
    df = small_log()
    df["propensity"] = 0.9
    fb, _ = feedback_from_frame(df)
    assert fb.notes == ()


def test_sample_file_through_the_store():
    log = ingest.open_file(SAMPLE)
    fb, _ = feedback_from_log(log)
    assert fb.n == 10_000
    assert fb.candidates.n_contexts == 20 and fb.candidates.n_pairs == 200
    assert fb.n_slots == 3
    assert len(np.unique(fb.cluster)) == 3334  # impressions of 3 rows (the last is cut)
    assert np.allclose(fb.propensity, 0.1)
    assert fb.notes == ()
    assert fb.candidates.feature_names == tuple(f"feature_{k}" for k in range(1, 6))


def test_split_is_by_impression_and_seeded():
    fb, _ = feedback_from_log(ingest.open_file(SAMPLE))
    a, b = fb.split(0.5, seed=3)
    a2, _ = fb.split(0.5, seed=3)
    assert np.array_equal(a, a2) and np.all(a ^ b)
    assert not set(fb.cluster[a]) & set(fb.cluster[b])
    assert 0.45 < a.mean() < 0.55
    with pytest.raises(UlrError):
        fb.split(1.0)


def test_rows_come_in_one_order_whatever_duckdbs_threads():
    # A window's output order depends on the threads; sums over rows, and so the last
    # bits of every estimate and bootstrap bound, would differ from run to run.
    from ulr.ope.feedback import FrameLog
    from ulr.simulate import simulate_clicks
    df = simulate_clicks(queries=500, sessions=10_000, seed=1).df.assign(propensity=0.1)
    runs = []
    for threads in (1, 4, 4):
        log = FrameLog(df)
        log.cur.execute(f"SET threads = {threads}")
        fb, _ = feedback_from_log(log)
        runs.append((fb.pair, fb.slot, fb.reward, fb.cluster))
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)
