"""Resampling over queries: bootstrap confidence intervals and paired tests (Smucker et al. 2007)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ulr import validate
from ulr.errors import UlrError
from ulr.metrics.result import MetricResult, PairedTest


# ---------------------------------------------------------------------------
# Resampling: bootstrap confidence intervals and paired tests over queries
# ---------------------------------------------------------------------------


def query_order(index: pd.Index) -> np.ndarray:
    """Positions that put queries in one order before they are resampled: by id as text.

    Per-query values come in the order the queries first appear in the log, so drawing
    resamples in that order would let the order of the rows (or of a parallel query that
    read them) move an interval or a p-value. Ids are compared as text, as
    :func:`ulr.rankers.evaluate.split_queries` does, so that the same queries read as
    numbers or as text are resampled alike.
    """
    return np.argsort(pd.Index(index).astype(str).to_numpy(dtype=object), kind="stable")


def _weighted_means(v: np.ndarray, w: np.ndarray, n_bootstrap: int, rng) -> np.ndarray:
    """Weighted means of ``n_bootstrap`` query resamples (drawn with replacement)."""
    m = v.size
    out = np.empty(n_bootstrap)
    chunk = max(1, int(5_000_000 // max(m, 1)))
    wv = w * v
    for lo in range(0, n_bootstrap, chunk):  # chunks bound the memory, not a data loop
        hi = min(n_bootstrap, lo + chunk)
        idx = rng.integers(0, m, size=(hi - lo, m))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[lo:hi] = wv[idx].sum(axis=1) / w[idx].sum(axis=1)
    return out


@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap, seed=validate.seed)
def bootstrap_ci(result: MetricResult, *, n_bootstrap: int = 1000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of a metric over queries.

    Queries (with their weights) are resampled with replacement and the
    aggregate ``sum w v / sum w`` is recomputed; the interval is the
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles (Efron & Tibshirani 1993).
    Undefined queries are dropped first. Queries are drawn in :func:`query_order`, so
    the interval does not depend on the order of the log's rows.
    """
    order = query_order(result.per_query.index)
    v = result.per_query.to_numpy(dtype=np.float64)[order]
    w = result.weight.to_numpy(dtype=np.float64)[order]
    ok = ~np.isnan(v) & (w > 0)
    if not ok.any():
        raise UlrError(f"{result.name} has no defined query to resample.")
    stats = _weighted_means(v[ok], w[ok], n_bootstrap, np.random.default_rng(seed))
    a = (1.0 - level) / 2.0
    lo, hi = np.nanquantile(stats, [a, 1.0 - a])
    return float(lo), float(hi)


@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap, seed=validate.seed)
def paired_test(a: MetricResult, b: MetricResult, *, n_bootstrap: int = 2000,
                level: float = 0.95, seed: int = 0) -> PairedTest:
    """Paired comparison ``b - a`` of two rankers evaluated on the same queries.

    On the queries where both are defined, with weights ``w_q`` (ARP: the
    query's total relevance, identical for both rankers; else 1):

    - ``delta = sum_q w_q (b_q - a_q) / sum_q w_q``;
    - a paired percentile-bootstrap interval: queries are resampled jointly;
    - a two-sided randomization (sign-flip) test: under the null each
      per-query difference is as likely to have the opposite sign;
      ``p = (1 + #{|delta*| >= |delta|}) / (1 + n_bootstrap)``
      (Smucker, Allan & Carterette, CIKM 2007).

    Queries are drawn in :func:`query_order`, so neither the interval nor ``p`` depends
    on the order of the log's rows.
    """
    if a.name != b.name:
        raise UlrError(f"Cannot pair different metrics ({a.name} and {b.name}).")
    joined = pd.concat(
        [a.per_query.rename("a"), b.per_query.rename("b"), a.weight.rename("w")],
        axis=1, join="inner",
    ).dropna()
    joined = joined[joined["w"] > 0]
    if joined.empty:
        raise UlrError(f"{a.name}: the two rankers share no query where it is defined.")
    joined = joined.iloc[query_order(joined.index)]
    va = joined["a"].to_numpy()
    vb = joined["b"].to_numpy()
    w = joined["w"].to_numpy()
    wsum = w.sum()
    d = vb - va
    delta = float(np.dot(w, d) / wsum)
    rng = np.random.default_rng(seed)
    boot = _weighted_means(d, w, n_bootstrap, rng)
    q = (1.0 - level) / 2.0
    lo, hi = np.nanquantile(boot, [q, 1.0 - q])
    # sign flips, chunked to bound memory
    m = d.size
    wd = w * d
    extreme = 0
    chunk = max(1, int(2_000_000 // m))
    for start in range(0, n_bootstrap, chunk):
        size = min(chunk, n_bootstrap - start)
        signs = rng.integers(0, 2, size=(size, m), dtype=np.int8) * 2 - 1
        flipped = np.abs(signs @ wd) / wsum
        extreme += int(np.sum(flipped >= abs(delta) - 1e-12 * max(1.0, abs(delta))))
    p = (1 + extreme) / (1 + n_bootstrap)
    return PairedTest(metric=a.name, a=float(np.dot(w, va) / wsum), b=float(np.dot(w, vb) / wsum),
                      delta=delta, lower=float(lo), upper=float(hi), p_value=float(p),
                      n_queries=int(m))
