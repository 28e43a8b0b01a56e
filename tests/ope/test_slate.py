"""Slate estimators against the exact value of the target ranking under PBM and cascade clicks."""

import itertools

import numpy as np
import pandas as pd
import pytest

from ulr.errors import UlrError
from ulr.ope.slate import (ASSUMPTIONS, LABELS, SLATE_ESTIMATORS, pl_marginals, slate_estimates,
                           simulate_slates)


def estimate(world, sessions, seed, level=0.95):
    d = world.sample(sessions, seed=seed)
    r = d.pop("reward")
    d.pop("context"), d.pop("slate")
    return slate_estimates(r, level=level, **d).set_index("estimator")


def test_plackett_luce_slot_probabilities_match_brute_force():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(6))
    ref = np.zeros((3, 6))
    for perm in itertools.permutations(range(6), 3):  # every ordered top-3, its probability
        prob, left = 1.0, 1.0
        for a in perm:
            prob *= p[a] / left
            left -= p[a]
        for k, a in enumerate(perm):
            ref[k, a] += prob
    assert np.allclose(pl_marginals(p, 3), ref, atol=1e-12, rtol=0)
    assert np.allclose(pl_marginals(p, 3).sum(axis=1), 1, atol=1e-12)


def test_true_value_matches_a_large_monte_carlo():
    for model in ("pbm", "cascade"):
        w = simulate_slates(click_model=model, seed=4)
        rng = np.random.default_rng(1)
        C, M = w.attraction.shape
        n = 400_000
        ctx = rng.integers(0, C, n)
        slate = np.argsort(-(rng.gumbel(size=(n, M)) + np.log(w.target[ctx])), axis=1)[:, :3]
        clicks = w._clicks(slate, ctx, rng).sum(axis=1)
        assert abs(clicks.mean() - w.true_value()) < 4 * clicks.std() / np.sqrt(n), model


@pytest.mark.parametrize("model,valid", [("pbm", ("sips", "iips", "rips")),
                                         ("cascade", ("sips", "rips"))])
def test_each_estimator_is_unbiased_under_its_own_click_model(model, valid):
    w = simulate_slates(click_model=model, seed=1)
    truth = w.true_value()
    t = estimate(w, 200_000, seed=2)
    for e in valid:
        assert abs(t.loc[e, "value"] - truth) < 4 * t.loc[e, "se"], (model, e)


def test_independent_ips_is_biased_on_cascade_clicks():
    w = simulate_slates(click_model="cascade", seed=1)
    truth = w.true_value()
    t = estimate(w, 200_000, seed=2)
    # the cascade stops after the first click: IIPS credits lower slots as if always examined
    assert t.loc["iips", "value"] - truth > 8 * t.loc["iips", "se"]


@pytest.mark.parametrize("model,valid", [("pbm", ("sips", "iips", "rips")),
                                         ("cascade", ("sips", "rips"))])
def test_intervals_cover_the_truth_at_the_stated_rate(model, valid):
    w = simulate_slates(click_model=model, seed=3, logging_temperature=2.0)
    truth = w.true_value()
    logs, level = 200, 0.9
    hits = {e: 0 for e in valid}
    for s in range(logs):
        t = estimate(w, 3000, seed=1000 + s, level=level)
        for e in valid:
            hits[e] += t.loc[e, "lower"] <= truth <= t.loc[e, "upper"]
    tol = 3 * np.sqrt(level * (1 - level) / logs)
    for e in valid:
        assert abs(hits[e] / logs - level) <= tol, (model, e, hits[e] / logs)


def test_assumptions_are_one_line_each_and_bad_input_is_refused():
    assert set(ASSUMPTIONS) == set(SLATE_ESTIMATORS)
    assert all("\n" not in a and len(a) < 200 for a in ASSUMPTIONS.values())
    with pytest.raises(UlrError, match="unknown slate estimator"):
        slate_estimates(np.zeros((2, 3)), estimators=["nope"], target_marginal=np.ones((2, 3)),
                        logging_marginal=np.ones((2, 3)), target_prefix=np.ones((2, 3)),
                        logging_prefix=np.ones((2, 3)))


def test_a_log_of_uniformly_random_rankings_gives_the_exact_estimates():
    """Through the log path, the per-slot propensities alone give the same estimates as the
    simulator's exact probabilities (the sequential prefix form is exact for uniform rankings)."""
    import dataclasses

    import pandas as pd

    from ulr.ope.feedback import FrameLog
    from ulr.ope.slate import logging_prefix_prob, slate_from_log

    w = simulate_slates(contexts=3, items=5, click_model="cascade", seed=7)
    score = np.random.default_rng(9).normal(size=w.attraction.shape)  # a score per (context, doc)
    z = (score - score.mean()) / score.std()  # what the log path does: standardize, softmax
    target = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    w = dataclasses.replace(w, target=target)
    d = w.sample(3000, seed=8)
    S, K = d["slate"].shape
    ctx = np.repeat(d["context"], K)
    df = pd.DataFrame({
        "session_id": np.repeat(np.arange(S), K), "query_id": ctx,
        "doc_id": [f"d{a}" for a in d["slate"].ravel()],
        "position": np.tile(np.arange(1, K + 1), S), "click": d["reward"].ravel().astype(int),
        "propensity": d["logging_marginal"].ravel(), "score": score[ctx, d["slate"].ravel()]})
    assert np.allclose(logging_prefix_prob(d["logging_marginal"]), d["logging_prefix"],
                       atol=1e-15)
    r = d.pop("reward")
    d.pop("context"), d.pop("slate")
    exact = slate_estimates(r, **d).set_index("estimator")
    got = slate_from_log(FrameLog(df), score_column="score", temperature=1.0)
    assert got.sessions == S and got.dropped_sessions == 0
    t = got.table.set_index("estimator")
    for e in SLATE_ESTIMATORS:
        assert t.loc[e, "value"] == pytest.approx(exact.loc[e, "value"], abs=1e-12)
        assert t.loc[e, "se"] == pytest.approx(exact.loc[e, "se"], abs=1e-12)
    # as the page, the audit and the report show it: names in words, no code, no "se"
    shown = got.shown_table()
    assert list(shown["method"]) == [LABELS[e] for e in got.table["estimator"]]
    assert list(shown.columns[:5]) == ["method", "value", "lower", "upper", "standard error"]
    assert list(shown["value"]) == list(got.table["value"])
    # Sessions whose slots answer different queries are not one ranked list: they are left
    # out and counted, and the estimates stay those of the true rankings (before, their
    # documents were read from the first slot's query's candidates: a wrong number, or
    # an IndexError when the offset fell outside them).
    mixed = df[df["session_id"] < 40].copy()
    mixed["session_id"] += S
    second = mixed["position"] == 2
    other = (mixed.loc[second, "query_id"] + 1) % 3
    mixed.loc[second, "score"] = score[other, [int(x[1:]) for x in mixed.loc[second, "doc_id"]]]
    mixed.loc[second, "query_id"] = other
    got = slate_from_log(FrameLog(pd.concat([df, mixed])), score_column="score",
                         temperature=1.0)
    assert got.sessions == S and got.dropped_sessions == 40
    assert any(n.startswith("The rows of 40 sessions answer different queries") and
               n.endswith("; they were left out (map to query_id the column that all the "
                          "documents of one shown list share).") for n in got.notes), got.notes
    t = got.table.set_index("estimator")
    for e in SLATE_ESTIMATORS:
        assert t.loc[e, "value"] == pytest.approx(exact.loc[e, "value"], abs=1e-12)
    with pytest.raises(UlrError, match="different queries"):
        slate_from_log(FrameLog(mixed), score_column="score", temperature=1.0)


def test_the_verdict_names_its_estimators_assumption_in_plain_sentences():
    """The slate verdict's assumption reason reads as sentences (it once embedded the
    assumption's own sentence mid-clause and ended in two full stops)."""
    from ulr.ope.slate import LABELS, _slate_verdict

    for e in SLATE_ESTIMATORS:
        table = pd.DataFrame({"estimator": [e], "value": [0.3], "se": [0.01],
                              "assumption": [ASSUMPTIONS[e]]})
        [r] = [r for r in _slate_verdict(table, 2000, 600).reasons
               if r.code == "slate_assumption"]
        assert r.message.startswith(f"The verdict rests on {LABELS[e]}, ")
        assert r.message.endswith(ASSUMPTIONS[e]) and ".." not in r.message
