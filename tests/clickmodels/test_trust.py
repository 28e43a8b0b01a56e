"""The trust-bias model: its EM against a slow reference, recovery on simulated truth, and
that it is not preferred on a log without trust bias."""

import math

import numpy as np
import pytest

from ulr.clickmodels import DEFAULT, MODELS, evaluate, parse_models
from ulr.clickmodels.sessions import Sessions
from ulr.clickmodels.trust import Trust, fit_cells
from ulr.simulate import simulate_click_model, trust_truth

from tests.clickmodels.helpers import compress, sessions_of


def reference_em(impressions, n_pairs, k, iters):
    """Plain-Python EM of the two-class mixture, impression by impression: ``impressions``
    is a list of (pair, rank 0-based, click). Starts where :func:`fit_cells` starts."""
    n_k, c_k = [0.0] * k, [0.0] * k
    for _, r, c in impressions:
        n_k[r] += 1
        c_k[r] += c
    pooled = sum(c_k) / sum(n_k)
    ctr = [c_k[r] / n_k[r] if n_k[r] else pooled for r in range(k)]
    p1 = [min(max(2 * x, 0.02), 0.98) for x in ctr]
    p0 = [min(max(0.25 * x, 1e-6), 0.5) for x in ctr]
    pi = 0.5
    seen = sorted({q for q, _, _ in impressions})
    for _ in range(iters):
        post = {}
        for q in seen:  # each pair's likelihood under either class, from its impressions
            l1 = l0 = 0.0
            for qq, r, c in impressions:
                if qq == q:
                    l1 += math.log(p1[r] if c else 1 - p1[r])
                    l0 += math.log(p0[r] if c else 1 - p0[r])
            a, b = pi * math.exp(l1), (1 - pi) * math.exp(l0)
            post[q] = a / (a + b)
        num1, den1, num0, den0 = [0.0] * k, [0.0] * k, [0.0] * k, [0.0] * k
        for q, r, c in impressions:
            num1[r] += post[q] * c
            den1[r] += post[q]
            num0[r] += (1 - post[q]) * c
            den0[r] += 1 - post[q]
        p1 = [num1[r] / den1[r] for r in range(k)]
        p0 = [num0[r] / den0[r] for r in range(k)]
        pi = sum(post.values()) / len(seen)
    return np.array(p1), np.array(p0), pi


def test_em_matches_slow_reference():
    rng = np.random.default_rng(5)
    k, n_pairs = 4, 12
    rel = rng.random(n_pairs) < 0.4
    imps = []
    for _ in range(300):
        docs = rng.permutation(n_pairs)[:k]
        for r, q in enumerate(docs):
            p = [0.1, 0.07, 0.05, 0.04][r] + [0.6, 0.4, 0.3, 0.2][r] * rel[q]
            imps.append((int(q), r, int(rng.random() < p)))
    pair = np.array([i[0] for i in imps])
    idx = np.array([i[1] for i in imps])
    c = np.array([i[2] for i in imps], dtype=float)
    for iters in (1, 3, 8):
        p1, p0, pi = reference_em(imps, n_pairs, k, iters)
        f = fit_cells(pair, idx, np.ones(len(imps)), c, n_pairs=n_pairs, k=k, max_iter=iters,
                      tol=0.0, ll_tol=None)
        np.testing.assert_allclose(f.alpha + f.beta, p1, atol=1e-9)
        np.testing.assert_allclose(f.beta, p0, atol=1e-9)
        assert f.pi == pytest.approx(pi, abs=1e-9)


def test_cells_and_weights_give_the_same_fit():
    """Sessions compressed to patterns with counts fit exactly as the uncompressed log."""
    sim = simulate_click_model("trust", sessions=3000, queries=20, seed=2, orders=2)
    S = sessions_of(sim, test_every=4)
    a, b = Trust.fit(S), Trust.fit(compress(S))
    np.testing.assert_allclose(a.alpha, b.alpha, atol=1e-10)
    np.testing.assert_allclose(a.beta, b.beta, atol=1e-10)


def test_recovers_alpha_and_beta_relative_to_alpha_1():
    """Tolerance 0.03 on alpha_k / alpha_1 and beta_k / alpha_1 at ranks 1-6 (the issue's):
    with 40k sessions over 300 queries each pair is seen ~130 times, so its class is all but
    certain, and the rank curves' standard errors are under 0.01."""
    sim = simulate_click_model("trust", sessions=40000, queries=300, seed=3, orders=3,
                               randomized=0.1)
    tr = sim.extra["truth"]
    m = Trust.fit(sessions_of(sim))
    a1 = m.alpha[0]
    np.testing.assert_allclose(m.alpha[:6] / a1, tr["alpha_rank"][:6] / tr["alpha_rank"][0],
                               atol=0.03)
    np.testing.assert_allclose(m.beta[:6] / a1, tr["beta_rank"][:6] / tr["alpha_rank"][0],
                               atol=0.03)
    share = tr["relevant"].mean()
    assert m.pi == pytest.approx(share, abs=0.03)


def test_named_best_on_a_trust_log_and_predicts_held_out_sessions():
    sim = simulate_click_model("trust", sessions=20000, queries=200, seed=4, orders=3,
                               randomized=0.1)
    res = evaluate.compare(compress(sessions_of(sim, test_every=5)), ["pbm", "ubm", "trust"],
                           n_bootstrap=20)
    assert res.best == "trust"
    assert res.verdict.level == "reliable"
    s = res.score("trust")
    assert set(s.parameters) == {"alpha", "beta"}
    assert s.log_likelihood_by_frequency  # the frequency breakdown, as the other models'


def test_not_called_better_than_pbm_on_a_pbm_log():
    """A PBM log's attractiveness is continuous: the binary-relevance model must not be called
    clearly better than the PBM there (the issue's check), in any of three seeds."""
    for seed in (1, 2, 3):
        sim = simulate_click_model("pbm", sessions=8000, queries=60, seed=seed)
        res = evaluate.compare(compress(sessions_of(sim, test_every=5)), ["pbm", "trust"],
                               n_bootstrap=20, seed=seed)
        pbm = res.score("pbm")
        clearly_trust = res.best == "trust" and pbm.gap_interval[0] > 0
        assert not clearly_trust


def test_registry_keeps_the_default_comparison():
    assert "trust" in MODELS and "trust" not in DEFAULT
    assert parse_models("pbm,trust") == ["pbm", "trust"]


def test_truth_checks_its_inputs():
    from ulr.errors import UlrError
    t = trust_truth(3)
    np.testing.assert_allclose(t["alpha"] + t["beta"], t["theta"] * t["eps_plus"])
    with pytest.raises(UlrError, match="one value per position"):
        trust_truth(3, eps_plus=[0.9, 0.8])
    with pytest.raises(UlrError, match="must not exceed"):
        trust_truth(2, eps_plus=[0.5, 0.5], eps_minus=[0.6, 0.1])
    with pytest.raises(UlrError, match="go with the trust model"):
        simulate_click_model("pbm", sessions=10, eps_plus=[1.0] * 10)


def test_unseen_pair_is_predicted_with_the_prior_share():
    S = Sessions.from_rows([0, 0, 1, 1, 2, 2], [0, 1, 1, 0, 2, 3], [1, 2, 1, 2, 1, 2],
                           [1, 0, 1, 0, 0, 1], [0, 0, 0, 0, 1, 1])
    m = Trust.fit(S)
    T = S.subset(S.test)
    p = m.conditional(T)
    np.testing.assert_allclose(p[0], m.beta[:2] + m.alpha[:2] * m.pi)


def test_cli_simulates_and_fits_trust(cli, tmp_path):
    import json
    out, truth = tmp_path / "trust.csv", tmp_path / "truth.json"
    r = cli("simulate", "--click-model", "trust", "--sessions", "3000", "--queries", "30",
            "--positions", "5", "--orders", "2", "--randomized-fraction", "0.2",
            "--eps-minus", "0.3,0.2,0.1,0.1,0.05", "--truth", truth, "--out", out, "--json")
    assert r.rc == 0, r.err
    sim = json.loads(r.out)
    assert sim["truth"]["eps_minus"] == [0.3, 0.2, 0.1, 0.1, 0.05]
    assert len(sim["truth"]["alpha_rank"]) == 5
    assert "relevant" in json.loads(truth.read_text())
    r = cli("clickmodels", "--input", out, "--models", "pbm,trust", "--bootstrap", "5",
            "--parameter-intervals", "--json")
    assert r.rc == 0, r.err
    res = json.loads(r.out)
    assert set(res["models"]) == {"pbm", "trust"}
    alpha = res["models"]["trust"]["parameters"]["alpha"]
    assert len(alpha["estimate"]) == 5 and len(alpha["interval"]) == 2
    r = cli("simulate", "--click-model", "pbm", "--sessions", "10", "--eps-plus", "1,1",
            "--out", tmp_path / "x.csv")
    assert r.rc == 2 and r.err.startswith("error:")
