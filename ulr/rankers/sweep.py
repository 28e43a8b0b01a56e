"""Severity sweep: IPW vs naive as position bias grows (Joachims et al. 2017, Figure 2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from ulr import propensity as methods, validate
from ulr.errors import UlrError, check
from ulr.rankers.clicks import check_theta, propensity_theta
from ulr.rankers.evaluate import check_learner, split_queries, train_and_evaluate
from ulr.rankers.learners import make_ranker
from ulr.result import Result, jsonable
from ulr.verdict import Verdict

ProgressFn = Callable[[int, int, str], None]


@validate.retired(method="propensity")
def propensity_estimator(propensity: str, *, seed: int = 0, should_stop=None
                         ) -> Callable[[pd.DataFrame], np.ndarray]:
    """``DataFrame -> theta`` with the position-bias method ``propensity``, for
    :func:`severity_sweep`.

    The frame is written to a temporary Parquet file and opened with
    :func:`ulr.data.ingest.open_file`, so the estimator sees a validated log exactly
    as the CLI would. An unknown ``method`` is refused here, before a sweep
    spends time on simulating and training. ``should_stop`` is passed on to
    :func:`ulr.propensity.estimate`.
    """
    import os
    import tempfile

    from ulr.data import ingest
    from ulr.simulate import write_log

    if propensity not in methods.METHODS:
        raise UlrError(f"unknown propensity method {propensity!r}; choose one of "
                       f"{', '.join(methods.METHODS)}.")

    def estimate(df: pd.DataFrame) -> np.ndarray:
        with tempfile.TemporaryDirectory(prefix="ulr_sweep_") as tmp:
            path = os.path.join(tmp, "train.parquet")
            write_log(df.drop(columns=["true_theta"], errors="ignore"), path)
            log = ingest.open_file(path)
            return propensity_theta(log, propensity, seed=seed, should_stop=should_stop)

    estimate.__name__ = f"estimate_{propensity}"
    return estimate


def _check_etas(etas) -> list[float]:
    """The checked eta values of :func:`severity_sweep`."""
    etas = [float(e) for e in etas]
    if not etas:
        raise UlrError("Give at least one eta.")
    if any(not np.isfinite(e) or e < 0 for e in etas):
        raise UlrError("eta values must be finite numbers >= 0.")
    return etas


def _at_least_one(value, *, option: str):
    """A count of queries, positions, sessions or runs: at least 1. Returned as given."""
    try:
        ok = not isinstance(value, bool) and int(value) >= 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise validate.refuse(option, f"{option} must be at least 1.")
    return value


@validate.params(queries=_at_least_one, positions=_at_least_one, sessions=_at_least_one,
                 runs=_at_least_one, learner=check_learner, seed=validate.seed,
                 level=validate.level)
@dataclass(frozen=True)
class SweepSettings:
    """Every option of a severity sweep (:func:`severity_sweep`) but the etas it sweeps.

    Attributes
    ----------
    queries, positions, sessions : each simulated log's queries, documents per query and
        sessions (:func:`ulr.simulate.simulate_clicks`, which also checks ``model``,
        ``n_features`` and ``randomized_fraction``).
    runs : independent logs per eta (seeds ``seed``, ``seed + 1``, ...).
    learner, clip, normalize, learner_options : the rankers trained on each log
        (:func:`ulr.rankers.train_and_evaluate`).
    propensity : the position-bias method's name of the estimated theta, in the rows and
        the messages (``estimated`` when unnamed).
    model, n_features, randomized_fraction : the simulated click model, synthetic features
        and share of randomized sessions.
    seed : seed of the first run's log, split and learner.
    level : two-sided level of the verdicts' intervals.
    """

    queries: int = 300
    positions: int = 10
    sessions: int = 20_000
    runs: int = 1
    learner: str = "linear"
    clip: float | None = None
    normalize: bool = False
    propensity: str = "estimated"
    model: str = "pbm"
    n_features: int = 5
    randomized_fraction: float = 0.1
    seed: int = 0
    learner_options: dict | None = None
    level: float = 0.95


@validate.retired(docs_per_query="positions", estimator_name="propensity",
                  features="n_features")
def severity_sweep(etas=(0.0, 0.5, 1.0, 1.5, 2.0), settings: SweepSettings | None = None, *,
                   estimate_theta: Callable[[pd.DataFrame], np.ndarray] | None = None,
                   progress: ProgressFn | None = None, should_stop=None,
                   **options) -> "SweepResult":
    """IPW vs naive as position bias grows: simulate, train, evaluate per eta.

    ``settings`` (:class:`SweepSettings`, checked when built) holds every option but the
    etas; ``**options`` are the same as keywords, applied on top
    (``severity_sweep([1.0], queries=40)``).

    For every ``eta`` (and run ``r``) a log is simulated with
    ``theta_k = (1/k)^eta`` (seed ``seed + r``, the same for all etas, so runs
    differ only by eta), 30% of its queries are held out, and the learner is
    trained naively and with IPW using the true theta and, if
    ``estimate_theta`` is given, with the theta it estimates from the training
    clicks (a callable ``DataFrame -> theta``), named ``propensity`` (the position-bias
    method, docs/glossary.md) in the rows and messages. Each log has ``queries`` queries
    of ``positions`` documents and ``n_features`` synthetic features.

    Returns
    -------
    SweepResult
        Its ``rows`` are tidy: ``eta``, ``run``, ``ranker`` (``naive``, ``ipw (true
        theta)``, ``ipw (estimated theta)``), ``metric``, ``value``; plus ``theta_error``
        (mean absolute error of the relative theta used, 0 for the truth, NaN
        for naive) and ``estimator``. Its verdicts (one per metric, at ``level``) and
        evidence are set when it is built.

    ``should_stop`` is checked before each simulation and after each step
    (:class:`ulr.errors.Cancelled`).
    """
    from ulr.simulate import simulate_clicks

    s = validate.settings_of(SweepSettings, settings, options, caller="severity_sweep")
    queries, positions, sessions, runs = s.queries, s.positions, s.sessions, s.runs
    seed, propensity = s.seed, s.propensity
    etas = _check_etas(etas)
    tick = _counter(progress, len(etas) * int(runs) * (3 + (estimate_theta is not None)),
                    should_stop)
    train = dict(learner=s.learner, clip=s.clip, normalize=s.normalize, seed=seed,
                 learner_options=dict(s.learner_options or {}), should_stop=should_stop)
    rows = []
    for run in range(int(runs)):
        for eta in etas:
            check(should_stop)
            sim = simulate_clicks(model=s.model, queries=queries, positions=positions,
                                  sessions=sessions, eta=eta, features=s.n_features,
                                  randomized_fraction=s.randomized_fraction, seed=seed + run)
            tick(f"{_where(eta, run)}: simulated {len(sim.df):,} rows")
            for ranker, res, err in _sweep_point(sim, eta, run, seed + run, train,
                                                 estimate_theta, propensity, tick):
                rows += [dict(eta=eta, run=run, ranker=ranker, metric=m, value=float(r.value),
                              theta_error=err,
                              estimator=propensity if "estimated" in ranker else None)
                         for m, r in res.items()]
    return SweepResult.of(pd.DataFrame(rows), level=s.level,
                          evidence={"queries": queries, "runs per η": int(runs),
                                    "sessions": sessions * int(runs) * len(etas)})


def _counter(progress: ProgressFn | None, total: int, should_stop=None
             ) -> Callable[[str], None]:
    """``tick(message)``: counts a finished step and reports it to ``progress``; raises
    :class:`ulr.errors.Cancelled` when ``should_stop`` says so (one check per step:
    simulation, each training)."""
    done = 0

    def tick(msg: str) -> None:
        nonlocal done
        check(should_stop)
        done += 1
        if progress is not None:
            progress(done, total, msg)

    return tick


def _where(eta: float, run: int) -> str:
    return f"eta={eta:g}, run {run + 1}"


def _sweep_point(sim, eta: float, run: int, split_seed: int, train: dict, estimate_theta,
                 estimator_name: str, tick) -> list[tuple[str, dict, float]]:
    """Naive and IPW (true and, optionally, estimated theta) on one simulated log.

    Returns ``(ranker, metrics, theta_error)`` triples; the naive model is fitted
    once and shared by the IPW comparisons.
    """
    where = _where(eta, run)
    train_df, test_df = split_queries(sim.df, seed=split_seed)
    opts = train["learner_options"]
    naive = make_ranker(train["learner"], seed=train["seed"], **opts).fit(train_df)
    tick(f"{where}: trained naive")
    comp = train_and_evaluate(train_df, test_df, sim.theta, naive_model=naive, **train)
    tick(f"{where}: trained IPW with the true theta")
    out = [("naive", comp.naive, np.nan), ("ipw (true theta)", comp.ipw, 0.0)]
    if estimate_theta is None:
        return out
    k = sim.theta.size
    try:
        est = check_theta(estimate_theta(train_df), max_position=k)
    except UlrError as exc:
        raise UlrError(f"At eta={eta:g} (run {run + 1}), the {estimator_name} estimate of "
                       f"theta is not usable: {exc}") from None
    comp_est = train_and_evaluate(train_df, test_df, est, naive_model=naive, **train)
    err = float(np.mean(np.abs(est[:k] / est[0] - sim.theta / sim.theta[0])))
    out.append(("ipw (estimated theta)", comp_est.ipw, err))
    tick(f"{where}: trained IPW with the {estimator_name} theta")
    return out


@validate.params(level=validate.level)
def sweep_summary(df: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Mean over runs per (metric, eta, ranker) with a Student-t interval.

    Columns ``metric, eta, ranker, mean, lower, upper, se, runs``; the bounds
    are NaN with a single run (no spread to measure).
    """
    from ulr.verdict import paired_t_interval
    rows = []
    for (metric, eta, ranker), g in df.groupby(["metric", "eta", "ranker"], sort=False):
        m, lo, hi, se = paired_t_interval(g["value"].to_numpy(), level)
        rows.append(dict(metric=metric, eta=eta, ranker=ranker, mean=m, lower=lo, upper=hi,
                         se=se, runs=int(g["value"].notna().sum())))
    return pd.DataFrame(rows)


#: the column of :func:`sweep_table` with IPW's relative change over naive
SWEEP_CHANGE = "ipw (true theta) vs naive"
#: simulated runs per eta by default, on the page and the ``sweep`` command: the verdict
#: needs a spread over runs (one run has no interval)
SWEEP_RUNS = 3


@validate.params(level=validate.level)
def sweep_table(df: pd.DataFrame, *, metric: str, level: float = 0.95) -> pd.DataFrame:
    """One row per eta of one ``metric``: each ranker's mean over runs, then each ranker's
    lower and upper bound (:func:`sweep_summary`), and :data:`SWEEP_CHANGE`,
    ``ipw (true theta) / naive - 1``, when both rankers ran."""
    tidy = sweep_summary(df[df["metric"] == metric], level=level)
    order = list(dict.fromkeys(tidy["ranker"]))
    summary = tidy.pivot(index="eta", columns="ranker", values="mean")[order]
    for bound in ("lower", "upper"):
        b = tidy.pivot(index="eta", columns="ranker", values=bound)[order]
        summary = summary.join(b.add_suffix(f" {bound}"))
    summary = summary.reset_index()
    if "naive" in summary and "ipw (true theta)" in summary:
        summary[SWEEP_CHANGE] = summary["ipw (true theta)"] / summary["naive"] - 1
    return summary


#: fewer runs per eta than this cap the sweep's verdict at "directional": the t interval's
#: spread is estimated from runs - 1 degrees of freedom, fragile below about ten
MIN_RUNS = 10

#: the metric a sweep's :attr:`SweepResult.verdict` speaks of unless asked (the page's and
#: the ``sweep`` command's default)
SWEEP_METRIC = "arp"


@dataclass(frozen=True)
class SweepResult(Result):
    """A severity sweep: its tidy rows, and a verdict per metric set when it is built.

    Attributes
    ----------
    rows : DataFrame
        One row per eta, run, ranker and metric (:func:`severity_sweep`).
    verdicts : dict[str, Verdict]
        Does IPW (true theta) beat naive at the strongest bias, metric by metric
        (:func:`_sweep_verdict`).
    metric : str
        The metric of :attr:`verdict`.
    verdict : Verdict
        ``verdicts[metric]``.
    evidence : dict
        What the verdicts rest on: queries per log, runs per eta, sessions in all.
    """

    rows: pd.DataFrame
    verdicts: dict
    metric: str
    verdict: Verdict
    evidence: dict = field(default_factory=dict)

    @classmethod
    @validate.params(level=validate.level)
    def of(cls, rows: pd.DataFrame, *, metric: str = SWEEP_METRIC, level: float = 0.95,
           evidence: dict | None = None) -> "SweepResult":
        """The result of the sweep ``rows``, every metric's verdict computed once; its
        :attr:`verdict` is on ``metric`` (on the first metric when the sweep has not that one)."""
        verdicts = {m: _sweep_verdict(rows, metric=m, level=level)
                    for m in dict.fromkeys(rows["metric"])}
        metric = metric if metric in verdicts else next(iter(verdicts))
        return cls(rows=rows, verdicts=verdicts, metric=metric, verdict=verdicts[metric],
                   evidence=dict(evidence or {}))

    @property
    def metrics(self) -> list[str]:
        """The sweep's metrics, in their order."""
        return list(self.verdicts)

    def tables(self) -> dict:
        return {"runs": self.rows}

    def to_dict(self) -> dict:
        return {"metric": self.metric, "rows": jsonable(self.rows.to_dict(orient="records")),
                "verdicts": {m: v.to_dict() for m, v in self.verdicts.items()},
                "evidence": jsonable(self.evidence), "verdict": self.verdict.to_dict()}


def _sweep_verdict(df: pd.DataFrame, *, metric: str, level: float = 0.95):
    """Does IPW (true theta) beat naive at the strongest bias? (docs/verdicts.md, "Sweep").

    The paired difference IPW - naive over runs (each run one simulated log,
    the same for both rankers) at the largest eta, with a Student-t interval.
    A single run has no interval: ``inconclusive``.
    """
    from ulr import verdict as V
    from ulr.rankers.evaluate import LOWER_IS_BETTER
    from ulr.text import plain
    d = df[df["metric"] == metric]
    eta = float(d["eta"].max())
    at = d[d["eta"] == eta].pivot_table(index="run", columns="ranker", values="value")
    basis = f"paired {metric} difference, IPW (true θ) - naive, at η = {plain(eta)}"
    if not {"naive", "ipw (true theta)"} <= set(at.columns):
        return V.Verdict("inconclusive", f"At η = {plain(eta)}, {metric} is undefined for "
                         "the naive or the IPW ranker.", basis)
    diffs = (at["ipw (true theta)"] - at["naive"]).to_numpy()
    m, lo, hi, se = V.paired_t_interval(diffs, level)
    runs = int(np.isfinite(diffs).sum())
    if runs < 2:
        return V.Verdict("inconclusive", f"At η = {plain(eta)}, one simulated run says IPW - "
                         f"naive = {m:+.3f} on {metric}, but one run has no interval.", basis,
                         reasons=(V.Reason("single_run", "A single run: its spread over seeds "
                                           "is unknown."),),
                         to_settle="average several runs (seeds) to get an interval",
                         estimate={"delta": m, "runs": runs, "eta": eta})
    thin = () if runs >= MIN_RUNS else (V.Reason(
        "few_runs", f"The interval rests on {runs} runs: their spread over seeds is itself "
                    f"estimated from {runs - 1} degrees of freedom (a reliable answer takes "
                    f"{MIN_RUNS} or more)."),)
    v = V.difference_verdict(m, lo, hi, a="naive", b="IPW (true theta)",
                             quantity=f"{metric} at η = {plain(eta)}", basis=basis, n=runs,
                             unit="runs", higher_is_better=metric not in LOWER_IS_BETTER,
                             level=level, thin=thin)
    return V.Verdict(v.level, v.takeaway, v.basis, v.reasons, v.to_settle,
                     {**v.estimate, "eta": eta, "runs": runs})
