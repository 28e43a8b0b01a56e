"""The Bandit lab's run (ulr.bandits.run.LabRun): its states, its clock, reruns and threads.

The clock is a list the test moves by hand, so no test waits on a timer.
"""

import threading

import numpy as np

from ulr.bandits.envs import make_env
from ulr.bandits.run import BUDGET, DRAW_SHARE, LabRun
from ulr.bandits.simulate import BanditLab


def small_lab(seed=0, steps=300):
    env = make_env("kveton", items=6, positions=2, p=0.2, delta=0.15, seed=0)
    return BanditLab(env, ("cascade-ucb1", "cascade-ts"), steps, runs=2, seed=seed)


class Clock:
    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


def finish(run, limit=10_000):
    """Tick until the run is done; the number of ticks (bounded: a stuck run fails)."""
    for n in range(1, limit):
        if run.tick(0.001):
            return n
    raise AssertionError(f"not done after {limit} ticks: {run.status}, step {run.lab.t}")


def test_idle_until_started_and_the_controls_do_nothing_there():
    state = {}
    run = LabRun(state)
    assert (run.status, run.lab, run.elapsed()) == ("idle", None, 0.0)
    run.pause()
    run.resume()
    assert run.tick() is False and run.status == "idle"
    assert set(state) == {"lock"}


def test_start_pause_resume_done_with_running_time_only():
    clock, state = Clock(), {}
    run = LabRun(state, clock=clock)
    lab = small_lab()
    run.start(lab)
    assert run.status == "running" and run.lab is lab and lab.t == 0
    assert run.tick(0.001) is False and 0 < lab.t < lab.steps
    clock.now += 3.0
    assert run.elapsed() == 3.0
    run.pause()
    assert run.status == "paused" and run.elapsed() == 3.0
    t = lab.t
    clock.now += 50.0                        # paused time does not count...
    assert run.tick(1.0) is False and lab.t == t and run.elapsed() == 3.0  # ...nor simulate
    run.pause()                              # a second pause changes nothing
    assert run.status == "paused" and run.elapsed() == 3.0
    run.resume()
    clock.now += 2.0
    assert run.status == "running" and run.elapsed() == 5.0
    finish(run)
    assert run.status == "done" and lab.done and lab.t == lab.steps
    clock.now += 7.0
    assert run.elapsed() == 5.0              # the clock stopped at the end
    run.pause()
    run.resume()
    assert run.status == "done" and run.tick() is False
    run.reset()
    assert (run.status, run.lab) == ("idle", None)
    assert set(state) == {"lock"}


def test_the_budget_follows_the_last_redraw():
    run = LabRun({})
    assert run.budget() == BUDGET
    run.drew(1.0)
    assert run.budget() == DRAW_SHARE * 1.0
    run.drew(0.0)
    assert run.budget() == BUDGET


def test_a_rerun_mid_run_finds_the_run_where_it_was():
    clock, state = Clock(), {}
    first = LabRun(state, clock=clock, prefix="x_")
    first.start(small_lab())
    first.tick(0.001)
    t = first.lab.t
    clock.now += 1.5
    again = LabRun(state, clock=clock, prefix="x_")   # what the page's next run builds
    assert again.lab is first.lab and again.status == "running" and again.lock is first.lock
    assert again.elapsed() == 1.5 and again.lab.t == t
    again.tick(0.001)
    assert first.lab.t > t
    first.pause()                                       # an old view's callback still acts
    assert again.status == "paused"
    assert all(k.startswith("x_") for k in state)


def test_two_sessions_at_once_do_not_share_anything():
    states = [{}, {}]
    runs = [LabRun(s) for s in states]
    for r in runs:
        r.start(small_lab(seed=1, steps=2000))
    both = threading.Barrier(2)
    errors = []

    def drive(run):
        try:
            both.wait(timeout=30)
            finish(run)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=drive, args=(r,)) for r in runs]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not errors and all(r.status == "done" for r in runs)
    assert runs[0].lock is not runs[1].lock and runs[0].lab is not runs[1].lab
    a, b = (r.lab.results()["final_regret_mean"].to_numpy() for r in runs)
    # same settings, same seed: same result (to rounding: chunk sizes follow the timing)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    runs[0].reset()
    assert runs[1].status == "done"


class BlockingLab:
    """A lab whose chunk waits until the test lets it finish."""
    steps, done, t = 10, False, 0

    def __init__(self):
        self.entered, self.release = threading.Event(), threading.Event()

    def advance(self, seconds):
        self.entered.set()
        assert self.release.wait(timeout=60)
        self.t += 1


def test_a_pause_during_a_tick_waits_for_the_chunk():
    run = LabRun({})
    lab = BlockingLab()
    run.start(lab)
    ticking = threading.Thread(target=run.tick)
    ticking.start()
    assert lab.entered.wait(timeout=60)
    pausing = threading.Thread(target=run.pause)
    pausing.start()
    pausing.join(timeout=0.2)    # it cannot get the lock while the chunk runs
    assert pausing.is_alive() and run.status == "running"
    lab.release.set()
    ticking.join(timeout=60)
    pausing.join(timeout=60)
    assert not pausing.is_alive() and run.status == "paused" and lab.t == 1
