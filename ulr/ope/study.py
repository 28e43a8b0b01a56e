"""The off-policy pipeline's studies, callable without the app.

- :func:`simulation_study` -- draw many logs of a simulated logged-bandit world
  whose true policy values are known, estimate the target's value on each, and
  tabulate every estimator's bias, variance and (with intervals) coverage.
- :func:`crm_study` -- learn a policy by counterfactual risk minimization on a
  log (or a simulated one, where the learned policy's true value is known).

All options are keyword-only; nothing is hard-coded (sizes such as ``n_features=5`` and
``n_bootstrap=1000`` are options here).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ulr import validate
from ulr import verdict as V
from ulr.result import Result, jsonable
from ulr.errors import UlrError
from ulr.ope import estimators as est
from ulr.ope import registry
from ulr.ope.crm import learn_policy
from ulr.ope.simulate import (bias_variance_table, repeated_intervals, repeated_point_estimates,
                              simulate_bandit)
from ulr.ope.settings import CRMSettings
from ulr.text import plain

TARGET_KINDS = ("true", "noisy", "reversed")
CHUNK = 25


def target_weights(sim, kind: str, *, seed: int) -> np.ndarray:
    """Weights of the simulated target policy: the true click model, a noisy copy, or reversed."""
    if kind == "reversed":
        return -sim.beta
    if kind == "noisy":
        rng = np.random.default_rng(seed + 7)
        return sim.beta + rng.standard_normal(len(sim.beta)) / np.sqrt(len(sim.beta))
    if kind == "true":
        return sim.beta
    raise UlrError(f"unknown target {kind!r}; choose from {', '.join(TARGET_KINDS)}.")


@validate.retired(features="n_features", slots="positions")
def study_world(*, contexts: int = 20, actions: int = 10, n_features: int = 5,
                positions: int = 1, base_rate: float = 0.2, logging: str = "uniform",
                logging_temperature: float = 1.0, target: str = "true",
                temperature: float = 0.5, seed: int = 0):
    """The simulated world and the target policy over its pairs: ``(sim, pi)``."""
    sim = simulate_bandit(contexts=contexts, actions=actions, n_features=n_features,
                          positions=positions, base_rate=base_rate, logging=logging,
                          logging_temperature=logging_temperature, seed=seed)
    return sim, sim.policy(target_weights(sim, target, seed=seed), temperature=temperature)


@validate.retired(draws="runs")
@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap, seed=validate.seed)
def study_chunk(index: int, *, rows: int = 1000, runs: int = 200,
                estimators=None, clip: float | None = None,
                intervals: bool = False, n_bootstrap: int = 400, level: float = 0.95,
                chunk_size: int = CHUNK, seed: int = 0, **world):
    """Logs ``index * chunk_size ...`` of a study: (estimates frame, ESS fractions, max weight)."""
    sim, pi = study_world(seed=seed, **world)
    n = min(chunk_size, runs - index * chunk_size)
    if n <= 0:
        raise ValueError("chunk index out of range")
    logs = sim.sample(rows, runs=n, seed=[seed, index])
    estimators = registry.defaults() if estimators is None else estimators
    kw = {"estimators": list(estimators), "clip": clip, "seed": seed + index * chunk_size}
    if intervals:
        df = repeated_intervals(sim, pi, logs, n_bootstrap=n_bootstrap, level=level, **kw)
    else:
        df = repeated_point_estimates(sim, pi, logs, **kw)
    df["draw"] += index * chunk_size
    w = pi[logs.pair] / logs.propensity
    return df, est.effective_sample_size(w) / rows, float(w.max())


@validate.retired(draws="runs")
@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap, seed=validate.seed)
def simulation_study(*, rows: int = 1000, runs: int = 200,
                     estimators=None, clip: float | None = None,
                     intervals: bool = False, n_bootstrap: int = 400, level: float = 0.95,
                     chunk_size: int = CHUNK, seed: int = 0, progress=None, run_chunk=None,
                     **world) -> "StudyResult":
    """Repeated simulated logs: every estimator against the exact true value.

    Parameters
    ----------
    rows, runs : rows per log and number of logs (simulation runs).
    estimators, clip : as in :func:`ulr.ope.evaluate.evaluate` (default the registry's
        defaults); every estimator with per-row terms (:func:`ulr.ope.registry.single_log`).
    intervals, n_bootstrap, level : also a bootstrap interval per log at ``level``
        (its coverage of the true value).
    chunk_size : logs per piece (``progress(done, total)`` is called between pieces).
    run_chunk : optional replacement of :func:`study_chunk` (e.g. a cached one).
    **world : keyword options of :func:`study_world` (contexts, actions, n_features,
        positions, base_rate, logging, logging_temperature, target, temperature).

    Returns
    -------
    StudyResult
        ``truth``, ``logging`` (the logging policy's true value), ``estimates`` (one row
        per log and estimator), ``table`` (bias, sd, RMSE, coverage per estimator),
        ``ess_fraction`` and ``max_weight``; its verdict (at ``level``) and evidence are
        set when it is built.
    """
    estimators = registry.defaults() if estimators is None else estimators
    if not estimators:
        raise UlrError("choose at least one estimator.")
    unknown = [e for e in estimators if e not in registry.single_log()]
    if unknown:
        raise UlrError(f"unknown estimator {', '.join(map(str, unknown))}; a simulated log "
                       f"gives {', '.join(registry.single_log())}.")
    if rows < 1 or runs < 1 or chunk_size < 1:
        raise UlrError("rows, runs and chunk size must be positive.")
    opts = dict(rows=rows, runs=runs, estimators=tuple(estimators), clip=clip,
                intervals=intervals, n_bootstrap=n_bootstrap, level=level,
                chunk_size=chunk_size, seed=seed, **world)
    run_chunk = run_chunk or (lambda i, o: study_chunk(i, **o))
    chunks = -(-runs // chunk_size)
    parts = []
    for c in range(chunks):
        parts.append(run_chunk(c, opts))
        if progress is not None:
            progress(c + 1, chunks)
    sim, pi = study_world(seed=seed, **world)
    df = pd.concat([p[0] for p in parts], ignore_index=True)
    truth = float(sim.true_value(pi))
    table = bias_variance_table(df, truth)
    return StudyResult(
        truth=truth, logging=float(sim.true_value(sim.logging)), estimates=df, table=table,
        ess_fraction=float(np.mean(np.concatenate([p[1] for p in parts]))),
        max_weight=max(p[2] for p in parts),
        verdict=_study_verdict(df, truth, table, level=level),
        evidence={"rows": rows * runs, "clicks": None,
                  "queries": int(sim.candidates.n_contexts), "sessions": None})


@dataclass(frozen=True)
class StudyResult(Result):
    """A simulation study (:func:`simulation_study`): estimates of every log against the
    exact truth, and the verdict (which estimator errs least) set when it is built."""

    truth: float
    logging: float
    estimates: pd.DataFrame
    table: pd.DataFrame
    ess_fraction: float
    max_weight: float
    verdict: V.Verdict
    evidence: dict

    def tables(self) -> dict:
        return {"table": self.table, "estimates": self.estimates}

    def shown_table(self) -> pd.DataFrame:
        """The per-estimator table as the page and the report show it: each estimator's
        name in words first (its code stays in :attr:`table` and the JSON), headers in
        words."""
        t = self.table.copy()
        t.insert(0, "method", t.pop("estimator").map(registry.label))
        return t.rename(columns={"bias_se": "bias's standard error",
                                 "relative_bias": "relative bias"})

    def to_dict(self) -> dict:
        return {"truth": jsonable(self.truth), "logging": jsonable(self.logging),
                "estimators": jsonable(self.table.to_dict(orient="records")),
                "ess_fraction": jsonable(self.ess_fraction),
                "max_weight": jsonable(self.max_weight), "evidence": jsonable(self.evidence),
                "verdict": self.verdict.to_dict()}


def _study_verdict(est_df: pd.DataFrame, truth: float, table: pd.DataFrame, *,
                   level: float = 0.95) -> V.Verdict:
    """Which estimator has the smallest error over the simulated logs?

    The paired difference of squared errors, best (smallest RMSE) minus
    runner-up, over the draws (each draw one simulated log), Student-t
    interval. Contains 0: the two "cannot be told apart".
    """
    tab = table.sort_values("rmse")
    best = tab.iloc[0].estimator
    basis = f"squared error over {int(tab.iloc[0].draws)} simulated logs"
    name = registry.label(best)
    if len(tab) < 2:
        return V.Verdict("inconclusive", f"Only {name} was simulated: nothing to compare.",
                         basis)
    second = tab.iloc[1].estimator
    piv = est_df.assign(se2=(est_df["value"] - truth) ** 2).pivot_table(
        index="draw" if "draw" in est_df else est_df.index // len(tab), columns="estimator",
        values="se2")
    diffs = (piv[best] - piv[second]).to_numpy()
    m, lo, hi, se = V.paired_t_interval(diffs, level)
    v = V.difference_verdict(m, lo, hi, a=registry.LABELS.get(second, second), b=name,
                             quantity="squared error", basis=basis, n=len(diffs),
                             unit="simulated logs", higher_is_better=False, level=level)
    return V.Verdict(v.level, f"Over {len(diffs)} simulated logs, {name} has the smallest RMSE "
                     f"({plain(tab.iloc[0].rmse, sig=3)}; true value "
                     f"{plain(truth, sig=3)}). " + v.takeaway,
                     basis, v.reasons, v.to_settle, v.estimate)


@validate.retired(features="n_features")
def crm_study(feedback=None, settings: CRMSettings | None = None, *, contexts: int = 20,
              actions: int = 10, n_features: int = 5, rows: int = 5000,
              base_rate: float = 0.1, progress=None, should_stop=None, mapping=(),
              **options) -> dict:
    """Learn a policy by CRM (:func:`ulr.ope.crm.learn_policy` with ``settings``, a
    :class:`ulr.ope.settings.CRMSettings`, or its options as keywords) on ``feedback``, or
    on a simulated log when it is ``None`` (``contexts``, ``actions``, ``n_features``,
    ``rows``, ``base_rate``: its world, seeded by the settings' seed); ``mapping``: the
    log's mapping warnings, weighed by the result's verdict.

    Returns ``result`` (:class:`ulr.ope.crm.CRMResult`) and ``features``; on a
    simulated log also ``truth`` (true value of the learned policy),
    ``truth_path`` (along the learning curve), ``logging`` and ``best`` (the
    greedy policy on the true click model).
    """
    s = validate.settings_of(CRMSettings, settings, options, caller="crm_study")
    sim = None
    if feedback is None:
        sim = simulate_bandit(contexts=contexts, actions=actions, n_features=n_features,
                              base_rate=base_rate, seed=s.seed)
        feedback = sim.sample(rows, seed=s.seed + 1).feedback(0)
    res = learn_policy(feedback, s, progress=progress, should_stop=should_stop,
                       mapping=mapping)
    out = {"result": res, "features": list(feedback.candidates.feature_names)}
    if sim is not None:
        out["truth_path"] = sim.true_value(res.policy_path(feedback.candidates))
        out["truth"] = float(sim.true_value(res.pi))
        out["logging"] = float(sim.true_value(sim.logging))
        out["best"] = float(sim.true_value(sim.policy(temperature=0)))
    return out
