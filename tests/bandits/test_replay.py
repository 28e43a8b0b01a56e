"""Replay evaluation (Li et al. 2011) on hand-made uniformly randomized logs."""

import numpy as np
import pandas as pd
import pytest

from ulr.data import catalog, ingest
from ulr.bandits.envs import CascadeEnv
from ulr.bandits.replay import replay
from ulr.stats import wilson_interval
from ulr.bandits.simulate import simulate
from ulr.errors import NeedsRandomizedRows, NeedsSessions, UlrError

W = np.array([0.05, 0.1, 0.15, 0.2, 0.5])   # attraction of documents d0..d4


def randomized_log(tmp_path, *, sessions=15000, seed=0, randomized=1, with_session=True):
    """Every session shows d0..d4 in a uniformly random order; PBM clicks, theta_k = 1/k."""
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((sessions, 5)), axis=1)      # order[s, k] = doc at k+1
    theta = 1 / np.arange(1, 6)
    click = rng.random((sessions, 5)) < theta * W[order]
    df = pd.DataFrame({
        "query_id": "q",
        "doc_id": np.char.add("d", order.ravel().astype(str)),
        "position": np.tile(np.arange(1, 6), sessions),
        "click": click.ravel().astype(int),
        "randomized": randomized,
    })
    if with_session:
        df.insert(0, "session_id", np.repeat(np.arange(sessions), 5))
    path = tmp_path / "rand.csv"
    df.to_csv(path, index=False)
    return ingest.open_file(str(path)), order, click


def test_refuses_logs_that_are_not_randomized(tmp_path):
    log, *_ = randomized_log(tmp_path, sessions=50, randomized=0)
    with pytest.raises(NeedsRandomizedRows, match="randomized"):   # a type pages branch on
        replay(log, "cascade-ts")
    df = log.df().drop(columns=["randomized"])
    df.to_csv(tmp_path / "plain.csv", index=False)
    with pytest.raises(NeedsRandomizedRows, match="no 'randomized' column"):
        replay(ingest.open_file(str(tmp_path / "plain.csv")), "cascade-ts")
    log, *_ = randomized_log(tmp_path, sessions=50, with_session=False)
    with pytest.raises(NeedsSessions, match="session_id") as err:
        replay(log, "cascade-ts")
    assert err.value.field == "session_id" and isinstance(err.value, UlrError)


def test_acceptance_rate_is_one_over_candidates(tmp_path):
    log, *_ = randomized_log(tmp_path, sessions=6000)
    res = replay(log, "cascade-ucb1", positions=1, seed=1)
    # accepted ~ Binomial(6000, 1/5): sd = sqrt(6000 * 0.2 * 0.8) = 31; allow 4 sd
    assert abs(res.accepted - 1200) < 4 * 31
    assert res.events == 6000 and res.items == 5 and res.skipped_sessions == 0
    two = replay(log, "cascade-ucb1", positions=2, seed=1)
    # top-2 must match: 1/(5*4); sd = sqrt(6000 * 0.05 * 0.95) = 17
    assert abs(two.accepted - 300) < 4 * 17


def test_random_policy_ctr_is_the_logged_ctr(tmp_path):
    log, order, click = randomized_log(tmp_path, sessions=4000)
    res = replay(log, "ts", positions=1, seed=0)
    assert res.random_ctr == pytest.approx(click[:, 0].mean())
    assert res.ctr == pytest.approx(res.clicks / res.accepted)
    assert (res.ci_lower, res.ci_upper) == pytest.approx(
        wilson_interval(res.clicks, res.accepted, level=0.95))


@pytest.mark.parametrize("algorithm", ["cascade-klucb", "cascade-ts"])
def test_replay_ctr_matches_online_simulation(tmp_path, algorithm):
    """Li et al., Theorem 1: replay over T accepted events is distributed like T
    online steps. The online CTR of the first T steps comes from 40 simulated
    runs of the same algorithm on the same attraction probabilities (theta_1 =
    1, so a click on the top document has probability w)."""
    log, *_ = randomized_log(tmp_path, sessions=15000, seed=3)
    res = replay(log, algorithm, positions=1, seed=2)
    t = res.accepted
    env = CascadeEnv("custom", W, 1)
    sim = simulate(algorithm, env, steps=t, runs=40, seed=0)
    online_ctr = env.optimal_reward - sim.final_regret().mean() / t
    # replay CTR: binomial over T events, sd <= sqrt(p(1-p)/T) ~ 0.017 at T ~ 3000;
    # the 40-run online mean is 6x more precise. 4 sd:
    tol = 4 * np.sqrt(online_ctr * (1 - online_ctr) / t)
    assert abs(res.ctr - online_ctr) < tol, (res.ctr, online_ctr, tol)
    assert res.ctr > res.random_ctr + tol            # the learner beats random order
    assert res.ci_lower < online_ctr < res.ci_upper


def test_sessions_without_the_top_positions_are_skipped(tmp_path):
    log, *_ = randomized_log(tmp_path, sessions=300)
    df = log.df()
    df = df[~((df["session_id"].astype(int) < 10) & (df["position"] == 1))]  # 10 lose position 1
    df.to_csv(tmp_path / "holes.csv", index=False)
    res = replay(ingest.open_file(str(tmp_path / "holes.csv")), "cascade-ts", positions=1)
    assert res.skipped_sessions == 10 and res.events == 290
    with pytest.raises(UlrError):
        replay(ingest.open_file(str(tmp_path / "holes.csv")), "cascade-ts", positions=11)


def test_replay_linear_algorithm_needs_features(tmp_path):
    log, *_ = randomized_log(tmp_path, sessions=200)
    res = replay(log, "cascade-lints", positions=1)    # 5 items: one-hot features
    assert res.accepted > 0


def test_wilson_interval():
    lo, hi = wilson_interval(0, 0)
    assert np.isnan(lo) and np.isnan(hi)
    lo, hi = wilson_interval(30, 100, level=0.95)
    # textbook value for 30/100
    assert lo == pytest.approx(0.2189, abs=1e-4) and hi == pytest.approx(0.3958, abs=1e-4)


def test_declared_randomized_log_replays_and_reports_acceptance_and_one_item_sessions(tmp_path):
    """A log declared randomized at load (no randomized column of its own) is replayed;
    one-item sessions are left out and counted; the acceptance rate is reported."""
    from ulr.data import catalog, ingest
    from ulr.errors import NeedsRandomizedRows, NeedsSessions, UlrError
    from ulr.simulate import obd_like_log
    df = obd_like_log(impressions=600, items=8, base_ctr=0.05, seed=2)
    path = tmp_path / "obd.csv"
    df.to_csv(path, index=False)
    res = ingest.load_log(path, "declared", db_path=tmp_path / "d.duckdb", mapping={
        "query_id": "user_feature_0", "session_id": "timestamp",
        "constants": {"randomized": True}})
    log = catalog.open_dataset("declared", tmp_path / "d.duckdb")
    assert log.info.facts.randomized and res.rows == len(df)
    rr = replay(log, "cascade-klucb", positions=1, seed=0)
    assert rr.events == 600 and rr.no_choice_sessions == 0
    assert rr.acceptance_rate == rr.accepted / rr.events
    # k = 1 among 3 uniformly shuffled candidates: acceptance about 1/3 (binomial spread).
    assert abs(rr.acceptance_rate - 1 / 3) < 4 * (1 / 3 * 2 / 3 / 600) ** 0.5
    assert rr.to_dict()["acceptance_rate"] == rr.acceptance_rate

    # Sessions taken from a per-row key hold one item each: nothing to replay, said so.
    single = df.assign(row_id=[f"r{i}" for i in range(len(df))])
    path2 = tmp_path / "single.csv"
    single.to_csv(path2, index=False)
    ingest.load_log(path2, "single", db_path=tmp_path / "d.duckdb", mapping={
        "query_id": "user_feature_0", "session_id": "row_id",
        "constants": {"randomized": True}})
    with pytest.raises(UlrError, match="holds at most k = 1 item"):
        replay(catalog.open_dataset("single", tmp_path / "d.duckdb"), "cascade-klucb", positions=1)


def _replayed(clicks: int, accepted: int, events: int = 1000, no_choice: int = 0):
    from statsmodels.stats.proportion import proportion_confint

    from ulr.bandits.replay import ReplayResult
    lo, hi = proportion_confint(clicks, accepted, alpha=0.05, method="wilson") if accepted \
        else (float("nan"), float("nan"))
    return ReplayResult(algorithm="cascade-ts", k=1, ctr=clicks / accepted if accepted
                        else float("nan"), ci_lower=lo, ci_upper=hi, accepted=accepted,
                        clicks=clicks, events=events, skipped_sessions=0, random_ctr=0.1,
                        items=50, level=0.95, seed=0, seconds=0.0,
                        no_choice_sessions=no_choice)


@pytest.mark.parametrize("clicks, accepted", [(0, 40), (3, 40), (12, 80), (40, 200),
                                              (150, 600)])
def test_thin_replay_is_a_wilson_interval_wider_than_the_estimate(clicks, accepted):
    """The page's "read it as unknown" rule lives on the result, and the verdict carries it:
    thin exactly when the 95% Wilson half-width exceeds WIDE (50%) of the replayed CTR."""
    from ulr.verdict import WIDE
    rr = _replayed(clicks, accepted)
    half = (rr.ci_upper - rr.ci_lower) / 2
    expected = clicks == 0 or half > WIDE * clicks / accepted
    assert rr.thin() == expected
    v = rr.verdict
    assert ("wide_interval" in v.codes) == expected
    thin_lines = [c for c in rr.caveats() if c.startswith("Thin evidence")]
    assert len(thin_lines) == int(expected)
    if expected:
        assert v.level != "reliable"
        assert f"{clicks:,} clicks in {accepted:,} accepted events" in thin_lines[0]


def test_replay_caveats_name_the_sessions_left_out_and_nothing_without_an_accepted_one():
    rr = _replayed(150, 600, no_choice=37)
    assert rr.caveats() == ["37 sessions hold no more than 1 item(s): every policy would show "
                            "the logged list there, so they were left out."]
    assert _replayed(0, 0).thin()
