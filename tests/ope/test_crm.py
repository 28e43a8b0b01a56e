"""Counterfactual risk minimization: exact gradients and a policy that really improves."""

from pathlib import Path

import numpy as np
import pytest

from ulr.data import ingest
from ulr.errors import UlrError
from ulr.ope.crm import crm_objective, learn_policy, standardized_features
from ulr.ope.feedback import BanditFeedback, Candidates, feedback_from_log
from ulr.ope.simulate import simulate_bandit

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_ope.csv"


@pytest.mark.parametrize("objective", ["ips", "snips"])
@pytest.mark.parametrize("variance_penalty,clip", [(0.0, np.inf), (1.0, np.inf), (0.5, 2.0)])
def test_gradient_matches_finite_differences(objective, variance_penalty, clip):
    sim = simulate_bandit(contexts=10, actions=6, n_features=4, base_rate=0.3, seed=2)
    fb = sim.sample(800, seed=3).feedback(0)
    Z = standardized_features(fb.candidates)
    beta = np.random.default_rng(0).standard_normal(4) * 0.4
    kw = dict(objective=objective, l2=0.1, variance_penalty=variance_penalty, clip=clip)
    _, g = crm_objective(beta, Z, fb, **kw)
    eps = 1e-6
    num = np.array([(crm_objective(beta + eps * e, Z, fb, **kw)[0]
                     - crm_objective(beta - eps * e, Z, fb, **kw)[0]) / (2 * eps)
                    for e in np.eye(4)])
    assert np.allclose(g, num, atol=1e-7)


def row_by_row_gradient(beta, Z, fb, *, objective, l2, variance_penalty, clip):
    """The slow obvious reference: every row's dw_i / dbeta = 1{w_i < clip} w_i
    (z_{a_i} - sum_b pi(b|x_i) z_b), summed row by row in a Python loop."""
    cand = fb.candidates
    s = Z @ beta
    n = fb.n
    w_raw, g = np.empty(n), np.empty((n, Z.shape[1]))
    for i in range(n):
        c0, c1 = cand.starts[fb.context[i]], (cand.starts[fb.context[i] + 1]
                                              if fb.context[i] + 1 < len(cand.starts)
                                              else cand.n_pairs)
        e = np.exp(s[c0:c1] - s[c0:c1].max())
        p = e / e.sum()
        w_raw[i] = p[fb.pair[i] - c0] / fb.propensity[i]
        g[i] = (w_raw[i] < clip) * w_raw[i] * (Z[fb.pair[i]] - p @ Z[c0:c1])
    w = np.minimum(w_raw, clip)
    r, u = fb.reward, fb.reward * np.minimum(w_raw, clip)
    if objective == "ips":
        dJ = (r[:, None] * g).sum(axis=0) / n
    else:
        J = u.sum() / w.sum()
        dJ = ((r - J)[:, None] * g).sum(axis=0) / w.sum()
    if variance_penalty > 0:
        P = np.sqrt(u.var(ddof=1) / n)
        dvar = 2.0 / (n - 1) * (((u - u.mean()) * r)[:, None] * g).sum(axis=0)
        dJ = dJ - variance_penalty * dvar / (2 * P * n)
    return dJ - l2 * beta


@pytest.mark.parametrize("objective", ["ips", "snips"])
@pytest.mark.parametrize("variance_penalty,clip", [(0.0, np.inf), (1.0, np.inf), (0.5, 2.0)])
def test_gradient_equals_the_row_by_row_sum(objective, variance_penalty, clip):
    """The gradient summed per pair and per context (no (rows, features) matrix) equals the
    row-by-row sum to 1e-12."""
    sim = simulate_bandit(contexts=10, actions=6, n_features=4, base_rate=0.3, seed=5)
    fb = sim.sample(600, seed=6).feedback(0)
    Z = standardized_features(fb.candidates)
    beta = np.random.default_rng(1).standard_normal(4) * 0.4
    kw = dict(objective=objective, l2=0.1, variance_penalty=variance_penalty, clip=clip)
    _, g = crm_objective(beta, Z, fb, **kw)
    np.testing.assert_allclose(g, row_by_row_gradient(beta, Z, fb, **kw), rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize("objective", ["ips", "snips"])
def test_learned_policy_beats_logging_and_its_estimate_is_honest(objective):
    sim = simulate_bandit(contexts=20, actions=10, n_features=5, base_rate=0.1, seed=1)
    fb = sim.sample(5000, seed=2).feedback(0)
    res = learn_policy(fb, objective=objective, steps=150, n_bootstrap=400, seed=0)
    v_log = float(sim.true_value(sim.logging))
    v_best = float(sim.true_value(sim.policy(temperature=0)))
    v_learned = float(sim.true_value(res.pi))
    # most of the possible gain (logging 0.10 -> greedy-optimal 0.38) is realized
    assert v_learned > v_log + 0.6 * (v_best - v_log)
    # the held-out estimate is an honest one: within 4 bootstrap se of the truth
    t = res.evaluation.table.set_index("estimator")
    assert abs(t.loc["snips", "value"] - v_learned) < 4 * t.loc["snips", "se"]
    assert t.loc["snips", "lower"] > t.loc["logging", "upper"]
    # the path starts at the uniform (= logging) policy and improves
    path = sim.true_value(res.policy_path(fb.candidates))
    assert path[0] == pytest.approx(v_log) and path[-1] == pytest.approx(v_learned)
    assert res.curve["step"].iloc[-1] == 150


def test_variance_penalty_and_l2_keep_the_policy_softer():
    sim = simulate_bandit(contexts=20, actions=10, n_features=5, base_rate=0.1, seed=1)
    fb = sim.sample(3000, seed=4).feedback(0)
    free = learn_policy(fb, l2=0.0, steps=150, n_bootstrap=100)
    l2 = learn_policy(fb, l2=1.0, steps=150, n_bootstrap=100)
    assert np.linalg.norm(l2.coef) < np.linalg.norm(free.coef)


def test_learning_on_the_sample_log_and_user_errors():
    fb, _ = feedback_from_log(ingest.open_file(SAMPLE))
    res = learn_policy(fb, steps=60, n_bootstrap=200)
    assert res.evaluation.diagnostics["n"] < fb.n
    assert "few_clicks" in [w.code for w in res.evaluation.warnings]  # ~25 held-out clicks
    d = res.to_dict()
    assert set(d["estimates"]) == {"ips", "snips"} and d["objective"] == "snips"
    with pytest.raises(UlrError, match="objective"):
        learn_policy(fb, objective="dr")
    no_feat = BanditFeedback(
        candidates=Candidates(context=fb.candidates.context,
                              features=np.zeros((fb.candidates.n_pairs, 0)),
                              context_labels=fb.candidates.context_labels,
                              action_labels=fb.candidates.action_labels),
        pair=fb.pair, reward=fb.reward, propensity=fb.propensity)
    with pytest.raises(UlrError, match="feature"):
        learn_policy(no_feat)


def test_the_learned_policys_verdict_is_computed_from_its_fields():
    """learn_policy gives its evaluation and its result the mapping warnings; both
    verdicts name the learned policy and equal ope_verdict's on the held-out estimates."""
    import dataclasses

    from ulr.lists import MappingWarning
    from ulr.ope.crm import LEARNED, CRMResult
    from ulr.ope.verdicts import ope_verdict

    fields = {f.name: f for f in dataclasses.fields(CRMResult)}
    assert "verdict" not in fields  # computed from the fields, never set (ulr.result)
    assert fields["mapping"].init
    sim = simulate_bandit(contexts=10, actions=6, n_features=4, base_rate=0.3, seed=2)
    fb = sim.sample(1500, seed=3).feedback(0)
    warn = MappingWarning("single_row_sessions", "broken mapping; map a column that groups "
                          "one shown list", share=0.8)
    res = learn_policy(fb, steps=20, n_bootstrap=100, mapping=[warn])
    ev = res.evaluation
    expected = ope_verdict(ev.table, ev.warnings, ev.diagnostics, level=0.95,
                           target="the learned policy", mapping=(warn,))
    assert res.verdict == expected and ev.verdict == expected and res.mapping == (warn,)
    assert ev.target_name == LEARNED and res.verdict.takeaway.startswith("The learned policy")
    assert res.to_dict()["verdict"] == expected.to_dict()
    # built with an evaluation of other inputs, the result still names the learned policy
    # and weighs its own mapping
    other = dataclasses.replace(ev, target_name="the target policy", mapping=())
    rebuilt = CRMResult(coef=res.coef, pi=res.pi, curve=res.curve, evaluation=other,
                        settings=res.settings)
    assert rebuilt.verdict == ope_verdict(ev.table, ev.warnings, ev.diagnostics,
                                          target="the learned policy")
