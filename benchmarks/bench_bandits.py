"""Bandit lab speed: L=3000 items, K=4, d=10 tag features, 10,000 steps.

Targets (issue 5): CascadeLinTS <= 0.5 s and CascadeUCB1 <= 0.3 s for one run;
20 runs of CascadeLinTS batched <= 3 s. Issue 15: CascadeKL-UCB <= 0.3 s for one run,
choosing the same lists as the full computation (every index every step, ``path="full"``),
checked over all 10,000 steps of one run for the other two paths. Also times a straightforward per-step,
per-item-loop CascadeLinTS for a few hundred steps and prints the speed-up.

Issue 25: on Kveton et al.'s setting (L=16, K=2, 20 runs x 100,000 steps) CascadeKL-UCB
within 2x CascadeUCB1's CPU time; ``--kveton`` prints both (in this process and as whole
``python -m ulr bandit`` processes), numba's start cost, and the per-step cost of the three
KL-UCB paths on several shapes (what ``path=None`` chooses by). When
:mod:`ulr.bandits.policies.klucb_jit` was written, compiling it into an empty cache took
about a second; later processes load it from ``__pycache__``.

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


def klucb_lists(env, steps, path, seed=0):
    """The lists of every step of one CascadeKL-UCB run on ``path``, and its CPU time."""
    sim = BanditRuns("cascade-klucb", env, steps, runs=1, seed=seed)
    sim.policy.path = path
    sim.policy.bounds_from = 0
    lists = []
    select = sim.policy.select
    sim.policy.select = lambda t, items=None: lists.append(select(t, items)) or lists[-1]
    c0 = time.process_time()
    sim.advance()
    return np.array(lists), time.process_time() - c0


def klucb_section(env):
    """CascadeKL-UCB (issue 15): time, index solves, and the lists against the full computation."""
    b_kl, m_kl, c_kl, kl = timed(env, "cascade-klucb", 1)
    line(f"cascade-klucb, 1 run ({kl.policy.path})", b_kl, m_kl, c_kl, 0.3)
    solved = (kl.policy.solves + kl.policy.refresh_solves) / STEPS
    print(f"{'  index solves per step (mean)':<44}{solved:>8.1f} of {L} items "
          f"({kl.policy.solves:,} in select, {kl.policy.refresh_solves:,} in window refreshes)")
    full, c_full = klucb_lists(env, STEPS, "full")
    same_all = True
    for path in ("groups", "bounds"):
        got, c_path = klucb_lists(env, STEPS, path)
        same = np.array_equal(got, full)
        same_all &= same
        print(f"{'  path ' + path + ', 1 run':<44}{c_path:>8.3f} s cpu; same lists as 'full' "
              f"({c_full:.3f} s cpu) in all {STEPS:,} steps: {'yes' if same else 'NO'}")
    return same_all


def line(label, best, median, cpu, target=None):
    verdict = "" if target is None else f"  target <= {target:.1f} s: " + (
        "OK" if best <= target else "OVER")
    print(f"{label:<36}{best:>7.3f} s wall (median {median:.3f}, cpu {cpu:.3f} s){verdict}")


def main(show_all=False):
    env = linear_env(items=L, positions=K, n_features=D, seed=0)
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


KVETON_CLI = ("--env", "kveton", "--items", "16", "--positions", "2", "--runs", "20",
              "--steps", "100000", "--seed", "1")


def cli_seconds(algorithm, env=None):
    """Wall and CPU seconds of a whole ``python -m ulr bandit`` process on Kveton's setting
    (imports, numba's start and any compilation included)."""
    import resource
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ulr", "bandit", "--algorithm", algorithm,
                    *KVETON_CLI], check=True, stdout=subprocess.DEVNULL,
                   cwd=Path(__file__).resolve().parent.parent, env=env)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def numba_start_seconds():
    """CPU seconds a fresh process spends importing the compiled KL-UCB path and making
    its first call: with numba's cache on disk, and compiling into an empty cache."""
    import subprocess
    import tempfile

    code = ("import time, numpy as np, ulr.bandits.policies; c = time.process_time(); "
            "from ulr.bandits.policies.klucb_jit import select_lists; "
            "st = np.full((4, 1, 3), -1.0); "
            "select_lists(np.zeros((1, 3)), np.ones((1, 3)), 2.0, st, "
            "np.empty((1, 1), dtype=np.intp), np.empty(3, dtype=np.intp), np.empty(3), "
            "np.empty(3)); print(time.process_time() - c)")
    root = Path(__file__).resolve().parent.parent
    out = {}
    with tempfile.TemporaryDirectory() as cold:
        for label, env in (("cached", None), ("compiling", {**os.environ,
                                                            "NUMBA_CACHE_DIR": cold})):
            res = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, check=True,
                                 capture_output=True, text=True)
            out[label] = float(res.stdout.split()[-1])
    return out


def path_us_per_step(items, runs, path, steps):
    """CPU microseconds per step of one CascadeKL-UCB path (the compiled one warmed up)."""
    from ulr.bandits.envs import kveton_env

    sim = BanditRuns("cascade-klucb", kveton_env(items=items, positions=2), steps, runs=runs, seed=1)
    sim.policy.path = path
    sim.policy.bounds_from = 0
    if path == "bounds":
        sim.advance(3)    # numba import and cache load / compilation, not per-step cost
    c0 = time.process_time()
    done = sim.advance()
    return (time.process_time() - c0) * 1e6 / done


def kveton_section(steps=100_000, runs=20, shape_steps=3_000):
    """CascadeKL-UCB against CascadeUCB1 on Kveton's setting, and the paths by shape."""
    from ulr.bandits.envs import kveton_env
    from ulr.bandits.policies import CascadeKLUCB

    env = kveton_env(items=16, positions=2)
    cpu = {}
    for algorithm in ("cascade-ucb1", "cascade-klucb"):
        sim = BanditRuns(algorithm, env, steps, runs=runs, seed=1)
        c0 = time.process_time()
        sim.advance()
        cpu[algorithm] = time.process_time() - c0
        path = f" (path {sim.policy.path})" if algorithm == "cascade-klucb" else ""
        print(f"kveton L=16 K=2, {runs} runs x {steps:,} steps  {algorithm:<14}"
              f"{cpu[algorithm]:>8.2f} s cpu, {sim.seconds:.2f} s wall{path}")
    ratio = cpu["cascade-klucb"] / cpu["cascade-ucb1"]
    print(f"  cascade-klucb / cascade-ucb1: {ratio:.2f}x cpu (target <= 2x: "
          f"{'OK' if ratio <= 2 else 'OVER'})")
    whole = {a: cli_seconds(a) for a in ("cascade-ucb1", "cascade-klucb")}
    for a, (wall, c) in whole.items():
        print(f"  whole process: python -m ulr bandit --algorithm {a:<14}{c:>6.2f} s cpu, "
              f"{wall:.2f} s wall")
    print(f"  whole process cascade-klucb / cascade-ucb1: "
          f"{whole['cascade-klucb'][1] / whole['cascade-ucb1'][1]:.2f}x cpu")
    start = numba_start_seconds()
    print(f"  numba start of the compiled path: {start['cached']:.2f} s cpu with its cache, "
          f"{start['compiling']:.2f} s cpu compiling")
    print(f"per-step CPU of the KL-UCB paths ({shape_steps:,} steps, us/step; * = path=None's "
          f"pick; 'bounds' runs 'groups' (1-2 runs) or 'full' until its compiled loop starts, "
          f"timed here from step 3):")
    for items, r in ((16, 1), (16, 2), (16, 5), (16, 20), (16, 100), (100, 1), (100, 2),
                     (100, 20), (200, 20), (300, 20), (1000, 20), (3000, 1), (3000, 5)):
        pick = CascadeKLUCB.choose_path(items, r)
        cells = "  ".join(f"{p} {path_us_per_step(items, r, p, shape_steps):>6.0f}"
                          f"{'*' if p == pick else ' '}" for p in CascadeKLUCB.PATHS)
        start_at = (f"compiled from step {CascadeKLUCB.bounds_start(items, r):,}"
                    if pick == "bounds" else "")
        print(f"  L={items:>5} runs={r:>3}   {cells}   {start_at}")


if __name__ == "__main__":
    if "--kveton" in sys.argv[1:]:
        kveton_section()
    elif "--klucb" in sys.argv[1:]:   # the CascadeKL-UCB lines only (a short run)
        print(f"setting: L={L}, K={K}, d={D}, {STEPS:,} steps; best of {REPEATS} runs")
        klucb_section(linear_env(items=L, positions=K, n_features=D, seed=0))
        print(f"{'  load average (1 min) of the machine':<44}{os.getloadavg()[0]:>8.1f}")
    else:
        main("--all" in sys.argv[1:])
