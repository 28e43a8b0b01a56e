"""Policies on per-item counts: CascadeUCB1, CascadeKL-UCB and CascadeTS."""

from __future__ import annotations

import math

import numpy as np

from ulr.bandits.policies.base import _UNSEEN, Policy
from ulr.bandits.policies.klucb_solver import _KLUCBGroups, klucb_index, klucb_rate
from ulr.errors import UlrError


# --------------------------------------------------------------------------- per-item counts
class _CountingPolicy(Policy):
    """Per-item observation counts ``T`` and empirical means ``w_hat``, shape (R, L).

    The four statistics live in one (4, R * L) array (``pulls``, ``wins``,
    ``mean`` and ``1 / sqrt(pulls)``) so an update is one gather and one scatter.
    """

    needs_init = True

    def __init__(self, **kw):
        super().__init__(**kw)
        self._stats = np.zeros((4, self.runs * self.n_items))
        self._stats[3] = _UNSEEN
        shape = (self.runs, self.n_items)
        self.pulls, self.wins, self.mean, self._isq = (a.reshape(shape) for a in self._stats)
        self._buf = np.empty(shape)

    def initialize(self, attracted):
        self.pulls[:] = 1.0
        self.wins[:] = attracted
        self.mean[:] = attracted
        self._isq[:] = 1.0

    def update(self, lists, observed, clicks):
        idx = (lists if self.runs == 1 else lists + self._offsets)[observed]  # distinct
        st = self._stats[:, idx]
        pulls, wins, mean, isq = st
        pulls += 1.0
        wins += clicks[observed]
        np.divide(wins, pulls, out=mean)
        np.sqrt(pulls, out=isq)
        np.divide(1.0, isq, out=isq)
        self._stats[:, idx] = st


class CascadeUCB1(_CountingPolicy):
    """CascadeUCB1 (Kveton et al. 2015): ``U_t(e) = w_hat(e) + sqrt(1.5 log t / T(e))``."""

    name = "cascade-ucb1"

    def scores(self, t, items=None):
        c = math.sqrt(1.5 * math.log(t))
        if items is not None:
            return self.mean[:, items] + c * self._isq[:, items]
        np.multiply(self._isq, c, out=self._buf)
        np.add(self._buf, self.mean, out=self._buf)
        return self._buf


class CascadeKLUCB(_CountingPolicy):
    """CascadeKL-UCB (Kveton et al. 2015).

    ``U_t(e) = max{q in [w_hat(e), 1] : T(e) KL(w_hat(e), q) <= log t + 3 log log t}``,
    the ``K`` largest indices shown best first, ties to the lower item index.

    Parameters
    ----------
    path : {"full", "groups", "bounds"} or None, default None
        How :meth:`select` finds the lists; all three give the lists of the full
        computation. ``"full"``: every index every step (vectorized
        :func:`klucb_index`, then the top ``K``). ``"groups"``: per run in Python,
        items grouped by their ``(wins, pulls)`` pair (one index per group), each
        pair carrying an upper bound of its index until the end of a time window
        (``t * WINDOW + 1``) and a lower bound (its last exact solve), and only
        pairs whose bounds leave their rank in the top ``K`` open solved again
        (the argument is in the Notes of :class:`_KLUCBGroups`). ``"bounds"``:
        the same idea per item, all runs in one numba-compiled loop
        (:mod:`ulr.bandits.policies.klucb_jit`), from step ``bounds_from``
        (:meth:`bounds_start`) on, when numba is first imported; before it, the
        path of :meth:`path_before_bounds`. None chooses by shape
        (:meth:`choose_path`); ``benchmarks/bench_bandits.py --kveton`` prints
        the per-step cost of each path on several shapes.
    **kw
        ``n_items``, ``k``, ``runs``, ``seed`` of :class:`Policy`.

    Notes
    -----
    :meth:`scores` and :meth:`select` with ``items`` (replay) always solve every
    index asked for, as do the first two steps (rate 0: the index is the mean).
    The per-item statistics (``pulls``, ``wins``, ``mean``) are kept up to date
    on every path.
    """

    name = "cascade-klucb"
    PATHS = ("full", "groups", "bounds")
    WINDOW = 1.05  # a bound window ends at t * WINDOW (+ 1): ~1 refresh per 20 t steps

    # "groups" costs Python time per run and per step, so it wins with many items (where
    # the other paths touch all L items per step) and is within ~20 us/step of "bounds" for
    # one run (too little to repay numba's start); "bounds" wins elsewhere, "full" only
    # where numba is missing (benchmarks/bench_bandits.py --kveton prints the figures).
    GROUPS_MAX_RUNS = 2
    GROUPS_MIN_ITEMS = 250
    # CPU seconds: numba's start, and what "groups" and "full" cost per step beyond "bounds"
    # (benchmarks/bench_bandits.py --kveton prints all of them)
    NUMBA_START = 0.3
    GROUPS_RUN = 20e-6
    FULL_STEP, FULL_CELL = 40e-6, 0.05e-6

    def __init__(self, *, path: str | None = None, **kw):
        super().__init__(**kw)
        if path is not None and path not in self.PATHS:
            raise UlrError(f"Unknown CascadeKL-UCB path {path!r}; choose one of "
                           f"{', '.join(self.PATHS)}.")
        self.path = self.choose_path(self.n_items, self.runs) if path is None else path
        self._groups: list | None = None   # one _KLUCBGroups per run, built on first use
        self._window_end = 0
        self._stat_rows = tuple(self._stats)   # pulls, wins, mean, 1/sqrt(pulls) (one run)
        self._bounds: tuple | None = None   # state and scratch of the "bounds" path
        self._bound_solves = 0
        self.bounds_from = self.bounds_start(self.n_items, self.runs)

    def initialize(self, attracted):
        super().initialize(attracted)
        self._groups, self._window_end, self._bounds = None, 0, None

    @classmethod
    def choose_path(cls, n_items: int, runs: int) -> str:
        """The path ``path=None`` takes for ``runs`` runs of ``n_items`` items."""
        if n_items >= cls.GROUPS_MIN_ITEMS or runs == 1:
            return "groups"
        if _has_numba():
            return "bounds"
        return "groups" if runs <= cls.GROUPS_MAX_RUNS else "full"

    @classmethod
    def path_before_bounds(cls, runs: int) -> str:
        """The path ``"bounds"`` takes until its compiled loop starts (:meth:`bounds_start`)."""
        return "groups" if runs <= cls.GROUPS_MAX_RUNS else "full"

    @classmethod
    def bounds_start(cls, n_items: int, runs: int) -> int:
        """The step from which the ``"bounds"`` path runs compiled.

        Importing numba and loading the compiled loop costs about
        ``NUMBA_START`` seconds of CPU once per process. Before it, the path
        runs :meth:`path_before_bounds`, which costs about ``GROUPS_RUN * runs``
        (groups) or ``FULL_STEP + FULL_CELL * runs * n_items`` (full) seconds
        per step more than the compiled loop. Starting once that excess adds
        up to the start's cost (ski rental) keeps a short run from paying it
        and a long one within about twice the cheaper of the two.
        """
        if cls.path_before_bounds(runs) == "groups":
            saving = cls.GROUPS_RUN * runs
        else:
            saving = cls.FULL_STEP + cls.FULL_CELL * runs * n_items
        return max(3, int(cls.NUMBA_START / saving))

    @property
    def solves(self) -> int:
        """Exact index solves so far outside the window refreshes, over all runs."""
        return sum(g.solves for g in self._groups or ()) + self._bound_solves

    @property
    def refresh_solves(self) -> int:
        """Pair indices solved by the window refreshes so far, over all runs."""
        return sum(g.refresh_solves for g in self._groups or ())

    def scores(self, t, items=None):
        rate = klucb_rate(t)
        if items is not None:
            return klucb_index(self.mean[:, items], self.pulls[:, items], rate)
        return klucb_index(self.mean, self.pulls, rate)

    def select(self, t, items=None):
        rate = klucb_rate(t)
        path = self.path
        if path == "bounds":
            if t >= self.bounds_from and rate > 0 and items is None:
                try:
                    from ulr.bandits.policies.klucb_jit import select_lists
                except (ImportError, RuntimeError):   # no numba, or nowhere to cache
                    self.path = self.path_before_bounds(self.runs)
                else:
                    self._groups = None   # update() stops moving items between groups
                    return self._select_bounds(select_lists, rate)
            path = self.path_before_bounds(self.runs)
        if items is not None or path == "full" or rate <= 0:
            return super().select(t, items)
        if self._groups is None:
            self._groups = [_KLUCBGroups([int(v) for v in self.wins[r].tolist()],
                                         [int(v) for v in self.pulls[r].tolist()])
                            for r in range(self.runs)]
        if t > self._window_end:
            self._window_end = int(t * self.WINDOW) + 1
            rate_end = klucb_rate(self._window_end)
            for g in self._groups:
                g.refresh(rate, rate_end)
        if self.runs == 1:
            return np.array([self._groups[0].select(rate, self.k)], dtype=np.intp)
        return np.array([g.select(rate, self.k) for g in self._groups], dtype=np.intp)

    def _select_bounds(self, select_lists, rate: float) -> np.ndarray:
        """The lists by :func:`ulr.bandits.policies.klucb_jit.select_lists` (compiled, all runs)."""
        if self._bounds is None:
            self._bounds = (np.empty((4, self.runs, self.n_items)),
                            np.empty((self.runs, self.k), dtype=np.intp),
                            np.empty(self.n_items, dtype=np.intp),
                            np.empty(self.n_items), np.empty(self.n_items), [math.inf])
        st, out, cand, lo, hi, last = self._bounds
        if rate < last[0]:   # first call, or t went back: the lower bounds do not hold
            st[3] = -1.0     # pulls no item has: every item is solved afresh
        last[0] = rate
        self._bound_solves += select_lists(self.wins, self.pulls, rate, st, out, cand, lo, hi)
        return out.copy()

    def update(self, lists, observed, clicks):
        groups = self._groups
        if self.runs > 1 or groups is None:
            super().update(lists, observed, clicks)
            if groups is None:
                return
            for g, items, obs, clk in zip(groups, lists.tolist(), observed.tolist(),
                                          clicks.tolist()):
                for e, o, c in zip(items, obs, clk):
                    if o:
                        g.move(e, c)
            return
        # one run: the few observed items in plain floats, counts from the groups
        move, (pulls, wins, mean, isq) = groups[0].move, self._stat_rows
        sqrt = math.sqrt
        for e, o, c in zip(lists.tolist()[0], observed.tolist()[0], clicks.tolist()[0]):
            if o:
                w, n = move(e, c)
                pulls[e], wins[e], mean[e], isq[e] = n, w, w / n, 1.0 / sqrt(n)


def _has_numba() -> bool:
    """Whether numba can be imported (checked without importing it)."""
    import importlib.util
    return importlib.util.find_spec("numba") is not None


class CascadeTS(Policy):
    """CascadeTS: Beta(alpha, beta) posterior per item, one sample per item per step.

    Prior Beta(1, 1); an observed item adds 1 to ``alpha`` if it was clicked and
    to ``beta`` if it was examined and skipped.
    """

    name = "cascade-ts"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.alpha = np.ones((self.runs, self.n_items))
        self.beta = np.ones((self.runs, self.n_items))
        self._af, self._bf = self.alpha.reshape(-1), self.beta.reshape(-1)

    def scores(self, t, items=None):
        if items is not None:
            return self.rng.beta(self.alpha[:, items], self.beta[:, items])
        return self.rng.beta(self.alpha, self.beta)

    def update(self, lists, observed, clicks):
        idx = (lists + self._offsets)[observed]
        c = clicks[observed]
        self._af[idx] += c
        self._bf[idx] += ~c
