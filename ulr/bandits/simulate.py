"""Batched, chunked simulation of cascading bandits.

:class:`BanditRuns` (R runs of one algorithm; the logged-bandit *world* of the
off-policy package is a different concept, :class:`ulr.ope.simulate.BanditSimulation`)
holds every array of ``R`` independent runs of one
algorithm on one environment and advances them ``n`` steps at a time, so a
page can run a chunk per ``st.fragment`` tick and redraw the regret so far.
:class:`BanditLab` does the same for several algorithms on one environment,
keeping them in lockstep.

Regret is the *expected* regret: at step ``t`` the list ``A_t`` costs
``f(A*, w) - f(A_t, w)`` with ``f(A, w) = 1 - prod_k (1 - w(a_k))``, computed
from the true attraction probabilities ``w`` rather than from the realised
clicks (same expectation, much less noise). Cumulative regret sums it over
steps.

Randomness: ``seed`` feeds a ``SeedSequence`` that is split into the
environment's stream (free initial observations, then one uniform per run,
step and position for the attraction draws) and the algorithm's stream
(Thompson samples). Each stream is consumed in the same order whatever the
chunk sizes, so a run is reproducible and independent of how it was chunked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ulr import validate
from ulr.bandits.envs import CascadeEnv
from ulr.bandits.policies import ALGORITHMS, Policy, cascade_feedback, make_policy
from ulr.errors import UlrError
from ulr.result import Result
from ulr.verdict import LEVEL, Verdict

MAX_CELLS = 25_000_000  # runs * steps of stored cumulative regret (200 MB)
MAX_CHUNK = 20_000      # steps per inner chunk (bounds the pre-drawn uniforms) ...
CHUNK_CELLS = 2_000_000  # ... and their size: steps * runs * k per chunk


@dataclass(eq=False)
class BanditRuns(Result):
    """``runs`` independent runs of ``algorithm`` on ``env`` for up to ``steps`` steps.

    Parameters
    ----------
    algorithm : str
        One of :data:`ulr.bandits.policies.ALGORITHMS`.
    env : CascadeEnv
        The environment (attraction probabilities ``w``, list length ``k``).
    steps : int
        Horizon ``n``.
    runs : int
        ``R``, runs simulated at once along the batch axis.
    seed : int
        Seed of all randomness.
    options : dict
        Algorithm options (``sigma``, ``c`` for the linear algorithms).
    level : float
        Two-sided level of the verdict's interval (default 0.95).

    Attributes
    ----------
    verdict : Verdict
        How precisely the runs pin the mean final regret so far (:meth:`_verdict`): set
        when the runs are built and again whenever :meth:`advance` moves them on.
    t : int
        Steps simulated so far.
    seconds : float
        Wall time spent simulating (policy, feedback and regret).
    cum_regret : ndarray of shape (runs, steps)
        Cumulative expected regret; columns ``[0, t)`` are filled.
    policy : Policy
        The batched algorithm state.
    """

    algorithm: str
    env: CascadeEnv
    steps: int
    runs: int = 1
    seed: int = 0
    options: dict = field(default_factory=dict)
    level: float = LEVEL
    t: int = field(init=False, default=0)
    seconds: float = field(init=False, default=0.0)
    cum_regret: np.ndarray = field(init=False, repr=False)
    policy: Policy = field(init=False, repr=False)
    verdict: Verdict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            raise UlrError(f"Unknown algorithm {self.algorithm!r}; choose one of "
                           f"{', '.join(ALGORITHMS)}.")
        if not isinstance(self.env, CascadeEnv):
            raise UlrError("env must be a CascadeEnv (see ulr.bandits.envs).")
        for name, v in (("steps", self.steps), ("runs", self.runs)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise UlrError(f"The number of {name} must be a whole number >= 1, got {v!r}.")
        self.steps, self.runs = int(self.steps), int(self.runs)
        if self.steps * self.runs > MAX_CELLS:
            raise UlrError(f"runs x steps = {self.steps * self.runs:,} is too large; keep it "
                           f"under {MAX_CELLS:,}.")
        env_ss, policy_ss = np.random.SeedSequence(int(self.seed)).spawn(2)
        self._env_rng = np.random.default_rng(env_ss)
        self.policy = make_policy(self.algorithm, n_items=self.env.n_items, positions=self.env.k,
                                  runs=self.runs, seed=np.random.default_rng(policy_ss),
                                  features=self.env.features, **self.options)
        if self.policy.needs_init:  # one free observation of every item (Kveton et al.)
            self.policy.initialize(self._env_rng.random((self.runs, self.env.n_items))
                                   < self.env.w)
        self.cum_regret = np.zeros((self.runs, self.steps))
        self.verdict = self._verdict()  # a live run: the verdict of the steps so far

    # ------------------------------------------------------------------ running
    @property
    def done(self) -> bool:
        return self.t >= self.steps

    @property
    def progress(self) -> float:
        """Fraction of the horizon simulated."""
        return self.t / self.steps

    @property
    def seconds_per_step(self) -> float | None:
        return self.seconds / self.t if self.t else None

    def advance(self, n_steps: int | None = None) -> int:
        """Simulate ``n_steps`` more steps (default: to the horizon); returns the count.
        The ``verdict`` is then the one of the runs so far."""
        todo = self.steps - self.t if n_steps is None else min(int(n_steps), self.steps - self.t)
        done = 0
        per_chunk = max(1, min(MAX_CHUNK, CHUNK_CELLS // (self.runs * self.env.k)))
        while done < todo:
            m = min(per_chunk, todo - done)
            self._chunk(m)
            done += m
        if done:
            self.verdict = self._verdict()  # a live run: the verdict of the steps so far
        return done

    def _chunk(self, n: int) -> None:
        tic = time.perf_counter()
        pol, w, k, r = self.policy, self.env.w, self.env.k, self.runs
        select, update = pol.select, pol.update
        u = self._env_rng.random((n, r, k))
        lists = np.empty((n, r, k), dtype=np.intp)
        t0 = self.t
        for i in range(n):
            a = select(t0 + i + 1)
            lists[i] = a
            observed, clicks = cascade_feedback(u[i] < w[a])
            update(a, observed, clicks)
        regret = np.maximum(self.env.optimal_reward
                            - (1.0 - np.prod(1.0 - w[lists], axis=2)), 0.0)  # (n, R)
        cum = np.cumsum(regret, axis=0).T
        if t0:
            cum += self.cum_regret[:, t0 - 1:t0]
        self.cum_regret[:, t0:t0 + n] = cum
        self.t = t0 + n
        self.seconds += time.perf_counter() - tic

    # ------------------------------------------------------------------ reporting
    def final_regret(self) -> np.ndarray:
        """Cumulative regret of each run at the current step, shape (runs,)."""
        return self.cum_regret[:, self.t - 1].copy() if self.t else np.zeros(self.runs)

    def curve(self, *, points: int = 400, band=(0.1, 0.9)) -> dict:
        """Cumulative regret so far on at most ``points`` steps.

        Returns ``{"t", "mean", "lower", "upper"}`` arrays: the mean over runs
        and the ``band`` quantiles over runs (10% and 90% by default).
        """
        if self.t == 0:
            e = np.zeros(0)
            return {"t": e.astype(int), "mean": e, "lower": e, "upper": e}
        idx = np.unique(np.linspace(0, self.t - 1, max(2, int(points))).round().astype(int))
        c = self.cum_regret[:, idx]
        lower, upper = np.quantile(c, band, axis=0)
        return {"t": idx + 1, "mean": c.mean(axis=0), "lower": lower, "upper": upper}

    def _verdict(self) -> Verdict:
        """How precisely the runs pin the mean final regret (docs/verdicts.md, "Bandits").

        Student-t interval over runs at :attr:`level`; a single run has none
        (``inconclusive``).
        """
        from ulr import verdict as V
        level = self.level
        final = self.final_regret()
        m, lo, hi, se = V.paired_t_interval(final, level)
        basis = f"mean cumulative regret after {self.t:,} steps over {self.runs} runs"
        if self.runs < 2 or not np.isfinite(lo):
            return V.Verdict("inconclusive", f"{self.algorithm}: cumulative regret {m:.0f} "
                             f"after {self.t:,} steps in a single run, with no interval.",
                             basis, reasons=(V.Reason("single_run", "One run: the spread over "
                                                      "seeds is unknown."),),
                             to_settle="simulate several runs", estimate={"mean": m})
        rel = (hi - lo) / 2 / abs(m) if m else float("inf")
        more = V.more_for_precision(self.runs, rel)
        return V.Verdict(V.precision_level(rel),
                         f"{self.algorithm}: cumulative regret "
                         f"{V.fmt_interval(m, lo, hi, level=level)} after {self.t:,} steps "
                         f"({level:.0%} interval over {self.runs} runs).", basis,
                         to_settle=(f"about {V.about(more)} more runs would pin it to "
                                    f"±{V.PRECISE:.0%}" if more else None),
                         estimate={"mean": m, "lower": lo, "upper": hi, "se": se,
                                   "runs": self.runs})

    @property
    def evidence(self) -> dict:
        """The runs and steps the verdict rests on."""
        return {"runs": self.runs, "steps": self.t}

    def tables(self) -> dict:
        return {"summary": pd.DataFrame([self.summary()]).drop(columns="verdict")}

    def to_dict(self) -> dict:
        return self.summary()

    def summary(self) -> dict:
        """JSON-able summary: final regret mean and sd over runs, time and speed.

        ``final_regret_std`` is the sample standard deviation over runs (0 for a
        single run).
        """
        final = self.final_regret()
        return {
            "algorithm": self.algorithm,
            "steps": self.t,
            "runs": self.runs,
            "final_regret_mean": float(final.mean()),
            "final_regret_std": float(final.std(ddof=1)) if self.runs > 1 else 0.0,
            "seconds": self.seconds,
            "steps_per_second": self.t / self.seconds if self.seconds > 0 else None,
            "verdict": self.verdict.to_dict(),
        }


@validate.params(level=validate.level, seed=validate.seed)
def simulate(algorithm: str, env: CascadeEnv, *, steps: int, runs: int = 1, seed: int = 0,
             level: float = LEVEL, **options) -> BanditRuns:
    """Run ``runs`` runs of ``algorithm`` on ``env`` for ``steps`` steps (``level``: of the
    verdict's interval; ``options``: the algorithm's)."""
    sim = BanditRuns(algorithm, env, steps, runs=runs, seed=seed, options=options, level=level)
    sim.advance()
    return sim


@validate.params(level=validate.level)
@dataclass(eq=False)
class BanditLab(Result):
    """Several algorithms on one environment, advanced together in lockstep.

    Every algorithm gets the same ``seed`` (so the same environment random
    stream). :meth:`advance` spends about ``seconds`` of wall time per call, so
    a live chart can call it a few times a second.

    ``verdict`` (which algorithm has the least regret so far, at the two-sided
    ``level``; :meth:`_verdict`) is set when the lab is built and again whenever
    :meth:`advance` moves it on.
    """

    env: CascadeEnv
    algorithms: tuple
    steps: int
    runs: int = 1
    seed: int = 0
    options: dict = field(default_factory=dict)  # {algorithm: {option: value}}
    level: float = LEVEL
    sims: list = field(init=False)
    verdict: Verdict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        self.algorithms = tuple(dict.fromkeys(self.algorithms))
        if not self.algorithms:
            raise UlrError("Pick at least one algorithm.")
        self.sims = [BanditRuns(a, self.env, self.steps, runs=self.runs, seed=self.seed,
                                      options=dict(self.options.get(a, {})), level=self.level)
                     for a in self.algorithms]
        self.level = self.sims[0].level
        self.verdict = self._verdict()  # a live run: the verdict of the steps so far

    @property
    def t(self) -> int:
        return min(s.t for s in self.sims)

    @property
    def done(self) -> bool:
        return all(s.done for s in self.sims)

    @property
    def progress(self) -> float:
        return self.t / self.steps

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.sims)

    def advance(self, seconds: float = 0.2, *, max_steps: int | None = None) -> int:
        """Advance every algorithm by the same number of steps, about ``seconds`` in all.

        The step count comes from the speed measured so far (a short probe
        chunk on the first call). Returns the number of steps taken.
        """
        if self.done:
            return 0
        per_step = [s.seconds_per_step for s in self.sims]
        if any(p is None for p in per_step):
            m = 16
        else:
            m = max(1, int(seconds / max(sum(per_step), 1e-9)))
        m = min(m, self.steps - self.t)
        if max_steps is not None:
            m = min(m, max_steps)
        for s in self.sims:
            s.advance(m)
        if m:
            self.verdict = self._verdict()  # a live run: the verdict of the steps so far
        return m

    def _verdict(self) -> Verdict:
        """Which algorithm has the least regret? (docs/verdicts.md, "Bandit runs").

        The lowest mean cumulative regret against the runner-up: difference of
        means over independent runs, normal (Welch) interval at :attr:`level`; a single
        run has none (``inconclusive``). One algorithm: its own
        :attr:`BanditRuns.verdict`.
        """
        from ulr import verdict as V
        level = self.level
        if len(self.sims) == 1:
            return self.sims[0].verdict
        finals = sorted(((s.final_regret(), s.algorithm) for s in self.sims),
                        key=lambda x: float(x[0].mean()))
        (a, name_a), (b, name_b) = finals[:2]
        basis = f"mean cumulative regret after {self.t:,} steps, {name_a} - {name_b}"
        d = float(a.mean() - b.mean())
        if self.runs < 2:
            return V.Verdict("inconclusive", f"{name_a} has the least cumulative regret after "
                             f"{self.t:,} steps in a single run, with no interval.", basis,
                             reasons=(V.Reason("single_run", "One run per algorithm: the "
                                               "spread over seeds is unknown."),),
                             to_settle="simulate several runs", estimate={"delta": d})
        se = float(np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size))
        z = V.z_value(level)
        return V.difference_verdict(d, d - z * se, d + z * se, a=name_b, b=name_a,
                                    quantity=f"cumulative regret after {self.t:,} steps",
                                    basis=basis, n=self.runs, unit="runs",
                                    higher_is_better=False, level=level)

    @property
    def evidence(self) -> dict:
        """The runs per algorithm and steps the verdict rests on."""
        return {"runs": self.runs, "steps": self.t}

    def tables(self) -> dict:
        return {"results": self.results()}

    def to_dict(self) -> dict:
        return {"algorithms": [s.summary() for s in self.sims], "steps": self.t,
                "runs": self.runs, "evidence": self.evidence,
                "verdict": self.verdict.to_dict()}

    def results(self) -> pd.DataFrame:
        """One row per algorithm: final regret mean and sd, wall time, speed."""
        rows = [s.summary() for s in self.sims]
        return pd.DataFrame(rows, columns=["algorithm", "steps", "runs", "final_regret_mean",
                                           "final_regret_std", "seconds", "steps_per_second"])
