"""Slate estimators against the exact value of the target ranking under PBM and cascade clicks."""

import itertools

import numpy as np
import pytest

from ulr.errors import UlrError
from ulr.ope.slate import (ASSUMPTIONS, SLATE_ESTIMATORS, pl_marginals, slate_estimates,
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
