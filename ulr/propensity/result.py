"""The result every position-bias estimator returns."""

from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

from ulr import validate
from ulr.result import Result, cached_property

#: bootstrap replicates of θ's interval when none are asked for: the Position bias page's
#: default and the ``propensity`` command's, so that both give the same verdict
N_BOOTSTRAP = 50


def _counts(a) -> np.ndarray | None:
    if a is None:
        return None
    arr = np.array(a, dtype=float).reshape(-1)
    arr.setflags(write=False)
    return arr


def _frozen(a, n: int, what: str) -> np.ndarray | None:
    if a is None:
        return None
    arr = np.array(a, dtype=float).reshape(-1)
    if arr.shape != (n,):
        raise ValueError(f"{what} must have one value per position ({n}), got {arr.shape}.")
    arr.setflags(write=False)
    return arr


@validate.params(level=validate.level)
@dataclass(frozen=True)
class PropensityResult(Result):
    """Examination probability per position, relative to position 1.

    Attributes
    ----------
    method : str
        Estimator id, e.g. ``"em"``.
    positions : int
        Number of positions K estimated (1..K).
    theta : ndarray of shape (K,)
        ``theta_k / theta_1``; ``theta[0] == 1``. NaN where the data say nothing.
    lower, upper : ndarray of shape (K,) or None
        The interval of two-sided level ``level``, formed as ``interval`` says.
    absolute : ndarray of shape (K,) or None
        Absolute theta where the method has one (its scale is often weakly
        identified; see ``notes``).
    loglik : tuple of float
        Log-likelihood per iteration (iterative methods).
    rows_used : int
        Impressions (rows) the estimate is based on.
    notes : tuple of str
        Readable remarks (caveats, what was skipped).
    extras : mapping
        Method-specific figures (JSON-able values).
    n_bootstrap, level : int, float
        Replicates behind ``lower``/``upper`` (0 when none were drawn) and the interval's
        level.
    interval : str
        How ``lower``/``upper`` were formed (:data:`ulr.propensity.registry.INTERVALS`):
        ``"bootstrap"`` (standard interval on the log scale from ``n_bootstrap``
        replicates, :func:`ulr.propensity.bootstrap.standard_interval`) or
        ``"information"`` (Wald interval of the fit's Fisher information); ``""`` without
        an interval.
    seconds : float
        Wall-clock time of the estimate.
    clicks, impressions : ndarray or None
        Click counts per position of the log (set by :func:`ulr.propensity.estimate`).
    mapping : tuple of MappingWarning
        The mapping's warnings the verdict weighs.
    misfit : Reason or None
        The PBM-misfit caveat (a better-fitting user model) the verdict carries.
    verdict : Verdict
        How precisely the log pins theta down: set when the result is built, on the
        intervals the chart draws (with ``clicks``: bootstrap, else from the counts).
    """

    method: str
    positions: int
    theta: np.ndarray
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    absolute: np.ndarray | None = None
    loglik: tuple = ()
    rows_used: int = 0
    notes: tuple = ()
    extras: object = field(default_factory=dict)
    n_bootstrap: int = 0
    level: float = 0.95
    interval: str = ""
    seconds: float = 0.0
    #: clicks and impressions per position (1, 2, ...) of the log the estimate ran on
    #: (:func:`ulr.data.summary.ctr_by_position`): with them the verdict judges the
    #: intervals the chart draws, bootstrap else from the counts (set by
    #: :func:`ulr.propensity.estimate`)
    clicks: np.ndarray | None = None
    impressions: np.ndarray | None = None
    #: the mapping's warnings (:func:`ulr.lists.mapping_warnings`) the verdict weighs
    mapping: tuple = ()
    #: the PBM-misfit caveat of the dataset (:func:`ulr.verdict.pbm_misfit`), if any: every
    #: method assumes the position-based model
    misfit: object = None

    @classmethod
    def build(cls, **fields) -> "PropensityResult":
        """The one way to build a result: its inputs normalized (``theta``, ``lower``,
        ``upper``, ``absolute`` as read-only float arrays of one value per position,
        ``clicks`` and ``impressions`` as read-only float arrays, sequences as tuples, a
        copy of ``extras``), then the frozen record, which validates them."""
        f = dict(fields)
        k = int(f["positions"])
        if k < 1:
            raise ValueError("positions must be at least 1.")
        f["positions"] = k
        for name in ("theta", "lower", "upper", "absolute"):
            f[name] = _frozen(f.get(name), k, name)
        for name in ("clicks", "impressions"):
            f[name] = _counts(f.get(name))
        f["loglik"] = tuple(float(v) for v in f.get("loglik", ()))
        f["notes"] = tuple(str(v) for v in f.get("notes", ()))
        f["extras"] = dict(f.get("extras") or {})  # a copy (picklable for caches)
        f["rows_used"] = int(f.get("rows_used", 0))
        f["n_bootstrap"] = int(f.get("n_bootstrap", 0))
        # an interval is the bootstrap's unless its method says otherwise
        f["interval"] = (str(f.get("interval") or "bootstrap") if f.get("lower") is not None
                         else "")
        f["mapping"] = tuple(f.get("mapping", ()))
        return cls(**f)

    def but(self, **changes) -> "PropensityResult":
        """A new result with ``changes`` to its fields, built by :meth:`build` (so raw
        arrays among them are normalized); it has its own verdict."""
        from dataclasses import fields
        return type(self).build(**{**{f.name: getattr(self, f.name) for f in fields(self)},
                                   **changes})

    def __post_init__(self):
        """Validation only: a result is built by :meth:`build` (or copied with
        :func:`dataclasses.replace`, whose fields are already normal)."""
        k = self.positions
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError("positions must be a whole number of at least 1 "
                             "(build a result with PropensityResult.build).")
        for name in ("theta", "lower", "upper", "absolute", "clicks", "impressions"):
            a = getattr(self, name)
            if a is not None and not (isinstance(a, np.ndarray) and a.dtype == float
                                      and a.ndim == 1 and not a.flags.writeable):
                raise ValueError(f"{name} must be a read-only float array (build a result "
                                 "with PropensityResult.build).")
        for name in ("theta", "lower", "upper", "absolute"):
            a = getattr(self, name)
            if a is not None and a.shape != (k,):
                raise ValueError(f"{name} must have one value per position ({k}), "
                                 f"got {a.shape}.")
        if self.theta is None:
            raise ValueError("theta is required.")
        if np.isfinite(self.theta[0]) and abs(self.theta[0] - 1.0) > 1e-9:
            raise ValueError(f"theta must be relative to position 1 (theta[0] = 1), "
                             f"got {self.theta[0]}.")
        if (self.lower is None) != (self.upper is None):
            raise ValueError("lower and upper go together.")
        from ulr.propensity.registry import INTERVALS
        if (self.lower is None) != (self.interval == "") or (
                self.interval and self.interval not in INTERVALS):
            raise ValueError(f"interval must be one of {', '.join(INTERVALS)} with an interval, "
                             "and empty without one.")
        if self.lower is not None:
            both = np.isfinite(self.lower) & np.isfinite(self.upper)
            if np.any(self.lower[both] > self.upper[both] + 1e-12):
                raise ValueError("lower must not exceed upper.")
        for name, kind in (("loglik", tuple), ("notes", tuple), ("extras", dict),
                           ("rows_used", int), ("n_bootstrap", int), ("mapping", tuple)):
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"{name} must be a {kind.__name__} (build a result with "
                                 "PropensityResult.build).")
        if (self.clicks is None) != (self.impressions is None):
            raise ValueError("clicks and impressions go together.")

    @cached_property
    def verdict(self):
        """How precisely the log pins theta down (:meth:`_verdict`), on the intervals the
        chart draws (with ``clicks``: bootstrap, else from the counts)."""
        return self._verdict()

    @property
    def evidence(self) -> dict:
        """The impressions (and, with the log's counts, clicks) the estimate rests on."""
        out = {"rows": self.rows_used}
        if self.clicks is not None:
            out["clicks"] = int(np.nansum(self.clicks))
        return out

    def tables(self) -> dict:
        return {"theta": self.to_frame()}

    @property
    def interval_text(self) -> str:
        """How the interval was formed, in the words every surface uses ("95% interval from
        the Fisher information", "95% interval from 50 bootstrap replicates"); "" without
        one."""
        if self.lower is None:
            return ""
        from ulr.propensity.registry import INTERVALS
        head = f"{int(round(self.level * 100))}% interval from "
        if self.interval == "bootstrap":
            return head + f"{self.n_bootstrap:,} {INTERVALS['bootstrap']}"
        return head + INTERVALS[self.interval]

    @property
    def iterations(self) -> int:
        return len(self.loglik)

    def _verdict(self):
        """How precisely the log pins theta down (docs/verdicts.md, "Position bias").

        Judges the intervals the chart draws: with :attr:`clicks` per position, those of
        :func:`ulr.propensity.precision.precision` (bootstrap, else from the click
        counts, with their relative half-width and its click-count floor), else the
        bootstrap interval alone. The least precise position decides: within
        ±``PRECISE`` of its theta ``reliable``, within ±``WIDE`` ``directional``,
        else (or without any interval) ``inconclusive``. A :attr:`mapping` warning that
        blocks position bias: ``invalid``. :attr:`misfit` caps it at ``directional``.
        """
        from ulr import verdict as V
        lower = upper = relative = None
        if self.clicks is not None:
            from ulr.propensity.precision import precision
            p = precision(self, self.clicks, self.impressions)
            lower, upper = p["lower"], p["upper"]
            relative = np.asarray(p["relative_half_width"], dtype=float)
        return V.with_reason(self._judge(lower, upper, relative), self.misfit)

    def _judge(self, lower, upper, relative):
        """The verdict on the interval ``lower``/``upper`` (None: the bootstrap's), the
        least precise position being the largest ``relative`` half-width (None: the
        interval's own)."""
        from ulr import verdict as V
        from ulr.lists import blocking, stopped_takeaway
        mapping = self.mapping
        lo = self.lower if lower is None else _frozen(lower, self.positions, "lower")
        hi = self.upper if upper is None else _frozen(upper, self.positions, "upper")
        reasons = [w.reason() for w in mapping]
        from ulr.propensity.registry import spec
        unit, analysis = spec(self.method).unit, spec(self.method).analysis
        stops = blocking(mapping, analysis)
        if stops:
            return V.Verdict("invalid", stopped_takeaway(
                stops, "The mapping does not group shown lists, so this estimate of "
                       "position bias means nothing; fix the mapping first."),
                f"theta ({self.method})", reasons=reasons)
        if self.positions < 2:
            return V.Verdict("inconclusive", "With one position there is no position bias to "
                             "estimate.", f"theta ({self.method})", reasons=reasons)
        if lo is None:
            return V.Verdict(
                "inconclusive", "No interval was drawn, so the precision of theta is unknown.",
                f"theta ({self.method})",
                reasons=reasons + [V.Reason("no_interval", "No bootstrap interval.")],
                to_settle="draw bootstrap replicates (resampling sessions) to see how "
                          "precisely theta is known")
        th = self.theta
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = ((hi - lo) / 2 / th if relative is None
                   else np.array(_frozen(relative, self.positions, "relative"), dtype=float))
        known = np.isfinite(rel)
        known[0] = False
        if not known.any():
            return V.Verdict("inconclusive", "The clicks say nothing about positions below 1.",
                             f"theta ({self.method})", reasons=reasons)
        missing = [k + 1 for k in range(1, self.positions) if not known[k]]
        if missing:
            reasons.append(V.Reason("thin_positions", f"No estimate at position(s) "
                                    f"{', '.join(map(str, missing))}: too few clicks there."))
        worst = int(np.nanargmax(np.where(known, rel, -np.inf)))
        r = float(rel[worst])
        level = V.precision_level(r)
        if missing:
            level = V.weakest(level, "directional")
        last = max(k for k in range(self.positions) if known[k])
        se_last = V.se_of(lo[last], hi[last], self.level)
        take = (f"Position {last + 1} is examined {V.fmt(th[last], se_last)} times as often as "
                f"position 1 ({V.fmt_interval(th[last], lo[last], hi[last], level=self.level)}, "
                f"{self.level:.0%} interval); the least precise position, {worst + 1}, is known "
                f"to ±{r:.0%}.")
        more = V.more_for_precision(self.rows_used, r)
        settle = (f"about {V.about(more)} more {unit} would pin theta at position {worst + 1} "
                  f"to ±{V.PRECISE:.0%}" if more else None)
        if level != "reliable" and r > V.PRECISE:
            reasons.append(V.Reason("wide_interval", f"theta at position {worst + 1} is known "
                                    f"only to ±{r:.0%} (reliable within ±{V.PRECISE:.0%})."))
        return V.Verdict(level, take, f"theta ({self.method})", reasons=reasons,
                         to_settle=settle,
                         estimate={"theta": th.tolist(), "lower": lo.tolist(),
                                   "upper": hi.tolist(), "worst_position": worst + 1,
                                   "relative_half_width": r, "level": self.level})

    def to_dict(self) -> dict:
        """JSON-able dict with the docs/contract.md §2 keys first."""
        out = {"method": self.method, "positions": self.positions,
               "theta": self.theta.tolist()}
        if self.lower is not None:
            out["lower"] = self.lower.tolist()
            out["upper"] = self.upper.tolist()
            if self.interval == "bootstrap":
                out["bootstrap"] = self.n_bootstrap  # the CLI's word (--bootstrap)
            out["level"] = self.level
            out["interval"] = self.interval
        if self.absolute is not None:
            out["absolute_theta"] = self.absolute.tolist()
        out["rows_used"] = self.rows_used
        if self.loglik:
            out["iterations"] = self.iterations
            out["log_likelihood"] = list(self.loglik)
        out["notes"] = list(self.notes)
        out.update({k: v for k, v in self.extras.items() if k not in out})
        out["seconds"] = self.seconds
        out["verdict"] = self.verdict.to_dict()
        return out

    def to_frame(self) -> "pd.DataFrame":
        """One row per position: method, position, theta, lower, upper."""
        import pandas as pd  # lazily: the CLI's JSON path never needs it (start-up time)
        k = self.positions
        return pd.DataFrame({
            "method": self.method,
            "position": np.arange(1, k + 1),
            "theta": self.theta,
            "lower": self.lower if self.lower is not None else np.full(k, np.nan),
            "upper": self.upper if self.upper is not None else np.full(k, np.nan),
        })
