"""What an off-policy evaluation says about itself: weight diagnostics, its warnings and
their sentences (split from :mod:`ulr.ope.evaluate`, issue 53).

Warning rules (documented thresholds; the issue left them open):

- ``heavy_tailed`` -- Kish's effective sample size is below 10% of the rows
  (``ESS / n < 0.10``), or one row carries more than 5% of the total
  importance weight (``max w / sum w > 0.05``). Either way a handful of rows
  decide the IPS estimate, and the bootstrap interval is not to be trusted.
- ``few_clicks`` -- fewer than 30 *effective clicks*: the effective sample size
  of the weights restricted to clicked rows, ``(sum_{r_i>0} w_i)^2 /
  sum_{r_i>0} w_i^2``. With a click-through rate under 1% this is what limits
  the precision (the relative standard error of the estimate is roughly
  ``1 / sqrt(effective clicks)``), not the number of rows.
- ``no_clicks`` -- no clicked row has a positive weight: every
  importance-weighted estimate is zero and its interval is degenerate.
- ``wide_interval`` -- an estimator's interval half-width exceeds 50% of its
  estimate.
- ``propensity_sum`` -- the logged propensities cannot be one logging policy's
  probabilities of the logged actions (see :mod:`ulr.ope.checks`): the mean
  importance weight of the uniform policy is significantly below 1 (e.g.
  position-bias propensities were supplied instead). Correct for
  per-slot propensities of a time-varying logging policy.
- ``target_sum`` -- user-supplied target probabilities of a context's logged
  actions do not add up to 1 (within 1e-6): the target's whole distribution is then
  unknown, and the estimators that need it (:mod:`ulr.ope.registry`) are not computed.
- ``not_identified`` -- estimators left out because the input does not meet their needs
  (the default set or ``auto``'s candidates; named ones are refused instead).
- ``clipped_rate`` -- an estimate or bound of a click rate left [0, 1] and is reported
  clipped (the unclipped numbers stay in ``table`` and in ``to_dict()["unclipped"]``).
- ``interval_replaced`` -- the interval method does not apply to a self-normalized
  estimator (finite-sample bounds need a linear one): its interval is the bootstrap's.
- ``self_fit`` -- the target policy was fit on the very rows it is evaluated on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ulr import validate
from ulr.errors import UlrError
from ulr.ope import estimators as est
from ulr.ope import registry
from ulr.verdict import MIN_EFFECTIVE_CLICKS, WIDE

HEAVY_TAIL_ESS_FRACTION = 0.10
HEAVY_TAIL_MAX_SHARE = 0.05


@dataclass(frozen=True)
class OPEWarning:
    """One warning of an evaluation: its ``code`` (module docstring) and sentence."""

    code: str
    message: str


def weight_diagnostics(weight, reward) -> dict:
    """ESS, ESS / n, largest weight share, clicks and effective clicks of one log."""
    w = np.asarray(weight, dtype=float)
    r = np.asarray(reward, dtype=float)
    n = len(w)
    ess = float(est.effective_sample_size(w))
    sw = float(w.sum())
    clicked = r > 0
    return {
        "n": int(n),
        "clicks": int(clicked.sum()),
        "ctr": float(r.mean()),
        "ess": ess,
        "ess_fraction": ess / n,
        "max_weight": float(w.max()),
        "max_weight_share": float(w.max() / sw) if sw > 0 else float("nan"),
        "clicked_rows_reached": int((clicked & (w > 0)).sum()),
        "effective_clicks": float(est.effective_sample_size(w[clicked])) if clicked.any() else 0.0,
    }


@validate.params(level=validate.level)
def diagnostic_warnings(diag: dict, table: pd.DataFrame, level: float) -> list:
    """The ``no_clicks``, ``heavy_tailed``, ``few_clicks`` and ``wide_interval`` warnings
    of one evaluation, from its :func:`weight_diagnostics` and estimates ``table``."""
    out = []
    n = diag["n"]
    if diag["clicked_rows_reached"] == 0:
        out.append(OPEWarning("no_clicks", "No clicked row has a positive target probability: "
                              "every importance-weighted estimate is 0 and its interval says "
                              "nothing about the policy."))
    frac, share = diag["ess_fraction"], diag["max_weight_share"]
    if frac < HEAVY_TAIL_ESS_FRACTION or (np.isfinite(share) and share > HEAVY_TAIL_MAX_SHARE):
        out.append(OPEWarning(
            "heavy_tailed",
            f"The importance weights are heavy-tailed: the effective sample size is "
            f"{diag['ess']:.0f} of {n} rows ({frac:.1%}; warning below "
            f"{HEAVY_TAIL_ESS_FRACTION:.0%}) and the largest weight carries {share:.1%} of the "
            f"total (warning above {HEAVY_TAIL_MAX_SHARE:.0%}). IPS and its interval are "
            "unreliable; prefer SNIPS or DR, clip the weights, or raise the temperature."))
    if 0 < diag["clicked_rows_reached"] and diag["effective_clicks"] < MIN_EFFECTIVE_CLICKS:
        out.append(OPEWarning(
            "few_clicks",
            f"Small sample: the estimates rest on {diag['clicked_rows_reached']} clicked rows, "
            f"{diag['effective_clicks']:.1f} effective clicks after weighting (warning below "
            f"{MIN_EFFECTIVE_CLICKS}). Expect a relative error of about "
            f"{1 / np.sqrt(max(diag['effective_clicks'], 1)):.0%} and intervals that may "
            "undercover."))
    t = table[(table["estimator"] != "logging")
              & ~(table["estimator"].isin(registry.multi_logger()) & table["value"].isna())]
    half = (t["upper"] - t["lower"]) / 2
    wide = t.loc[(half > WIDE * t["value"].abs()) | ~np.isfinite(t["value"]),
                 "estimator"].tolist()
    if wide and diag["clicked_rows_reached"] > 0:
        out.append(OPEWarning(
            "wide_interval",
            f"The {level:.0%} intervals of {', '.join(map(registry.label, wide))} are wider than ±"
            f"{WIDE:.0%} of the estimate: the log cannot pin this policy's value "
            "down."))
    return out


class NotIdentified(UlrError):
    """An estimator was asked for by name, and the input does not meet its needs.

    ``need`` is the code of :data:`ulr.ope.registry.NEEDS`; ``estimators`` the names."""

    def __init__(self, message: str, *, need: str, estimators=()):
        super().__init__(message)
        self.need = need
        self.estimators = tuple(estimators)


#: how the CLI names what meets each need (a page names its own control)
CLI_MEETS = {"full_target": "--target-table", "loggers": "--map logger=COL"}


def need_sentence(names, need: str, *, how: str) -> str:
    """``"DR and DM need the target's probabilities ... (how)."``"""
    labels = [registry.label(n) for n in names]
    who = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
    verb = "needs" if len(labels) == 1 else "need"
    return f"{who} {verb} {registry.NEEDS[need]}: {how}."


def clipped_message(names) -> str:
    """One sentence for the ``clipped_rate`` warning."""
    who = ", ".join(registry.label(n) for n in names)
    return (f"{who} left the range of a click rate (large importance weights or a reward "
            "model take an estimate there, a click rate cannot go there): values and bounds "
            "are reported clipped to [0, 1], without a difference from logging, and no "
            "verdict rests on them.")


INTERVAL_WORDS = {"t": "Student t intervals", "hoeffding": "Hoeffding bounds",
                  "bernstein": "empirical Bernstein bounds"}


def replaced_message(names, method: str) -> str:
    """One sentence for the ``interval_replaced`` warning."""
    labels = [registry.label(n) for n in names]
    who = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
    words = INTERVAL_WORDS.get(method, method)
    return (f"{words[:1].upper() + words[1:]} need an estimator that is not "
            f"self-normalized, so {who} {'has' if len(names) == 1 else 'have'} percentile "
            "bootstrap intervals instead, and so do their differences from logging.")


def propensity_message(chk: dict) -> str:
    """One sentence for a failed :func:`ulr.ope.checks.propensity_checks`."""
    what = (f"the uniform policy's mean importance weight is {chk['mean_weight']:.3f} "
            f"(at most {chk['upper']:.3f} with 99.9% confidence), where valid "
            "propensities give at least 1")
    return (f"The propensities do not look like the logging policy's probabilities of the "
            f"logged actions: {what}; position-bias propensities are something else, so these "
            "estimates may be meaningless.")
