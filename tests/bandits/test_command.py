"""`python -m ulr bandit` (docs/contract.md §2): JSON keys, reproducibility, data env, replay, errors."""

import json

import pytest

from ulr.bandits.envs import kveton_env
from ulr.bandits.simulate import simulate
from ulr.simulate import simulate_clicks, write_log
from ulr.stats import wilson_interval


@pytest.fixture
def ulr(cli):
    """Run ``ulr bandit ...`` in-process with the shared harness (tests/conftest.py)."""
    return lambda *args: cli("bandit", *args)


def test_one_json_object_on_stdout_in_a_real_process(cli_process):
    rc, out, err = cli_process("bandit", "--algorithm", "cascade-ucb1", "--steps", 500,
                               "--runs", 2, "--json")
    assert rc == 0, err
    obj = json.loads(out)
    assert {"final_regret_mean", "final_regret_std", "seconds"} <= set(obj)


@pytest.fixture(scope="module")
def log_csv(tmp_path_factory):
    sim = simulate_clicks(model="pbm", queries=10, positions=5, sessions=3000,
                          randomized_fraction=0.5, features=2, seed=4)
    path = tmp_path_factory.mktemp("bandit_cli") / "log.csv"
    write_log(sim.df, str(path))
    return path


def test_simulation_json_matches_the_library(ulr):
    rc, out, err = ulr("--algorithm", "cascade-klucb", "--env", "kveton", "--items", 10,
                       "--positions", 2, "--steps", 3000, "--runs", 4, "--seed", 7, "--p", 0.3,
                       "--delta", 0.1, "--json")
    assert rc == 0, err
    obj = json.loads(out)
    for key in ("final_regret_mean", "final_regret_std", "seconds", "steps_per_second",
                "lower_bound"):
        assert key in obj
    assert obj["steps"] == 3000 and obj["runs"] == 4 and obj["environment"]["items"] == 10
    env = kveton_env(items=10, positions=2, p=0.3, delta=0.1, seed=7)
    final = simulate("cascade-klucb", env, steps=3000, runs=4, seed=7).final_regret()
    assert obj["final_regret_mean"] == pytest.approx(final.mean())
    assert obj["final_regret_std"] == pytest.approx(final.std(ddof=1))


def test_linear_env_human_output_and_ucb1_bound(ulr):
    rc, out, err = ulr("--algorithm", "cascade-lints", "--env", "linear", "--items", 200,
                       "--positions", 3, "--n-features", 6, "--steps", 500, "--runs", 2)
    assert rc == 0, err
    assert "cascade-lints on linear (L=200, K=3)" in out and "final regret" in out
    rc, out, err = ulr("--algorithm", "ucb1", "--positions", 1, "--steps", 400, "--runs", 2, "--json")
    assert rc == 0, err
    assert json.loads(out)["ucb1_upper_bound"] > json.loads(out)["final_regret_mean"]


def test_data_env_and_replay(ulr, log_csv):
    rc, out, err = ulr("--algorithm", "cascade-ts", "--env", "data", "--input", log_csv,
                       "--items", 20, "--positions", 3, "--steps", 800, "--runs", 3, "--json")
    assert rc == 0, err
    obj = json.loads(out)
    assert obj["environment"]["items"] == 20
    assert obj["environment"]["theta_from"] == "randomized CTR ratios"
    rc, out, err = ulr("--algorithm", "cascade-ts", "--env", "data", "--input", log_csv,
                       "--theta", "1,0.5,0.3", "--steps", 100, "--runs", 1, "--json")
    assert rc == 0, err
    assert json.loads(out)["environment"]["theta"] == [1.0, 0.5, 0.3]
    rc, out, err = ulr("--replay", "--algorithm", "cascade-klucb", "--input", log_csv, "--json")
    assert rc == 0, err
    obj = json.loads(out)
    assert obj["mode"] == "replay" and obj["k"] == 1
    assert 0 < obj["accepted"] < obj["events"]
    assert obj["ci_lower"] <= obj["ctr"] <= obj["ci_upper"]
    rc, out, err = ulr("--replay", "--algorithm", "ts", "--input", log_csv)
    assert rc == 0 and "estimated CTR" in out and "(95% CI" in out, err


def test_replay_level_sets_the_wilson_interval(ulr, log_csv):
    got = {}
    for level in (0.8, 0.99):
        rc, out, err = ulr("--replay", "--algorithm", "cascade-klucb", "--input", log_csv,
                           "--level", level, "--json")
        assert rc == 0, err
        got[level] = json.loads(out)
    assert got[0.8]["level"] == 0.8 and got[0.99]["level"] == 0.99
    assert got[0.8]["ctr"] == got[0.99]["ctr"]
    lo, hi = wilson_interval(got[0.8]["clicks"], got[0.8]["accepted"], level=0.8)
    assert (got[0.8]["ci_lower"], got[0.8]["ci_upper"]) == pytest.approx((lo, hi))
    assert got[0.99]["ci_lower"] < got[0.8]["ci_lower"] < got[0.8]["ci_upper"] \
        < got[0.99]["ci_upper"]


def test_user_errors(ulr, user_error, tmp_path, log_csv):
    user_error(ulr("--algorithm", "nope"), "invalid choice")
    user_error(ulr("--algorithm", "ts", "--positions", 20), "list length k")
    user_error(ulr("--algorithm", "ts", "--env", "data"), "--input")
    user_error(ulr("--algorithm", "ts", "--input", log_csv), "--env data or --replay")
    user_error(ulr("--algorithm", "ts", "--theta", "1,0.5"), "--theta goes with --env data")
    user_error(ulr("--algorithm", "ts", "--sigma", "1"), "--sigma")
    user_error(ulr("--algorithm", "ts", "--steps", 0), "steps")
    user_error(ulr("--algorithm", "ts", "--level", 0.9), "--level goes with --replay")
    user_error(ulr("--replay", "--algorithm", "ts", "--input", log_csv, "--level", 1.5), "level")
    plain = tmp_path / "plain.csv"
    plain.write_text("query_id,doc_id,position,click\nq,a,1,1\nq,b,2,0\n")
    user_error(ulr("--replay", "--algorithm", "ts", "--input", plain), "randomized")
