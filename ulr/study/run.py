"""The study: simulate, learn, score on held-out grades, compare with intervals.

Every run ``r`` (seed ``seed + r``) trains a new production ranker on its own 1% of the
training queries, simulates a new click log, sets theta (true, or estimated from that log
by a :mod:`ulr.propensity` method), trains every learner and scores the held-out queries'
true grades with :func:`ulr.metrics.evaluate`. The held-out queries are the same in every
run, so each metric is a (runs x queries) table per learner.

Intervals (:func:`two_way_interval`) resample runs and queries together, the pigeonhole
bootstrap of Owen (2007): a replicate draws runs with replacement and, independently,
queries with replacement, and recomputes the weighted mean. Its spread holds both the
simulation's variance (another click log, another production ranker) and the test
queries' (another sample of queries). A paired comparison does the same on the
per-(run, query) difference ``learner - baseline``.

References
----------
Joachims, Swaminathan, Schnabel. "Unbiased Learning-to-Rank with Biased Feedback". WSDM 2017.
Owen. "The pigeonhole bootstrap". Annals of Applied Statistics 1(2), 2007.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ulr import metrics, validate
from ulr import verdict as V
from ulr.result import Result, cached_property
from ulr.errors import UlrError, check
from ulr.study.labels import LabelledSet, same_features, split_queries
from ulr.study.learners import BASELINE, LEARNERS, SESSION_ROW_LEARNERS, Context, parse_learners
from ulr.study.simulate import (CLICK_MODELS, EPS, LIST_SIZE, NOISE, PRODUCTION_SHARE,
                                RANDOMIZED, production_ranker, simulate_clicks)

#: metrics of the study, the first one the headline's
METRICS = ("ndcg@10", "arp", "dcg", "auc", "pauc", "local_auc")
PRIMARY = "ndcg@10"
#: mean log-likelihood per impression of held-out simulated clicks (learners that predict
#: clicks only): higher is better
CLICK_LL = "click_loglik"
LOWER_IS_BETTER = frozenset({"arp"})
N_BOOTSTRAP = 1000
PROPENSITY = ("true",)  # and every method of ulr.propensity
#: fits at the same time: the machine's 2 cores. Each fit is single-threaded (LightGBM,
#: XGBoost, liblinear release the GIL), so two run side by side without OpenMP's spinning
#: barriers, whose cost on a shared machine made a 2-thread LightGBM fit slower than one
WORKERS = 2


@dataclass(frozen=True)
class Interval:
    """A value with its interval at ``level``."""

    value: float
    lower: float
    upper: float

    def to_dict(self) -> dict:
        return {"value": self.value, "lower": self.lower, "upper": self.upper}


@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap, seed=validate.seed)
def two_way_interval(M: np.ndarray, w: np.ndarray, *, n_bootstrap: int = N_BOOTSTRAP,
                     level: float = 0.95, seed: int = 0) -> Interval:
    """Weighted mean of a (runs x queries) table and its pigeonhole-bootstrap interval.

    .. math::
        \\hat\\mu = \\frac{\\sum_r \\sum_q w_q M_{rq}}{R \\sum_q w_q}, \\qquad
        \\hat\\mu^* = \\frac{\\sum_r \\sum_q a_r b_q w_q M_{rq}}{R \\sum_q b_q w_q}

    with ``a ~ Multinomial(R, 1/R)`` and ``b ~ Multinomial(Q, 1/Q)`` drawn independently
    per replicate (Owen 2007); the interval is the percentile interval of ``mu*``. Queries
    with a NaN in any run, or weight 0, are left out. With one run only queries vary.
    """
    M = np.asarray(M, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    ok = np.isfinite(M).all(axis=0) & (w > 0)
    M, w = M[:, ok], w[ok]
    R, Q = M.shape
    if Q == 0:
        nan = float("nan")
        return Interval(nan, nan, nan)
    Mw = M * w
    value = float(Mw.sum() / (R * w.sum()))
    rng = np.random.default_rng(seed)
    out = np.empty(int(n_bootstrap))
    step = max(1, 2_000_000 // Q)
    for lo in range(0, int(n_bootstrap), step):
        hi = min(int(n_bootstrap), lo + step)
        a = rng.multinomial(R, np.full(R, 1.0 / R), size=hi - lo).astype(np.float64)
        b = rng.multinomial(Q, np.full(Q, 1.0 / Q), size=hi - lo).astype(np.float64)
        out[lo:hi] = ((a @ Mw) * b).sum(axis=1) / (R * (b @ w))
    q = (1.0 - float(level)) / 2.0
    lower, upper = np.quantile(out, [q, 1.0 - q])
    # a constant table has no spread; keep the bounds exact
    return Interval(value, float(min(lower, value)), float(max(upper, value)))


@dataclass(frozen=True)
class Comparison:
    """One learner against the baseline on one metric: ``delta = learner - baseline``."""

    learner: str
    baseline: str
    metric: str
    delta: float
    lower: float
    upper: float
    same_ranking: bool
    verdict: V.Verdict

    def to_dict(self) -> dict:
        return {"learner": self.learner, "baseline": self.baseline, "metric": self.metric,
                "delta": self.delta, "lower": self.lower, "upper": self.upper,
                "same_ranking": self.same_ranking, "verdict": self.verdict.to_dict()}


@dataclass(frozen=True)
class StudyResult(Result):
    """A debiasing study on a labelled set.

    Attributes
    ----------
    learners : dict[str, dict[str, Interval]]
        Every learner's metrics with their intervals over runs and test queries.
    comparisons : list of Comparison
        Every learner but the baseline against it, on every metric.
    theta_true, theta : lists
        The simulated examination per position and the theta the IPW learners used (its
        mean over runs), both relative to position 1.
    verdict : Verdict
        Does a debiasing learner beat the baseline on :data:`PRIMARY`?
    per_query : dict
        ``{learner: {metric: (runs x queries) array}}`` and ``"weight"``: what the
        intervals are computed from.
    """

    learners: dict
    comparisons: list
    theta_true: list
    theta: list
    settings: dict
    evidence: dict
    queries: int
    documents: int
    features: int
    seconds: float
    per_query: dict = field(repr=False, default_factory=dict)
    theta_runs: list = field(default_factory=list)
    #: the first run's simulated click log and its training set, when asked to keep them
    #: (``keep_log``: to store it as a dataset or export it)
    log: tuple | None = field(default=None, repr=False, compare=False)

    @cached_property
    def verdict(self) -> V.Verdict:
        """Does a debiasing learner beat the baseline on :data:`PRIMARY`?"""
        return headline(self.comparisons, self.settings["baseline"],
                        level=self.settings["level"])

    def tables(self) -> dict:
        return {"learners": self.table(), "comparisons": self.comparison_table()}

    def table(self):
        """One row per learner and metric: value, lower, upper (the chart's data)."""
        import pandas as pd
        return pd.DataFrame([dict(learner=n, metric=m, value=iv.value, lower=iv.lower,
                                  upper=iv.upper)
                             for n, res in self.learners.items() for m, iv in res.items()])

    def comparison_table(self):
        import pandas as pd
        return pd.DataFrame([dict(learner=c.learner, baseline=c.baseline, metric=c.metric,
                                  delta=c.delta, lower=c.lower, upper=c.upper,
                                  verdict=c.verdict.takeaway) for c in self.comparisons])

    def to_dict(self) -> dict:
        """The ``study --json`` object (docs/contract.md, "study")."""
        return {"queries": self.queries, "documents": self.documents,
                "features": self.features, "theta_true": self.theta_true,
                "theta": self.theta,
                "learners": {n: {m: iv.to_dict() for m, iv in res.items()}
                             for n, res in self.learners.items()},
                "comparisons": [c.to_dict() for c in self.comparisons],
                "verdict": self.verdict.to_dict(), "settings": dict(self.settings),
                "evidence": dict(self.evidence), "seconds": self.seconds}


@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap, seed=validate.seed)
def compare(name: str, base: str, metric: str, d: np.ndarray, w: np.ndarray, same: bool, *,
            runs: int, level: float, n_bootstrap: int, seed: int) -> Comparison:
    """The comparison of ``name`` with ``base`` from the (runs x queries) differences."""
    quantity = metric
    basis = f"paired {metric} difference ({name} - {base}) over runs and test queries"
    if same:
        v = V.Verdict("inconclusive", f"{name} and {base} rank identically: they order every "
                      f"test list the same way in every run, so no metric can differ.", basis,
                      reasons=(V.Reason("rank_identically", "Both learners order every test "
                                        "list identically."),),
                      estimate={"delta": 0.0, "lower": 0.0, "upper": 0.0, "level": level})
        return Comparison(name, base, metric, 0.0, 0.0, 0.0, True, v)
    iv = two_way_interval(d, w, n_bootstrap=n_bootstrap, level=level, seed=seed)
    n_q = int((np.isfinite(d).all(axis=0) & (w > 0)).sum())
    if not np.isfinite(iv.value):
        v = V.Verdict("inconclusive", f"{metric} is undefined on these test queries.", basis)
        return Comparison(name, base, metric, iv.value, iv.lower, iv.upper, False, v)
    thin = ()
    if runs < 2:
        thin = (V.Reason("single_run", "A single simulated run: the interval holds the test "
                         "queries' spread, not another click log's."),)
    v = V.difference_verdict(iv.value, iv.lower, iv.upper, a=base, b=name, quantity=quantity,
                             basis=basis, n=n_q, unit="test queries",
                             higher_is_better=metric not in LOWER_IS_BETTER, level=level,
                             thin=thin)
    return Comparison(name, base, metric, iv.value, iv.lower, iv.upper, False, v)


@validate.params(level=validate.level)
def headline(comparisons, baseline: str, *, metric: str = PRIMARY, level: float = 0.95
             ) -> V.Verdict:
    """Does a learner beat the baseline on ``metric``? The references (oracle, production)
    are left out. The learner with the best difference speaks when its interval excludes 0
    in its favour; more than one candidate caps a ``reliable`` answer at ``directional``
    (the best of several is picked after the fact)."""
    basis = f"paired {metric} difference against {baseline} over runs and test queries"
    cands = [c for c in comparisons if c.metric == metric and not LEARNERS[c.learner].reference]
    if not cands:
        return V.Verdict("inconclusive", f"No learner besides the references was compared "
                         f"with {baseline}, so there is no debiasing answer.", basis)
    sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
    better = [c for c in cands if V.told_apart(c.lower, c.upper) and sign * c.delta > 0]
    if better:
        best = max(better, key=lambda c: sign * c.delta)
        v = best.verdict
        if len(cands) > 1:
            v = V.with_reason(v, V.Reason(
                "best_of_several", f"{best.learner} is the best of {len(cands)} learners "
                "compared; an answer picked after the fact is read as a hint."))
        return v
    worse = [c for c in cands if V.told_apart(c.lower, c.upper)]
    tied = [c for c in cands if not V.told_apart(c.lower, c.upper)]
    parts = []
    if tied:
        parts.append(f"{_names(tied)} cannot be told apart from it")
    if worse:
        parts.append(f"{_names(worse)} {'ranks' if len(worse) == 1 else 'rank'} worse")
    level_ = "inconclusive" if tied else "reliable"
    return V.Verdict(level_, f"No learner beats {baseline} on {metric}: " + "; ".join(parts)
                     + f" ({level:.0%} intervals over runs and test queries).", basis,
                     reasons=tuple(r for c in cands for r in c.verdict.reasons),
                     estimate={"best": max(cands, key=lambda c: sign * c.delta).learner,
                               "delta": max(sign * c.delta for c in cands) * sign})


def _names(cs) -> str:
    names = [c.learner for c in cs]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


ProgressFn = Callable[[int, int, str], None]


@validate.retired(list_size="positions")
@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap, seed=validate.seed)
def run_study(data: LabelledSet, *, test: LabelledSet | None = None,
              learners=("naive-linear", "ipw-linear"), baseline: str = BASELINE,
              model: str = "pbm", eta: float = 1.0, sessions: int = 10_000, runs: int = 3,
              propensity: str = "true", production_share: float = PRODUCTION_SHARE,
              production_feature: str | None = None, positions: int = LIST_SIZE,
              noise: float = NOISE,
              randomized_fraction: float = RANDOMIZED, eps: float = EPS,
              test_fraction: float = 0.3, k: int = 10, level: float = 0.95,
              n_bootstrap: int = N_BOOTSTRAP, seed: int = 0, options: dict | None = None,
              progress: ProgressFn | None = None, should_stop=None,
              keep_log: bool = False, workers: int = WORKERS) -> StudyResult:
    """Run the semi-synthetic study of Joachims et al. (2017) on a labelled set.

    Parameters
    ----------
    data : LabelledSet
        The labelled queries; a seeded ``test_fraction`` of them is held out unless
        ``test`` is given.
    learners : sequence of str
        Names of :data:`ulr.study.learners.LEARNERS`; ``baseline`` is added if missing.
    production_share, production_feature
        The production ranker: ridge on a ``production_share`` of the training queries
        (seeded per run), or the analyst's own score column (a feature's name).
    model, eta, sessions, positions, noise, randomized_fraction, eps
        The simulation (``positions``: the list length) (:func:`ulr.study.simulate.simulate_clicks`).
    runs : int
        Independent simulations (seeds ``seed .. seed + runs - 1``).
    propensity : str
        ``"true"`` (the simulated theta) or a :data:`ulr.propensity.METHODS` method that
        estimates theta from each run's log.
    k, level, n_bootstrap
        nDCG cut-off; level and replicates of the intervals.
    progress, should_stop
        ``progress(done, total, message)`` after every step; ``should_stop()`` is asked
        between steps (:class:`ulr.errors.Cancelled`).
    keep_log : bool
        Keep the first run's click log in ``settings`` (for export and storing).
    workers : int
        Fits run at the same time (:func:`fit_all`); every fit is single-threaded and
        deterministic, so the result does not depend on it.
    """
    from ulr import propensity as P
    t0 = time.perf_counter()
    names = parse_learners(learners)
    if baseline not in LEARNERS:
        raise UlrError(f"unknown baseline {baseline!r}; choose from {', '.join(LEARNERS)}.")
    if baseline not in names:
        names.insert(0, baseline)
    if model not in CLICK_MODELS:
        raise UlrError(f"the click model must be one of {', '.join(CLICK_MODELS)}, "
                       f"not {model!r}.")
    if propensity != "true" and propensity not in P.METHODS:
        raise UlrError(f"propensity must be 'true' or one of {', '.join(P.METHODS)}, "
                       f"not {propensity!r}.")
    if int(runs) < 1:
        raise UlrError("runs must be at least 1.")
    given_test = test is not None
    if test is None:
        train, test = split_queries(data, test_fraction=test_fraction, seed=seed)
    else:
        train, test = data, same_features(data, test)
    if train.n_queries < 2:
        raise UlrError("The study needs at least two training queries.")
    if metrics_undefined(test):
        raise UlrError("No held-out query has a relevant document (grade above 0), so no "
                       "ranking metric can be computed.")
    runs = int(runs)
    total = runs * (2 + len(names))
    done = 0

    def tick(msg):
        nonlocal done
        check(should_stop)
        done += 1
        if progress is not None:
            progress(done, total, msg)

    per: dict = {n: {} for n in names}
    # 1. every run's production ranker, click log and theta (cheap, in order)
    contexts, theta_true_runs, theta_runs, test_logs = [], [], [], []
    # built once for every run (LightGBM's and XGBoost's bin boundaries) or once per run
    # (LightGBM's binned session rows, when two learners train on them)
    shared: dict = {"lightgbm_rows": all(n in names for n in SESSION_ROW_LEARNERS)}
    predicting = [n for n in names if LEARNERS[n].predicts_clicks]
    heldout_sessions = max(1, int(round(int(sessions) * test.n_queries / train.n_queries)))
    log0 = None
    clicks_total = 0
    for r in range(runs):
        check(should_stop)
        rs = seed + r
        prod = production_ranker(train, share=production_share, seed=rs,
                                 feature=production_feature)
        log = simulate_clicks(train, prod.score(train.X), sessions=sessions, model=model,
                              eta=eta, positions=positions, noise=noise,
                              randomized_fraction=randomized_fraction, eps=eps, seed=rs)
        clicks_total += log.n_clicks
        if keep_log and r == 0:
            log0 = log
        theta_true = log.theta_true / log.theta_true[0]
        theta_true_runs.append(theta_true)
        tick(f"run {r + 1}: simulated {log.n_sessions:,} sessions, {log.n_clicks:,} clicks")
        if propensity == "true" or not any(LEARNERS[n].uses_theta for n in names):
            theta = theta_true
        else:
            theta = estimate_theta(log, train, propensity, seed=rs, should_stop=should_stop)
        theta_runs.append(theta)
        tick(f"run {r + 1}: θ ({propensity})")
        contexts.append(Context(train=train, log=log, theta=theta, production=prod, seed=rs,
                                options=options, shared=shared))
        if predicting:  # the held-out queries' own clicks, as much traffic per query
            test_logs.append(simulate_clicks(
                test, prod.score(test.X), sessions=heldout_sessions, model=model, eta=eta,
                positions=positions, noise=noise, randomized_fraction=randomized_fraction,
                eps=eps, seed=[rs, 1]))
    # 2. every (run, learner) fit, ``workers`` at a time, scored as it finishes
    scores_by_run: list[dict] = [{} for _ in range(runs)]
    results: dict = {}
    for r, n, scorer in fit_all(contexts, names, workers=workers, should_stop=should_stop):
        scores = np.asarray(scorer(test.X), dtype=np.float64)
        scores_by_run[r][n] = scores
        results[r, n] = metrics.evaluate(test.relevance, scores, query_ids=test.qid, k=k,
                                         standardized=True)
        if n in predicting:
            results[r, n] = {**results[r, n],
                             CLICK_LL: click_loglik(scorer, test_logs[r], test, scores=scores)}
        tick(f"run {r + 1}: trained {n}")
    for r in range(runs):  # in run order, whatever order the fits finished in
        for n in names:
            for m, mr in results[r, n].items():
                if m == CLICK_LL:
                    per[n].setdefault(m, []).append(mr)
                    per.setdefault("weight", {})[m] = np.ones(test.n_queries)
                    continue
                per[n].setdefault(m, []).append(mr.per_query.to_numpy(dtype=np.float64))
                per.setdefault("weight", {})[m] = mr.weight.to_numpy(dtype=np.float64)
    weights = per.pop("weight", {})
    keys = [f"ndcg@{k}" if m == "ndcg@10" else m for m in METRICS]
    if predicting:
        keys.append(CLICK_LL)
    primary = keys[0]
    table = {n: {m: np.vstack(v) for m, v in res.items()} for n, res in per.items()}
    out = {n: {m: two_way_interval(table[n][m], weights[m], n_bootstrap=n_bootstrap,
                                   level=level, seed=seed)
               for m in keys if m in table[n]} for n in names}
    comps = []
    for n in names:
        if n == baseline:
            continue
        same = all(V.rank_identically(test.qid, s[n], s[baseline]) for s in scores_by_run)
        for m in keys:
            if m not in table[n] or m not in table[baseline]:
                continue
            # two learners that rank alike may still predict clicks differently
            comps.append(compare(n, baseline, m, table[n][m] - table[baseline][m], weights[m],
                                 same and m != CLICK_LL, runs=runs, level=level,
                                 n_bootstrap=n_bootstrap, seed=seed))
    theta_mean = np.mean([t[:len(theta_true_runs[0])] for t in theta_runs], axis=0)
    settings = dict(learners=names, baseline=baseline, model=model, eta=float(eta),
                    sessions=int(sessions), runs=runs, propensity=propensity,
                    production_share=production_share,
                    production_feature=production_feature, list_size=positions, noise=noise,
                    randomized_fraction=randomized_fraction, eps=eps, k=k, level=level,
                    n_bootstrap=n_bootstrap, seed=seed, primary=primary,
                    test=("file" if given_test
                          else f"{test_fraction:.0%} of the queries, seeded"))
    evidence = {"training queries": train.n_queries, "test queries": test.n_queries,
                "sessions": int(sessions) * runs, "clicks": clicks_total, "runs": runs}
    if predicting:
        settings["heldout_sessions"] = heldout_sessions
        evidence["held-out sessions"] = heldout_sessions * runs
    res = StudyResult(learners=out, comparisons=comps,
                      theta_true=[float(x) for x in np.mean(theta_true_runs, axis=0)],
                      theta=[float(x) for x in theta_mean], settings=settings,
                      evidence=evidence,
                      queries=data.n_queries + (test.n_queries if given_test else 0),
                      documents=data.n_documents + (test.n_documents if given_test else 0),
                      features=data.n_features, seconds=time.perf_counter() - t0,
                      per_query={**table, "weight": weights},
                      theta_runs=[[float(x) for x in t] for t in theta_runs],
                      log=None if log0 is None else (log0, train))
    return res


def click_loglik(scorer, log, test: LabelledSet, *, scores=None) -> np.ndarray:
    """Mean log-likelihood per impression of each held-out query's simulated clicks.

    .. math::
        \\ell_q = \\frac{1}{n_q} \\sum_{i \\in q} c_i \\log p_i + (1 - c_i) \\log(1 - p_i)

    over the ``n_q`` impressions ``i`` of query ``q`` in ``log`` (simulated on ``test``),
    with ``p_i`` the scorer's :meth:`~ulr.study.learners.ClickScorer.click_probability` of
    the shown document at its position. NaN for a query never shown. ``scores``: the
    scorer's values of ``test.X`` when already computed. Higher is better; 0 is a
    perfect prediction. How well a learner predicts clicks need not say how well it ranks
    (Hager et al., "Unbiased learning to rank meets reality", SIGIR 2024).
    """
    f = scorer(test.X) if scores is None else np.asarray(scores, dtype=np.float64)
    p = scorer.probability(f[log.doc], log.position)
    ll = np.where(log.click, np.log(p), np.log1p(-p))
    n = np.bincount(log.query, minlength=test.n_queries)
    total = np.bincount(log.query, weights=ll, minlength=test.n_queries)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def fit_all(contexts, names, *, workers: int = WORKERS, should_stop=None):
    """Fit every learner of ``names`` on every run's :class:`Context`, ``workers`` at a
    time (a thread pool; the longest fits first), and yield ``(run, name, scorer)`` as
    the fits finish.

    A learner that does not use the clicks (``Learner.per_run`` False: the oracle, trained
    on the true grades of the same training queries in every run) is fitted once, on the
    first run, and yielded for every run. ``should_stop`` is asked between fits and every
    quarter second; on a stop the fits not started are dropped (those running finish in
    the background) and :class:`ulr.errors.Cancelled` is raised.
    """
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
    tasks = [(r, n) for n in names
             for r in (range(len(contexts)) if LEARNERS[n].per_run else [0])]
    tasks.sort(key=lambda t: -LEARNERS[t[1]].cost)  # stable: in run order within a cost

    def every_run(r, n):
        return range(len(contexts)) if not LEARNERS[n].per_run else [r]

    if int(workers) <= 1:
        for r, n in tasks:
            check(should_stop)
            scorer = LEARNERS[n].fit(contexts[r])
            for rr in every_run(r, n):
                yield rr, n, scorer
        return
    pool = ThreadPoolExecutor(max_workers=int(workers), thread_name_prefix="ulr-study")
    try:
        futures = {pool.submit(LEARNERS[n].fit, contexts[r]): (r, n) for r, n in tasks}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            check(should_stop)
            for f in sorted(done, key=lambda f: tasks.index(futures[f])):
                r, n = futures[f]
                scorer = f.result()
                for rr in every_run(r, n):
                    yield rr, n, scorer
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def metrics_undefined(test: LabelledSet) -> bool:
    return not bool((test.relevance > 0).any())


@validate.retired(method="propensity")
def estimate_theta(log, train: LabelledSet, propensity: str, *, seed: int = 0,
                   should_stop=None) -> np.ndarray:
    """Relative theta per position estimated from a simulated log by a
    :mod:`ulr.propensity` method ``propensity`` (through :func:`ulr.rankers.propensity_estimator`, which
    opens the log as the CLI would)."""
    from ulr import propensity as P
    from ulr.rankers import check_theta, propensity_estimator
    needs_features = P.REGISTRY[propensity].features
    df = log.frame(train, features=needs_features)
    est = propensity_estimator(propensity, seed=seed, should_stop=should_stop)
    k = int(log.position.max())
    try:
        theta = check_theta(est(df), max_position=k)[:k]
    except UlrError as exc:
        raise UlrError(f"The {propensity} estimate of θ is not usable: {exc}") from None
    return theta / theta[0]


#: what a sweep may vary, and its type
SWEEPS = {"eta": float, "sessions": int}


def study_sweep(data: LabelledSet, *, over: str, values, progress: ProgressFn | None = None,
                **options) -> list[tuple[float, StudyResult]]:
    """:func:`run_study` once per value of ``over`` (``"eta"`` or ``"sessions"``), all other
    options the same (the same seeds, so the points differ only by the swept value): how
    strong must the bias be, or how much traffic is needed, before IPW pays off?"""
    over, vals = parse_sweep(over, values)
    out = []
    for i, v in enumerate(vals):
        def step(done, total, msg, i=i, v=v):
            if progress is not None:
                progress(i * total + done, len(vals) * total, f"{over} = {v:g}: {msg}")
        out.append((v, run_study(data, **{**options, over: v}, progress=step)))
    return out


def parse_sweep(over: str, values) -> tuple[str, list]:
    """``(over, values)`` of a sweep from its name and its values (a list, or text such as
    ``"0, 0.5, 1"``), checked: ``eta`` values 0 or more, ``sessions`` whole numbers of at
    least 1, at least one value."""
    over = str(over).strip()
    if over not in SWEEPS:
        raise UlrError(f"a sweep varies {' or '.join(SWEEPS)}, not {over!r}.")
    items = [v for v in (values.replace(";", ",").split(",") if isinstance(values, str)
                         else values) if str(v).strip()]
    try:
        vals = [SWEEPS[over](float(v)) for v in items]
    except (TypeError, ValueError):
        raise UlrError(f"The {over} values of a sweep must be numbers separated by "
                       "commas.") from None
    if not vals:
        raise UlrError("Give at least one value to sweep over.")
    if over == "sessions" and min(vals) < 1:
        raise UlrError("The sessions of a sweep must be at least 1.")
    if over == "eta" and (min(vals) < 0 or not all(np.isfinite(vals))):
        raise UlrError("The eta values of a sweep must be 0 or more.")
    return over, vals


def sweep_table(points, over: str, *, metric: str | None = None):
    """One row per (swept value, learner): the value of ``metric`` (default the study's
    primary one) with its interval, and the comparison with the baseline (delta, its
    interval and verdict; empty for the baseline) - the data of the sweep's chart."""
    import pandas as pd
    rows = []
    for v, res in points:
        m = metric or res.settings["primary"]
        comps = {c.learner: c for c in res.comparisons if c.metric == m}
        for n, r in res.learners.items():
            if m not in r:
                continue
            c = comps.get(n)
            rows.append({over: v, "learner": n, "metric": m, "value": r[m].value,
                         "lower": r[m].lower, "upper": r[m].upper,
                         "delta": c.delta if c else np.nan,
                         "delta_lower": c.lower if c else np.nan,
                         "delta_upper": c.upper if c else np.nan,
                         "verdict": c.verdict.takeaway if c else ""})
    return pd.DataFrame(rows)

