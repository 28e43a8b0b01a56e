"""The Bandit lab's default demo in the browser, beside the same simulation on the CLI.

Issue 25's target: from pressing Start to "done" in the browser within 1.5x the time the
CLI takes for the same three simulations (Kveton setting L = 16, K = 2, p = 0.2,
delta = 0.15; cascade-ucb1, cascade-klucb and cascade-ts; 10 runs x 20,000 steps).

Run: python benchmarks/bench_bandit_lab.py [--steps 20000] [--runs 10] [--repeats 2]

Prints, for each repeat:
- browser: seconds from the click on Start until the progress line reads "done" (a fresh
  session on a served app, headless Chromium at /usr/bin/chromium), and the simulation
  seconds the page itself reports;
- cli: the three ``python -m ulr bandit`` processes one after the other (what a user
  waits for at a terminal), and the simulation alone in this process (no imports);
and the ratio browser / cli. Load average is printed: on a shared machine read the best.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.soak import IDLE_JS, serve  # noqa: E402

ALGORITHMS = ("cascade-ucb1", "cascade-klucb", "cascade-ts")
SETTING = dict(items=16, k=2, p=0.2, delta=0.15)


def browser_demo(browser, url: str, steps: int, runs: int) -> tuple[float, float]:
    """Seconds from Start to done, and the simulation seconds the page reports."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.goto(f"{url}/bandit_lab?steps={steps}&runs={runs}", wait_until="commit")
    pg.wait_for_function(IDLE_JS, timeout=180_000)
    start = pg.get_by_role("button", name="Start")
    start.wait_for()
    t = time.perf_counter()
    start.click()
    done = pg.get_by_text(re.compile(r"^done: step"))
    done.wait_for(timeout=600_000)
    wall = time.perf_counter() - t
    text = done.inner_text()
    ctx.close()
    sim = re.search(r"simulation ([0-9.]+) s", text)
    return wall, float(sim.group(1)) if sim else float("nan")


def cli_demo(steps: int, runs: int) -> float:
    """Wall seconds of the three CLI processes, one after the other."""
    t = time.perf_counter()
    for algorithm in ALGORITHMS:
        subprocess.run([sys.executable, "-m", "ulr", "bandit", "--algorithm", algorithm,
                        "--env", "kveton", "--items", "16", "--positions", "2", "--p", "0.2",
                        "--delta", "0.15", "--steps", str(steps), "--runs", str(runs),
                        "--seed", "0", "--json"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def in_process(steps: int, runs: int) -> float:
    from ulr.bandits.envs import make_env
    from ulr.bandits.simulate import BanditLab
    lab = BanditLab(make_env("kveton", **SETTING, seed=0), ALGORITHMS, steps, runs=runs, seed=0)
    t = time.perf_counter()
    while not lab.done:
        lab.advance(10.0)
    return time.perf_counter() - t


def main(steps: int, runs: int, repeats: int) -> None:
    from playwright.sync_api import sync_playwright
    tmp = Path(tempfile.mkdtemp(prefix="ulr_bench_lab_"))
    proc, url = serve(str(tmp / "lab.duckdb"))
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                        args=["--no-sandbox", "--disable-gpu",
                                              "--disable-dev-shm-usage"])
            for _ in range(repeats):
                wall, sim = browser_demo(browser, url, steps, runs)
                rows.append((wall, sim, cli_demo(steps, runs), in_process(steps, runs)))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"Bandit lab default demo: kveton L=16 K=2, {', '.join(ALGORITHMS)}, {runs} runs x "
          f"{steps:,} steps (load average {os.getloadavg()[0]:.1f})")
    for i, (wall, sim, cli, inproc) in enumerate(rows, 1):
        print(f"  repeat {i}: browser {wall:6.2f} s (page's simulation {sim:5.1f} s)   "
              f"cli {cli:6.2f} s (simulation alone {inproc:5.2f} s)   "
              f"browser/cli {wall / cli:4.2f}x")
    best = min(w / c for w, _, c, _ in rows)
    print(f"best ratio {best:.2f}x (target <= 1.5x: {'OK' if best <= 1.5 else 'OVER'})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    main(a.steps, a.runs, a.repeats)
