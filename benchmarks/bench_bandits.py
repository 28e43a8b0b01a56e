"""Bandit lab speed: L=3000 items, K=4, d=10 tag features, 10,000 steps.

Targets (issue 5): CascadeLinTS <= 0.5 s and CascadeUCB1 <= 0.3 s for one run;
20 runs of CascadeLinTS batched <= 3 s. Issue 15: CascadeKL-UCB <= 0.3 s for one run,
choosing the same lists as the full computation (every index every step, ``prune=False``),
checked over all 10,000 steps of one run. Also times a straightforward per-step,
per-item-loop CascadeLinTS for a few hundred steps and prints the speed-up.

Issue 25: on Kveton et al.'s setting (L=16, K=2, 20 runs x 100,000 steps) CascadeKL-UCB
within 2x CascadeUCB1's CPU time; ``--kveton`` prints both, and the per-step cost of the
pruned and the full KL-UCB path on several shapes (what ``prune=None`` chooses by).

Run: python benchmarks/bench_bandits.py [--all | --klucb | --kveton]
(--all adds the other algorithms, one run each, for information; --klucb runs only the
CascadeKL-UCB lines.)
"""

import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ulr.bandits.envs import linear_env  # noqa: E402
from ulr.bandits.policies import ALGORITHMS  # noqa: E402
from ulr.bandits.simulate import BanditRuns  # noqa: E402

L, K, D, STEPS = 3000, 4, 10, 10_000
NAIVE_STEPS = 300
REPEATS = 3


def timed(env, algorithm, runs, steps=STEPS, seed=0):
    """Best and median wall time of REPEATS fresh runs, and the best CPU time.

    The CPU time of this process is printed too: on a shared machine the wall
    time also counts the time other processes held the core.
    """
    wall, cpu = [], []
    for rep in range(REPEATS):
        sim = BanditRuns(algorithm, env, steps, runs=runs, seed=seed + rep)
        c0 = time.process_time()
        sim.advance()
        cpu.append(time.process_time() - c0)
        wall.append(sim.seconds)
    return min(wall), float(np.median(wall)), min(cpu), sim


def naive_lints(env, steps, seed=0, sigma=0.5):
    """CascadeLinTS written the obvious way: one run, Python loops over items.

    Same algorithm and random streams as the batched version (Zong et al. 2016):
    theta ~ N(sigma^-2 M^-1 B, M^-1) once per step, score every item, take the
    top K, cascade feedback, one Sherman-Morrison update per observed item.
    """
    env_ss, policy_ss = np.random.SeedSequence(seed).spawn(2)
    env_rng, rng = np.random.default_rng(env_ss), np.random.default_rng(policy_ss)
    u = env_rng.random((steps, 1, K))
    x, w = env.features, env.w
    m_inv, b = np.eye(D), np.zeros(D)
    lists = []
    for t in range(steps):
        chol = np.linalg.cholesky(m_inv)
        theta = m_inv @ b / sigma**2 + chol @ rng.standard_normal(D)
        scores = [float(x[e] @ theta) for e in range(L)]          # per item
        chosen = sorted(range(L), key=lambda e: -scores[e])[:K]
        lists.append(chosen)
        for j, e in enumerate(chosen):                              # cascade feedback
            u_vec = m_inv @ x[e]
            m_inv = m_inv - np.outer(u_vec, u_vec) / (sigma**2 + x[e] @ u_vec)
            if u[t, 0, j] < w[e]:
                b = b + x[e]
                break
    return np.array(lists)


def klucb_same_lists(env, steps, seed=0):
    """Whether CascadeKL-UCB pruned and unpruned choose the same lists in every
    step of one run, and the CPU time of the unpruned run (lists recorded too)."""
    out, cpu = [], 0.0
    for prune in (True, False):
        sim = BanditRuns("cascade-klucb", env, steps, runs=1, seed=seed)
        sim.policy.prune = prune
        lists = []
        select = sim.policy.select
        sim.policy.select = lambda t, items=None: lists.append(select(t, items)) or lists[-1]
        c0 = time.process_time()
        sim.advance()
        cpu = time.process_time() - c0
        out.append(np.array(lists))
    return np.array_equal(*out), cpu


def klucb_section(env):
    """CascadeKL-UCB (issue 15): time, index solves, and the lists against the full computation."""
    b_kl, m_kl, c_kl, kl = timed(env, "cascade-klucb", 1)
    line("cascade-klucb, 1 run (pruned)", b_kl, m_kl, c_kl, 0.3)
    solved = (kl.policy.solves + kl.policy.refresh_solves) / STEPS
    print(f"{'  index solves per step (mean)':<44}{solved:>8.1f} of {L} items "
          f"({kl.policy.solves:,} in select, {kl.policy.refresh_solves:,} in window refreshes)")
    same_kl, c_full = klucb_same_lists(env, STEPS)
    print(f"{'  unpruned (every index), 1 run':<44}{c_full:>8.3f} s cpu; same lists in all "
          f"{STEPS:,} steps: {'yes' if same_kl else 'NO'}")
    return same_kl


def line(label, best, median, cpu, target=None):
    verdict = "" if target is None else f"  target <= {target:.1f} s: " + (
        "OK" if best <= target else "OVER")
    print(f"{label:<36}{best:>7.3f} s wall (median {median:.3f}, cpu {cpu:.3f} s){verdict}")


def main(show_all=False):
    env = linear_env(items=L, k=K, features=D, seed=0)
    print(f"setting: L={L}, K={K}, d={D}, {STEPS:,} steps; best of {REPEATS} runs")
    b_lints, m_lints, c_lints, sim = timed(env, "cascade-lints", 1)
    line("cascade-lints, 1 run", b_lints, m_lints, c_lints, 0.5)
    b_ucb, m_ucb, c_ucb, _ = timed(env, "cascade-ucb1", 1)
    line("cascade-ucb1, 1 run", b_ucb, m_ucb, c_ucb, 0.3)
    klucb_section(env)
    b20, m20, c20, _ = timed(env, "cascade-lints", 20)
    line("cascade-lints, 20 runs batched", b20, m20, c20, 3.0)
    print(f"{'  batching: 20 runs cost':<44}{b20 / b_lints:>8.1f} x one run")
    print(f"{'  load average (1 min) of the machine':<44}{os.getloadavg()[0]:>8.1f}")

    t0 = time.perf_counter()
    naive = naive_lints(env, NAIVE_STEPS)
    t_naive = (time.perf_counter() - t0) / NAIVE_STEPS
    check = BanditRuns("cascade-lints", env, NAIVE_STEPS, runs=1, seed=0)
    recorded = []
    select = check.policy.select
    check.policy.select = lambda t, items=None: recorded.append(select(t, items)) or recorded[-1]
    check.advance()
    same = np.array_equal(np.array(recorded)[:, 0, :], naive)
    t_fast = b_lints / STEPS
    print(f"{'naive per-item loop cascade-lints':<44}{t_naive * 1e3:>8.3f} ms/step "
          f"({NAIVE_STEPS} steps; same lists as batched: {'yes' if same else 'no'})")
    print(f"{'batched cascade-lints':<44}{t_fast * 1e3:>8.3f} ms/step")
    print(f"{'speed-up':<44}{t_naive / t_fast:>8.0f} x")
    print(f"{'  final regret (1 run, 10k steps)':<44}{sim.final_regret()[0]:>8.1f}")

    if show_all:
        print("other algorithms, 1 run:")
        for a in ALGORITHMS:
            if a in ("cascade-lints", "cascade-ucb1", "cascade-klucb"):
                continue
            s = BanditRuns(a, env, STEPS, runs=1, seed=0)
            s.advance()
            print(f"  {a:<42}{s.seconds:>8.3f} s   regret {s.final_regret()[0]:>9.1f}")
    return math.isfinite(b_lints)


def kveton_section(steps=100_000, runs=20, shape_steps=3_000):
    """CascadeKL-UCB against CascadeUCB1 on Kveton's setting, and pruned vs full by shape."""
    from ulr.bandits.envs import kveton_env
    from ulr.bandits.policies import CascadeKLUCB

    env = kveton_env(items=16, k=2)
    cpu = {}
    for algorithm in ("cascade-ucb1", "cascade-klucb"):
        sim = BanditRuns(algorithm, env, steps, runs=runs, seed=1)
        c0 = time.process_time()
        sim.advance()
        cpu[algorithm] = time.process_time() - c0
        print(f"kveton L=16 K=2, {runs} runs x {steps:,} steps  {algorithm:<14}"
              f"{cpu[algorithm]:>8.2f} s cpu")
    ratio = cpu["cascade-klucb"] / cpu["cascade-ucb1"]
    print(f"  cascade-klucb / cascade-ucb1: {ratio:.1f}x (target <= 2x: "
          f"{'OK' if ratio <= 2 else 'OVER'})")
    print(f"per-step CPU of the two KL-UCB paths ({shape_steps:,} steps; * = prune=None's pick):")
    for items, r in ((16, 1), (16, 2), (16, 5), (16, 20), (100, 20), (300, 20), (1000, 20),
                     (3000, 1), (3000, 5)):
        us = {}
        for prune in (True, False):
            sim = BanditRuns("cascade-klucb", kveton_env(items=items, k=2), shape_steps,
                             runs=r, seed=1)
            sim.policy.prune = prune
            c0 = time.process_time()
            sim.advance()
            us[prune] = (time.process_time() - c0) * 1e6 / shape_steps
        pick = CascadeKLUCB.prunes(items, r)
        print(f"  L={items:>5} runs={r:>3}   pruned {us[True]:>7.0f}{'*' if pick else ' '} "
              f"us/step   full {us[False]:>7.0f}{' ' if pick else '*'} us/step")


if __name__ == "__main__":
    if "--kveton" in sys.argv[1:]:
        kveton_section()
    elif "--klucb" in sys.argv[1:]:   # the CascadeKL-UCB lines only (a short run)
        print(f"setting: L={L}, K={K}, d={D}, {STEPS:,} steps; best of {REPEATS} runs")
        klucb_section(linear_env(items=L, k=K, features=D, seed=0))
        print(f"{'  load average (1 min) of the machine':<44}{os.getloadavg()[0]:>8.1f}")
    else:
        main("--all" in sys.argv[1:])
