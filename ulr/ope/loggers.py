"""Off-policy estimates from a log written by several logging policies.

Notation: row ``i`` was logged by logger ``g(i)`` with propensity ``p_i``;
the target policy's probability of the logged action is ``t_i``; ``n_j`` rows
come from logger ``j`` (``n = sum_j n_j``) and ``w_i = t_i / p_i``.

- **Pooled IPS** (naive): ``(1/n) sum_i w_i r_i``. Unbiased, but its variance
  is dominated by the logger that explores least.
- **Balanced IPS**: ``(1/n) sum_i t_i r_i / pbar_i`` with the mixture
  ``pbar_i = sum_j (n_j / n) pi_j(a_i | x_i)``: the log is treated as drawn from
  the mixture of the loggers. Needs every logger's probability of every logged
  action (columns ``propensity_<logger>``).
- **Weighted IPS (WIPS)**: per-logger estimates ``V_j`` combined with weights
  proportional to their inverse estimated variance,
  ``V_WIPS = sum_j lambda_j V_j``, ``lambda_j = (1/s_j^2) / sum_k (1/s_k^2)``.
  With control variates (default) each ``V_j`` is
  ``mean_j(w r) - beta_j (mean_j(w) - 1)`` with ``beta_j = cov_j(w r, w) / var_j(w)``
  (``E[w] = 1`` under every logger), and ``s_j^2 = var_j(w r - beta_j w) / n_j``.
  The variances come from a click model with the pooled click rate
  (default; robust when clicks are rare) or from each logger's rows; either
  is floored at one click's worth, ``mean_j(w^2) / n_j^2``.

Reference: Agarwal, Basu, Schnabel & Joachims, "Effective Evaluation using
Logged Bandit Feedback from Multiple Loggers", KDD 2017 (naive, balanced and
weighted IPS; control variates, section 4.3).

Intervals are percentile bootstraps stratified by logger (each logger's
resampling units -- impressions or rows -- are resampled within the logger,
so ``n_j`` stays fixed); WIPS re-estimates its weights in every replicate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ulr import validate
from ulr.errors import UlrError
from ulr.ope.estimators import resample_counts

# Per-row moments summed per resampling unit: n, w r, w, (w r)^2, w^2, w r * w, balanced term.
_M = 7


@dataclass(frozen=True)
class LoggerStats:
    """Sufficient sums of one logger (arrays broadcast over bootstrap draws)."""

    n: np.ndarray
    s_wr: np.ndarray
    s_w: np.ndarray
    s_wr2: np.ndarray
    s_w2: np.ndarray
    s_wrw: np.ndarray

    @classmethod
    def from_sums(cls, s):
        return cls(*(s[..., k] for k in range(6)))

    def ips(self):
        return self.s_wr / self.n

    def estimate(self, *, control_variate: bool = True, variance: str = "model", mu=None):
        """``(V_j, s_j^2)`` of this logger.

        ``variance="empirical"`` estimates ``s_j^2`` from the logger's own rows
        (the sample variance of ``w r`` or ``w r - beta w``). ``"model"`` (default)
        uses the variance those terms have when the reward is a click with the
        common rate ``mu`` independent of the weight:
        ``Var(w r) = mu E[w^2] - mu^2`` (with the control variate at its
        optimum ``beta = mu``, ``mu E[w^2] - mu^2 - mu^2 Var(w)``), so the weights
        depend on the clicks only through ``mu``. With rare clicks the
        empirical variance rests on a few clicks and rises and falls with the
        logger's own estimate, which biases WIPS and adds variance.
        """
        n = self.n
        m_wr, m_w = self.s_wr / n, self.s_w / n
        var_w = self.s_w2 / n - m_w ** 2
        cov = self.s_wrw / n - m_wr * m_w
        beta = 0.0
        if control_variate:
            with np.errstate(invalid="ignore", divide="ignore"):
                beta = np.where(var_w > 1e-15, cov / np.where(var_w > 1e-15, var_w, 1.0), 0.0)
        value = m_wr - beta * (m_w - 1.0)
        if variance == "empirical":
            var_wr = self.s_wr2 / n - m_wr ** 2
            var = (var_wr - 2 * beta * cov + beta ** 2 * var_w) * n / np.maximum(n - 1, 1)
        elif variance == "model":
            mu = np.clip(np.asarray(mu, dtype=float), 1e-12, None)
            var = mu * self.s_w2 / n - mu ** 2 * (1 + (var_w if control_variate else 0.0))
        else:
            raise ValueError("variance must be 'model' or 'empirical'")
        floor = (self.s_w2 / n) / n  # one click's worth: never a zero variance
        return value, np.maximum(var / n, floor / n)


def row_moments(reward, weight, balanced=None) -> np.ndarray:
    """The per-row terms (rows, 7) whose sums :class:`LoggerStats` needs."""
    r = np.asarray(reward, dtype=float)
    w = np.asarray(weight, dtype=float)
    wr = w * r
    b = np.zeros_like(r) if balanced is None else np.asarray(balanced, dtype=float)
    return np.column_stack([np.ones_like(r), wr, w, wr ** 2, w ** 2, wr * w, b])


def wips_combine(stats: list, *, control_variate: bool = True, variance: str = "model",
                 mu=None):
    """``(V_WIPS, lambda, V_j, s_j^2)`` from per-logger stats (broadcast over draws)."""
    vals, vars_ = zip(*(s.estimate(control_variate=control_variate, variance=variance, mu=mu)
                        for s in stats))
    V = np.stack(vals, axis=-1)
    S = np.stack(vars_, axis=-1)
    inv = 1.0 / S
    lam = inv / inv.sum(axis=-1, keepdims=True)
    return np.sum(lam * V, axis=-1), lam, V, S


def balanced_ips(reward, target_prob, logger, logger_propensity) -> float:
    """Balanced IPS, ``(1/n) sum_i t_i r_i / sum_j (n_j/n) pi_j(a_i|x_i)``.

    Parameters
    ----------
    reward, target_prob : arrays (n,).
    logger : int array (n,) of logger codes ``0..L-1``.
    logger_propensity : array (n, L), every logger's probability of each row's action.
    """
    pbar = mixture_propensity(logger, logger_propensity)
    return float(np.mean(np.asarray(target_prob) * np.asarray(reward) / pbar))


def mixture_propensity(logger, logger_propensity) -> np.ndarray:
    """``pbar_i = sum_j (n_j / n) pi_j(a_i | x_i)``; raises if any is unknown."""
    lp = np.asarray(logger_propensity, dtype=float)
    g = np.asarray(logger, dtype=np.int64)
    share = np.bincount(g, minlength=lp.shape[1]) / len(g)
    if np.isnan(lp[:, share > 0]).any():
        raise UlrError("balanced IPS needs every logger's probability of every logged action.")
    pbar = np.nan_to_num(lp) @ share
    if np.any(pbar <= 0):
        raise UlrError("balanced IPS needs a positive mixture probability for every logged "
                       "action.")
    return pbar


@dataclass(frozen=True)
class MultiLoggerResult:
    """Combined and per-logger estimates.

    ``table``: one row per combined estimator (``ips`` pooled, ``wips``,
    ``balanced-ips`` when possible) with value, lower, upper, se and
    ``variance_ratio`` (its bootstrap variance over pooled IPS's).
    ``per_logger``: one row per logger: rows, clicks, ips (with interval),
    the control-variate estimate, its variance estimate and WIPS weight.
    ``missing``: one sentence when balanced IPS is not possible, else ``None``.
    """

    table: pd.DataFrame
    per_logger: pd.DataFrame
    missing: str | None
    settings: dict

    @property
    def unavailable(self) -> tuple:
        """The combined estimators this log cannot give (balanced IPS when ``missing``)."""
        return ("balanced-ips",) if self.missing else ()

    def to_dict(self) -> dict:
        f = (lambda x: None if x is None or not np.isfinite(x) else float(x))
        est = {r.estimator: {"value": f(r.value), "lower": f(r.lower), "upper": f(r.upper),
                             "se": f(r.se), "variance_ratio": f(r.variance_ratio)}
               for r in self.table.itertuples()}
        per = {str(r.logger): {"rows": int(r.rows), "clicks": int(r.clicks),
                               "value": f(r.ips), "lower": f(r.lower), "upper": f(r.upper),
                               "cv_value": f(r.cv_value), "variance": f(r.variance),
                               "wips_weight": f(r.wips_weight)}
               for r in self.per_logger.itertuples()}
        return {"estimates": est, "per_logger": per, "balanced_missing": self.missing}


def _unit_sums(moments, units):
    codes = np.unique(units, return_inverse=True)[1].ravel()
    out = np.zeros((int(codes.max()) + 1, moments.shape[1]))
    np.add.at(out, codes, moments)
    return out


def _replicates(U, n_bootstrap, rng, chunk=250):
    """Bootstrap sums (n_bootstrap, 7) of one logger's unit sums ``U`` (units, 7)."""
    out = np.empty((n_bootstrap, U.shape[1]))
    for rows, counts in resample_counts(U.shape[0], n_bootstrap, rng, chunk=chunk):
        out[rows] = counts @ U
    return out


#: the per-logger table's column labels on a surface (the audit's answer and the OPE page)
PER_LOGGER_LABELS = {"ips": "IPS", "cv_value": "control-variate IPS",
                     "wips_weight": "WIPS weight"}


def _combined(sums, *, balanced_ok, control_variate, variance="model"):
    """Pooled IPS, WIPS and balanced IPS from per-logger sums (..., L, 7)."""
    n = sums[..., 0].sum(axis=-1)
    pooled = sums[..., 1].sum(axis=-1) / n
    stats = [LoggerStats.from_sums(sums[..., j, :]) for j in range(sums.shape[-2])]
    wips, lam, V, S = wips_combine(stats, control_variate=control_variate, variance=variance,
                                   mu=pooled)
    bal = sums[..., 6].sum(axis=-1) / n if balanced_ok else np.full_like(pooled, np.nan)
    return {"ips": pooled, "wips": wips, "balanced-ips": bal}, lam, V, S


@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap, seed=validate.seed)
def evaluate_loggers(reward, target_prob, propensity, logger, *, labels=None,
                     logger_propensity=None, cluster=None, n_bootstrap: int = 1000,
                     level: float = 0.95, control_variate: bool = True,
                     variance: str = "model", seed=0) -> MultiLoggerResult:
    """Pooled IPS, WIPS and balanced IPS with per-logger estimates and intervals.

    Parameters
    ----------
    reward, target_prob, propensity : arrays (n,); ``propensity`` is each row's
        own logger's probability of the logged action.
    logger : int array (n,) of logger codes ``0..L-1``.
    labels : names of the loggers (default ``"0".."L-1"``).
    logger_propensity : optional (n, L), every logger's probability of each
        row's action (NaN = unknown); without it balanced IPS is not computed.
    cluster : optional resampling units (impressions); a unit must not span loggers.
    n_bootstrap, level : bootstrap draws and two-sided level of the intervals.
    control_variate : use the control-variate form of WIPS (default).
    variance : how WIPS estimates each logger's variance, ``"model"`` (default)
        or ``"empirical"`` (see :meth:`LoggerStats.estimate`).
    seed : seed of the bootstrap.
    """
    r = np.asarray(reward, dtype=float)
    t = np.asarray(target_prob, dtype=float)
    p = np.asarray(propensity, dtype=float)
    g = np.asarray(logger, dtype=np.int64)
    if not (r.shape == t.shape == p.shape == g.shape) or r.ndim != 1 or len(r) == 0:
        raise ValueError("reward, target_prob, propensity and logger need one entry per row")
    if np.any(p <= 0) or np.any(p > 1):
        raise UlrError("propensities must lie in (0, 1].")
    if n_bootstrap < 50 or not 0 < level < 1:
        raise UlrError("use at least 50 bootstrap draws and a level strictly between 0 and 1.")
    L = int(g.max()) + 1
    labels = tuple(labels) if labels is not None else tuple(str(j) for j in range(L))
    present = np.bincount(g, minlength=len(labels)) > 0
    bal, missing = _balanced_terms(r, t, g, logger_propensity, labels, present)
    mom = row_moments(r, t / p, bal)
    units = np.arange(len(r)) if cluster is None else np.asarray(cluster)
    codes = [j for j in range(len(labels)) if present[j]]
    rng = np.random.default_rng(seed)
    point = np.stack([mom[g == j].sum(axis=0) for j in codes])  # (L, 7)
    reps = np.stack([_replicates(_unit_sums(mom[g == j], units[g == j]), n_bootstrap, rng)
                     for j in codes], axis=1)  # (B, L, 7)
    kw = {"balanced_ok": bal is not None, "control_variate": control_variate,
          "variance": variance}
    vals, lam, V, S = _combined(point, **kw)
    rvals, _, _, _ = _combined(reps, **kw)
    a = (1 - level) / 2
    rep_ips = reps[..., 1] / reps[..., 0]  # (B, L)
    per = pd.DataFrame({
        "logger": [labels[j] for j in codes], "rows": point[:, 0].astype(int),
        "clicks": [int(np.sum(r[g == j] > 0)) for j in codes],
        "ips": point[:, 1] / point[:, 0],
        "lower": np.nanquantile(rep_ips, a, axis=0),
        "upper": np.nanquantile(rep_ips, 1 - a, axis=0),
        "cv_value": V, "variance": S, "wips_weight": lam})
    settings = {"n_bootstrap": n_bootstrap, "level": level, "control_variate": control_variate,
                "variance": variance,
                "seed": seed, "resampling": "rows" if cluster is None else "impressions"}
    return MultiLoggerResult(table=_combined_table(vals, rvals, a), per_logger=per,
                             missing=missing, settings=settings)


def _balanced_terms(r, t, g, logger_propensity, labels, present):
    """Per-row balanced-IPS terms ``t r / pbar`` (or ``None``) and the sentence saying
    why balanced IPS is not possible (or ``None``)."""
    if logger_propensity is None:
        return None, ("Balanced IPS needs each logger's probability of every logged action "
                      "(a column propensity_<logger> per logger), and the log has none.")
    lp = np.asarray(logger_propensity, dtype=float)
    gaps = [labels[j] for j in range(len(labels)) if present[j] and np.isnan(lp[:, j]).any()]
    if gaps:
        return None, ("Balanced IPS needs each logger's probability of every logged action, "
                      f"and it is missing for logger {', '.join(gaps)} (a column "
                      "propensity_<logger> per logger).")
    return t * r / mixture_propensity(g, lp), None


def _combined_table(vals: dict, rvals: dict, a: float) -> pd.DataFrame:
    """Value, percentile interval at ``a`` and ``1 - a``, bootstrap se and variance
    ratio to pooled IPS of each combined estimator."""
    rows = []
    v_pool = np.var(rvals["ips"], ddof=1)
    for name in ("ips", "wips", "balanced-ips"):
        x = rvals[name]
        fin = np.isfinite(x).any()
        lo, hi = (np.nanquantile(x, [a, 1 - a]) if fin else (np.nan, np.nan))
        var = np.nanvar(x, ddof=1) if fin else np.nan
        rows.append({"estimator": name, "value": float(vals[name]), "lower": float(lo),
                     "upper": float(hi), "se": float(np.sqrt(var)),
                     "variance_ratio": float(var / v_pool) if v_pool > 0 else np.nan})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- a realistic log


@validate.retired(slots="positions")
def make_multi_logger_log(*, sessions: int = 6000, items: int = 80, positions: int = 3,
                          epsilons=(1.0, 0.1), blocks: int = 10, ctr: float = 0.005,
                          affinity: int = 8, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """A log shaped like a real e-commerce log from several loggers, with its truth.

    Few slots (``positions``), ``items`` candidates, no query of its own (``query_id`` is
    the composite of four binary user features, as a mapping would build it),
    a timestamp, ``affinity`` per-item feature columns, per-slot propensities,
    click-through rate about ``ctr`` and one logger per entry of ``epsilons``:
    logger ``j`` shows a uniformly random slate with probability
    ``epsilons[j]`` and otherwise its current top slate, which changes in each
    of ``blocks`` time blocks (a time-varying logging policy). The per-slot
    propensity of item ``a`` at slot ``k`` at time ``t`` is exactly
    ``eps / items + (1 - eps) 1{a = top_t[k]}``; columns
    ``propensity_<logger>`` give every logger's probability of the logged action.
    Clicks follow the position-based model with examination ``1/k^0.5`` and
    item attraction ``alpha_a``.

    Returns the frame and ``{"alpha", "theta", "loggers"}`` for exact values.
    """
    slots = positions
    rng = np.random.default_rng(seed)
    theta = 1.0 / np.sqrt(np.arange(1, slots + 1))
    alpha = np.exp(rng.normal(0, 0.7, items))
    alpha *= ctr / (alpha.mean() * theta.mean())
    names = [f"l{j}" for j in range(len(epsilons))]
    lg = rng.integers(0, len(epsilons), sessions)
    block = np.minimum((np.arange(sessions) * blocks) // sessions, blocks - 1)
    tops = np.stack([np.stack([rng.permutation(items)[:slots] for _ in range(blocks)])
                     for _ in epsilons])  # (loggers, blocks, slots)
    eps = np.asarray(epsilons, dtype=float)
    explore = rng.random(sessions) < eps[lg]
    rand = np.argsort(rng.random((sessions, items)), axis=1)[:, :slots]
    top = tops[lg, block]
    slate = np.where(explore[:, None], rand, top)
    click = rng.random((sessions, slots)) < theta[None, :] * alpha[slate]
    prop = {nm: (eps[j] / items + (1 - eps[j]) * (slate == tops[j, block])).ravel()
            for j, nm in enumerate(names)}
    users = rng.integers(0, 2, (sessions, 4))
    n = sessions * slots
    df = pd.DataFrame({
        "timestamp": np.repeat(pd.Timestamp("2026-01-01") + pd.to_timedelta(
            np.sort(rng.uniform(0, 86400 * 7, sessions)), unit="s"), slots),
        "session_id": np.repeat([f"s{i:06d}" for i in range(sessions)], slots),
        "query_id": np.repeat(["".join(map(str, u)) for u in users], slots),
        "doc_id": [f"i{a:03d}" for a in slate.ravel()],
        "position": np.tile(np.arange(1, slots + 1), sessions),
        "click": click.ravel().astype(int),
        "logger": np.repeat(np.asarray(names)[lg], slots),
    })
    df["propensity"] = np.choose(np.repeat(lg, slots), [prop[nm] for nm in names])
    for nm in names:
        df[f"propensity_{nm}"] = prop[nm]
    feats = np.round(rng.normal(size=(items, affinity)), 4)
    for j in range(affinity):
        df[f"feature_{j + 1}"] = feats[slate.ravel(), j]
    assert len(df) == n
    return df, {"alpha": alpha, "theta": theta, "loggers": names}
