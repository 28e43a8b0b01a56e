"""Off-policy estimators for ranked logs: one slate (ranking of ``K`` slots) per session.

For session ``s`` the logger showed items ``a_1..a_K`` and the user clicked
``r_k`` at slot ``k``; the value of a ranking policy is the expected number of
clicks per slate. Write ``pi`` for the target ranking policy and ``mu`` for
the logger; ``pi_k(a)`` is the probability that ``a`` is at slot ``k`` (the
per-slot marginal, what a log's per-slot propensity records for ``mu``) and
``pi(a_1..a_k)`` the probability of the logged top-``k`` prefix.

- **Standard IPS** over whole slates: ``(1/S) sum_s [pi(a_1..a_K)/mu(a_1..a_K)] sum_k r_k``.
- **Independent IPS** (Li, Kim, Zitouni, "Offline evaluation of ranking
  policies with click models", KDD 2018): ``(1/S) sum_s sum_k [pi_k(a_k)/mu_k(a_k)] r_k``.
- **Reward-interaction IPS** (McInerney, Brost, Chandar, Mehrotra, Carterette,
  "Counterfactual evaluation of slate recommendations with sequential reward
  interactions", KDD 2020), its basic form without control variates:
  ``(1/S) sum_s sum_k [pi(a_1..a_k)/mu(a_1..a_k)] r_k``.

Intervals are normal (central limit) intervals of the mean of the
independent per-session terms.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ulr import validate
from ulr.clickmodels import records
from ulr import verdict as V
from ulr.quantity import significant
from ulr.result import Result, jsonable
from ulr.stats import normal_quantile
from ulr.errors import UlrError

SLATE_ESTIMATORS = ("sips", "iips", "rips")
ASSUMPTIONS = {
    "sips": "Standard IPS assumes nothing about how clicks depend on the slate, and pays for "
            "it with weights multiplied over every slot (the largest variance).",
    "iips": "Independent IPS assumes the position-based model: a click at a slot depends only "
            "on the item in that slot (Li et al. 2018).",
    "rips": "Reward-interaction IPS assumes the cascade: a click at a slot depends only on the "
            "items at and above it (McInerney et al. 2020).",
}
LABELS = {"sips": "Standard IPS (whole slates)", "iips": "Independent IPS (PBM)",
          "rips": "Reward-interaction IPS (cascade)", "cascade-dr": "Cascade-DR (cascade)"}
MODEL_ASSUMPTIONS = {"cascade-dr": (
    "Cascade-DR assumes the cascade like RIPS and adds a per-position click model that "
    "cancels much of RIPS's variance; unbiased whatever the model (Kiyohara et al. 2022).")}
MODEL_ESTIMATORS = ("cascade-dr",)
MAX_PREFIXES = 200_000


def slate_terms(reward, *, target_marginal, logging_marginal, target_prefix,
                logging_prefix) -> dict:
    """Per-session terms ``(S,)`` of each estimator; their means are the estimates.

    Parameters
    ----------
    reward : array (S, K), clicks per slot.
    target_marginal, logging_marginal : arrays (S, K), ``pi_k(a_k)`` and ``mu_k(a_k)``.
    target_prefix, logging_prefix : arrays (S, K), ``pi(a_1..a_k)`` and ``mu(a_1..a_k)``.
    """
    r = np.asarray(reward, dtype=float)
    arrs = [np.asarray(x, dtype=float) for x in (target_marginal, logging_marginal,
                                                 target_prefix, logging_prefix)]
    if r.ndim != 2 or any(a.shape != r.shape for a in arrs):
        raise ValueError("reward and all probabilities need shape (sessions, slots)")
    tm, lm, tp, lp = arrs
    if np.any(lm <= 0) or np.any(lp <= 0):
        raise UlrError("per-slot propensities must be positive.")
    wp = tp / lp
    return {"sips": wp[:, -1] * r.sum(axis=1), "iips": np.sum(tm / lm * r, axis=1),
            "rips": np.sum(wp * r, axis=1)}


@validate.params(level=validate.level)
def slate_estimates(reward, *, estimators=SLATE_ESTIMATORS, level: float = 0.95,
                    extra_terms: dict | None = None, **probs) -> pd.DataFrame:
    """Value, normal interval and standard error of each slate estimator.

    One row per estimator: ``estimator, value, lower, upper, se, max_weight,
    assumption``; the value is expected clicks per slate.
    """
    known = SLATE_ESTIMATORS + MODEL_ESTIMATORS
    unknown = [e for e in estimators if e not in known]
    if unknown or not estimators:
        raise UlrError(f"unknown slate estimator {', '.join(unknown) or '(none)'}; choose from "
                       f"{', '.join(known)}.")
    terms = {**slate_terms(reward, **probs), **(extra_terms or {})}
    S = len(np.asarray(reward))
    z = normal_quantile(0.5 + level / 2)
    rows = []
    for e in estimators:
        x = terms[e]
        se = float(np.std(x, ddof=1) / np.sqrt(S)) if S > 1 else np.nan
        v = float(np.mean(x))
        rows.append({"estimator": e, "value": v, "lower": v - z * se, "upper": v + z * se,
                     "se": se, "assumption": {**ASSUMPTIONS, **MODEL_ASSUMPTIONS}[e]})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- Plackett-Luce policies


def pl_prefix_prob(probs, slate) -> np.ndarray:
    """``P(a_1..a_k)`` for k = 1..K of a Plackett-Luce ranking (sampling without replacement).

    ``probs`` (S, M): each session's item probabilities (a softmax); ``slate``
    (S, K) item indices. ``P(a_1..a_k) = prod_{j<=k} s_{a_j} / (1 - sum_{i<j} s_{a_i})``.
    """
    s = np.take_along_axis(np.asarray(probs, dtype=float), np.asarray(slate), axis=1)
    used = np.cumsum(s, axis=1) - s
    return np.cumprod(s / np.clip(1 - used, 1e-300, None), axis=1)


@validate.retired(slots="positions")
def pl_marginals(probs, positions: int) -> np.ndarray:
    """``pi_k(a)`` (K, M): probability that item ``a`` is at slot ``k`` under Plackett-Luce,
    for slates of ``K = positions`` slots.

    Exact, by summing over the ordered prefixes of length ``k - 1`` (at most
    ``MAX_PREFIXES`` of them).
    """
    slots = positions
    p = np.asarray(probs, dtype=float)
    M = len(p)
    if slots > M:
        raise UlrError("a slate cannot have more slots than there are items.")
    out = np.zeros((slots, M))
    out[0] = p
    for k in range(1, slots):
        count = np.prod(np.arange(M - k + 1, M + 1, dtype=float))
        if count > MAX_PREFIXES:
            raise UlrError(f"{M} items and {slots} slots are too many for exact slot "
                           "probabilities of the target ranking.")
        pre = np.array(list(itertools.permutations(range(M), k)))
        prob = pl_prefix_prob(np.broadcast_to(p, (len(pre), M)), pre)[:, -1]
        rem = 1 - p[pre].sum(axis=1)
        contrib = (prob / np.clip(rem, 1e-300, None))[:, None] * p[None, :]
        mask = np.zeros((len(pre), M), dtype=bool)
        np.put_along_axis(mask, pre, True, axis=1)
        contrib[mask] = 0.0
        out[k] = contrib.sum(axis=0)
    return out


# --------------------------------------------------------------------------- a simulated world


@dataclass(frozen=True)
class SlateWorld:
    """Contexts with ``M`` items each, a logging and a target Plackett-Luce ranking policy.

    ``attraction`` (C, M); ``theta`` (K,) examination per slot (PBM);
    ``logging`` and ``target`` (C, M) item probabilities of the two policies.
    """

    attraction: np.ndarray
    theta: np.ndarray
    logging: np.ndarray
    target: np.ndarray
    click_model: str

    @property
    def slots(self) -> int:
        return len(self.theta)

    def _slates(self):
        M = self.attraction.shape[1]
        return np.array(list(itertools.permutations(range(M), self.slots)))

    def expected_clicks(self, slates, ctx) -> np.ndarray:
        """Expected clicks per slot (n, K) of slates shown in contexts ``ctx``."""
        a = self.attraction[ctx[:, None], slates]
        hooks = records.get(self.click_model).slate  # (expected, sampled) in its record
        if hooks is None:
            raise UlrError(f"the click model must be {records.quoted(records.flagged('slate'))}.")
        return hooks[0](self.theta, a)

    def true_value(self) -> float:
        """Exact expected clicks per slate of the target (contexts uniform), by enumeration."""
        sl = self._slates()
        total = 0.0
        C = self.attraction.shape[0]
        for c in range(C):
            ctx = np.full(len(sl), c)
            pi = pl_prefix_prob(np.broadcast_to(self.target[c], (len(sl), self.target.shape[1])),
                                sl)
            total += float(np.sum(pi[:, -1] * self.expected_clicks(sl, ctx).sum(axis=1)))
        return total / C

    def sample(self, sessions: int, *, seed=0) -> dict:
        """A log: ``reward`` (S, K) and the four probability arrays of :func:`slate_terms`."""
        rng = np.random.default_rng(seed)
        C, M = self.attraction.shape
        ctx = rng.integers(0, C, sessions)
        g = rng.gumbel(size=(sessions, M)) + np.log(self.logging[ctx])
        slate = np.argsort(-g, axis=1)[:, :self.slots]  # Gumbel top-k = Plackett-Luce
        clicks = self._clicks(slate, ctx, rng)
        tm = np.stack([pl_marginals(self.target[c], self.slots) for c in range(C)])
        lm = np.stack([pl_marginals(self.logging[c], self.slots) for c in range(C)])
        k = np.arange(self.slots)[None, :]
        return {"reward": clicks, "context": ctx, "slate": slate,
                "target_marginal": tm[ctx[:, None], k, slate],
                "logging_marginal": lm[ctx[:, None], k, slate],
                "target_prefix": pl_prefix_prob(self.target[ctx], slate),
                "logging_prefix": pl_prefix_prob(self.logging[ctx], slate)}

    def _clicks(self, slate, ctx, rng):
        a = self.attraction[ctx[:, None], slate]
        u = rng.random(a.shape)
        return records.get(self.click_model).slate[1](self.theta, a, u)


@validate.retired(slots="positions")
def simulate_slates(*, contexts: int = 10, items: int = 6, positions: int = 3,
                    click_model: str = "pbm", logging_temperature: float = float("inf"),
                    target_temperature: float = 0.5, attraction_scale: float = 0.3,
                    seed: int = 0) -> SlateWorld:
    """A :class:`SlateWorld`: attractions ``~ attraction_scale * Beta(2, 2)``-like, PBM
    examination ``1/k``; the logger is a Plackett-Luce softmax of noisy attractions at
    ``logging_temperature`` (``inf`` = uniformly random rankings); the target ranks
    by the true attractions at ``target_temperature``; slates of ``positions`` slots."""
    slots = positions
    if records.get(click_model).slate is None:
        raise UlrError(f"the click model must be {records.quoted(records.flagged('slate'))}.")
    rng = np.random.default_rng(seed)
    att = attraction_scale * rng.beta(2, 2, size=(contexts, items))
    theta = 1.0 / np.arange(1, slots + 1)

    def softmax(x, temp):
        if not np.isfinite(temp):
            return np.full_like(x, 1.0 / x.shape[1])
        z = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True) / max(temp, 1e-9)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    logging = softmax(att + rng.normal(0, att.std(), att.shape), logging_temperature)
    target = softmax(att, target_temperature)
    return SlateWorld(attraction=att, theta=theta, logging=logging, target=target,
                      click_model=click_model)


# --------------------------------------------------------------------------- from a log

LOGGING_PREFIX = {
    "sequential": "A log records per-slot propensities only, so the logger's probability of a "
                  "top-k prefix is taken as a ranking drawn slot by slot without replacement, "
                  "prod_k p_k / (1 - p_1 - ... - p_(k-1)) (exact for uniformly random "
                  "rankings; an approximation for other loggers).",
    "product": "A log records per-slot propensities only, so the logger's probability of a "
               "top-k prefix is taken as their product (exact when the logger fills the slots "
               "independently).",
}


def logging_prefix_prob(propensity, *, form: str = "sequential") -> np.ndarray:
    """The logger's prefix probabilities (S, K) from the logged per-slot propensities (S, K)."""
    p = np.asarray(propensity, dtype=float)
    if form == "product":
        return np.cumprod(p, axis=1)
    if form == "sequential":
        used = np.cumsum(p, axis=1) - p
        if np.any(used >= 1):
            raise UlrError("the per-slot propensities of one ranking add up to 1 or more before "
                           "its last slot, so they cannot be a ranking drawn slot by slot.")
        return np.cumprod(p / (1 - used), axis=1)
    raise UlrError("the logging prefix form must be 'sequential' or 'product'.")


#: why a session with slots of several queries is not a ranking (its count is ``n``)
_MIXED = ("the rows of {n:,} sessions answer different queries, so they are not one ranked "
          "list")
_FIX_QUERY = "map to query_id the column that all the documents of one shown list share"


def _capitalized(clause: str) -> str:
    """``clause`` as the start of a sentence (only its first letter raised)."""
    return clause[:1].upper() + clause[1:]


@validate.params(level=validate.level, seed=validate.seed)
def slate_from_log(log, *, score_column: str | None = None, temperature: float = 1.0,
                   fit_fraction: float = 0.5, estimators=SLATE_ESTIMATORS,
                   level: float = 0.95, logging_prefix: str = "sequential",
                   seed: int = 0, mapping=()) -> "SlateResult":
    """Slate estimates of a Plackett-Luce target ranking on a log with sessions.

    The target ranks each context's candidate documents by a softmax (at
    ``temperature``, on standardized scores) of a score column or of a linear
    click model fit on ``fit_fraction`` of the sessions (evaluated on the
    rest). Sessions whose slots are not exactly ``1..K``, or whose rows answer
    several queries (not one shown list), are left out and counted.
    ``logging_prefix`` says how the logger's prefix probabilities follow from
    the per-slot propensities (:func:`logging_prefix_prob`).

    Returns a :class:`SlateResult`: ``table`` (see :func:`slate_estimates`), ``sessions``,
    ``dropped_sessions``, ``slots``, ``clicks``, ``notes``, and the verdict at ``level``
    weighing ``mapping`` (the log's :func:`ulr.lists.mapping_warnings`), set when it is built.
    """
    from ulr.ope.feedback import (feedback_from_log, fit_linear_scorer, policy_from_scorer,
                                  softmax_policy, standardize_scores)

    fb, scores = feedback_from_log(log, action="doc_id", score_column=score_column)
    if fb.cluster is None:
        raise UlrError("slate estimators need to know which rows form one ranking: map a "
                       "column to the field 'session_id'.")
    keep = np.ones(fb.n, dtype=bool)
    if scores is not None:
        pi = softmax_policy(standardize_scores(scores), fb.candidates, temperature=temperature)
    else:
        fit, keep = fb.split(fit_fraction, seed=seed)
        pi = policy_from_scorer(fb.candidates, fit_linear_scorer(fb, fit),
                                temperature=temperature)
    K = fb.n_slots
    rows = np.flatnonzero(keep)
    order = rows[np.lexsort((fb.slot[rows], fb.cluster[rows]))]
    sess, start, size = np.unique(fb.cluster[order], return_index=True, return_counts=True)
    ok = size == K
    idx = (start[ok][:, None] + np.arange(K)[None, :])
    idx = order[idx] if ok.any() else np.zeros((0, K), dtype=int)
    if len(idx):
        good = np.all(fb.slot[idx] == np.arange(K)[None, :], axis=1)
        idx = idx[good]
    # a ranking is one query's shown list: the target ranks that query's candidates
    in_ctx = fb.candidates.context[fb.pair[idx]]
    one = np.all(in_ctx == in_ctx[:, :1], axis=1)
    mixed = int(len(idx) - one.sum())
    idx = idx[one]
    if len(idx) < 2:
        raise UlrError(f"no complete rankings to evaluate: {_MIXED.format(n=mixed)}; "
                       f"{_FIX_QUERY}." if mixed
                       else "no complete rankings to evaluate: every session needs one row "
                       "per position 1..K.")
    pair = fb.pair[idx]
    ctx = fb.candidates.context[pair[:, 0]]
    starts = fb.candidates.starts
    tm = np.empty(pair.shape)
    for c in np.unique(ctx):
        lo = starts[c]
        hi = starts[c + 1] if c + 1 < len(starts) else fb.candidates.n_pairs
        marg = pl_marginals(pi[lo:hi] / pi[lo:hi].sum(), K)
        m = ctx == c
        tm[m] = marg[np.arange(K)[None, :], pair[m] - lo]
    s = pi[pair]
    tp = np.cumprod(s / np.clip(1 - (np.cumsum(s, axis=1) - s), 1e-300, None), axis=1)
    lm = fb.propensity[idx]
    lp = logging_prefix_prob(lm, form=logging_prefix)
    extra = {}
    if "cascade-dr" in estimators:
        extra["cascade-dr"] = cascade_dr_from_sessions(fb, pi, pair, ctx, fb.reward[idx],
                                                       target_prefix=tp, logging_prefix=lp,
                                                       seed=seed)
    table = slate_estimates(fb.reward[idx], estimators=estimators, level=level,
                            target_marginal=tm, logging_marginal=lm, target_prefix=tp,
                            logging_prefix=lp, extra_terms=extra)
    n, clicks = int(len(idx)), int(fb.reward[idx].sum())
    return SlateResult(
        table=table, sessions=n, dropped_sessions=int(len(sess) - len(idx)), slots=K,
        clicks=clicks, target="scores" if scores is not None else "fitted",
        temperature=temperature, level=level,
        notes=(LOGGING_PREFIX[logging_prefix],) + (
            (_capitalized(_MIXED.format(n=mixed)) + f"; they were left out ({_FIX_QUERY}).",)
            if mixed else ()),
        verdict=_slate_verdict(table, n, clicks, level=level, mapping=mapping),
        evidence={"sessions": n, "clicks": clicks})


@dataclass(frozen=True)
class SlateResult(Result):
    """Slate estimates of a target ranking (:func:`slate_from_log`) with their verdict.

    ``verdict`` (the narrowest estimator against the logged clicks per ranking) and
    ``evidence`` (complete rankings and their clicks) are set when it is built.
    """

    table: pd.DataFrame
    sessions: int
    dropped_sessions: int
    slots: int
    clicks: int
    target: str
    temperature: float
    notes: tuple
    level: float
    verdict: V.Verdict
    evidence: dict

    def shown_table(self) -> pd.DataFrame:
        """The estimates as the page, the audit and the report show them: each
        estimator's name in words first (its code, ``sips``, stays in :attr:`table` and
        the JSON), the standard error named as such."""
        t = self.table.copy()
        t.insert(0, "method", t.pop("estimator").map(LABELS))
        return t.rename(columns={"se": "standard error"})

    def to_dict(self) -> dict:
        return {"estimates": jsonable(self.table.to_dict(orient="records")),
                "sessions": self.sessions, "dropped_sessions": self.dropped_sessions,
                "slots": self.slots, "clicks": self.clicks, "target": self.target,
                "temperature": jsonable(self.temperature), "notes": list(self.notes),
                "level": self.level, "evidence": jsonable(self.evidence),
                "verdict": self.verdict.to_dict()}


def _slate_verdict(table: pd.DataFrame, sessions: int, clicks: int, *, level: float = 0.95,
                   mapping=()) -> V.Verdict:
    """The verdict of :func:`slate_from_log`'s estimates ``table`` on ``sessions`` complete
    rankings with ``clicks`` clicks.

    Basis: the estimator with the narrowest interval (each is right only under
    its own assumption, named in the reasons); compared with the logging
    policy's clicks per ranking (``clicks / sessions``, Poisson standard error).
    A mapping warning that blocks slates: ``invalid``.
    """
    from ulr.lists import blocking
    reasons = [w.reason() for w in mapping]
    if blocking(mapping, "slate"):
        return V.Verdict("invalid", "The sessions of this log are not shown rankings; fix the "
                         "session mapping before judging rankings.", "none", reasons=reasons)
    t = table[np.isfinite(table["se"])]
    if t.empty:
        return V.Verdict("inconclusive", "No slate estimate has an interval.", "none",
                         reasons=reasons)
    row = t.sort_values("se").iloc[0]
    # the assumption is a sentence of its own, naming its estimator
    reasons.append(V.Reason("slate_assumption", f"The verdict rests on "
                            f"{LABELS.get(row.estimator, row.estimator)}, the narrowest "
                            f"interval, which is right only under its assumption. "
                            f"{row.assumption}"))
    s = max(int(sessions), 1)
    log_v = clicks / s
    log_se = np.sqrt(max(clicks, 1)) / s
    z = V.z_value(level)
    d = float(row.value) - log_v
    se = float(np.hypot(row.se, log_se))
    thin = list(reasons[:-1]) if clicks >= V.MIN_EFFECTIVE_CLICKS else reasons[:-1] + [
        V.Reason("few_clicks", f"{clicks} clicks in {s:,} rankings (thin below "
                 f"{V.MIN_EFFECTIVE_CLICKS}).")]
    v = V.difference_verdict(d, d - z * se, d + z * se, a="the logging policy",
                             b="The target ranking", quantity="clicks per ranking",
                             basis=row.estimator, n=s, unit="rankings", level=level,
                             thin=tuple(thin))
    return V.Verdict(v.level, v.takeaway[:-1] + f", by {LABELS.get(row.estimator)}.",
                     v.basis, tuple(thin) + (reasons[-1],), v.to_settle,
                     {**v.estimate, "estimator": row.estimator, "value": float(row.value),
                      "logging": log_v})


# --------------------------------------------------------------------------- Cascade-DR


def cascade_dr_terms(reward, *, target_prefix, logging_prefix, q_logged, q_target) -> np.ndarray:
    """Per-session terms ``(S,)`` of Cascade-DR; their mean is the estimate.

    Kiyohara, Saito, Matsuhiro, Narita, Shimizu & Yamamoto, "Doubly robust
    off-policy evaluation for ranking policies under the cascade behavior
    model", WSDM 2022, the Cascade-DR estimator with discount ``gamma = 1``:

    ``V = (1/S) sum_s sum_k [ w_{1:k} (r_k - Q_k(x, a_{1:k}))
    + w_{1:k-1} sum_a pi(a | x, a_{1:k-1}) Q_k(x, a_{1:k-1}, a) ]``,

    ``w_{1:k} = pi(a_1..a_k) / mu(a_1..a_k)`` (``w_{1:0} = 1``) and ``Q_k`` the
    model of the clicks from slot ``k`` down given the top-``k`` prefix.

    Parameters
    ----------
    reward, target_prefix, logging_prefix : arrays (S, K) as in :func:`slate_terms`.
    q_logged : (S, K), ``Q_k(x, a_{1:k})`` at the logged prefix.
    q_target : (S, K), ``sum_a pi(a | x, a_{1:k-1}) Q_k(x, a_{1:k-1}, a)``.

    Unbiased under the cascade assumption (clicks at ``k`` depend on the items at
    and above it) for any model; a model close to the truth cancels most of
    RIPS's variance (RIPS is the model ``Q = 0``).
    """
    r = np.asarray(reward, dtype=float)
    tp, lp, ql, qt = (np.asarray(x, dtype=float) for x in (target_prefix, logging_prefix,
                                                           q_logged, q_target))
    if r.ndim != 2 or any(a.shape != r.shape for a in (tp, lp, ql, qt)):
        raise ValueError("reward, probabilities and the model need shape (sessions, slots)")
    if np.any(lp <= 0):
        raise UlrError("per-slot propensities must be positive.")
    w = tp / lp
    w_before = np.concatenate([np.ones((len(r), 1)), w[:, :-1]], axis=1)
    return np.sum(w * (r - ql) + w_before * qt, axis=1)


def position_click_model(reward, context, slate, *, contexts: int, items: int,
                         prior: float = 5.0) -> np.ndarray:
    """Per-position reward model ``q[c, k, a]``: click rate of item ``a`` at slot ``k`` in ``c``.

    Shrunk towards the slot's overall rate with ``prior`` pseudo-sessions
    (a tabular model; it ignores the items above, so under a cascade it is misspecified).
    """
    r = np.asarray(reward, dtype=float)
    S, K = r.shape
    clicks = np.zeros((contexts, K, items))
    shown = np.zeros((contexts, K, items))
    k = np.broadcast_to(np.arange(K), (S, K))
    c = np.broadcast_to(np.asarray(context)[:, None], (S, K))
    np.add.at(clicks, (c, k, slate), r)
    np.add.at(shown, (c, k, slate), 1.0)
    base = r.mean(axis=0)[None, :, None]
    return (clicks + prior * base) / (shown + prior)


def cascade_q(q, target, context, slate) -> tuple[np.ndarray, np.ndarray]:
    """``Q_k`` at the logged prefixes and its target average, from a per-position model.

    ``Q_k(x, a_{1:k}) = q[x, k, a_k] + sum_a pi(a | x, a_{1:k}) Q_{k+1}(x, a_{1:k}, a)`` (clicks
    from slot ``k`` down when the target fills the slots below), for a Plackett-Luce
    target with item probabilities ``target`` (C, M): ``pi(a | prefix) = s_a / (1 - sum_prefix s)``.
    Exact recursion over every ordered prefix of each context seen (small ``M`` and ``K``).
    Returns ``(q_logged, q_target)`` of shape (S, K) for :func:`cascade_dr_terms`.
    """
    q = np.asarray(q, dtype=float)
    C, K, M = q.shape
    memo = {}

    def value(c, prefix):  # sum_a pi(a | prefix) Q_{len+1}(prefix + a)
        key = (c, prefix)
        if key not in memo:
            k = len(prefix)
            if k == K:
                memo[key] = 0.0
            else:
                s = target[c]
                free = [a for a in range(M) if a not in prefix]
                mass = 1.0 - sum(s[a] for a in prefix)
                memo[key] = sum(s[a] / mass * Q(c, prefix + (a,)) for a in free)
        return memo[key]

    def Q(c, prefix):
        return q[c, len(prefix) - 1, prefix[-1]] + value(c, prefix)

    S = len(slate)
    ql, qt = np.empty((S, K)), np.empty((S, K))
    for i in range(S):
        c = int(context[i])
        row = tuple(int(a) for a in slate[i])
        for k in range(K):
            ql[i, k] = Q(c, row[:k + 1])
            qt[i, k] = value(c, row[:k])
    return ql, qt


def cascade_dr_from_sessions(fb, pi, pair, ctx, reward, *, target_prefix, logging_prefix,
                             seed: int = 0) -> np.ndarray:
    """Per-session Cascade-DR terms on a log's complete rankings (cross-fitted model).

    Items are each context's candidate pairs; the per-position model
    (:func:`position_click_model`) is fit on one half of the sessions and used on
    the other, and the other way round, so no session's clicks enter its own model.
    """
    cand = fb.candidates
    starts = cand.starts
    ends = np.r_[starts[1:], cand.n_pairs]
    M = int((ends - starts).max())
    K = pair.shape[1]
    count = np.prod(np.arange(M - K + 1, M + 1, dtype=float))
    if count > MAX_PREFIXES:
        raise UlrError(f"Cascade-DR enumerates the target's rankings of each query's candidates; "
                       f"{M} candidates over {K} slots are too many ({significant(count)} "
                       "rankings).")
    C = cand.n_contexts
    target = np.zeros((C, M))
    for c in range(C):
        p = pi[starts[c]:ends[c]]
        target[c, :len(p)] = p / p.sum()
    local = pair - starts[ctx][:, None]
    fold = np.random.default_rng(seed).permutation(len(pair)) % 2
    terms = np.empty(len(pair))
    for f in (0, 1):
        fit, use = fold != f, fold == f
        q = position_click_model(reward[fit], ctx[fit], local[fit], contexts=C, items=M)
        ql, qt = cascade_q(q, target, ctx[use], local[use])
        terms[use] = cascade_dr_terms(reward[use], target_prefix=target_prefix[use],
                                      logging_prefix=logging_prefix[use], q_logged=ql,
                                      q_target=qt)
    return terms
