"""Typed quantities: every number that leaves ulr for a reader, with its kind, and the one
renderer per surface (docs/verdicts.md §2, "Rounding" and "One formatter").

A :class:`Quantity` is a small frozen record: what kind of number it is (a rate, a
difference of rates in points, a relative change, a count, ...), its value, its interval
and standard error, and what it is about. The renderers decide how it reads:

- :meth:`Quantity.text` (screen text: pages, HTML, slides, PDF, PowerPoint, CLI text):
  rounded to its standard error (or to 3 significant digits without one), rates in %, a
  difference of rates in "points", never an exponent, never a signed zero, and an interval
  end that rounds to 0 but is not 0 keeps digits down to its first significant one;
- :func:`cell` (CSV and ZIP cells): at most 10 significant digits, no float noise and no
  exponent, booleans as yes/no, a missing value empty;
- :func:`timestamp` (any date-time shown): "1 December 2026, 19:16 UTC".

One quantity has one precision on a screen because every place that shows it renders the
same record the same way.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass

import numpy as np

from ulr import text

#: the kinds of quantity and how they read
KINDS = {
    "rate": "a share in [0, 1] (click rate, CTR, share of rows), shown in %",
    "points": "a difference of two rates, shown in percentage points",
    "relative": "a relative change (b / a - 1), shown in signed %",
    "count": "a count of rows, clicks, queries, ...",
    "ratio": "a ratio of two quantities (θ_k / θ_1, ...), a plain number",
    "loglik": "a log-likelihood (per session), in nats",
    "weight": "an importance weight, a plain number to 3 significant digits",
    "duration": "a duration in seconds",
    "number": "any other number (a metric value, a difference of metric values)",
    "setting": "a setting as given (η = 2, not 2.000000)",
}


def _finite(v) -> bool:
    return not text.missing(v)


@dataclass(frozen=True)
class Quantity:
    """One number for a reader.

    Parameters
    ----------
    kind : one of :data:`KINDS`
    value : float
    lower, upper : float, optional
        The interval at ``level``.
    se : float, optional
        The standard error; without it, the interval's (``(upper - lower) / (2 z)``).
    level : float
        The interval's two-sided level.
    about : str
        What it is about (``"CTR of the logging policy"``), for a label.
    signed : bool
        Show a sign (``+``) on the value and the ends (differences are always signed).
    """

    kind: str
    value: float
    lower: float | None = None
    upper: float | None = None
    se: float | None = None
    level: float = 0.95
    about: str = ""
    signed: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"a quantity's kind is one of {', '.join(KINDS)}, "
                             f"not {self.kind!r}.")

    # -- what the renderers need

    @property
    def bounded(self) -> bool:
        return _finite(self.lower) and _finite(self.upper)

    @property
    def error(self) -> float | None:
        """The standard error the rounding uses (given, else the interval's)."""
        if _finite(self.se) and float(self.se) > 0:
            return float(self.se)
        if self.bounded and float(self.upper) > float(self.lower):
            from statistics import NormalDist
            z = NormalDist().inv_cdf(0.5 + float(self.level) / 2)
            return (float(self.upper) - float(self.lower)) / (2 * z)
        return None

    @property
    def _sign(self) -> bool:
        return self.signed or self.kind in ("points", "relative")

    # -- screen text

    def number(self, v=None) -> str:
        """``v`` (default: the value) as this quantity reads it, without a unit word."""
        v = self.value if v is None else v
        if not _finite(v):
            return text.MISSING
        k, se, sign = self.kind, self.error, self._sign
        if k in ("rate", "relative"):
            return (text.fmt(v, se, pct=True, sign=sign) if se is not None
                    else text.plain(v, pct=True, sign=sign, sig=2))
        if k == "points":
            s = (text.fmt(float(v) * 100, None if se is None else se * 100, sign=True)
                 if se is not None else text.plain(float(v) * 100, sign=True, sig=2))
            return s
        if k == "count":
            return text.count(v)
        if k == "weight":
            return significant(v, 3)
        if k == "setting":
            return setting(v)
        if k == "duration":
            return text.plain(v, sig=3)
        return text.fmt(v, se, sign=sign) if se is not None else text.plain(v, sign=sign)

    def unit(self, shown: str | None = None) -> str:
        """The unit after ``shown`` (default: the value as shown): "+1 point", "+31 points"."""
        if self.kind == "points" and (shown or self.number()).lstrip("+-") == "1":
            return " point"
        return {"points": " points", "loglik": " nats", "duration": " s"}.get(self.kind, "")

    def text(self, *, interval: str = "brackets") -> str:
        """Screen text: ``"0.42%"``, ``"+31 points [+17, +45]"``,
        ``"1.2% [0.7%, 1.7%]"``; ``interval="to"`` writes ``"... (95% interval a to b)"``,
        ``interval="none"`` the value alone."""
        v = self.number()
        if not self.bounded or interval == "none":
            return v + self.unit()
        lo, hi = self.number(self.lower), self.number(self.upper)
        if interval == "to":
            return f"{v}{self.unit()} ({self.level:.0%} interval {lo} to {hi})"
        if self.kind in ("points", "loglik", "duration"):
            return f"{v}{self.unit()} [{lo}, {hi}]"
        return f"{v} [{lo}, {hi}]"

    def ends(self) -> str:
        """The interval alone: ``"-0.32% to +0.003%"`` (``""`` without one)."""
        if not self.bounded:
            return ""
        # a range is plural: "-6 to +1 points"
        return f"{self.number(self.lower)} to {self.number(self.upper)}{self.unit('range')}"

    def to_dict(self) -> dict:
        def f(v):
            return float(v) if _finite(v) else None
        return {"kind": self.kind, "value": f(self.value), "lower": f(self.lower),
                "upper": f(self.upper), "se": f(self.se), "level": float(self.level),
                "about": self.about}


# --------------------------------------------------------------------------- shorthands


def rate_of(value, n, *, about: str = "") -> Quantity:
    """A click rate (or share) estimated from ``n`` rows, with its binomial standard error
    ``sqrt(p (1 - p) / n)``: it reads to the digits ``n`` supports ("0.42%" on 10,000 rows)."""
    p = float(value)
    se = math.sqrt(max(p * (1 - p), 0.0) / n) if n and _finite(p) and n > 0 else None
    return Quantity("rate", p, se=se or None, about=about)


def show(kind: str, value, **fields) -> str:
    """``Quantity(kind, value, **fields).text()``: one number as the screen reads it (the
    pages' tiles and captions write numbers only through this or :class:`Quantity`)."""
    return Quantity(kind, value, **fields).text()


# --------------------------------------------------------------------------- plain numbers


def significant(v, sig: int = 3) -> str:
    """``v`` to ``sig`` significant digits, thousands separated, never an exponent:
    1058.2 → "1,060", 0.0012345 → "0.00123", 2.0 → "2"."""
    if not _finite(v):
        return text.MISSING
    f = float(v)
    if f == 0:
        return "0"
    mag = math.floor(math.log10(abs(f)))
    if mag >= sig - 1:
        return f"{round(f, -(mag - sig + 1)):,.0f}"
    return text.plain(f, sig=sig)


def setting(v) -> str:
    """A setting as given: 2.0 → "2", 0.5 → "0.5", True → "yes", None → "none"."""
    if v is None:
        return "none"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v)}"
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(float(v)):
            return text.MISSING
        return text.plain(float(v), sig=6)
    return str(v)


# --------------------------------------------------------------------------- CSV cells

#: significant digits a CSV cell keeps: every digit a float's arithmetic can vouch for,
#: none of its noise (0.1 + 0.2 reads 0.3)
CELL_DIGITS = 10


def cell(v):
    """A CSV or ZIP cell: a float to :data:`CELL_DIGITS` significant digits in positional
    notation (0.0008283834000000001 → "0.0008283834", 3.40294e-05 → "0.0000340294"), an
    integer as it is, a boolean "yes"/"no", a missing value "" ; text is kept."""
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if not math.isfinite(f):
            return ""
        if f.is_integer() and abs(f) < 1e15:
            return f"{f:.1f}"
        s = np.format_float_positional(f, precision=CELL_DIGITS, unique=True,
                                       fractional=False, trim="-")
        return s
    try:
        import pandas as pd
        if v is pd.NA or v is pd.NaT:
            return ""
        if isinstance(v, pd.Timestamp):
            return timestamp(v)
    except ImportError:  # pragma: no cover
        pass
    return v


def json_numbers(obj):
    """``obj`` (JSON-able) with every float at most :data:`CELL_DIGITS` significant digits
    (the settings and evidence an export writes as JSON)."""
    if isinstance(obj, dict):
        return {k: json_numbers(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_numbers(v) for v in obj]
    if isinstance(obj, float) and math.isfinite(obj) and not obj.is_integer():
        return float(f"{obj:.{CELL_DIGITS}g}")
    return obj


# --------------------------------------------------------------------------- date-times


def timestamp(v) -> str:
    """A date-time as people read it: "1 December 2026, 19:16 UTC".

    ``v`` is a :class:`datetime.datetime` or ISO 8601 text; a naive value is taken as this
    machine's local time (what :func:`ulr.report.item.now_text` stores). Text that is not a
    date-time is returned as it is; nothing gives "".
    """
    if v is None or (isinstance(v, str) and not v.strip()):
        return ""
    if hasattr(v, "to_pydatetime"):
        v = v.to_pydatetime()
    if isinstance(v, str):
        try:
            v = _dt.datetime.fromisoformat(v.strip())
        except ValueError:
            return v
    if not isinstance(v, _dt.datetime):
        return str(v)
    u = v.astimezone(_dt.timezone.utc)
    return f"{u.day} {u:%B %Y, %H:%M} UTC"
