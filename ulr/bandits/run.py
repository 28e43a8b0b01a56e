"""The Bandit lab's live run: idle → running ⇄ paused → done, with its timing.

A :class:`LabRun` is a view over a mapping that outlives it (a browser session's state):
every rerun of a page builds a new view over the same mapping and finds the run where
the last one left it. Its entries are ``PREFIX + name`` for ``lab``, ``status``,
``elapsed``, ``t0``, ``draw`` and ``lock``; nothing else is written.

Two threads may act on one run at once (a button's callback while a timer's tick is
inside :meth:`LabRun.tick`): the run's lock lets the chunk of simulation finish first,
and a caller that holds it (``with run.lock:``) sees one step for progress, chart and
table.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, MutableMapping

from ulr.bandits.simulate import BanditLab

STATES = ("idle", "running", "paused", "done")
BUDGET = 0.4     # least simulation seconds per tick: the simulation gets most of the time
DRAW_SHARE = 5   # ... and at least 5x the time the last redraw took


class LabRun:
    """The run of one session, kept in ``state`` under keys starting with ``prefix``.

    Parameters
    ----------
    state : mutable mapping
        Where the run lives between calls (a session's state; a dict in tests).
    prefix : str, keyword-only
        Start of every key the run writes (a page names its own).
    clock : callable, keyword-only
        Wall clock in seconds (``time.time``); the elapsed time counts running time only.
    """

    def __init__(self, state: MutableMapping, *, prefix: str = "",
                 clock: Callable[[], float] = time.time):
        self._state, self._prefix, self._clock = state, prefix, clock
        self.lock = state.setdefault(prefix + "lock", threading.RLock())

    def _get(self, name, default=None):
        return self._state.get(self._prefix + name, default)

    def _set(self, **values) -> None:
        for name, value in values.items():
            self._state[self._prefix + name] = value

    @property
    def lab(self) -> BanditLab | None:
        return self._get("lab")

    @property
    def status(self) -> str:
        """One of :data:`STATES`."""
        return self._get("status", "idle")

    def start(self, lab: BanditLab) -> None:
        """Run ``lab`` from now on, replacing any run of this session."""
        with self.lock:
            self._set(lab=lab, status="running", elapsed=0.0, t0=self._clock())

    def adopt(self, lab: BanditLab) -> None:
        """Take over ``lab`` as this session's run, stopped where it is: ``done`` at its
        horizon, else ``paused`` (a refreshed page finds its run again; Resume goes on)."""
        with self.lock:
            self._set(lab=lab, status="done" if lab.done else "paused", elapsed=0.0,
                      t0=self._clock())

    def pause(self) -> None:
        """Stop the clock and the simulation; nothing happens unless running."""
        with self.lock:
            if self.status == "running":
                self._set(elapsed=self.elapsed(), status="paused")

    def resume(self) -> None:
        """Start the clock again; nothing happens unless paused."""
        with self.lock:
            if self.status == "paused":
                self._set(t0=self._clock(), status="running")

    def reset(self) -> None:
        """Forget the run (back to idle); the lock stays, another thread may hold it."""
        with self.lock:
            for name in ("lab", "status", "elapsed", "t0"):
                self._state.pop(self._prefix + name, None)

    def elapsed(self) -> float:
        """Seconds the run has been running (paused time excluded)."""
        running = self._clock() - self._get("t0", 0.0) if self.status == "running" else 0.0
        return self._get("elapsed", 0.0) + running

    def budget(self) -> float:
        """Simulation seconds for the next tick: at least :data:`BUDGET`, and
        :data:`DRAW_SHARE` times the last redraw (so drawing never takes most of the time)."""
        return max(BUDGET, DRAW_SHARE * self._get("draw", 0.0))

    def drew(self, seconds: float) -> None:
        """Record how long the last redraw took (it sets the next :meth:`budget`)."""
        self._set(draw=float(seconds))

    def tick(self, seconds: float | None = None) -> bool:
        """If running, advance the simulation by about ``seconds`` (default
        :meth:`budget`); True when this tick finished it (the status is then ``done``)."""
        with self.lock:
            if self.status != "running":
                return False
            lab = self.lab
            lab.advance(self.budget() if seconds is None else seconds)
            if not lab.done:
                return False
            self._set(elapsed=self.elapsed(), status="done")
            return True
