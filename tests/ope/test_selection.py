"""SLOPE per family, then the smallest Goldenshluger-Lepski bound: against slow loops, by hand,
on clear cases and on simulated RMSE."""

import numpy as np
import pytest

from benchmarks.bench_ope_selection import ratio_se, selection_benchmark
from ulr.ope import estimators as est
from ulr.ope import selection as sel
from ulr.ope.simulate import simulate_bandit


def slow_paired_se(x):
    m, n = x.shape
    se = [np.std(x[i], ddof=1) / np.sqrt(n) for i in range(m)]
    d = [[np.std(x[i] - x[j], ddof=1) / np.sqrt(n) for j in range(m)] for i in range(m)]
    return np.array(se), np.array(d)


def slow_walk(v, d, order, kappa):
    """Keep going while the new estimate's difference from every kept one is within kappa SEs."""
    kept = [order[0]]
    for i in order[1:]:
        for j in kept:
            if abs(v[i] - v[j]) > kappa * d[i][j]:
                return kept[-1]
        kept.append(i)
    return kept[-1]


def slow_bound(v, se, d, c, kappa, unbiased=()):
    """Worst disagreement beyond noise with a more variable or an unbiased estimate, + noise."""
    worst = 0.0
    for j in range(len(v)):
        if j != c and (se[j] >= se[c] or j in unbiased):
            worst = max(worst, abs(v[c] - v[j]) - kappa * d[c][j])
    return worst + kappa * se[c]


def test_paired_se_by_loops():
    x = np.random.default_rng(1).standard_normal((5, 40)) * [[1], [2], [0.5], [3], [1]]
    se, d = sel.paired_se(x)
    se0, d0 = slow_paired_se(x)
    np.testing.assert_allclose(se, se0, rtol=1e-10)
    np.testing.assert_allclose(d, d0, rtol=1e-8, atol=1e-12)


def test_walk_and_bounds_match_slow_loops_on_random_inputs():
    rng = np.random.default_rng(0)
    for _ in range(300):
        m = int(rng.integers(1, 9))
        x = rng.standard_normal((m, 30)) * rng.uniform(0.1, 2, (m, 1)) + rng.normal(0, 0.4, (m, 1))
        v = x.mean(axis=1)
        se, d = sel.paired_se(x)
        order = list(rng.permutation(m))
        kappa = float(rng.choice([1.0, 2.0]))
        assert sel.lepski_walk(v, d, order, kappa=kappa)[0] == slow_walk(v, d, order, kappa)
        bound, _ = sel.error_bounds(v, se, d, kappa=kappa)
        np.testing.assert_allclose(bound, [slow_bound(v, se, d, c, kappa) for c in range(m)],
                                   rtol=1e-12, atol=1e-12)
        mask = rng.random(m) < 0.4
        bound, against = sel.error_bounds(v, se, d, kappa=kappa, unbiased=mask)
        slow = [slow_bound(v, se, d, c, kappa, set(np.flatnonzero(mask))) for c in range(m)]
        np.testing.assert_allclose(bound, slow, rtol=1e-12, atol=1e-12)
        for c in range(m):  # whom it disagrees with accounts for the whole bias term
            j = against[c]
            gap = 0.0 if j == c else abs(v[c] - v[j]) - kappa * d[c][j]
            assert gap + kappa * se[c] == pytest.approx(bound[c], abs=1e-12)


def test_chains_run_from_the_unbiased_end():
    cands = [("ips", None), ("clipped-ips", 2.0), ("clipped-ips", 8.0), ("snips", None),
             ("dr", None), ("switch-dr", 1.0), ("switch-dr", 4.0), ("dros", 9.0), ("dm", None)]
    assert sel.chains(cands) == [[0, 2, 1], [4, 6, 5, 8], [4, 7, 8], [3]]
    assert sel.chains([("dros", 1.0), ("dros", 3.0)]) == [[1, 0]]  # one family: no root


def _select_slowly(reward, weight, q_logged, q_target, kappa=2.0):
    """select() spelled out: every candidate's influence terms, each chain walked, least bound."""
    cands = sel.candidate_list(weight)
    terms = [sel.influence_terms(e, reward, weight, hyperparameter=h, q_logged=q_logged,
                                 q_target=q_target) for e, h in cands]
    v = [t[0] for t in terms]
    se, d = slow_paired_se(np.vstack([t[1] for t in terms]))
    picks = []
    for chain in sel.chains(cands):
        p = slow_walk(v, d, chain, kappa)
        if p not in picks:
            picks.append(p)
    unbiased = {i for i, (e, _) in enumerate(cands) if e in ("ips", "dr", "snips", "sndr")}
    root = {i: chain[0] for chain in sel.chains(cands) for i in chain}
    bounds = [slow_bound(v, se, d, p, kappa, unbiased)
              + (0.0 if p in unbiased else sel.ALLOW * d[p][root[p]]) for p in picks]
    return cands[picks[int(np.argmin(bounds))]]


def test_select_matches_the_slow_procedure_on_simulated_logs():
    sim = simulate_bandit(contexts=8, actions=6, logging="softmax", logging_temperature=0.5,
                          seed=3)
    pi = sim.policy(temperature=0.7)
    d = sim.sample(300, runs=6, seed=4)
    rng = np.random.default_rng(5)
    for i in range(6):
        qhat = np.clip(sim.q[0] + rng.normal(0, 0.1, len(sim.q[0])), 0, 1)
        ql = qhat[d.pair[i]]
        qt = sim.candidates.per_context_sum(pi * qhat)[sim.candidates.context[d.pair[i]]]
        w, r = pi[d.pair[i]] / d.propensity[i], d.reward[i]
        s = sel.select(r, w, q_logged=ql, q_target=qt)
        assert (s.estimator, s.hyperparameter) == _select_slowly(r, w, ql, qt)
        assert s.candidates["chosen"].sum() == 1 and "SLOPE" in s.reason


def test_self_normalized_standard_errors_match_their_spread_over_logs():
    """SNIPS and SNDR: the influence terms' SE against the sd of the estimate over 2000 logs."""
    sim = simulate_bandit(contexts=10, actions=6, logging="softmax", logging_temperature=0.7,
                          seed=6)
    pi = sim.policy(temperature=0.5)
    d = sim.sample(400, runs=2000, seed=7)
    w, r = pi[d.pair] / d.propensity, d.reward
    qhat = np.clip(1.5 * sim.q[0], 0, 1)  # a model too high: SNDR's correction matters
    ql = qhat[d.pair]
    qt = sim.candidates.per_context_sum(pi * qhat)[sim.candidates.context[d.pair]]
    for e, spread in (("snips", est.snips(r, w)), ("sndr", est.sndr(r, w, q_logged=ql,
                                                                      q_target=qt))):
        se = [sel.paired_se(sel.influence_terms(e, r[i], w[i], q_logged=ql[i],
                                                q_target=qt[i])[1][None])[0][0]
              for i in range(0, 2000, 10)]
        # the sd over 2000 logs is within ~3% (1/sqrt(2 * 2000)); the mean SE over 200 logs
        # is biased low by a few % at n = 400 with these weights
        assert np.mean(se) == pytest.approx(np.std(spread, ddof=1), rel=0.1), e


def test_an_unbiased_estimate_checks_a_pick_whatever_its_variance():
    """Three candidates by hand: a biased pick (0.30, se 0.010), an unbiased estimate that is
    less variable (0.20, se 0.008) and a noisy one (0.25, se 0.05) that agrees with both.
    Compared only with more variable estimates the pick looks clean (bound 2 * 0.010); with
    the unbiased one among its references its bias shows: 0.02 + (0.10 - 2 * 0.012)."""
    v = np.array([0.30, 0.20, 0.25])
    se = np.array([0.010, 0.008, 0.05])
    d = np.array([[0.0, 0.012, 0.05], [0.012, 0.0, 0.05], [0.05, 0.05, 0.0]])
    plain, _ = sel.error_bounds(v, se, d)
    checked, against = sel.error_bounds(v, se, d, unbiased=[False, True, False])
    assert plain[0] == pytest.approx(0.02)
    assert checked[0] == pytest.approx(0.02 + 0.10 - 0.024) and against[0] == 1
    np.testing.assert_allclose(checked[1:], plain[1:])  # the others' references are unchanged


def test_a_biased_model_is_not_chosen_and_a_correct_one_is():
    sim = simulate_bandit(contexts=10, actions=5, logging="uniform", seed=2)
    pi = sim.policy(temperature=1.0)
    d = sim.sample(2000, seed=3)
    w, r = pi[d.pair[0]] / d.propensity[0], d.reward[0]
    cand = sim.candidates

    def model(qhat):
        return dict(q_logged=qhat[d.pair[0]],
                    q_target=cand.per_context_sum(pi * qhat)[cand.context[d.pair[0]]])

    truth = sim.true_value(pi)
    good = sel.select(r, w, **model(sim.q[0]))  # the true click model
    bad = sel.select(r, w, **model(np.clip(sim.q[0] + 0.3, 0, 1)))  # DM about 0.3 too high
    assert bad.estimator != "dm"
    for s in (good, bad):  # 0.03 is about 2 half-widths of IPS here
        assert abs(s.value - truth) < 0.03, s.candidates
    assert "SLOPE" in bad.reason and bad.to_dict()["estimator"] == bad.estimator
    assert set(bad.to_dict()) == {"estimator", "hyperparameter", "reason", "bias_allowance"}


def test_one_family_picks_within_it():
    sim = simulate_bandit(contexts=10, actions=5, logging="softmax", seed=2)
    pi = sim.policy(temperature=0.5)
    d = sim.sample(1000, seed=3)
    w, r = pi[d.pair[0]] / d.propensity[0], d.reward[0]
    qhat = sim.q[0]
    qt = sim.candidates.per_context_sum(pi * qhat)[sim.candidates.context[d.pair[0]]]
    s = sel.select(r, w, q_logged=qhat[d.pair[0]], q_target=qt, families=("switch-dr",))
    assert s.estimator == "switch-dr" and s.hyperparameter in sel.hyperparameter_grid(w)
    with pytest.raises(ValueError):
        sel.select(r, w, q_logged=qhat[d.pair[0]], q_target=qt, kappa=0)


def test_grid_spans_the_weights():
    w = np.r_[np.ones(99), 1000.0]
    g = sel.hyperparameter_grid(w)
    assert g.max() == 1000.0 and g.min() < 2.0
    assert est.default_clip(w)[()] in g


@pytest.mark.parametrize("world", [dict(logging_temperature=1.0, model_scale=1.5),
                                   dict(logging_temperature=0.5, model_scale=1.5),
                                   dict(logging_temperature=0.5, model_scale=0.5)])
def test_selection_rmse_against_the_best_single_estimator(world):
    """Small version of benchmarks/bench_ope_selection.py's first three worlds (60 logs of 500).

    Issue 28 asks for SLOPE within 1.2x of the best single estimator; on these
    small versions it is at 0.92-1.00x (ratio_se 0.06-0.09). With 60 logs an RMSE
    is known to about +-10%, so 1.2 is the issue's bar, not a margin. It must also beat plain IPS,
    whose unbiasedness it trades for variance.
    """
    t, picks = selection_benchmark(rows=500, draws=60, seed=4, **world)
    rmse = dict(zip(t.estimator, t.rmse))
    ratio = float(t.loc[t.estimator == "slope", "ratio_to_best_single"].iloc[0])
    assert ratio <= 1.2, t
    assert rmse["slope"] < rmse["ips"], t
    assert picks["n"].sum() == 60
    other = t["ratio_to_best_single"] != 1.0
    assert (t.loc[other, "ratio_se"] > 0).all() and t["ratio_se"].max() < 0.5, t


def test_ratio_se_by_loops_and_against_its_spread_over_replications():
    rng = np.random.default_rng(3)
    err = rng.standard_normal((3, 50)) * [[1.0], [2.0], [0.5]]
    got = ratio_se(err, 0, n_bootstrap=300, seed=9)
    idx = np.random.default_rng(9).integers(0, 50, (300, 50))
    ratios = [[np.sqrt(np.mean(err[i, b] ** 2) / np.mean(err[0, b] ** 2)) for b in idx]
              for i in range(3)]
    np.testing.assert_allclose(got, np.std(ratios, axis=1, ddof=1), rtol=1e-10)
    assert got[0] == 0.0
    # over 1000 replications of 200 paired logs the ratio's sd is known to ~2%; the mean
    # bootstrap SE over 100 of them to a few %
    reps = rng.standard_normal((1000, 2, 200)) * [[1.0], [1.5]]
    spread = np.std(np.sqrt(np.mean(reps[:, 1] ** 2, 1) / np.mean(reps[:, 0] ** 2, 1)), ddof=1)
    boot = np.mean([ratio_se(reps[k], 0, seed=k)[1] for k in range(100)])
    assert boot == pytest.approx(spread, rel=0.1)


def test_the_explanation_names_each_estimator_one_way():
    """Issue 50: the explanation called one estimator both "self-normalized DR" and "sndr",
    and gave settings by their code names. Every estimator reads as its label, with its
    setting in words."""
    import re

    from ulr.ope import registry
    sim = simulate_bandit(contexts=8, actions=6, logging="softmax", logging_temperature=0.5,
                          seed=3)
    pi = sim.policy(temperature=0.7)
    d = sim.sample(300, runs=2, seed=4)
    qhat = np.clip(sim.q[0], 0, 1)
    ql = qhat[d.pair[0]]
    qt = sim.candidates.per_context_sum(pi * qhat)[sim.candidates.context[d.pair[0]]]
    w, r = pi[d.pair[0]] / d.propensity[0], d.reward[0]
    s = sel.select(r, w, q_logged=ql, q_target=qt)
    ids = [k for k in registry.REGISTRY if registry.label(k) != k]
    for k in ids:
        assert not re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", s.reason), (k, s.reason)
    assert " = " not in s.reason and "lam " not in s.reason and "tau " not in s.reason
    assert sel._fmt("clipped-ips", 20.0) == f"{registry.label('clipped-ips')} at clip 20"
