"""The verdict of an off-policy estimate (docs/verdicts.md, "Off-policy evaluation").

The takeaway rests on one estimator, its *basis*, chosen by the result's own
caveats: WIPS when several loggers are declared (pooled IPS mixes their
propensities; balanced IPS first when every logger's propensity is known), else
SLOPE's choice when it was asked for, else by the registry's ``basis_rank``
(SNIPS, DR, self-normalized DR, DRos, Switch-DR, clipped IPS, IPS, DM), skipping
any estimator a caveat calls unreliable (heavy-tailed weights: IPS and clipped
IPS) and any without a defined interval. Only computed estimators compete, and
:func:`ulr.ope.evaluate.evaluate` computes none whose needs the input does not
meet. The question is always "does the target policy differ from the logging
policy?", answered by the interval of the paired difference ``target -
logging`` (same resamples, or the same bound, as the estimates).

A choice never makes the answer stronger than the evidence: when the basis is
not itself a reference (IPS or SNIPS, the least biased estimators every input
identifies), the verdict's level may not exceed the reference's and its
direction must agree, else it is "inconclusive" and names both. The reference
is IPS unless a caveat calls it unreliable, then SNIPS.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ulr import validate
from ulr import verdict as V
from ulr.ope import registry
from ulr.ope.estimators import ratio_replicates, unit_sums
from ulr.planning import plan_to_exclude_zero
from ulr.quantity import Quantity

#: several loggers (the Off-policy page: "trust balanced IPS when available, WIPS otherwise")
#: come first; the rest follow the registry's ``basis_rank`` (``auto``, when asked, first)
LABELS = registry.LABELS


class _Unreliable(Mapping):
    """Read-only, live ``{warning code: estimators it calls unreliable}`` (the records'
    ``unreliable_when``)."""

    def __getitem__(self, k):
        return registry.unreliable_by_warning()[k]

    def __iter__(self):
        return iter(registry.unreliable_by_warning())

    def __len__(self):
        return len(registry.unreliable_by_warning())


#: which estimators each warning code calls unreliable
UNRELIABLE = _Unreliable()
#: warnings that make an estimate meaningless
INVALID = ("no_clicks", "propensity_sum")
#: fewer effective clicks than this: relative standard error 1/sqrt(k) above ``WIDE``
#: (1/0.5^2 = 4), so the answer is inconclusive whatever the interval says
TOO_FEW_EFFECTIVE_CLICKS = 1 / V.WIDE ** 2
#: warnings of thin evidence (the answer is at most directional)
THIN = ("few_clicks", "heavy_tailed", "self_fit", "target_sum")


@validate.params(level=validate.level, n_bootstrap=validate.required_bootstrap, seed=validate.seed)
def bootstrap_difference(num, den, *, cluster=None, n_bootstrap: int = 1000,
                         level: float = 0.95, seed=0, chunk: int = 250,
                         replicates=None) -> pd.DataFrame:
    """Paired percentile-bootstrap interval of ``ratio_j - ratio_last`` for every row j.

    ``num``, ``den`` are the ``(m, n)`` per-row terms of
    :func:`ulr.ope.estimators.bootstrap_ratio`; the last row is the reference
    (the logging policy). Returns ``delta``, ``lower``, ``upper``, ``se`` for the
    first ``m - 1`` rows. ``replicates``: the :func:`ulr.ope.estimators.ratio_replicates`
    of these arguments when already drawn (for the intervals of the estimates), else
    drawn here.
    """
    num = np.atleast_2d(np.asarray(num, dtype=float))
    den = np.atleast_2d(np.asarray(den, dtype=float))
    m, n = num.shape
    s_num, s_den = unit_sums(num, den, cluster)

    def ratio(a, b):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(b > 0, a / np.where(b > 0, b, 1.0), np.nan)

    point = ratio(s_num.sum(axis=0), s_den.sum(axis=0))
    reps = (ratio_replicates(num, den, cluster=cluster, n_bootstrap=n_bootstrap, seed=seed,
                             chunk=chunk) if replicates is None else replicates)
    diff = reps[:, :-1] - reps[:, -1:]
    a = (1 - level) / 2
    ok = np.isfinite(diff).any(axis=0)
    lower, upper, se = (np.full(m - 1, np.nan) for _ in range(3))
    if ok.any():
        lower[ok] = np.nanquantile(diff[:, ok], a, axis=0)
        upper[ok] = np.nanquantile(diff[:, ok], 1 - a, axis=0)
        se[ok] = np.nanstd(diff[:, ok], axis=0, ddof=1)
    return pd.DataFrame({"delta": point[:-1] - point[-1], "lower": lower, "upper": upper,
                         "se": se})


def unreliable(codes) -> set[str]:
    """Estimators the given warning codes call unreliable."""
    return {e for c in codes for e in UNRELIABLE.get(c, ())}


def _preference(several_loggers: bool) -> tuple:
    ranked = sorted((e.basis_rank, k) for k, e in registry.REGISTRY.items()
                    if e.basis_rank is not None and not e.needs_loggers)
    order = (registry.AUTO,) + tuple(k for _, k in ranked)
    if several_loggers:  # pooled single-log estimators mix the loggers' propensities
        multi = sorted((e.basis_rank, k) for k, e in registry.REGISTRY.items()
                       if e.basis_rank is not None and e.needs_loggers)
        return tuple(k for _, k in multi) + tuple(
            e for e in order if e == registry.AUTO or registry.get(e).basis_with_several_loggers)
    return order


def _defined(t: pd.DataFrame) -> set:
    """Estimators with a value and a defined interval (of the estimate and the difference)."""
    ok = t["value"].notna() & t["lower"].notna() & t["upper"].notna()
    if "diff_lower" in t.columns:
        ok &= t["diff_lower"].notna() | t["estimator"].isin(registry.multi_logger())
    return set(t.loc[ok & (t["estimator"] != "logging"), "estimator"])


def choose_basis(table: pd.DataFrame, codes, *, several_loggers: bool) -> str | None:
    """The estimator the takeaway rests on (module doc), or None when none qualifies."""
    have = _defined(table)
    bad = unreliable(codes)
    if "clipped_rate" in set(codes):  # a click-rate estimate outside [0, 1]: its reward
        # model or its weights drive it, and its shown value (clipped) would not match its
        # difference from logging (unclipped); it is never the basis
        raw = table[["value", "lower", "upper"]]
        bad |= set(table.loc[((raw < 0) | (raw > 1)).any(axis=1), "estimator"])
    for e in _preference(several_loggers):
        if e in have and e not in bad:
            return e
    return None


def reference_of(table: pd.DataFrame, codes) -> str | None:
    """The reference the verdict must also hold for: IPS, or SNIPS when a caveat calls
    IPS unreliable (or IPS has no interval); ``None`` when neither was computed."""
    have = _defined(table)
    bad = unreliable(codes)
    if "clipped_rate" in set(codes):  # a click-rate estimate outside [0, 1]: its reward
        # model or its weights drive it, and its shown value (clipped) would not match its
        # difference from logging (unclipped); it is never the basis
        raw = table[["value", "lower", "upper"]]
        bad |= set(table.loc[((raw < 0) | (raw > 1)).any(axis=1), "estimator"])
    references = registry.references()
    for e in references:
        if e in have and e not in bad:
            return e
    return next((e for e in references if e in have), None)


def _judgement(t: pd.DataFrame, basis: str, log_v: float, warnings, codes) -> tuple[str, int]:
    """(level, direction) the difference interval of ``basis`` supports on its own:
    ``inconclusive`` when it contains 0, else ``directional`` with a thin caveat and
    ``reliable`` without; direction +1 / -1 (0 when inconclusive)."""
    row = t.loc[basis]
    dl, du = _difference(row, t, log_v)
    if V.contains_zero(dl, du):
        return "inconclusive", 0
    pat = re.compile(rf"(?<![\w-]){re.escape(basis)}(?![\w-])")
    wide = any(w.code == "wide_interval" and pat.search(w.message) for w in warnings)
    thin = [c for c in codes if c in THIN] + (["wide_interval"] if wide else [])
    return ("directional" if thin else "reliable"), (1 if row["value"] - log_v > 0 else -1)


@validate.params(level=validate.level)
def ope_verdict(table: pd.DataFrame, warnings, diagnostics: dict, *,
                several_loggers: bool = False, level: float = 0.95,
                target: str = "the target policy", mapping=(), chosen: str | None = None
                ) -> V.Verdict:
    """The verdict of an :class:`ulr.ope.evaluate.OPEResult`'s table and warnings.

    ``chosen``: the estimator ``auto`` stands for (named in the takeaway)."""
    codes = [w.code for w in warnings]
    reasons = [V.Reason(w.code, w.message) for w in warnings] + [w.reason() for w in mapping]
    n = float(diagnostics.get("units") or diagnostics.get("n") or 0)
    t = table.set_index("estimator")
    log_v = float(t.loc["logging", "value"]) if "logging" in t.index else float("nan")
    if any(c in INVALID for c in codes):
        return V.Verdict("invalid", f"This log cannot say how {target} would do (see the "
                         "reasons).", "none", reasons=reasons)
    basis = choose_basis(table, codes, several_loggers=several_loggers)
    if several_loggers:
        reasons.append(V.Reason("several_loggers",
                                "Several loggers wrote this log: pooled IPS mixes their "
                                "propensities, so the verdict rests on the combined estimate."))
    if basis is None:
        return V.Verdict("inconclusive", f"No estimate of {target} can be trusted here: the "
                         "importance weights are too heavy-tailed for the estimators computed, "
                         "or none has an interval; add SNIPS.", "none", reasons=reasons)
    row = t.loc[basis]
    value, lower, upper, clipped = V.clip_rate(row["value"], row["lower"], row["upper"])
    if clipped is not None:
        reasons.append(clipped)
    dl, du = _difference(row, t, log_v)
    delta = float(row["value"]) - log_v
    name = LABELS.get(basis, basis)
    if basis == registry.AUTO and chosen:
        name = f"{registry.label(chosen)} (chosen by SLOPE)"
    est_txt = V.fmt_interval(value, lower, upper, level=level, pct=True)
    # the logging rate is rounded as its row of the estimates table reads it: to the SE of
    # its interval (else its SE, else the target's)
    se_log = np.nan
    if "logging" in t.index:
        lr = t.loc["logging"]
        se_log = (V.se_of(lr["lower"], lr["upper"], level)
                  if np.isfinite(lr.get("lower", np.nan)) and np.isfinite(lr.get("upper", np.nan))
                  and lr["upper"] > lr["lower"] else lr.get("se", np.nan))
    se_log = float(se_log) if np.isfinite(se_log) else V.se_of(lower, upper, level)
    log_txt = Quantity("rate", log_v, se=se_log).text()  # the headline's tile reads the same
    estimate = {"estimator": basis, "value": value, "lower": lower, "upper": upper,
                "se": float(row["se"]), "logging": log_v, "logging_se": se_log, "delta": delta,
                "delta_lower": dl, "delta_upper": du, "level": level, "n": n}
    where = f"(by {name}: {est_txt} clicks per row vs {log_txt} for the logging policy)"
    k = diagnostics.get("effective_clicks")
    unit = ("shown lists" if diagnostics.get("units", diagnostics.get("n"))
            != diagnostics.get("n") else "logged rows")  # the bootstrap's resampling unit
    if k is not None and k < TOO_FEW_EFFECTIVE_CLICKS:
        # the relative standard error 1/sqrt(k) exceeds WIDE: no bootstrap interval on so
        # few clicks covers (it undercovers), so no difference is claimed
        return V.Verdict("inconclusive", f"{_cap(target)} cannot be told apart from the logging "
                         f"policy {where}: the estimate rests on {k:.1f} effective clicks.",
                         basis, reasons=reasons + [V.Reason(
                             "too_few_clicks", f"{k:.1f} effective clicks: a relative error of "
                             f"about {1 / np.sqrt(max(k, 1e-9)):.0%}, and its interval cannot "
                             "be trusted.")],
                         to_settle=settle_text(n, delta, dl, du, k, unit=unit, level=level),
                         estimate=estimate)
    lev, direction = _judgement(t, basis, log_v, warnings, codes)
    ref = None if several_loggers or basis in registry.references() else reference_of(table, codes)
    if ref is not None:
        r_lev, r_dir = _judgement(t, ref, log_v, warnings, codes)
        estimate["reference"] = ref
        if lev != "inconclusive" and (r_dir != direction or
                                      V.LEVELS.index(r_lev) > V.LEVELS.index(lev)):
            if r_dir == direction:
                reasons.append(V.Reason("reference_weaker", _reference_text(
                    t, name, ref, log_v, level, r_lev)))
                lev = r_lev
            else:
                reasons.append(V.Reason("estimators_disagree", _reference_text(
                    t, name, ref, log_v, level, r_lev)))
                lev, direction = "inconclusive", 0
    if lev == "inconclusive":
        plan_on = (delta, dl, du)
        if V.contains_zero(dl, du):
            lead = f"{_cap(target)} cannot be told apart from the logging policy {where}"
        else:  # the reference's interval is what has to shrink
            lead = (f"{_cap(target)} cannot be told apart from the logging policy: {name} and "
                    f"{LABELS.get(ref, ref)} disagree {where}")
            plan_on = (float(t.loc[ref, "value"]) - log_v, *_difference(t.loc[ref], t, log_v))
        return V.Verdict("inconclusive", lead + ".", basis, reasons=reasons,
                         to_settle=settle_text(n, *plan_on, k, unit=unit, level=level),
                         estimate=estimate)
    word = "beats" if direction > 0 else "does worse than"
    if lev == "directional":
        return V.Verdict("directional", f"{_cap(target)} probably {word} the logging policy "
                         f"{where}, but the evidence is thin.", basis, reasons=reasons,
                         estimate=estimate)
    return V.Verdict("reliable", f"{_cap(target)} {word} the logging policy {where}.", basis,
                     reasons=reasons, estimate=estimate)


def _reference_text(t, name, ref, log_v, level, r_lev) -> str:
    dl, du = _difference(t.loc[ref], t, log_v)
    d = float(t.loc[ref, "value"]) - log_v
    said = ("cannot tell the two apart" if r_lev == "inconclusive" else
            f"supports only a {r_lev} answer")
    diff = Quantity("points", d, dl, du, level=level)  # a difference of two click rates
    return (f"{name} has the lower variance, but "
            f"{LABELS.get(ref, ref)}, the least biased estimate here, {said} (difference "
            f"{diff.text(interval='to')}), so the verdict goes no further than it.")


@validate.params(level=validate.level)
def settle_text(n, delta, lower, upper, effective_clicks, *, unit: str = "logged rows",
                level: float = 0.95) -> str:
    """``to_settle`` from :func:`ulr.planning.plan_to_exclude_zero`, or what it cannot say."""
    plan = plan_to_exclude_zero(n, delta, lower, upper, effective_clicks=effective_clicks,
                                min_effective_clicks=V.MIN_EFFECTIVE_CLICKS)
    if plan.reason == "few_effective_clicks":
        k = f"{effective_clicks:.1f}" if effective_clicks is not None else "too few"
        head = (f"no size can be planned from this interval: it rests on {k} effective "
                f"clicks, too few to trust its width")
        if plan.more is None:
            return head + "."
        return (head + f"; about {V.about(plan.more)} more {unit} would bring "
                f"{V.MIN_EFFECTIVE_CLICKS} effective clicks, enough to plan from")
    if plan.reason == "exclude_zero" and plan.more == 0:
        return "its interval already excludes 0 at this size"
    if plan.reason == "exclude_zero":
        return (f"about {V.about(plan.more)} more {unit} would give this difference a "
                f"{level:.0%} interval that excludes 0 in about half of such logs, if it "
                "stays this size")
    if plan.reason == "no_difference":
        return "the estimated difference is 0: no amount of data is planned to separate them"
    return "no size can be planned: the difference has no interval."


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _difference(row, t: pd.DataFrame, log_v: float) -> tuple[float, float]:
    """The paired difference interval of ``row`` (normal, unpaired when not stored)."""
    if "diff_lower" in t.columns and np.isfinite(row.get("diff_lower", np.nan)):
        return float(row["diff_lower"]), float(row["diff_upper"])
    se_log = float(t.loc["logging", "se"]) if "logging" in t.index else 0.0
    se = float(np.hypot(row["se"], se_log if np.isfinite(se_log) else 0.0))
    z = V.z_value()
    delta = float(row["value"]) - log_v
    if not np.isfinite(se):
        return float("nan"), float("nan")
    return delta - z * se, delta + z * se


def clipped_table(table: pd.DataFrame) -> pd.DataFrame:
    """The estimates with values and bounds clipped to [0, 1] (click rates), for charts."""
    t = table.copy()
    for c in ("value", "lower", "upper"):
        t[c] = t[c].clip(0.0, 1.0)
    return t
