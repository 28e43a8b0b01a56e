"""Held-out evaluation and comparison of click models.

Definitions (Chuklin, Markov & de Rijke, *Click Models for Web Search*, 2015,
ch. 4; docs/clickmodels.md), over the N held-out sessions:

- log-likelihood per session ``LL = (1/N) sum_s log P(C_s)``, with
  ``P(C_s) = prod_r P(C_r = c_r | C_<r)`` (natural log);
- perplexity at rank r ``p_r = 2^(-(1/N) sum_s log2 P(C_r = c_r))`` with the
  model's marginal click probability, and overall the mean of ``p_r``;
- conditional perplexity: the same with ``P(C_r = c_r | C_<r)``;
- CTR at rank r: mean predicted ``P(C_r = 1)`` beside the observed CTR.

Intervals: a Poisson bootstrap over held-out sessions (each session gets a
Poisson(1) weight per replicate, Chamandy et al. 2012; a row of ``S`` that stands for
c identical sessions draws Poisson(c), the law of their sum); the fitted parameters'
intervals refit the models on training sessions reweighted the same way.
The best model has the highest LL; each other model's gap ``LL_best - LL_m``
gets a 95% interval, "within noise" when it contains 0: the standard bootstrap interval
``gap +- t sd`` with the replicates' sd (:func:`_standard`; issue 54: the percentile
interval of the default 50 replicates covered about 91%).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ulr import validate
from ulr.clickmodels import CASCADE_TYPE, LABELS, MODELS, base, records
from ulr.clickmodels import prior as priors
from ulr.errors import Refused, UlrError, check
from ulr.quantity import Quantity
from ulr.result import Result, cached_property
from ulr.verdict import Reason, Verdict, about, more_to_exclude_zero

LEVEL = 0.95
MIN_TEST_SESSIONS = 30
# replicates the CLI and the page both default to (the verdict's level depends on it)
DEFAULT_BOOTSTRAP = 50
REPLICATE_BLOCK = 8  # bootstrap replicates drawn at once (bounds their weights' memory)
# held-out impressions by their pair's count of training sessions (the long tail first)
FREQUENCY_BUCKETS = (("unseen", 0, 0), ("1", 1, 1), ("2-9", 2, 9), ("10+", 10, None))


@dataclass(frozen=True)
class ModelScore:
    """One model on the held-out sessions."""

    name: str
    log_likelihood: float
    perplexity: float
    perplexity_by_rank: np.ndarray
    conditional_perplexity: float
    conditional_perplexity_by_rank: np.ndarray
    ctr_predicted: np.ndarray
    ctr_observed: np.ndarray
    examination: np.ndarray
    parameters: dict
    parameter_intervals: dict
    iterations: int
    ll_interval: tuple | None = None
    gap: float = 0.0  # LL_best - LL_this
    gap_interval: tuple | None = None
    # bucket -> {"value", "impressions"} (see :func:`by_frequency`)
    log_likelihood_by_frequency: dict = field(default_factory=dict)
    perplexity_by_frequency: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.name not in MODELS:
            raise ValueError(f"unknown model {self.name!r}")

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in (
            "log_likelihood", "perplexity", "perplexity_by_rank", "conditional_perplexity",
            "conditional_perplexity_by_rank", "ctr_predicted", "ctr_observed", "examination",
            "iterations", "gap", "log_likelihood_by_frequency", "perplexity_by_frequency")}
        d["log_likelihood_interval"] = self.ll_interval
        d["gap_interval"] = self.gap_interval
        d["within_noise"] = None if self.gap_interval is None else bool(self.gap_interval[0] <= 0)
        d["parameters"] = {k: {"estimate": v, "interval": self.parameter_intervals.get(k)}
                           for k, v in self.parameters.items()}
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in d.items()}


@dataclass(frozen=True)
class Comparison(Result):
    """Models ranked by held-out log-likelihood per session, with a verdict."""

    scores: tuple
    best: str
    verdict: Verdict
    train_sessions: int
    test_sessions: int
    test_fraction: float
    bootstrap: int
    seed: int
    seconds: float = 0.0
    notes: tuple = field(default_factory=tuple)
    prior: dict = field(default_factory=dict)  # the prior every model used (Prior.to_dict)

    def __post_init__(self):
        if self.best not in [s.name for s in self.scores]:
            raise ValueError("best must be one of the scored models")
        if not isinstance(self.verdict, Verdict):
            raise ValueError("verdict must be a ulr.verdict.Verdict")

    @cached_property
    def evidence(self) -> dict:
        """The sessions the verdict rests on."""
        return {"sessions": self.train_sessions + self.test_sessions,
                "held-out sessions": self.test_sessions}

    @property
    def caveats(self) -> tuple:
        """The verdict's reasons word for word (shown next to it on the page and in a
        report)."""
        return tuple(r.message for r in self.verdict.reasons)

    def tables(self) -> dict:
        return {"models": self.table(), "by frequency": self.frequency_table()}

    def score(self, name: str) -> ModelScore:
        return next(s for s in self.scores if s.name == name)

    def table(self):
        import pandas as pd
        rows = []
        for s in self.scores:
            lo, hi = s.gap_interval if s.gap_interval else (np.nan, np.nan)
            rows.append({"model": LABELS[s.name], "log-likelihood / session": s.log_likelihood,
                         "perplexity": s.perplexity,
                         "conditional perplexity": s.conditional_perplexity,
                         "gap to best": s.gap, "gap lower": lo, "gap upper": hi,
                         "within noise": (None if s.name == self.best or s.gap_interval is None
                                          else bool(lo <= 0))})
        return pd.DataFrame(rows)

    def frequency_table(self):
        """Held-out log-likelihood and perplexity per model and bucket of the pair's count
        of training sessions (empty buckets left out)."""
        import pandas as pd
        rows = []
        for s in self.scores:
            for label, *_ in FREQUENCY_BUCKETS:
                ll, pp = s.log_likelihood_by_frequency.get(label), \
                    s.perplexity_by_frequency.get(label)
                if not ll or not ll["impressions"]:
                    continue
                rows.append({"model": LABELS[s.name], "training sessions of the pair": label,
                             "held-out impressions": ll["impressions"],
                             "log-likelihood / impression": ll["value"],
                             "perplexity": pp["value"]})
        return pd.DataFrame(rows, columns=["model", "training sessions of the pair",
                                           "held-out impressions", "log-likelihood / impression",
                                           "perplexity"])

    def to_dict(self) -> dict:
        from ulr.result import jsonable
        return jsonable(self._to_dict())

    def _to_dict(self) -> dict:
        return {"models": {s.name: s.to_dict() for s in self.scores}, "best": self.best,
                "verdict": self.verdict.to_dict(), "train_sessions": self.train_sessions,
                "test_sessions": self.test_sessions, "test_fraction": self.test_fraction,
                "bootstrap": self.bootstrap, "seed": self.seed, "level": LEVEL,
                "seconds": self.seconds, "notes": list(self.notes),
                "settings": {"prior": dict(self.prior), "bootstrap": self.bootstrap,
                             "test_fraction": self.test_fraction, "seed": self.seed,
                             "level": LEVEL}}


def _perplexity(logp: np.ndarray, mask: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Per rank, over the sessions (rows weighted by their count) that show it."""
    n = count @ mask
    mean_log2 = base.ratio(count @ logp / np.log(2), n, np.nan)
    return 2.0 ** (-mean_log2)


def _percentile(reps: np.ndarray) -> tuple:
    a = (1 - LEVEL) / 2
    return (float(np.quantile(reps, a)), float(np.quantile(reps, 1 - a)))


def _standard(reps: np.ndarray, estimate: float) -> tuple:
    """The standard bootstrap interval ``estimate +- t sd(reps)``, t Student's quantile with
    B - 1 degrees of freedom for the B replicates' sd (Efron & Tibshirani, *An Introduction
    to the Bootstrap*, 1993, 13.2). A held-out log-likelihood is a mean over sessions, whose
    sampling law is nearly normal; with the default 50 replicates a percentile interval
    covers about 91% (its 2.5% quantile sits between the 2nd and 3rd of 50 draws), this
    one 95% (tests/clickmodels/test_interval_coverage.py)."""
    from scipy.special import stdtrit  # t.ppf's own function, lighter than scipy.stats
    b = len(reps)
    sd = float(np.std(reps, ddof=1)) if b > 1 else float("nan")
    q = float(stdtrit(b - 1, 0.5 + LEVEL / 2)) if b > 1 else float("nan")
    return (float(estimate) - q * sd, float(estimate) + q * sd)


def pair_sessions(S) -> np.ndarray:
    """Training sessions per pair: each training row's count added to every pair it shows."""
    tr = ~S.test
    m = S.mask[tr]
    return np.bincount(S.pair[tr][m], np.broadcast_to(S.count[tr][:, None], m.shape)[m],
                       minlength=S.n_pairs)


def frequency_bucket(n_train: np.ndarray) -> np.ndarray:
    """Index into :data:`FREQUENCY_BUCKETS` of each training-session count."""
    return np.searchsorted([1, 2, 10], n_train, side="right")


def by_frequency(cond, marg, T, bucket) -> tuple[dict, dict]:
    """Per bucket of the held-out impressions: the mean conditional log-likelihood per
    impression (``log P(C_r = c_r | C_<r)``, natural log; the terms of the sessions'
    log-likelihood) and the perplexity ``2^(-mean log2 P(C_r = c_r))`` of the marginal click
    probability (the overall perplexity's definition, pooled over ranks), each with the
    bucket's count of held-out impressions."""
    cnt = np.broadcast_to(T.count[:, None], T.mask.shape)
    ll_out, pp_out = {}, {}
    for i, (label, *_) in enumerate(FREQUENCY_BUCKETS):
        sel = T.mask & (bucket == i)
        n = int(cnt[sel].sum())
        if n == 0:
            ll_out[label] = pp_out[label] = {"value": None, "impressions": 0}
            continue
        ll_out[label] = {"value": float((cnt[sel] * cond[sel]).sum() / n), "impressions": n}
        pp_out[label] = {"value": float(2.0 ** (-(cnt[sel] * marg[sel]).sum() / n / np.log(2))),
                         "impressions": n}
    return ll_out, pp_out


def _param_intervals(cls, S, reps_w, should_stop, prior) -> dict:
    if reps_w is None:
        return {}
    draws: dict = {}
    for w in reps_w:
        check(should_stop)
        for k, v in cls.fit(S, weights=w, prior=prior).parameters().items():
            draws.setdefault(k, []).append(np.asarray(v, dtype=float))
    a = (1 - LEVEL) / 2
    with warnings.catch_warnings():  # a parameter with no information is NaN in every draw
        warnings.simplefilter("ignore", RuntimeWarning)
        return {k: np.stack([np.nanquantile(np.stack(v), a, axis=0),
                             np.nanquantile(np.stack(v), 1 - a, axis=0)])
                for k, v in draws.items()}


@validate.params(n_bootstrap=validate.n_bootstrap, seed=validate.seed)
def compare(S, models, *, n_bootstrap: int = 0, seed: int = 0, test_fraction: float = 0.2,
            refit_intervals: bool = True, prior="auto", should_stop=None) -> Comparison:
    """Fit ``models`` on the training sessions of ``S`` and score them on the held-out ones.

    Parameters
    ----------
    S : Sessions
        With ``S.test`` marking held-out sessions (see :func:`ulr.clickmodels.sessions.collect`).
    models : list of str
        Names from :data:`ulr.clickmodels.MODELS`.
    n_bootstrap : int
        Poisson-bootstrap replicates over held-out sessions (0: no intervals);
        with ``refit_intervals`` the parameters' intervals refit every model on
        as many reweighted training logs.
    prior : str, (A, B) or Prior
        :func:`ulr.clickmodels.prior.parse`; ``"auto"`` chooses its strength once from the
        training sessions, and every model uses it.
    """
    t0 = time.perf_counter()
    bootstrap = n_bootstrap
    train, test = S.train_total, S.test_total
    if train == 0 or test == 0:
        raise Refused(f"The split left {train:,} training and {test:,} held-out sessions, "
                      "and both need sessions: hold out another share of the sessions, or "
                      "use a larger log.", option="test_fraction")
    asked = priors.parse(prior)
    prior = asked.fitted(*base.weighted(S, None))  # from the training sessions only
    T = S.subset(S.test)
    bucket = frequency_bucket(pair_sessions(S)[np.maximum(T.pair, 0)])
    train_w = None
    if bootstrap and refit_intervals:  # its own stream: the held-out draws stay as they were
        rng_train = np.random.default_rng([seed, 1])
        train_w = rng_train.poisson(S.count, size=(bootstrap, S.sessions)).astype(float) \
            * (~S.test)
    per_session, partial = {}, []
    for name in models:
        check(should_stop)
        cls = MODELS[name]
        m = cls.fit(S, prior=prior)
        cond = base.log_probs(m.conditional(T), T.click, T.mask)
        marg_p = m.marginal(T)
        marg = base.log_probs(marg_p, T.click, T.mask)
        ll = cond.sum(axis=1)
        per_session[name] = ll
        n_rank = T.count @ T.mask
        pp, cp = _perplexity(marg, T.mask, T.count), _perplexity(cond, T.mask, T.count)
        ok = n_rank > 0
        llf, ppf = by_frequency(cond, marg, T, bucket)
        partial.append(dict(
            name=name, log_likelihood=float(T.count @ ll / test), perplexity=float(pp[ok].mean()),
            perplexity_by_rank=pp, conditional_perplexity=float(cp[ok].mean()),
            conditional_perplexity_by_rank=cp,
            ctr_predicted=base.ratio(T.count @ marg_p, n_rank, np.nan),
            ctr_observed=base.ratio(T.count @ (T.click & T.mask), n_rank, np.nan),
            examination=m.examination_by_rank(S), parameters=m.parameters(),
            parameter_intervals=_param_intervals(cls, S, train_w, should_stop, asked),
            iterations=int(m.iterations), log_likelihood_by_frequency=llf,
            perplexity_by_frequency=ppf))
    best = max(partial, key=lambda p: p["log_likelihood"])["name"]
    ll_reps, gap_reps = _replicates(T, per_session, best, bootstrap, seed, should_stop)
    scores = []
    for p in partial:
        d = per_session[best] - per_session[p["name"]]
        gap = float(T.count @ d / test)
        gi = (_standard(gap_reps[p["name"]], gap) if bootstrap and p["name"] != best
              else None)
        li = _standard(ll_reps[p["name"]], p["log_likelihood"]) if bootstrap else None
        scores.append(ModelScore(**p, ll_interval=li, gap=gap, gap_interval=gi))
    scores.sort(key=lambda s: -s.log_likelihood)
    verdict = make_verdict(scores, best, test=test, bootstrap=bootstrap, seed=seed,
                           fraction=test_fraction)
    return Comparison(scores=tuple(scores), best=best, verdict=verdict, train_sessions=train,
                      test_sessions=test, test_fraction=float(test_fraction),
                      bootstrap=int(bootstrap), seed=int(seed),
                      seconds=time.perf_counter() - t0, prior=prior.to_dict())


def _replicates(T, per_session, best, bootstrap, seed, should_stop):
    """Each model's held-out log-likelihood per session and its gap to ``best`` under
    ``bootstrap`` Poisson reweightings of the held-out rows (a row standing for ``count``
    sessions, each weighted Poisson(1), draws Poisson(count)), drawn ``REPLICATE_BLOCK``
    replicates at a time from one stream (the same draws as one big block)."""
    ll_reps = {n: [] for n in per_session}
    gap_reps = {n: [] for n in per_session}
    if not bootstrap:
        return ll_reps, gap_reps
    rng = np.random.default_rng(seed)
    for lo in range(0, bootstrap, REPLICATE_BLOCK):
        check(should_stop)
        w = rng.poisson(T.count, size=(min(REPLICATE_BLOCK, bootstrap - lo), T.sessions)
                        ).astype(float)
        tot = w.sum(axis=1)
        for name, ll in per_session.items():
            ll_reps[name].append(w @ ll / tot)
            gap_reps[name].append(w @ (per_session[best] - ll) / tot)
    return ({n: np.concatenate(v) for n, v in ll_reps.items()},
            {n: np.concatenate(v) for n, v in gap_reps.items()})


def make_verdict(scores, best, *, test: int, bootstrap: int, seed: int, fraction: float
                 ) -> Verdict:
    """The comparison's :class:`ulr.verdict.Verdict` (docs/clickmodels.md).

    - invalid: fewer than ``MIN_TEST_SESSIONS`` held-out sessions, or one model;
    - reliable: the best model beats every other (no gap interval contains 0);
    - directional: no bootstrap, or it beats some but not all;
    - inconclusive: every other model is within noise of it.
    """
    b = LABELS[best]
    others = [s for s in scores if s.name != best]
    basis = (f"held-out log-likelihood per session on {test:,} sessions "
             f"({fraction:.0%} of the log, split by a hash of the session id, seed {seed})"
             + (f"; {bootstrap} bootstrap replicates over held-out sessions" if bootstrap
                else "; no bootstrap"))
    estimate = {"best": best, "log_likelihood": next(s.log_likelihood for s in scores
                                                     if s.name == best),
                "gaps": {s.name: [s.gap, *(s.gap_interval or (None, None))] for s in others}}
    if test < MIN_TEST_SESSIONS or not others:
        code, why = (("few_sessions", f"only {test} held-out sessions (at least "
                      f"{MIN_TEST_SESSIONS} needed)") if test < MIN_TEST_SESSIONS
                     else ("one_model", "only one model was fitted, so there is nothing to "
                                        "compare"))
        return Verdict(level="invalid", takeaway=f"No comparison: {why}.", basis=basis,
                       reasons=(Reason(code, why[0].upper() + why[1:] + "."),),
                       estimate=estimate)
    noise = [s for s in others if s.gap_interval is not None and s.gap_interval[0] <= 0]
    clear = [s for s in others if s.gap_interval is not None and s.gap_interval[0] > 0]
    reasons, to_settle = [], None
    for s in noise:
        lo, hi = s.gap_interval
        q = Quantity("loglik", s.gap, lo, hi)
        reasons.append(Reason("within_noise", f"{LABELS[s.name]} is {q.text(interval='none')} "
                              f"per session behind, with a 95% interval from "
                              f"{q.number(lo)} to {q.number(hi)} that contains 0."))
    if noise:
        closest = min(noise, key=lambda s: s.gap)
        more = more_to_exclude_zero(test, closest.gap, *closest.gap_interval)
        if more is not None:
            gap = Quantity("loglik", closest.gap, *closest.gap_interval)
            to_settle = (f"About {about(more)} more held-out sessions would tell {b} from "
                         f"{LABELS[closest.name]}, if the gap stays at "
                         f"{gap.text(interval='none')} per session")
    tied = (f"{', '.join(LABELS[s.name] for s in noise)} "
            f"{'is' if len(noise) == 1 else 'are'} within noise of it") if noise else ""
    # the criterion and the number the verdict rests on: the runner-up's gap per session
    runner = min(others, key=lambda s: s.gap)
    lo_hi = runner.gap_interval or (None, None)
    margin = Quantity("loglik", runner.gap, *lo_hi).text()
    takeaway = (f"{b} fits best by held-out log-likelihood, {margin} per session ahead of "
                f"{LABELS[runner.name]}" + (f"; {tied}" if tied else ""))
    by_pp = min(scores, key=lambda s: s.perplexity if np.isfinite(s.perplexity) else np.inf)
    if by_pp.name != best and np.isfinite(by_pp.perplexity):
        reasons.append(Reason("perplexity_differs",
                              f"By perplexity (each rank's clicks predicted on their own) "
                              f"{LABELS[by_pp.name]} is best; the verdict ranks the models by "
                              "held-out log-likelihood per session, which scores whole "
                              "sessions, clicks in order."))
    cascade_gap = _cascade_gap(scores, best, clear)
    if cascade_gap:  # still names the models it cannot be told from
        takeaway = cascade_gap + f" ({b} best" + (f"; {tied}" if tied else "") + ")"
    takeaway += "."
    if not bootstrap:
        level = "directional"
        reasons.append(Reason("no_interval", "No bootstrap, so the gaps have no interval."))
    elif not clear:
        level = "inconclusive"
    elif noise:
        level = "directional"
    else:
        level = "reliable"
    return Verdict(level=level, takeaway=takeaway, basis=basis, reasons=tuple(reasons),
                   to_settle=to_settle, estimate=estimate)


def _cascade_gap(scores, best, clear) -> str:
    """'cascade-type models fit far better: users stop after a click' when it holds."""
    if best not in CASCADE_TYPE:
        return ""
    positional = records.flagged("position_type")  # PBM and UBM, by their records
    pos = [s for s in clear if s.name in positional]
    if pos and len(pos) == len([s for s in scores if s.name in positional]):
        return "cascade-type models fit far better: users stop after a click"
    return ""
