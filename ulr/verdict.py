"""One verdict per result: how strongly the evidence supports the answer.

Every result type of ulr carries a :class:`Verdict` as its ``verdict`` (the one
result protocol, :mod:`ulr.result`), a pure function of the result's fields (the function
that builds it takes what the verdict weighs, e.g. the log's ``mapping`` warnings): a level, one plain sentence, the
quantity it rests on, the reasons that weaken it and, where computable, how much
more evidence would settle it.
The page, the saved takeaway, the slide and the ``--json`` output all show
this one object, so they can never disagree. The rules are written once,
here, and documented in ``docs/verdicts.md``.

Levels, strongest first:

- ``reliable``: the interval of the decisive quantity excludes "no
  difference" (or is at most ±``PRECISE`` of the estimate when there is no
  comparison), and no rule of thin evidence fires.
- ``directional``: the sign (or the rough size) is supported, but the
  evidence is thin by a documented rule (few effective clicks, heavy-tailed
  weights, an interval wider than ±``WIDE`` of the estimate, labels
  estimated from clicks, ...). Read it as a hint.
- ``inconclusive``: the interval of the difference contains 0 (the two
  "cannot be told apart"), or there is no interval, or it is wider than
  ±``WIDE`` of a plain estimate.
- ``invalid``: the data cannot answer the question at all (a broken
  mapping, no clicks the estimator can see, propensities that are not the
  logging policy's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ulr import validate
from ulr.text import fmt  # noqa: F401  (the one formatter; re-exported)
from ulr.text import se_decimals as decimals  # noqa: F401

LEVELS = ("reliable", "directional", "inconclusive", "invalid")
#: a plain estimate is "reliable" when its interval is within ±20% of it
PRECISE = 0.20
#: ... and at most "directional" while within ±50% (beyond: "inconclusive")
WIDE = 0.50
#: fewer effective clicks than this make any click-based answer thin: the
#: relative standard error is about 1/sqrt(effective clicks), 18% at 30
MIN_EFFECTIVE_CLICKS = 30
#: the two-sided level the verdicts use unless a result carries its own
LEVEL = 0.95


@dataclass(frozen=True)
class Reason:
    """One caveat of a verdict: a stable ``code`` and a plain-words ``message``."""

    code: str
    message: str

    def __post_init__(self):
        if not isinstance(self.code, str) or not self.code.isidentifier():
            raise ValueError(f"a reason code is an identifier, got {self.code!r}.")
        if not isinstance(self.message, str) or not self.message.strip():
            raise ValueError("a reason needs a message.")

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Verdict:
    """What a result can support.

    Attributes
    ----------
    level : {"reliable", "directional", "inconclusive", "invalid"}
    takeaway : str
        One sentence, with numbers rounded to what their standard error supports.
    basis : str
        The quantity or estimator the takeaway rests on (e.g. ``"snips"``,
        ``"paired ndcg@10 difference"``).
    reasons : tuple of Reason
        Why the level is not higher (empty for a plain ``reliable``).
    to_settle : str or None
        What evidence would settle the question, where it can be computed.
    estimate : dict
        The numbers behind the takeaway (``value``, ``lower``, ``upper``,
        ``se``, ...), JSON-able, unrounded.
    """

    level: str
    takeaway: str
    basis: str
    reasons: tuple = ()
    to_settle: str | None = None
    estimate: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {self.level!r}.")
        if not isinstance(self.takeaway, str) or not self.takeaway.strip():
            raise ValueError("a verdict needs a takeaway sentence.")
        if not isinstance(self.basis, str) or not self.basis:
            raise ValueError("a verdict names its basis.")
        reasons = tuple(r if isinstance(r, Reason) else Reason(**r) for r in self.reasons)
        object.__setattr__(self, "reasons", tuple(dict.fromkeys(reasons)))
        object.__setattr__(self, "estimate", {k: _plain(v) for k, v in dict(self.estimate).items()})

    @property
    def codes(self) -> list[str]:
        return [r.code for r in self.reasons]

    @property
    def label(self) -> str:
        """The level as a badge word: "Reliable", "Directional", ..."""
        return self.level.capitalize()

    def to_dict(self) -> dict:
        return {"level": self.level, "takeaway": self.takeaway, "basis": self.basis,
                "reasons": [r.to_dict() for r in self.reasons], "to_settle": self.to_settle,
                "estimate": dict(self.estimate)}

    @classmethod
    def from_dict(cls, d: dict) -> "Verdict":
        return cls(level=d["level"], takeaway=d["takeaway"], basis=d["basis"],
                   reasons=tuple(Reason(**r) for r in d.get("reasons", ())),
                   to_settle=d.get("to_settle"), estimate=d.get("estimate") or {})


def _plain(v):
    if isinstance(v, (np.floating, float)):
        return float(v) if math.isfinite(float(v)) else None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_plain(x) for x in v]
    return v


def weakest(*levels: str) -> str:
    """The weakest of the given levels (``invalid`` is the weakest)."""
    return max(levels, key=LEVELS.index)


# --------------------------------------------------------------------------- numbers


@validate.params(level=validate.level)
def z_value(level: float = LEVEL) -> float:
    """Two-sided normal quantile of ``level`` (1.96 at 95%)."""
    from statistics import NormalDist
    return NormalDist().inv_cdf(0.5 + float(level) / 2)


@validate.params(level=validate.level)
def se_of(lower, upper, level: float = LEVEL) -> float:
    """Standard error implied by a two-sided interval at ``level``."""
    return float(upper - lower) / (2 * z_value(level))


@validate.params(level=validate.level)
def fmt_interval(value, lower, upper, *, level: float = LEVEL, pct: bool = False,
                 sign: bool = False) -> str:
    """``"0.014 [0.010, 0.018]"``, each rounded to the interval's standard error."""
    se = se_of(lower, upper, level) if np.isfinite(lower) and np.isfinite(upper) else None
    return (f"{fmt(value, se, pct=pct, sign=sign)} [{fmt(lower, se, pct=pct, sign=sign)}, "
            f"{fmt(upper, se, pct=pct, sign=sign)}]")


def clip_rate(value, lower, upper, *, what: str = "click rate"):
    """Clip an estimate of a rate and its interval to [0, 1].

    Returns ``(value, lower, upper, reason)``; ``reason`` is a
    :class:`Reason` (code ``clipped_rate``) when anything was outside the range.
    """
    vals = [float(v) for v in (value, lower, upper)]
    out = [min(1.0, max(0.0, v)) if np.isfinite(v) else v for v in vals]
    reason = None
    if any(np.isfinite(a) and a != b for a, b in zip(vals, out)):
        reason = Reason("clipped_rate",
                        f"The estimator left the possible range of a {what} "
                        f"({fmt_interval(*vals)}); shown clipped to [0, 1]. A negative "
                        "estimate means its reward model, not the clicks, drives it.")
    return out[0], out[1], out[2], reason


# --------------------------------------------------------------------------- comparisons


def contains_zero(lower, upper) -> bool:
    """True when the interval ``[lower, upper]`` contains 0 (or is unknown)."""
    if lower is None or upper is None or not (np.isfinite(lower) and np.isfinite(upper)):
        return True
    return lower <= 0.0 <= upper


def told_apart(lower, upper) -> bool:
    """Two quantities can be told apart when their difference's interval excludes 0."""
    return not contains_zero(lower, upper)


def rank_identically(query_ids, scores_a, scores_b) -> bool:
    """True when two scorings order every list (query) identically, ties included."""
    import pandas as pd
    df = pd.DataFrame({"q": np.asarray(query_ids), "a": np.asarray(scores_a, dtype=float),
                       "b": np.asarray(scores_b, dtype=float)})
    g = df.groupby("q", sort=False)
    ra = g["a"].rank(method="dense")
    rb = g["b"].rank(method="dense")
    return bool(np.array_equal(ra.to_numpy(), rb.to_numpy()))


def more_to_exclude_zero(n: float, delta: float, lower: float, upper: float) -> int | None:
    """About how many more units would give ``delta`` an interval excluding 0.

    The half-width shrinks as ``1/sqrt(n)``; it must fall below ``|delta|``, so
    ``n_total = n (half / |delta|)^2``. ``None`` when there is no difference or
    no interval.
    """
    half = (upper - lower) / 2
    if not (np.isfinite(half) and np.isfinite(delta)) or delta == 0 or n <= 0 or half <= 0:
        return None
    total = n * (half / abs(delta)) ** 2
    return max(1, int(math.ceil(total - n)))


def more_for_precision(n: float, relative_half_width: float, target: float = PRECISE
                       ) -> int | None:
    """About how many more units would shrink a relative half-width to ``target``."""
    r = relative_half_width
    if not np.isfinite(r) or n <= 0 or r <= 0:
        return None
    if r <= target:
        return 0
    return max(1, int(math.ceil(n * (r / target) ** 2 - n)))


def about(n: int) -> str:
    """A count rounded to two significant digits, with thousands separators."""
    if n <= 0:
        return "0"
    mag = 10 ** max(0, int(math.floor(math.log10(n))) - 1)
    return f"{int(math.ceil(n / mag) * mag):,}"


def precision_level(relative_half_width) -> str:
    """``reliable`` within ±PRECISE, ``directional`` within ±WIDE, else ``inconclusive``."""
    r = relative_half_width
    if r is None or not np.isfinite(r):
        return "inconclusive"
    if r <= PRECISE:
        return "reliable"
    if r <= WIDE:
        return "directional"
    return "inconclusive"


@validate.params(level=validate.level)
def difference_verdict(delta: float, lower: float, upper: float, *, a: str, b: str,
                       quantity: str, basis: str, n: float, unit: str,
                       higher_is_better: bool = True, level: float = LEVEL, pct: bool = False,
                       thin: tuple = ()) -> Verdict:
    """The verdict on ``delta = b - a`` of ``quantity`` with its interval.

    Contains 0: ``inconclusive``, "``a`` and ``b`` cannot be told apart";
    otherwise ``reliable``, or ``directional`` when ``thin`` (reasons of thin
    evidence) is not empty. With ``pct`` (``delta`` is a difference of two rates) the
    difference reads in percentage points ("+31 points [+17, +45]"). ``n`` units
    (``unit``: "test queries", "sessions", ...) lie behind the interval, for
    :func:`more_to_exclude_zero`.
    """
    if pct:  # a difference of two rates is in percentage points: "+31 points [+17, +45]"
        from ulr.quantity import Quantity
        iv = Quantity("points", delta, lower, upper, level=level).text()
    else:
        iv = fmt_interval(delta, lower, upper, level=level, sign=True)
    estimate = {"delta": delta, "lower": lower, "upper": upper, "level": level, "n": n}
    if contains_zero(lower, upper):
        more = more_to_exclude_zero(n, delta, lower, upper)
        settle = (f"about {about(more)} more {unit} would give this difference a "
                  f"{level:.0%} interval that excludes 0, if it stays this size"
                  if more is not None else None)
        return Verdict("inconclusive",
                       f"{b} and {a} cannot be told apart on {quantity}: the difference is "
                       f"{iv} ({level:.0%} interval, {n:,.0f} {unit}).",
                       basis, reasons=tuple(thin), to_settle=settle, estimate=estimate)
    b_better = (delta > 0) == bool(higher_is_better)
    word = "better" if b_better else "worse"
    lvl = "directional" if thin else "reliable"
    hedge = "probably " if thin else ""
    return Verdict(lvl, f"{b} is {hedge}{word} than {a} on {quantity}: the difference is "
                        f"{iv} ({level:.0%} interval, {n:,.0f} {unit}).",
                   basis, reasons=tuple(thin), estimate=estimate)


@validate.params(level=validate.level)
def paired_t_interval(diffs, level: float = LEVEL) -> tuple[float, float, float, float]:
    """Mean, lower, upper and se of paired differences (Student t; NaN bounds for n < 2)."""
    d = np.asarray(diffs, dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return float("nan"), float("nan"), float("nan"), float("nan")
    m = float(d.mean())
    if d.size < 2:
        return m, float("nan"), float("nan"), float("nan")
    from scipy.stats import t
    se = float(d.std(ddof=1) / np.sqrt(d.size))
    q = float(t.ppf(0.5 + level / 2, d.size - 1))
    return m, m - q * se, m + q * se, se


# --------------------------------------------------------------------------- results that know each other


@validate.params(level=validate.level)
def pbm_misfit(comparison, *, level: float = LEVEL) -> Reason | None:
    """The caveat of a PBM-based result (θ, IPW) when the dataset's user-model comparison
    finds the PBM fitting worse than its best model beyond noise, else ``None``.

    ``comparison`` is a :class:`ulr.clickmodels.evaluate.Comparison` (read through its
    public fields: ``best``, ``scores`` with ``gap`` and ``gap_interval``, and
    ``test_sessions``). "Beyond noise": the bootstrap interval of the PBM's gap in held-out
    log-likelihood per session excludes 0. Without the PBM, without a bootstrap, or with
    the PBM best or within noise of the best, there is nothing to say. Every surface reads
    it through the dataset's facts (:func:`ulr.facts.pbm_fit`).
    """
    if comparison is None:
        return None
    from ulr.clickmodels.records import assumed  # the PBM, by its record
    pbm = next((s for s in comparison.scores if s.name == assumed()), None)
    if pbm is None or comparison.best == assumed() or pbm.gap_interval is None:
        return None
    lo, hi = (float(x) for x in pbm.gap_interval)
    if not (np.isfinite(lo) and np.isfinite(hi)) or not told_apart(lo, hi):
        return None
    return pbm_misfit_reason(best=comparison.best, gap=pbm.gap, lower=lo, upper=hi,
                             test_sessions=comparison.test_sessions, level=level)


@validate.params(level=validate.level)
def pbm_misfit_reason(*, best: str, gap: float, lower: float, upper: float,
                      test_sessions: int, level: float = LEVEL) -> Reason:
    """The ``pbm_misfit`` caveat's one wording: the best model, the PBM's gap in held-out
    log-likelihood per session and its interval."""
    from ulr.clickmodels import LABELS
    se = se_of(lower, upper, level)
    return Reason("pbm_misfit",
                  f"This result assumes the position-based model (PBM), and the user-model "
                  f"comparison on the same dataset finds the PBM fitting worse than "
                  f"{LABELS.get(best, best)} by "
                  f"{fmt(gap, se)} nats per session ({level:.0%} interval "
                  f"{fmt(lower, se)} to {fmt(upper, se)}, {int(test_sessions):,} held-out "
                  "sessions): read it as an approximation.")


def with_reason(v: Verdict, reason: Reason | None, *, cap: str = "directional") -> Verdict:
    """``v`` with one more caveat, its level capped at ``cap`` (``v`` itself for ``None``)."""
    if reason is None:
        return v
    from dataclasses import replace
    return replace(v, level=weakest(v.level, cap), reasons=v.reasons + (reason,))
