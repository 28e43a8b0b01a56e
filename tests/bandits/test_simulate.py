"""Batched simulation: the Kveton et al. (2015) results, reproducibility, chunking."""

import time

import numpy as np
import pytest

from ulr.bandits.envs import CascadeEnv, kveton_env, linear_env
from ulr.bandits.policies import ALGORITHMS
from ulr.bandits.simulate import BanditLab, BanditRuns, simulate
from ulr.errors import UlrError


@pytest.fixture(scope="module")
def kveton_runs():
    """The ICML 2015 setting L=16, K=2, p=0.2, delta=0.15 on a shorter horizon."""
    env = kveton_env(items=16, positions=2, p=0.2, delta=0.15, seed=0)
    return {a: simulate(a, env, steps=15000, runs=8, seed=3)
            for a in ("cascade-ucb1", "cascade-klucb")}


def test_klucb_regret_is_under_half_of_ucb1(kveton_runs):
    ucb = kveton_runs["cascade-ucb1"].final_regret().mean()
    kl = kveton_runs["cascade-klucb"].final_regret().mean()
    # Kveton et al. report about 3.5x less regret for CascadeKL-UCB in this setting
    assert kl < 0.5 * ucb, (kl, ucb)


@pytest.mark.parametrize("name", ["cascade-ucb1", "cascade-klucb"])
def test_regret_is_sublinear(kveton_runs, name):
    c = kveton_runs[name].cum_regret.mean(axis=0)
    half = c.size // 2
    first, second = c[half - 1], c[-1] - c[half - 1]
    assert second < first, (first, second)
    # and far below a linear learner: never choosing an optimal item costs
    # f(A*) - f(worst list) per step
    assert c[-1] < 0.3 * c.size * (1 - 0.8**2 - (1 - (1 - 0.05)**2))


@pytest.mark.parametrize("name", ALGORITHMS)
def test_every_algorithm_runs_batched_and_learns(name):
    env = kveton_env(items=8, positions=2, p=0.3, delta=0.2, seed=1)
    sim = simulate(name, env, steps=3000, runs=4, seed=2)
    c = sim.cum_regret
    assert c.shape == (4, 3000) and np.all(np.diff(c, axis=1) >= 0)
    assert not np.allclose(c[0], c[1])                     # runs are independent
    gap = env.optimal_reward - (1 - (1 - 0.1) ** 2)        # worst list, per step
    assert c[:, -1].mean() < 0.5 * gap * 3000              # better than never learning


def test_seed_reproducible_and_chunking_invariant():
    env = linear_env(items=40, positions=3, n_features=5, seed=0)
    for name in ("cascade-ts", "cascade-lints", "cascade-klucb", "ts"):
        one = BanditRuns(name, env, 900, runs=3, seed=42)
        one.advance()
        chunked = BanditRuns(name, env, 900, runs=3, seed=42)
        for n in (1, 7, 300, 10_000):
            chunked.advance(n)
        assert chunked.t == 900 and chunked.done
        # same lists; only the summation order of the cumulative sum differs
        np.testing.assert_allclose(one.cum_regret, chunked.cum_regret, rtol=1e-12)
        other = simulate(name, env, steps=900, runs=3, seed=43)
        assert not np.array_equal(one.cum_regret, other.cum_regret)


def test_curve_and_summary():
    env = kveton_env(items=10, positions=2, seed=0)
    sim = BanditRuns("cascade-ts", env, 2000, runs=5, seed=0)
    assert sim.curve()["t"].size == 0 and sim.summary()["final_regret_mean"] == 0.0
    t0 = time.perf_counter()
    sim.advance(700)
    wall = time.perf_counter() - t0
    cur = sim.curve(points=50)
    assert cur["t"][-1] == 700 and cur["t"].size <= 50
    c = sim.cum_regret[:, :700]
    np.testing.assert_allclose(cur["mean"][-1], c[:, -1].mean())
    np.testing.assert_allclose(cur["upper"][-1], np.quantile(c[:, -1], 0.9))
    assert np.all(cur["lower"] <= cur["mean"] + 1e-12)
    assert np.all(cur["mean"] <= cur["upper"] + 1e-12)
    s = sim.summary()
    assert s["steps"] == 700 and s["final_regret_std"] == pytest.approx(c[:, -1].std(ddof=1))
    # the simulation's own clock runs inside the call, and the speed is steps over that time
    assert 0 < s["seconds"] <= wall
    assert s["steps_per_second"] == pytest.approx(700 / s["seconds"])


def test_lab_advances_in_lockstep_and_reports():
    env = kveton_env(items=12, positions=2, seed=0)
    lab = BanditLab(env, ("cascade-ucb1", "cascade-ts", "cascade-ucb1"), 3000, runs=3, seed=1)
    assert lab.algorithms == ("cascade-ucb1", "cascade-ts")
    while not lab.done:
        lab.advance(0.05)
        assert len({s.t for s in lab.sims}) == 1
    table = lab.results()
    assert list(table["algorithm"]) == ["cascade-ucb1", "cascade-ts"]
    assert (table["steps"] == 3000).all() and (table["steps_per_second"] > 0).all()
    # same seed -> the lab's runs equal stand-alone runs
    alone = simulate("cascade-ts", env, steps=3000, runs=3, seed=1)
    np.testing.assert_allclose(lab.sims[1].cum_regret, alone.cum_regret, rtol=1e-12)


def test_regret_uses_expected_reward_and_is_zero_for_trivial_problem():
    env = CascadeEnv("custom", np.array([0.3, 0.3, 0.3]), 2)   # every list is optimal
    sim = simulate("cascade-ucb1", env, steps=200, runs=2, seed=0)
    assert np.all(sim.cum_regret == 0)


def test_validation_errors():
    env = kveton_env()
    with pytest.raises(UlrError):
        BanditRuns("nope", env, 10)
    with pytest.raises(UlrError):
        BanditRuns("cascade-ts", env, 0)
    with pytest.raises(UlrError, match="too large"):
        BanditRuns("cascade-ts", env, 10**8, runs=10)
    with pytest.raises(UlrError):
        BanditLab(env, (), 10)


def test_the_verdict_is_a_field_at_the_runs_level_kept_current():
    """``level`` is set when the runs are built; ``verdict`` is a field (no method) that
    every advance brings up to date, equal to a fresh build's on the same runs."""
    import dataclasses

    from ulr import verdict as V

    for cls in (BanditRuns, BanditLab):
        f = {x.name: x for x in dataclasses.fields(cls)}
        assert not f["verdict"].init and not f["verdict"].compare and f["level"].init
        assert f["level"].default == 0.95
    env = kveton_env(items=8, positions=2, seed=0)
    sim = BanditRuns("cascade-ucb1", env, 600, runs=4, seed=0, level=0.8)
    assert sim.verdict.estimate["mean"] == 0  # built: no step yet
    sim.advance(300)
    v = sim.verdict
    assert "300 steps" in v.takeaway and "80% interval over 4 runs" in v.takeaway
    m, lo, hi, _ = V.paired_t_interval(sim.final_regret(), 0.8)
    assert (v.estimate["mean"], v.estimate["lower"], v.estimate["upper"]) == (m, lo, hi)
    sim.advance()
    assert "600 steps" in sim.verdict.takeaway and sim.summary()["verdict"] == \
        sim.verdict.to_dict()
    whole = simulate("cascade-ucb1", env, steps=600, runs=4, seed=0, level=0.8).verdict
    assert (whole.level, whole.takeaway) == (sim.verdict.level, sim.verdict.takeaway)
    with pytest.raises(UlrError):
        BanditRuns("cascade-ucb1", env, 10, level=1.5)

    lab = BanditLab(env, ("cascade-ucb1", "cascade-klucb"), 400, runs=3, seed=0, level=0.9)
    assert [s.level for s in lab.sims] == [0.9, 0.9]
    lab.advance(0.01, max_steps=200)
    assert f"after {lab.t:,} steps" in lab.verdict.takeaway
    while not lab.done:
        lab.advance(0.05)
    v = lab.verdict
    a, b = sorted((s.final_regret() for s in lab.sims), key=lambda x: x.mean())
    se = float(np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size))
    assert v.estimate["delta"] == pytest.approx(float(a.mean() - b.mean()))
    assert v.estimate["upper"] - v.estimate["lower"] == pytest.approx(2 * V.z_value(0.9) * se)
    one = BanditLab(env, ("cascade-ts",), 100, runs=2, level=0.9)
    one.advance(1.0)
    assert one.verdict is one.sims[0].verdict
