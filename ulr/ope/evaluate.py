"""Evaluate a target policy on logged feedback: estimates, intervals, diagnostics, warnings.

The work is split (issue 53): :mod:`ulr.ope.estimates` builds the estimates table,
:mod:`ulr.ope.diagnostics` the weight diagnostics and the warnings (their rules are
documented there), :mod:`ulr.ope.reward_models` fits the reward model. This module keeps the
result, :func:`evaluate`, the target policy and the whole pipeline :func:`evaluate_log`; the
names that lived here stay importable from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ulr import validate
from ulr.errors import UlrError
from ulr.ope import estimators as est
from ulr.ope import registry
from ulr.ope import settings as settings_rules
from ulr.ope.diagnostics import (CLI_MEETS, HEAVY_TAIL_ESS_FRACTION, HEAVY_TAIL_MAX_SHARE,
                                 INTERVAL_WORDS, NotIdentified, OPEWarning, clipped_message,
                                 diagnostic_warnings, need_sentence, propensity_message,
                                 replaced_message, weight_diagnostics)
from ulr.ope.estimates import (TARGET_SUM_TOLERANCE, split_estimators, single_log_table,
                               target_rows, with_multi_logger)
from ulr.ope.feedback import (BanditFeedback, fit_linear_scorer, policy_from_scorer,
                              softmax_policy, standardize_scores)
from ulr.ope.reward_models import reward_predictions
from ulr.ope.settings import OPESettings
from ulr.ope.verdicts import clipped_table, ope_verdict
from ulr.result import Result, cached_property
from ulr.verdict import Verdict

# this module's names, and those that moved out of it and stay importable from here
__all__ = ["CLI_MEETS", "HEAVY_TAIL_ESS_FRACTION", "HEAVY_TAIL_MAX_SHARE", "INTERVAL_WORDS",
           "NotIdentified", "OPEResult", "OPEWarning", "TARGETS", "TARGET_SUM_TOLERANCE",
           "clipped_message", "estimators_out_of_range", "evaluate", "evaluate_log",
           "need_sentence", "propensity_message", "replaced_message", "reward_predictions",
           "target_policy", "weight_diagnostics"]

@dataclass(frozen=True)
class OPEResult(Result):
    """Estimates of one target policy's value on one log.

    ``table`` has one row per estimator (plus ``logging``, the on-policy mean
    reward of the log) with ``value``, ``lower``, ``upper`` (bootstrap
    percentile interval at ``level``) and ``se`` (bootstrap standard error).
    The value is the expected reward per logged row (per slot) under the target
    policy.

    ``target_name`` is how the verdict names the policy (``"the target policy"``,
    ``"the learned policy"``); ``mapping`` the log's
    :class:`ulr.lists.MappingWarning` s, shown as the verdict's reasons. Both are known
    when the result is built, and ``verdict`` (:func:`ulr.ope.verdicts.ope_verdict`) is
    filled in then (:meth:`_verdict`).
    """

    table: pd.DataFrame
    diagnostics: dict
    warnings: list
    settings: dict = field(default_factory=dict)
    per_logger: pd.DataFrame | None = None  # several loggers: see ulr.ope.loggers
    target_name: str = "the target policy"
    mapping: tuple = ()

    @cached_property
    def verdict(self) -> Verdict:
        return self._verdict()

    @cached_property
    def evidence(self) -> dict:
        """The rows and clicks the estimates rest on."""
        return {"rows": int(self.diagnostics.get("n", 0)),
                "clicks": int(self.diagnostics.get("clicks", 0))}

    def tables(self) -> dict:
        out = {"estimates": self.estimates_table()}
        if self.per_logger is not None:
            out["loggers"] = self.per_logger
        return out

    @property
    def logging_label(self) -> str:
        """What the logging row's value is the click rate of: "logging policy", or, when
        only part of the log was evaluated (the rest fitted the target), "logging policy
        on the 5,000 evaluated rows": it is then not the log's own CTR."""
        n, total = self.settings.get("evaluated_rows"), self.settings.get("log_rows")
        if n is not None and total is not None and int(n) < int(total):
            return f"logging policy on the {int(n):,} evaluated rows"
        return "logging policy"

    def estimate(self, name: str) -> float:
        return float(self.table.set_index("estimator").loc[name, "value"])

    def _verdict(self) -> Verdict:
        """What this evaluation supports (:func:`ulr.ope.verdicts.ope_verdict`), with
        :attr:`target_name` in its sentences and :attr:`mapping` among its reasons."""
        return ope_verdict(self.table, self.warnings, self.diagnostics,
                           several_loggers=self.per_logger is not None,
                           level=float(self.settings.get("level", 0.95)),
                           target=self.target_name, mapping=self.mapping,
                           chosen=(self.settings.get("selected") or {}).get("estimator"))

    def estimates_table(self, *, clipped: bool = True) -> pd.DataFrame:
        """The estimates as shown and exported: a readable ``method`` first (the
        estimator's code, ``clipped-ips``, stays in :attr:`table` and the JSON), the
        standard error and the differences from logging named as such.

        ``clipped``: values and bounds clipped to [0, 1], the range of a click rate
        (:func:`ulr.ope.verdicts.clipped_table`; :meth:`out_of_range` names the
        estimators this changed).
        """
        t = clipped_table(self.table) if clipped else self.table.copy()
        if clipped and "diff_lower" in t.columns:  # one estimate, one reading: a clipped
            # value has no difference from logging beside it (it was computed unclipped)
            out = t["estimator"].isin(self.out_of_range())
            t.loc[out, ["diff_lower", "diff_upper"]] = np.nan
        t.insert(0, "method", t["estimator"].map(registry.label))
        if self.logging_label != "logging policy":
            t.loc[t["estimator"] == "logging", "method"] = self.logging_label.capitalize()
        return t.drop(columns="estimator").rename(columns={
            "se": "standard error", "variance_ratio": "variance vs pooled IPS",
            "diff_lower": "minus logging, lower", "diff_upper": "minus logging, upper"})

    def out_of_range(self) -> list[str]:
        """The estimators whose value or bounds leave [0, 1] (its reward model, not the
        clicks, drives a click-rate estimate there)."""
        return estimators_out_of_range(self.table)

    def to_dict(self) -> dict:
        """JSON-able: click rates within [0, 1] under ``estimates`` and ``logging`` (the
        unclipped values of those that left it under ``unclipped``)."""
        rates = self.settings.get("rates", True)
        shown = clipped_table(self.table) if rates else self.table
        est_rows = {r.estimator: {"value": r.value, "lower": r.lower, "upper": r.upper,
                                  "se": r.se} for r in shown.itertuples()}
        unclipped = {r.estimator: {"value": r.value, "lower": r.lower, "upper": r.upper}
                     for r in self.table.itertuples()
                     if rates and r.estimator in self.out_of_range()}
        if "variance_ratio" in self.table:
            for r in self.table.itertuples():
                if r.estimator in est_rows and np.isfinite(r.variance_ratio):
                    est_rows[r.estimator]["variance_ratio"] = r.variance_ratio
        logging = est_rows.pop("logging", None)
        extra = {}
        if self.per_logger is not None:
            f = (lambda x: None if not np.isfinite(x) else float(x))
            g = (lambda x: f(min(max(x, 0.0), 1.0)) if rates and np.isfinite(x) else f(x))
            extra["per_logger"] = {
                str(r.logger): {"rows": int(r.rows), "clicks": int(r.clicks), "value": g(r.ips),
                                "lower": g(r.lower), "upper": g(r.upper),
                                "cv_value": f(r.cv_value), "variance": f(r.variance),
                                "wips_weight": f(r.wips_weight)}
                for r in self.per_logger.itertuples()}
        if unclipped:
            extra["unclipped"] = unclipped
        return {"estimates": est_rows, "logging": logging, **self.diagnostics, **extra,
                "warnings": [w.message for w in self.warnings],
                "warning_codes": [w.code for w in self.warnings], "settings": self.settings,
                "verdict": self.verdict.to_dict()}


def estimators_out_of_range(table: pd.DataFrame) -> list[str]:
    """The estimators of ``table`` whose value or bounds leave [0, 1]."""
    raw = table[["value", "lower", "upper"]]
    return list(table.loc[((raw < 0) | (raw > 1)).any(axis=1), "estimator"])


@validate.params(clip=settings_rules.clip, n_bootstrap=validate.required_bootstrap,
                 level=validate.level, folds=settings_rules.folds, seed=validate.seed,
                 interval=settings_rules.interval)
def evaluate(feedback: BanditFeedback, pi: np.ndarray | None = None, *,
             estimators=None, clip: float | None = None,
             n_bootstrap: int = 1000, level: float = 0.95, reward_model=None, folds: int = 2,
             seed=0, interval: str = "bootstrap", q_pair=None, explicit: bool = True,
             full_target: bool | None = None, target_name: str = "the target policy",
             mapping=()) -> OPEResult:
    """Estimate the target policy's value with the estimators of :mod:`ulr.ope.registry`.

    Parameters
    ----------
    feedback : the logged data.
    pi : target policy over the candidate pairs (n_pairs,): its probability of every
        action of each context. When ``None``, the feedback's user-supplied
        ``target_prob`` (the logged actions' probabilities) is used; it gives the whole
        distribution only where each context's probabilities add up to 1 (within 1e-6).
    estimators : names in :data:`ulr.ope.registry.REGISTRY` and ``auto`` (default:
        :func:`ulr.ope.registry.defaults`).
    explicit : the estimators were asked for by name: one whose needs the input does not
        meet (:func:`ulr.ope.registry.unmet`) is refused (:class:`NotIdentified`).
        Otherwise (a default set) it is left out and named in the ``not_identified``
        warning. ``auto`` never chooses such an estimator; ``settings["selected"]
        ["excluded"]`` names them with the reason.
    full_target : whether ``pi`` is the target's whole distribution (default: True when
        ``pi`` is given).
    clip : clipping threshold M for ``clipped-ips``; default
        :func:`ulr.ope.estimators.default_clip` (``sqrt(n) * mean(w)``, Ionides 2008).
    n_bootstrap, level : bootstrap draws and confidence level of the
        percentile intervals (resampling impressions when the log has them).
    reward_model : scikit-learn estimator for DR/DM (see :func:`reward_predictions`).
    folds : cross-fitting folds for the reward model (1 = no cross-fitting).
    seed : seed of the bootstrap and the folds.
    interval : ``bootstrap``, ``t``, ``hoeffding`` or ``bernstein`` (:mod:`ulr.ope.intervals`);
        the differences from logging use the same method (concentration bounds on the
        paired terms); a self-normalized estimator gets the bootstrap under a
        concentration method, and the ``interval_replaced`` warning says so. The
        interval of an estimator tuned by SLOPE (Switch-DR, DRos, ``auto``'s choice) is
        widened on both sides by the bias its walk could not rule out,
        ``kappa se(V - V_root)`` against its chain's unbiased root
        (:attr:`ulr.ope.selection.Selection.allowance`): the reward model's error is
        otherwise invisible to a bootstrap that holds the model fixed.
    q_pair : optional reward prediction per pair (a user's column), used instead of
        fitting ``reward_model``.
    target_name, mapping : how the verdict names the policy, and the log's mapping
        warnings (:func:`ulr.lists.mapping_warnings`) it weighs; the result's
        ``verdict`` is set from them when it is built.

    The verdict rests on one estimate, but never reads stronger than SNIPS or IPS (the
    least biased identified ones), which are computed whenever a biased estimator or
    ``auto`` is (:func:`ulr.ope.verdicts.ope_verdict`).
    """
    pi, t_row, warn, whole = target_rows(feedback, pi)
    if full_target is not None:
        whole = bool(full_target)
    have = {"full_target": whole, "loggers": feedback.logger is not None}
    single, multi, excluded = split_estimators(estimators, have, explicit=explicit)
    if excluded:
        warn.append(OPEWarning("not_identified", " ".join(
            need_sentence(ns, need, how="not computed") for need, ns in excluded.items())))
    w = est.importance_weights(t_row, feedback.propensity)
    r = feedback.reward
    M = float(clip) if clip is not None else float(est.default_clip(w))
    boot = {"cluster": feedback.cluster, "n_bootstrap": n_bootstrap, "level": level,
            "seed": seed}
    model = {"reward_model": reward_model, "folds": folds, "q_pair": q_pair,
             "interval": interval, "have": have}
    table, chosen = single_log_table(feedback, pi, single, r, w, M, model, boot)
    per_logger = None
    if multi:
        table, per_logger, note = with_multi_logger(table, feedback, multi, r, t_row, boot)
        warn += note
    diag = weight_diagnostics(w, r)
    diag["clip"] = M
    diag["units"] = int(len(np.unique(feedback.cluster))) if feedback.cluster is not None \
        else diag["n"]
    warn += [OPEWarning("propensity_sum", propensity_message(v))
             for code, v in feedback.notes if code == "propensity_sum"]
    warn += chosen["notes"]
    rates = bool(np.all((r >= 0) & (r <= 1)))
    settings = {"estimators": [e for e in single if e not in chosen["added"]] + multi,
                "clip": M, "n_bootstrap": n_bootstrap,
                "level": level, "folds": folds, "seed": seed, "interval": interval,
                "hyperparameters": chosen["hyperparameters"], "selected": chosen["selected"],
                "reward_model": "column" if q_pair is not None else
                ("linear" if reward_model is None else type(reward_model).__name__),
                "resampling": "impressions" if feedback.cluster is not None else "rows",
                "full_target": whole, "rates": rates,
                "not_identified": {n: need for need, ns in excluded.items() for n in ns},
                "references": chosen["added"]}
    if rates and estimators_out_of_range(table):
        warn.append(OPEWarning("clipped_rate", clipped_message(estimators_out_of_range(table))))
    return OPEResult(table=table, diagnostics=diag, warnings=diagnostic_warnings(diag, table, level) + warn,
                     settings=settings, per_logger=per_logger, target_name=target_name,
                     mapping=tuple(mapping))


# --------------------------------------------------------------------------- whole pipeline


TARGETS = settings_rules.TARGETS


def target_policy(feedback: BanditFeedback, *, target: str = "fitted", temperature: float = 1.0,
                  scores=None, fit_rows=None, scorer=None) -> tuple[np.ndarray | None, dict]:
    """The target policy over pairs and a description of it.

    ``fitted``: softmax at ``temperature`` of a linear click model fit on
    ``fit_rows`` (or of ``scorer`` when given -- the seam for other rankers);
    ``scores``: softmax of the supplied pair scores; ``column``: the
    user's per-row probabilities (returns ``None``; :func:`evaluate` reads them);
    ``uniform``: uniform over each context's candidates; ``table``: see
    :func:`evaluate_log` (a target table is applied there).
    """
    cand = feedback.candidates
    if target == "column":
        if feedback.target_prob is None:
            raise UlrError("the target 'column' needs a column of target probabilities.")
        return None, {"target_from": "column"}
    if target == "uniform":
        return softmax_policy(np.zeros(cand.n_pairs), cand, temperature=1.0), {"target_from": "uniform"}
    if target == "scores":
        if scores is None:
            raise UlrError("the target 'scores' needs a column of scores.")
        pi = softmax_policy(standardize_scores(scores), cand, temperature=temperature)
        return pi, {"target_from": "scores", "temperature": temperature}
    if target == "fitted":
        sc = scorer if scorer is not None else fit_linear_scorer(feedback, fit_rows)
        info = {"target_from": "fitted linear click model", "temperature": temperature}
        if hasattr(sc, "coef"):
            info["coef"] = dict(zip(cand.feature_names, np.round(sc.coef, 6).tolist()))
        return policy_from_scorer(cand, sc, temperature=temperature), info
    raise UlrError(f"unknown target {target!r}; choose from {', '.join(TARGETS)}.")


def evaluate_log(log, settings: OPESettings | None = None, *, target_table=None,
                 scorer=None, target_name: str = "the target policy", mapping=(),
                 **options) -> OPEResult:
    """Read a log (:class:`ulr.data.log.Log`), build the target policy, and
    :func:`evaluate` it with ``settings`` (:class:`ulr.ope.settings.OPESettings`, checked
    when built).

    With ``target="fitted"`` the linear scorer is fit on a seeded
    ``fit_fraction`` of the impressions and the policy is evaluated on the
    rest, so the estimates are not optimistic; ``fit_fraction=0`` fits and
    evaluates on all rows (and warns).

    Parameters
    ----------
    log : the log, with its logging propensities.
    settings : the options (default ``OPESettings()``); ``**options`` are the same options
        as keywords, applied on top (``evaluate_log(log, n_bootstrap=200)``).
    target_table : the target's probability of every action of each context
        (a path, file or DataFrame; :mod:`ulr.ope.target_table`), implying
        ``target="table"``.
    scorer : a fitted scorer for the ``fitted`` target instead of the linear click model
        (the seam for other rankers; no rows are then held out).
    target_name, mapping : how the verdict names the policy, and the log's
        :func:`ulr.lists.mapping_warnings`: what the result's verdict weighs besides the
        estimates.
    """
    from ulr.ope.feedback import feedback_from_log

    s = validate.settings_of(OPESettings, settings, options, caller="evaluate_log")
    action, target, target_column, score_column = (s.action, s.target, s.target_column,
                                                   s.score_column)
    fit_fraction, estimators, seed, reward_column = (s.fit_fraction, s.estimators, s.seed,
                                                     s.reward_column)

    if target_table is not None and target in ("fitted", "table"):
        target = "table"
    if target_column and target == "fitted":
        target = "column"
    if score_column and target == "fitted":
        target = "scores"
    if target == "table" and target_table is None:
        raise UlrError("the target 'table' needs a target table.")
    if target == "table" and reward_column:
        raise UlrError("a reward column gives predictions for the logged actions only; with "
                       "a target table the reward model must predict every action, so fit "
                       "one instead.")
    fb, scores = feedback_from_log(log, action=action, target_column=target_column,
                                   score_column=score_column)
    if target == "table":
        from ulr.ope.target_table import apply_target_table, read_target_table
        fb, table_pi = apply_target_table(fb, read_target_table(target_table))
    extra = []
    eval_fb = fb
    fit_rows = None
    if target == "fitted" and scorer is None:
        if fit_fraction is None or fit_fraction == 0:
            extra.append(OPEWarning("self_fit", "The target policy was fit on the same rows it "
                                    "is evaluated on, so the estimates are optimistic; use a "
                                    "fit fraction between 0 and 1 to hold rows out."))
        else:
            fit_rows, eval_rows = fb.split(fit_fraction, seed=seed)
            eval_fb = fb.subset(eval_rows)
    if target == "table":
        pi, pinfo = table_pi, {"target_from": "table"}
    else:
        pi, pinfo = target_policy(fb, target=target, temperature=s.temperature, scores=scores,
                                  fit_rows=fit_rows, scorer=scorer)
    from ulr.ope.reward_models import make_reward_model

    q_pair = None
    if reward_column:  # the user's predictions, averaged per pair
        q_pair = feedback_from_log(log, action=action, score_column=reward_column)[1]
    binary = bool(np.all((eval_fb.reward == 0) | (eval_fb.reward == 1)))
    res = evaluate(eval_fb, pi, estimators=estimators, clip=s.clip, n_bootstrap=s.n_bootstrap,
                   level=s.level, folds=s.folds, seed=seed, interval=s.interval, q_pair=q_pair,
                   reward_model=make_reward_model(s.reward_model, binary=binary, seed=seed),
                   explicit=estimators is not None if s.explicit is None else s.explicit,
                   target_name=target_name, mapping=tuple(mapping))
    settings = {**res.settings, "action": action, "target": target, "policy": pinfo,
                "fit_fraction": fit_fraction if target == "fitted" else None,
                "evaluated_rows": eval_fb.n, "log_rows": fb.n,
                "contexts": fb.candidates.n_contexts, "pairs": fb.candidates.n_pairs}
    return OPEResult(table=res.table, diagnostics=res.diagnostics,
                     warnings=res.warnings + extra, settings=settings, per_logger=res.per_logger,
                     target_name=target_name, mapping=tuple(mapping))
