"""Severity sweep: IPW vs naive as position bias grows (Joachims et al. 2017, Figure 2)."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ulr import propensity
from ulr.errors import UlrError
from ulr.rankers.clicks import check_theta, propensity_theta
from ulr.rankers.evaluate import split_queries, train_and_evaluate
from ulr.rankers.learners import LEARNERS, make_ranker

ProgressFn = Callable[[int, int, str], None]


def propensity_estimator(method: str, *, seed: int = 0) -> Callable[[pd.DataFrame], np.ndarray]:
    """``DataFrame -> theta`` with a propensity method, for :func:`severity_sweep`.

    The frame is written to a temporary Parquet file and opened with
    :func:`ulr.store.open_file`, so the estimator sees a validated log exactly
    as the CLI would. An unknown ``method`` is refused here, before a sweep
    spends time on simulating and training.
    """
    import os
    import tempfile

    from ulr import store
    from ulr.simulate import write_log

    if method not in propensity.METHODS:
        raise UlrError(f"unknown propensity method {method!r}; choose one of "
                       f"{', '.join(propensity.METHODS)}.")

    def estimate(df: pd.DataFrame) -> np.ndarray:
        with tempfile.TemporaryDirectory(prefix="ulr_sweep_") as tmp:
            path = os.path.join(tmp, "train.parquet")
            write_log(df.drop(columns=["true_theta"], errors="ignore"), path)
            log = store.open_file(path)
            return propensity_theta(log, method, seed=seed)

    estimate.__name__ = f"estimate_{method}"
    return estimate


def _check_sweep(etas, runs, learner: str) -> list[float]:
    """The checked eta values of :func:`severity_sweep` (its other options checked too)."""
    etas = [float(e) for e in etas]
    if not etas:
        raise UlrError("Give at least one eta.")
    if any(not np.isfinite(e) or e < 0 for e in etas):
        raise UlrError("eta values must be finite numbers >= 0.")
    if int(runs) < 1:
        raise UlrError("runs must be at least 1.")
    if learner not in LEARNERS:
        raise UlrError(f"learner must be one of {', '.join(LEARNERS)}, not {learner!r}.")
    return etas


def severity_sweep(etas=(0.0, 0.5, 1.0, 1.5, 2.0), *, queries: int = 300,
                   docs_per_query: int = 10, sessions: int = 20_000, runs: int = 1,
                   learner: str = "linear", clip: float | None = None, normalize: bool = False,
                   estimate_theta: Callable[[pd.DataFrame], np.ndarray] | None = None,
                   estimator_name: str = "estimated", model: str = "pbm",
                   features: int = 5, randomized_fraction: float = 0.1, seed: int = 0,
                   learner_options: dict | None = None,
                   progress: ProgressFn | None = None) -> pd.DataFrame:
    """IPW vs naive as position bias grows: simulate, train, evaluate per eta.

    For every ``eta`` (and run ``r``) a log is simulated with
    ``theta_k = (1/k)^eta`` (seed ``seed + r``, the same for all etas, so runs
    differ only by eta), 30% of its queries are held out, and the learner is
    trained naively and with IPW using the true theta and, if
    ``estimate_theta`` is given, with the theta it estimates from the training
    clicks (a callable ``DataFrame -> theta``).

    Returns
    -------
    DataFrame
        Tidy: ``eta``, ``run``, ``ranker`` (``naive``, ``ipw (true theta)``,
        ``ipw (estimated theta)``), ``metric``, ``value``; plus ``theta_error``
        (mean absolute error of the relative theta used, 0 for the truth, NaN
        for naive) and ``estimator``.
    """
    from ulr.simulate import simulate_clicks

    etas = _check_sweep(etas, runs, learner)
    steps_per = 3 + (estimate_theta is not None)
    total = len(etas) * int(runs) * steps_per
    done = 0

    def tick(msg):
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, msg)

    rows = []
    opts = dict(learner_options or {})
    for run in range(int(runs)):
        for eta in etas:
            sim = simulate_clicks(model=model, queries=queries, docs_per_query=docs_per_query,
                                  sessions=sessions, eta=eta, features=features,
                                  randomized_fraction=randomized_fraction, seed=seed + run)
            train, test = split_queries(sim.df, seed=seed + run)
            true_rel = sim.theta / sim.theta[0]
            tick(f"eta={eta:g}, run {run + 1}: simulated {len(sim.df):,} rows")
            naive = make_ranker(learner, seed=seed, **opts).fit(train)
            tick(f"eta={eta:g}, run {run + 1}: trained naive")
            comp = train_and_evaluate(train, test, sim.theta, learner=learner, clip=clip,
                                      normalize=normalize, seed=seed, learner_options=opts,
                                      naive_model=naive)
            tick(f"eta={eta:g}, run {run + 1}: trained IPW with the true theta")
            results = [("naive", comp.naive, np.nan), ("ipw (true theta)", comp.ipw, 0.0)]
            if estimate_theta is not None:
                try:
                    est = check_theta(estimate_theta(train), max_position=docs_per_query)
                except UlrError as exc:
                    raise UlrError(f"At eta={eta:g} (run {run + 1}), the {estimator_name} "
                                   f"estimate of theta is not usable: {exc}") from None
                est_rel = est[:docs_per_query] / est[0]
                comp_est = train_and_evaluate(train, test, est, learner=learner, clip=clip,
                                              normalize=normalize, seed=seed,
                                              learner_options=opts, naive_model=naive)
                results.append(("ipw (estimated theta)", comp_est.ipw,
                                float(np.mean(np.abs(est_rel - true_rel)))))
                tick(f"eta={eta:g}, run {run + 1}: trained IPW with the {estimator_name} theta")
            for ranker, res, err in results:
                for m, r in res.items():
                    rows.append(dict(eta=eta, run=run, ranker=ranker, metric=m,
                                     value=float(r.value), theta_error=err,
                                     estimator=estimator_name if "estimated" in ranker else None))
    return pd.DataFrame(rows)
