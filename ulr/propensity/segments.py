"""Position bias by segment: theta per value of a column (device, query type, ...), and
whether the segments differ (Fang, Agarwal & Joachims, "Intervention harvesting for
context-dependent examination-bias estimation", SIGIR 2019).

``by_segment(log, method=M, column=C)`` runs the estimator ``M`` on the rows of each value
of ``C`` (the column kept at load as an extra column: :mod:`ulr.data.mapping`) and compares
each segment with the others at every position 2..K:

- each segment's interval is the one its chart draws (:func:`ulr.propensity.precision.
  precision`: bootstrap, widened to the click-count floor), turned into a standard error
  ``se_k = rel_k theta_k / z``;
- "the others" of a segment are the inverse-variance weighted mean of the other segments'
  theta (with two segments, the other one), with ``se = 1 / sqrt(sum 1 / se_j^2)``;
- the difference ``delta_k = theta_k - theta_others_k`` has ``se = sqrt(se^2 + se_o^2)``
  (disjoint rows, independent estimates), a two-sided normal p-value, and the interval
  at the Bonferroni level ``1 - (1 - level) / m`` over the ``m`` tests (positions, times
  segments when there are more than two; with two segments the differences mirror each
  other and are tested once): simultaneous intervals.

The verdict corrects for testing every position with Holm's step-down (Holm 1979;
:func:`ulr.rankers.significance.adjust`): the segments differ when some Holm-adjusted
p-value is below ``1 - level``, which happens exactly when some simultaneous interval
excludes 0 (Holm's first step is Bonferroni's test of the smallest p-value); otherwise they
"cannot be told apart" (inconclusive).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from ulr import validate
from ulr.errors import Cancelled, UlrError, check
from ulr.result import Result, cached_property
from ulr.verdict import Reason, Verdict, fmt_interval

MAX_SEGMENTS = 12  # a column with more values is not a segment column (say so, do not guess)
MIN_SEGMENT_ROWS = 1  # a value seen at least once is a segment


def _quote(column: str) -> str:
    from ulr.data.schema import safe_ident
    try:
        return safe_ident(column)
    except ValueError:
        raise UlrError(f"{column!r} is not a column name of a loaded log (lowercase letters, "
                       "digits and underscores).") from None


def segment_columns(log, *, max_values: int = MAX_SEGMENTS) -> dict:
    """The log's columns that can split it into segments: every column that is not one of
    the canonical roles the estimators read nor a feature, with 2..``max_values`` distinct
    non-missing values; ``{column: number of values}``, in the log's column order."""
    from ulr.data.scan import scan_of
    from ulr.data.schema import CANONICAL, FEATURE_PREFIX
    scan = scan_of(log)
    cand = [c for c in scan.columns if c not in CANONICAL and not c.startswith(FEATURE_PREFIX)
            and c not in ("true_theta",)]
    cand = [c for c in cand if c.isidentifier() and c == c.lower()]
    if not cand:
        return {}
    row = scan.execute("SELECT " + ", ".join(f"count(DISTINCT {_quote(c)})" for c in cand)
                       + " FROM {src}").fetchone()
    return {c: int(n) for c, n in zip(cand, row) if 2 <= int(n) <= int(max_values)}


def _values(scan, column: str) -> list[tuple[str, int]]:
    rows = scan.execute(f"SELECT CAST({column} AS VARCHAR) AS v, count(*) FROM {{src}} "
                        f"GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT {MAX_SEGMENTS + 2}").fetchall()
    return [(v, int(n)) for v, n in rows]


def _segment_scan(scan, column: str, value: str):
    return dataclasses.replace(
        scan, from_sql=(f"(SELECT * FROM {scan.from_sql} WHERE CAST({column} AS VARCHAR) = "
                        "$ulr_by_value)"),
        params={**scan.params, "ulr_by_value": value}, rows=None, content_hash=None, log=None,
        memo={}, cells=None, keys_sql=None)


@dataclass(frozen=True)
class SegmentResult(Result):
    """theta by segment, each segment's difference from the others, and the verdict.

    Attributes
    ----------
    method, column : str
        The estimator and the column the log was split by.
    values : tuple of str
        The segments, most rows first.
    results : dict
        ``{value: PropensityResult}``.
    theta, lower, upper : dict
        ``{value: (K,) array}``: each segment's estimate and the interval its chart draws.
    delta, delta_lower, delta_upper, p_holm : dict
        ``{value: (K,) array}``: theta minus the others', its simultaneous interval and its
        Holm-adjusted p-value (NaN at position 1 and where a side has no estimate).
    """

    method: str
    column: str
    positions: int
    values: tuple
    results: dict
    theta: dict
    lower: dict
    upper: dict
    delta: dict
    delta_lower: dict
    delta_upper: dict
    p_holm: dict
    level: float = 0.95
    simultaneous_level: float = 0.95
    tests: int = 0
    notes: tuple = ()
    seconds: float = 0.0

    @cached_property
    def verdict(self) -> Verdict:
        return self._verdict()

    @property
    def evidence(self) -> dict:
        """The rows each segment's estimate rests on."""
        return {f"rows with {self.column} = {v}": int(self.results[v].rows_used)
                for v in self.values}

    def _verdict(self) -> Verdict:
        col = self.column
        basis = (f"theta ({self.method}) by {col}: each segment against the others at every "
                 f"position, Holm-corrected over {self.tests} tests")
        alpha = 1 - self.level
        hits = [(v, k) for v in self.values for k in range(1, self.positions)
                if np.isfinite(self.p_holm[v][k]) and self.p_holm[v][k] < alpha]
        estimate = {"segments": list(self.values), "tests": self.tests,
                    "differing": [[v, k + 1] for v, k in hits], "level": self.level,
                    "simultaneous_level": self.simultaneous_level}
        reasons = [Reason("thin_segment", f"The {col} segment {v!r} has no estimate at some "
                                          "positions: too few clicks there.")
                   for v in self.values if not np.all(np.isfinite(self.theta[v]))]
        if self.tests == 0:
            return Verdict("inconclusive", f"Position bias by {col} cannot be compared: no "
                           "position below 1 has an estimate in two segments.", basis,
                           reasons=reasons, estimate=estimate)
        if not hits:
            widest = max(((v, k) for v in self.values for k in range(1, self.positions)
                          if np.isfinite(self.delta[v][k])),
                         key=lambda t: abs(self.delta[t[0]][t[1]]), default=None)
            extra = ""
            if widest is not None:
                v, k = widest
                extra = (f"; the largest difference, {v!r} at position {k + 1}, is "
                         f"{fmt_interval(self.delta[v][k], self.delta_lower[v][k], self.delta_upper[v][k], level=self.simultaneous_level, sign=True)}")
            return Verdict(
                "inconclusive",
                f"Position bias cannot be told apart between the {col} segments "
                f"({', '.join(self.values)}): every difference's simultaneous "
                f"{self.level:.0%} interval contains 0" + extra + ".", basis,
                reasons=reasons, estimate=estimate,
                to_settle="more sessions in each segment would narrow the intervals")
        v, k = min(hits, key=lambda t: self.p_holm[t[0]][t[1]])
        d, lo, hi = self.delta[v][k], self.delta_lower[v][k], self.delta_upper[v][k]
        where = "lower" if d < 0 else "higher"
        positions = sorted({k2 + 1 for _, k2 in hits})
        take = (f"Position bias differs by {col}: at position {k + 1}, {v!r} has a "
                f"{where} theta than the others (difference "
                f"{fmt_interval(d, lo, hi, level=self.simultaneous_level, sign=True)}, "
                f"simultaneous {self.level:.0%} interval); "
                f"{len(positions)} of {self.positions - 1} positions differ after Holm's "
                "correction.")
        return Verdict("directional" if reasons else "reliable", take, basis,
                       reasons=reasons, estimate=estimate)

    def tables(self) -> dict:
        import pandas as pd
        return {"theta by segment": pd.DataFrame([
            {"segment": v, "position": k + 1, "theta": self.theta[v][k],
             "lower": self.lower[v][k], "upper": self.upper[v][k],
             "difference": self.delta[v][k], "difference lower": self.delta_lower[v][k],
             "difference upper": self.delta_upper[v][k], "p (Holm)": self.p_holm[v][k]}
            for v in self.values for k in range(self.positions)])}

    def to_dict(self) -> dict:
        def lst(a):
            return [None if not np.isfinite(x) else float(x) for x in np.asarray(a, float)]
        segs = {}
        for v in self.values:
            r = self.results[v]
            segs[v] = {"theta": lst(self.theta[v]), "lower": lst(self.lower[v]),
                       "upper": lst(self.upper[v]), "rows": int(r.rows_used),
                       "clicks": int(np.nansum(r.clicks)) if r.clicks is not None else None,
                       "difference": {"delta": lst(self.delta[v]),
                                      "lower": lst(self.delta_lower[v]),
                                      "upper": lst(self.delta_upper[v]),
                                      "p_holm": lst(self.p_holm[v])},
                       "verdict": r.verdict.to_dict()}
        return {"method": self.method, "by": self.column, "positions": self.positions,
                "segments": segs, "level": self.level,
                "simultaneous_level": self.simultaneous_level, "tests": self.tests,
                "notes": list(self.notes), "seconds": self.seconds,
                "verdict": self.verdict.to_dict()}


@validate.params(level=validate.level)
def compare_segments(method: str, column: str, results: dict, *, level: float = 0.95,
                     notes=()) -> SegmentResult:
    """The differences and verdict from ``{value: PropensityResult}`` (module docstring)."""
    from ulr.propensity.precision import precision
    from ulr.rankers.significance import adjust
    from ulr.stats import normal_quantile
    from statistics import NormalDist
    values = tuple(results)
    k = min(r.positions for r in results.values())
    z = normal_quantile(0.5 + level / 2)
    th, lo, hi, se = {}, {}, {}, {}
    for v, r in results.items():
        c = r.clicks if r.clicks is not None else np.zeros(r.positions)
        n = r.impressions if r.impressions is not None else np.zeros(r.positions)
        p = precision(r, c, n)
        th[v] = np.asarray(p["theta"], float)[:k]
        lo[v] = np.asarray(p["lower"], float)[:k]
        hi[v] = np.asarray(p["upper"], float)[:k]
        with np.errstate(invalid="ignore"):
            s = np.asarray(p["relative_half_width"], float)[:k] * th[v] / z
        s[~np.isfinite(th[v])] = np.nan
        se[v] = s
    tested = values[:1] if len(values) == 2 else values
    delta, dse, praw = {}, {}, {}
    for v in values:
        others = [u for u in values if u != v]
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.array([np.where((se[u] > 0) & np.isfinite(se[u]) & np.isfinite(th[u]),
                                   1 / se[u] ** 2, 0.0) for u in others])
            tot = w.sum(axis=0)
            mean = np.where(tot > 0, (w * np.nan_to_num(np.array([th[u] for u in others]))
                                      ).sum(axis=0) / tot, np.nan)
            se_o = np.where(tot > 0, 1 / np.sqrt(tot), np.nan)
            d = th[v] - mean
            s = np.sqrt(se[v] ** 2 + se_o ** 2)
            ok = np.isfinite(d) & np.isfinite(s) & (s > 0)
            ok[0] = False
            pz = np.full(k, np.nan)
            pz[ok] = [2 * (1 - NormalDist().cdf(abs(x))) for x in d[ok] / s[ok]]
        delta[v], dse[v], praw[v] = np.where(ok, d, np.nan), np.where(ok, s, np.nan), pz
    flat = np.concatenate([praw[v] for v in tested])
    m = int(np.isfinite(flat).sum())
    adj = adjust(flat, "holm") if m else flat
    p_holm = {v: np.full(k, np.nan) for v in values}
    for i, v in enumerate(tested):
        p_holm[v] = adj[i * k:(i + 1) * k]
    if len(values) == 2:  # the mirror: the same test
        p_holm[values[1]] = p_holm[values[0]].copy()
    sim = 1 - (1 - level) / max(m, 1)
    zs = normal_quantile(0.5 + sim / 2)
    dlo = {v: delta[v] - zs * dse[v] for v in values}
    dhi = {v: delta[v] + zs * dse[v] for v in values}
    return SegmentResult(method=method, column=column, positions=k, values=values,
                         results=dict(results), theta=th, lower=lo, upper=hi, delta=delta,
                         delta_lower=dlo, delta_upper=dhi, p_holm=p_holm, level=level,
                         simultaneous_level=sim, tests=m, notes=tuple(notes))


@validate.params(level=validate.level, n_bootstrap=validate.n_bootstrap, seed=validate.seed)
def by_segment(log, *, method: str, column: str, positions: int | None = None,
               n_bootstrap: int = 0, seed: int = 0, level: float = 0.95, progress=None,
               should_stop=None, mapping=(), interval: str | None = None) -> SegmentResult:
    """theta by ``method`` on each value of ``column``, and whether the segments differ.

    Parameters
    ----------
    log : ulr.data.log.Log
        A stored log (its extra columns are kept at load).
    method : str
        Any of :data:`ulr.propensity.METHODS`.
    column : str
        A column of the log with 2..``MAX_SEGMENTS`` values (missing values are left out).
    positions, n_bootstrap, seed, level, should_stop, mapping, interval
        As :func:`ulr.propensity.estimate`, for every segment (each forms its own interval).
    """
    from ulr import propensity
    from ulr.data.scan import scan_of
    t0 = time.perf_counter()
    scan = scan_of(log)
    col = _quote(column)
    if not scan.has(col):
        raise UlrError(f"the log {scan.name!r} has no column {column!r} to split by; its "
                       f"columns: {', '.join(scan.columns)}.")
    from ulr.data.schema import REQUIRED
    if col in REQUIRED:
        raise UlrError(f"{column!r} is one of the columns every estimate reads; split by a "
                       "column such as a device or a query type.")
    vals = _values(scan, col)
    missing = sum(n for v, n in vals if v is None)
    vals = [(v, n) for v, n in vals if v is not None]
    if len(vals) < 2:
        raise UlrError(f"the column {column!r} has {len(vals)} value"
                       f"{'' if len(vals) == 1 else 's'}; splitting needs at least two.")
    if len(vals) > MAX_SEGMENTS:
        raise UlrError(f"the column {column!r} has more than {MAX_SEGMENTS} values; split by "
                       f"a column with at most {MAX_SEGMENTS} (a device, a query type).")
    notes = []
    if missing:
        notes.append(f"{missing:,} rows without a {column} value are left out.")
    results, failed = {}, []
    for i, (v, _) in enumerate(vals):
        check(should_stop)
        if progress is not None:
            progress(i / len(vals), f"{column} = {v}")
        try:
            results[v] = propensity.estimate(_segment_scan(scan, col, v), method=method,
                                             positions=positions, n_bootstrap=n_bootstrap,
                                             seed=seed, level=level, should_stop=should_stop,
                                             mapping=mapping, weigh_facts=False,
                                             interval=interval)  # the
            # segments' verdict is their own; the facts are the whole log's
        except Cancelled:
            raise
        except UlrError as exc:
            failed.append(v)
            notes.append(f"{method} cannot run on the {column} segment {v!r}: {exc}")
    if len(results) < 2:
        raise UlrError(f"{method} ran on {len(results)} of the {column} segments; comparing "
                       "needs two. " + " ".join(notes))
    res = compare_segments(method, col, results, level=level, notes=notes)
    return dataclasses.replace(res, seconds=time.perf_counter() - t0)
