"""``trust-em``: alpha, beta and theta = alpha / alpha_1 with bootstrap intervals."""

import json

import numpy as np

from ulr.propensity import estimate
from ulr.simulate import simulate_click_model, write_log


def test_recovers_alpha_and_beta_with_intervals(open_df):
    sim = simulate_click_model("trust", sessions=20000, queries=200, seed=3, orders=3,
                               randomized=0.1)
    tr = sim.extra["truth"]
    res = estimate(open_df(sim.df), method="trust-em", n_bootstrap=10, seed=1)
    a, b = np.array(res.extras["alpha"]), np.array(res.extras["beta"])
    rel_a, rel_b = tr["alpha_rank"] / tr["alpha_rank"][0], tr["beta_rank"] / tr["alpha_rank"][0]
    np.testing.assert_allclose(res.theta[:6], rel_a[:6], atol=0.04)
    np.testing.assert_allclose(np.array(res.extras["beta_relative"])[:6], rel_b[:6], atol=0.04)
    np.testing.assert_allclose(a, tr["alpha_rank"], atol=0.05)
    np.testing.assert_allclose(b, tr["beta_rank"], atol=0.03)
    assert res.theta[0] == 1.0 and res.lower[0] == res.upper[0] == 1.0
    assert np.all(res.lower <= res.theta + 1e-12) and np.all(res.theta <= res.upper + 1e-12)
    for name in ("alpha", "beta", "beta_relative"):
        lo, hi = np.array(res.extras[f"{name}_lower"]), np.array(res.extras[f"{name}_upper"])
        assert lo.shape == hi.shape == (10,) and np.all(lo <= hi)
    assert res.verdict.level in ("reliable", "directional")
    d = res.to_dict()
    assert d["method"] == "trust-em" and len(d["alpha"]) == len(d["beta"]) == 10


def test_cli_json_has_alpha_beta_and_theta(cli, tmp_path):
    sim = simulate_click_model("trust", sessions=3000, queries=40, seed=2, orders=2,
                               randomized=0.2, positions=5)
    path = tmp_path / "t.csv"
    write_log(sim.df, str(path))
    r = cli("propensity", "--method", "trust-em", "--input", path, "--bootstrap", "5", "--json")
    assert r.rc == 0, r.err
    out = json.loads(r.out)
    assert {"alpha", "beta", "theta", "alpha_lower", "beta_upper"} <= set(out)
    assert out["theta"][0] == 1.0


def test_trust_em_runs_on_a_registered_source_as_on_the_rows(cli, tmp_path):
    """trust-em needs cell counts only, so a registered source's statistics give the same
    alpha and beta as the rows do (on an engine scan of the same files)."""
    sim = simulate_click_model("trust", sessions=2000, queries=30, seed=6, orders=2,
                               randomized=0.2, positions=5)
    lake = tmp_path / "lake"
    lake.mkdir()
    sim.df.iloc[:5000].to_parquet(lake / "a.parquet")
    sim.df.iloc[5000:].to_parquet(lake / "b.parquet")
    db = tmp_path / "store" / "ulr.duckdb"
    r = cli("source", "add", "trust", "--path", str(lake / "*.parquet"), "--db", db, "--json")
    assert r.rc == 0, r.err
    src = json.loads(cli("propensity", "--method", "trust-em", "--source", "trust", "--db", db,
                         "--bootstrap", "0", "--json").out)
    rows = json.loads(cli("propensity", "--method", "trust-em", "--engine", "duckdb", "--input",
                          str(lake / "*.parquet"), "--bootstrap", "0", "--json").out)
    np.testing.assert_allclose(src["alpha"], rows["alpha"], atol=1e-9)
    np.testing.assert_allclose(src["beta"], rows["beta"], atol=1e-9)
