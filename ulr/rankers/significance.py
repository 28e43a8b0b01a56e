"""Paired tests, multiplicity corrections and Tukey's HSD over per-query metric values.

Several rankers ("systems") evaluated on the same test queries are compared
pair by pair on each metric. For a pair ``(a, b)`` and a metric with per-query
values ``a_q, b_q`` and weights ``w_q`` (ARP: the query's total relevance;
else 1) on the queries where both are defined, the paired difference is

.. math:: \\delta = \\frac{\\sum_q w_q (b_q - a_q)}{\\sum_q w_q}.

Tests of ``delta = 0`` (:data:`TESTS`):

``"randomization"`` (default) -- Fisher's paired randomization test: under
    the null each per-query difference is as likely to have the opposite
    sign. Exact (all ``2^n`` sign flips) when ``2^n`` is at most the number
    of resamples, else Monte Carlo with ``p = (1 + #extreme) / (1 + B)``,
    always seeded, so the same call gives the same p-value every run (unlike
    ranx, AmenRa/ranx#70). The default because it assumes neither normality
    nor a large sample, only that a difference is as likely either sign under
    the null, and it is the test Smucker, Allan & Carterette (CIKM 2007)
    recommend for IR evaluation.
``"bootstrap"`` -- the paired bootstrap test: queries are resampled jointly;
    ``p = (1 + #{|delta* - delta| >= |delta|}) / (1 + B)`` (the null
    distribution is the resampled difference shifted to 0; Efron & Tibshirani
    1993, sec. 16.4; Sakai, SIGIR 2006).
``"t"`` -- the paired t-test; with unequal weights (ARP) the standard error
    is the ratio estimator's (linearized): ``se^2 = var(w_q (d_q - delta) /
    mean(w)) / n``; with equal weights it is ``scipy.stats.ttest_rel``.

Intervals of ``delta`` are paired percentile-bootstrap intervals (Student t
for ``"t"``) at the uncorrected level; the decision "told apart" rests on the
corrected p-value (:func:`adjust`): Holm (1979) controls the family-wise error
rate, Benjamini & Hochberg (1995) the false discovery rate. The family is the
pairs of systems on one metric (each metric is a question of its own).

With more than two systems :func:`tukey_hsd` gives Tukey's honestly
significant differences per metric (all pairs at once, family-wise).

References
----------
Smucker, Allan, Carterette. "A Comparison of Statistical Significance Tests for
Information Retrieval Evaluation". CIKM 2007.
Holm. "A Simple Sequentially Rejective Multiple Test Procedure". Scand. J.
Statist. 1979.
Benjamini, Hochberg. "Controlling the False Discovery Rate". JRSS B 1995.
Tukey. "The Problem of Multiple Comparisons". 1953; Sakai. "Laboratory
Experiments in Information Retrieval", ch. 4 (2018).
Bassani. "ranx: A Blazing-Fast Python Library for Ranking Evaluation and
Comparison". ECIR 2022.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ulr import validate
from ulr.errors import UlrError
from ulr.metrics.bootstrap import query_order

TESTS = ("randomization", "bootstrap", "t")
CORRECTIONS = ("holm", "bh", "none")
#: exact enumeration of sign flips up to this many queries (2^16 = 65,536 patterns)
MAX_EXACT = 16
SUPERSCRIPTS = dict(zip("abcdefghijklmnopqrstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ"))


@dataclass(frozen=True)
class PairResult:
    """One paired test of ``delta = b - a`` (raw p-value; see :func:`adjust`)."""

    delta: float
    lower: float
    upper: float
    p_value: float
    n_queries: int


def _check_choice(value, options, what: str) -> str:
    if value not in options:
        raise UlrError(f"{what} must be one of {', '.join(options)}, not {value!r}.")
    return value


def _check_resamples(n_resamples) -> None:
    if (isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer))
            or n_resamples < 1):
        raise UlrError(f"the number of resamples must be a whole number >= 1, got "
                       f"{n_resamples!r}.")


def paired_values(a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a_q, b_q, w_q)`` of two :class:`~ulr.metrics.MetricResult` on their common
    defined queries with weight > 0 (the weights of ``a``), in
    :func:`~ulr.metrics.bootstrap.query_order` so that resamples do not depend on the
    order of the log's rows."""
    j = pd.concat([a.per_query.rename("a"), b.per_query.rename("b"), a.weight.rename("w")],
                  axis=1, join="inner").dropna()
    j = j[j["w"] > 0]
    if j.empty:
        raise UlrError(f"{a.name}: the two rankers share no query where it is defined.")
    j = j.iloc[query_order(j.index)]
    return j["a"].to_numpy(float), j["b"].to_numpy(float), j["w"].to_numpy(float)


def _weighted_mean(d, w) -> float:
    return float(np.dot(w, d) / w.sum())


def randomization_p(d, w=None, *, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided paired randomization (sign-flip) p-value of ``sum w d = 0``.

    ``T = |sum_q w_q d_q|``; flipping the sign of each ``d_q`` gives ``T*``.
    With ``n <= MAX_EXACT`` queries and ``2^n <= n_resamples``, all ``2^n``
    flips are enumerated and ``p = #{T* >= T} / 2^n`` (exact). Otherwise
    ``B = n_resamples`` flips are drawn (each sign ``-1`` when a uniform draw
    of ``numpy.random.default_rng(seed)`` is below 0.5) and
    ``p = (1 + #{T* >= T}) / (1 + B)``. Ties within 1e-12 relative count as
    extreme.
    """
    d = np.asarray(d, dtype=float)
    w = np.ones_like(d) if w is None else np.asarray(w, dtype=float)
    n = d.size
    if n == 0:
        raise UlrError("a paired test needs at least one query.")
    wd = w * d
    t_obs = abs(wd.sum())
    tol = 1e-12 * max(1.0, t_obs)
    if n <= MAX_EXACT and 2 ** n <= n_resamples:
        bits = (np.arange(2 ** n)[:, None] >> np.arange(n)) & 1
        return float(np.mean(np.abs((1 - 2 * bits) @ wd) >= t_obs - tol))
    rng = np.random.default_rng(seed)
    extreme = 0
    chunk = max(1, 2_000_000 // n)
    for start in range(0, n_resamples, chunk):  # chunks bound the memory
        signs = np.where(rng.random((min(chunk, n_resamples - start), n)) < 0.5, -1.0, 1.0)
        extreme += int(np.sum(np.abs(signs @ wd) >= t_obs - tol))
    return (1 + extreme) / (1 + n_resamples)


def _resampled_means(d, w, n_resamples: int, rng) -> np.ndarray:
    """Weighted means of ``d`` over ``n_resamples`` query resamples (with replacement)."""
    n = d.size
    out = np.empty(n_resamples)
    chunk = max(1, 2_000_000 // n)
    for start in range(0, n_resamples, chunk):
        idx = rng.integers(0, n, size=(min(chunk, n_resamples - start), n))
        out[start:start + idx.shape[0]] = (w[idx] * d[idx]).sum(axis=1) / w[idx].sum(axis=1)
    return out


def _bootstrap(d, w, *, n_resamples: int, level: float, seed: int) -> tuple[float, float, float]:
    """Percentile interval of the weighted mean difference and the bootstrap test p."""
    delta = _weighted_mean(d, w)
    boot = _resampled_means(d, w, n_resamples, np.random.default_rng(seed))
    q = (1.0 - level) / 2.0
    lo, hi = np.quantile(boot, [q, 1.0 - q])
    tol = 1e-12 * max(1.0, abs(delta))
    extreme = int(np.sum(np.abs(boot - delta) >= abs(delta) - tol))
    return float(lo), float(hi), (1 + extreme) / (1 + n_resamples)


def weighted_se(d, w) -> float:
    """Standard error of ``sum w d / sum w``: ``sd(z) / sqrt(n)`` with
    ``z_q = w_q (d_q - delta) / mean(w)`` (linearized ratio; NaN for n < 2)."""
    d = np.asarray(d, dtype=float)
    w = np.asarray(w, dtype=float)
    if d.size < 2:
        return float("nan")
    z = w * (d - _weighted_mean(d, w)) / w.mean()
    return float(z.std(ddof=1) / np.sqrt(d.size))


@validate.params(level=validate.level)
def t_test(d, w=None, *, level: float = 0.95) -> tuple[float, float, float, float]:
    """Paired t-test of the weighted mean difference: ``(delta, lower, upper, p)``.

    ``se = sd(z) / sqrt(n)`` with ``z_q = w_q (d_q - delta) / mean(w)`` (the
    linearized ratio estimator; ``z = d - mean(d)`` for equal weights, which is
    ``scipy.stats.ttest_rel``), ``t = delta / se`` on ``n - 1`` degrees of
    freedom. Fewer than two queries: NaN bounds and p. No spread at all: the
    interval is the point and p is 1 when ``delta = 0``, else 0.
    """
    from scipy import stats

    d = np.asarray(d, dtype=float)
    w = np.ones_like(d) if w is None else np.asarray(w, dtype=float)
    delta = _weighted_mean(d, w)
    n = d.size
    se = weighted_se(d, w)
    if n < 2:
        return delta, float("nan"), float("nan"), float("nan")
    if se == 0:  # every difference the same: no spread to test against
        return delta, delta, delta, 1.0 if delta == 0 else 0.0
    q = float(stats.t.ppf(0.5 + level / 2, n - 1))
    p = float(2 * stats.t.sf(abs(delta / se), n - 1))
    return delta, delta - q * se, delta + q * se, p


@validate.params(level=validate.level, seed=validate.seed)
def paired_difference(a, b, *, test: str = "randomization", n_resamples: int = 10_000,
                      level: float = 0.95, seed: int = 0) -> PairResult:
    """``delta = b - a`` of two metric results with its interval and raw p-value."""
    _check_choice(test, TESTS, "test")
    _check_resamples(n_resamples)
    va, vb, w = paired_values(a, b)
    d = vb - va
    if test == "t":
        delta, lo, hi, p = t_test(d, w, level=level)
        return PairResult(delta, lo, hi, p, d.size)
    lo, hi, p = _bootstrap(d, w, n_resamples=n_resamples, level=level, seed=seed)
    if test == "randomization":
        p = randomization_p(d, w, n_resamples=n_resamples, seed=seed)
    return PairResult(_weighted_mean(d, w), lo, hi, float(p), d.size)


def adjust(p_values, method: str = "holm") -> np.ndarray:
    """Multiplicity-corrected p-values (NaN entries are left out of the family).

    With the ``m`` p-values sorted, ``p_(1) <= ... <= p_(m)``:

    - ``"holm"``: ``p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))`` (Holm 1979);
    - ``"bh"``: ``p~_(i) = min_{j >= i} min(1, m p_(j) / j)`` (Benjamini &
      Hochberg 1995);
    - ``"none"``: unchanged.
    """
    _check_choice(method, CORRECTIONS, "correction")
    p = np.asarray(p_values, dtype=float)
    out = p.copy()
    ok = np.isfinite(p)
    m = int(ok.sum())
    if method == "none" or m == 0:
        return out
    order = np.argsort(p[ok], kind="stable")
    ps = p[ok][order]
    rank = np.arange(1, m + 1)
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - rank + 1) * ps))
    else:
        adj = np.minimum.accumulate(np.minimum(1.0, m * ps / rank)[::-1])[::-1]
    back = np.empty(m)
    back[order] = adj
    out[ok] = back
    return out


@validate.params(level=validate.level)
def tukey_hsd(values, *, blocked: bool = True, level: float = 0.95) -> pd.DataFrame:
    """Tukey's honestly significant differences of the column means of ``values``.

    ``values`` is ``n`` queries by ``k`` systems (complete). Tukey's HSD
    assumes normally distributed errors with one common variance and (in the
    one-way form) independent groups. Per-query scores are not independent
    across systems: they are blocked by query. So by default (``blocked=True``)
    the query and system means are removed first -- a two-way ANOVA without
    interaction (randomized complete block design; Sakai 2018, sec. 4.4):
    ``MSE = sum_{q,s} (x_qs - x_q. - x_.s + x..)^2 / ((n - 1)(k - 1))`` on
    ``(n - 1)(k - 1)`` degrees of freedom. ``blocked=False`` treats the columns
    as independent groups (as ranx does): ``MSE`` pooled within systems on
    ``k(n - 1)`` degrees of freedom, which is ``scipy.stats.tukey_hsd``.

    For each pair ``i < j``: ``diff = mean_j - mean_i``, ``se = sqrt(MSE / n)``,
    ``p = P(Q_{k,df} >= |diff| / se)`` of the studentized range, and the
    simultaneous interval ``diff +- q_{level;k,df} se`` (Tukey 1953).

    Returns
    -------
    DataFrame with columns ``i, j, diff, lower, upper, p_value`` (one row per pair).
    """
    from scipy.stats import studentized_range

    x = np.asarray(values, dtype=float)
    if x.ndim != 2 or x.shape[1] < 2 or x.shape[0] < 2 or not np.isfinite(x).all():
        raise UlrError("Tukey's HSD needs a complete table of at least two queries by two "
                       "systems.")
    n, k = x.shape
    means = x.mean(axis=0)
    if blocked:
        resid = x - x.mean(axis=1, keepdims=True) - means + x.mean()
        df = (n - 1) * (k - 1)
    else:
        resid = x - means
        df = k * (n - 1)
    se = float(np.sqrt((resid ** 2).sum() / df / n))
    crit = _studentized_range_ppf(float(level), k, df)
    rows = []
    for i in range(k):
        for j in range(i + 1, k):
            diff = float(means[j] - means[i])
            p = float(studentized_range.sf(abs(diff) / se, k, df)) if se > 0 else float(diff == 0)
            rows.append(dict(i=i, j=j, diff=diff, lower=diff - crit * se, upper=diff + crit * se,
                             p_value=min(1.0, p)))
    return pd.DataFrame(rows)


@functools.lru_cache(maxsize=256)
def _studentized_range_ppf(level: float, k: int, df: int) -> float:
    """The studentized range quantile, cached: scipy inverts the distribution numerically,
    which is slow, and metrics share k and df."""
    from scipy.stats import studentized_range
    return float(studentized_range.ppf(level, k, df))


def letters(n: int) -> list[str]:
    """``a, b, c, ...``: the names of ``n`` systems in a significance table."""
    if n > len(SUPERSCRIPTS):
        raise UlrError(f"At most {len(SUPERSCRIPTS)} systems can be lettered, got {n}.")
    return list("abcdefghijklmnopqrstuvwxyz"[:n])
