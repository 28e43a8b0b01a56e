"""Evaluate a target policy on logged feedback: estimates, intervals, diagnostics, warnings.

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

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ulr import validate
from ulr.errors import UlrError
from ulr.ope import estimators as est
from ulr.ope import registry
from ulr.ope.loggers import evaluate_loggers
from ulr.ope.verdicts import bootstrap_difference, clipped_table, ope_verdict
from ulr.result import Result, cached_property
from ulr.text import plain
from ulr.verdict import MIN_EFFECTIVE_CLICKS, WIDE, Verdict
from ulr.ope.feedback import (BanditFeedback, fit_linear_scorer, policy_from_scorer,
                              policy_from_target_column, softmax_policy, standardize_scores)

HEAVY_TAIL_ESS_FRACTION = 0.10
HEAVY_TAIL_MAX_SHARE = 0.05


@dataclass(frozen=True)
class OPEWarning:
    code: str
    message: str


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
        """The estimates as shown and exported: a readable ``method`` first, the
        differences from logging named as such.

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
        return t.rename(columns={"variance_ratio": "variance vs pooled IPS",
                                 "diff_lower": "minus logging, lower",
                                 "diff_upper": "minus logging, upper"})

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


# --------------------------------------------------------------------------- reward model


def _design(feedback: BanditFeedback, pairs: np.ndarray, slots: np.ndarray | None):
    cand = feedback.candidates
    if cand.features.shape[1] > 0:
        X = cand.features[pairs]
    else:  # no features: a tabular model (one-hot pair), shrunk by the regularizer
        X = np.eye(cand.n_pairs)[pairs] if cand.n_pairs <= 2000 else None
        if X is None:
            from scipy import sparse
            X = sparse.csr_matrix((np.ones(len(pairs)), (np.arange(len(pairs)), pairs)),
                                  shape=(len(pairs), cand.n_pairs))
    if slots is None or feedback.n_slots <= 1:
        return X
    S = np.eye(feedback.n_slots)[slots][:, 1:]
    if hasattr(X, "tocsr"):
        from scipy import sparse
        return sparse.hstack([X, sparse.csr_matrix(S)]).tocsr()
    return np.hstack([X, S])


def _default_model(binary: bool):
    if binary:
        from sklearn.linear_model import LogisticRegression
        return LogisticRegression(C=1.0, max_iter=2000)
    from sklearn.linear_model import Ridge
    return Ridge(alpha=1.0)


def reward_predictions(feedback: BanditFeedback, pi: np.ndarray, *, model=None, folds: int = 2,
                       seed=0) -> tuple[np.ndarray, np.ndarray]:
    """Reward model for DR: ``q(x_i, a_i)`` and ``sum_a pi(a|x_i) q(x_i, a)`` per row.

    The model (any scikit-learn estimator; default logistic regression for 0/1
    rewards, ridge otherwise) is fit on the pair features plus one-hot slots.
    With ``folds >= 2`` it is cross-fitted: rows (by impression) are split into
    ``folds`` parts and each part is predicted by a model fit on the others,
    so a row's own reward never enters its prediction.
    """
    from sklearn.base import clone

    if folds < 1:
        raise UlrError("the number of cross-fitting folds must be at least 1.")
    r = feedback.reward
    binary = bool(np.all((r == 0) | (r == 1)))
    base = model if model is not None else _default_model(binary)
    cand = feedback.candidates
    units = feedback.cluster if feedback.cluster is not None else np.arange(feedback.n)
    codes = np.unique(units, return_inverse=True)[1].ravel()
    rng = np.random.default_rng(seed)
    fold_of_unit = rng.permutation(codes.max() + 1) % folds
    fold = fold_of_unit[codes] if folds > 1 else np.zeros(feedback.n, dtype=int)
    n_slots = max(feedback.n_slots, 1)
    all_pairs = np.tile(np.arange(cand.n_pairs), n_slots)
    all_slots = np.repeat(np.arange(n_slots), cand.n_pairs)
    D_all = _design(feedback, all_pairs, all_slots if feedback.slot is not None else None)
    Q = np.empty((max(folds, 1), n_slots, cand.n_pairs))
    for k in range(max(folds, 1)):
        train = fold != k if folds > 1 else np.ones(feedback.n, dtype=bool)
        if not train.any():
            train = np.ones(feedback.n, dtype=bool)
        yk = r[train]
        if binary and len(np.unique(yk)) < 2:
            Q[k] = float(yk.mean())
            continue
        Dk = _design(feedback, feedback.pair[train],
                     feedback.slot[train] if feedback.slot is not None else None)
        m = clone(base)
        m.fit(Dk, yk.astype(int) if binary and hasattr(base, "predict_proba") else yk)
        pred = m.predict_proba(D_all)[:, 1] if hasattr(m, "predict_proba") else m.predict(D_all)
        Q[k] = np.asarray(pred, dtype=float).reshape(n_slots, cand.n_pairs)
    slot = feedback.slot if feedback.slot is not None else np.zeros(feedback.n, dtype=int)
    q_logged = Q[fold, slot, feedback.pair]
    dm = cand.per_context_sum(Q * pi)  # (folds, slots, contexts)
    q_target = dm[fold, slot, feedback.context]
    return q_logged, q_target


# --------------------------------------------------------------------------- evaluation


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


def _warnings(diag: dict, table: pd.DataFrame, level: float) -> list:
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
            f"The {level:.0%} intervals of {', '.join(wide)} are wider than ±"
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
    validate.level(level)
    validate.n_bootstrap(n_bootstrap, required=True)
    from ulr.ope.intervals import INTERVALS
    if interval not in INTERVALS:
        raise UlrError(f"unknown interval {interval!r}; choose from {', '.join(INTERVALS)}.")
    pi, t_row, warn, whole = _target_rows(feedback, pi)
    if full_target is not None:
        whole = bool(full_target)
    have = {"full_target": whole, "loggers": feedback.logger is not None}
    single, multi, excluded = _split_estimators(estimators, have, explicit=explicit)
    if excluded:
        warn.append(OPEWarning("not_identified", " ".join(
            need_sentence(ns, need, how="not computed") for need, ns in excluded.items())))
    w = est.importance_weights(t_row, feedback.propensity)
    r = feedback.reward
    M = float(clip) if clip is not None else float(est.default_clip(w))
    if clip is not None and (not np.isfinite(M) or M <= 0):
        raise UlrError("the clipping threshold must be a positive number.")
    boot = {"cluster": feedback.cluster, "n_bootstrap": n_bootstrap, "level": level,
            "seed": seed}
    model = {"reward_model": reward_model, "folds": folds, "q_pair": q_pair,
             "interval": interval, "have": have}
    table, chosen = _single_log_table(feedback, pi, single, r, w, M, model, boot)
    per_logger = None
    if multi:
        table, per_logger, note = _with_multi_logger(table, feedback, multi, r, t_row, boot)
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
    return OPEResult(table=table, diagnostics=diag, warnings=_warnings(diag, table, level) + warn,
                     settings=settings, per_logger=per_logger, target_name=target_name,
                     mapping=tuple(mapping))


def clipped_message(names) -> str:
    """One sentence for the ``clipped_rate`` warning."""
    who = ", ".join(registry.label(n) for n in names)
    return (f"{who} left the range of a click rate (large importance weights or a reward "
            "model take an estimate there, a click rate cannot go there): values and bounds "
            "are reported clipped to [0, 1], without a difference from logging, and no "
            "verdict rests on them.")


def _split_estimators(estimators, have: dict, *, explicit: bool):
    """Checked names: (single-log estimators, multi-logger ones, {need: names left out}).

    A name whose needs ``have`` does not meet is refused when ``explicit``
    (:class:`NotIdentified`, naming the CLI's way to meet it), else left out.
    """
    estimators = list(dict.fromkeys(registry.defaults() if estimators is None else estimators))
    known = registry.choices()
    unknown = [e for e in estimators if e not in known]
    if unknown or not estimators:
        raise UlrError(f"unknown estimator {', '.join(unknown) or '(none)'}; choose from "
                       f"{', '.join(known)}.")
    missing: dict = {}
    for e in estimators:
        if e != registry.AUTO:
            for need in registry.unmet(e, **have):
                missing.setdefault(need, []).append(e)
    if missing and explicit:
        need, names = next(iter(missing.items()))
        raise NotIdentified(need_sentence(names, need, how=CLI_MEETS[need]), need=need,
                            estimators=names)
    out = {n for ns in missing.values() for n in ns}
    kept = [e for e in estimators if e not in out]
    if not kept:
        kept = [registry.fallback()]
    multi = [e for e in kept if registry.REGISTRY.get(e) and registry.get(e).terms is None]
    return [e for e in kept if e not in multi], multi, missing


def _target_rows(feedback: BanditFeedback, pi):
    """(pi over pairs, target probability of each logged row, warnings, whether pi is the
    target's whole distribution over each context's candidates)."""
    if pi is not None:
        pi = np.asarray(pi, dtype=float)
        if pi.shape != (feedback.candidates.n_pairs,):
            raise ValueError("pi needs one probability per pair")
        return pi, pi[feedback.pair], [], True
    if feedback.target_prob is None:
        raise ValueError("give pi or feedback with target_prob")
    pi, lo, hi = policy_from_target_column(feedback)
    warn = []
    whole = lo >= 1 - TARGET_SUM_TOLERANCE and hi <= 1 + TARGET_SUM_TOLERANCE
    if not whole:
        warn.append(OPEWarning(
            "target_sum",
            f"The supplied target probabilities of a context's logged actions add up to "
            f"between {lo:.3f} and {hi:.3f}, not 1: they are the target's probabilities of "
            "the logged actions only, which IPS and SNIPS need; the estimators that sum "
            "over every action (DM and the DR family) need the whole distribution."))
    return pi, feedback.target_prob, warn, whole


#: how far a context's target probabilities may sum from 1 (the target-table check too)
TARGET_SUM_TOLERANCE = 1e-6


def _single_log_table(feedback, pi, estimators, r, w, M, model: dict, boot: dict):
    """value, lower, upper, se of each single-log estimator and of the logging policy;
    and ``{"hyperparameters", "selected", "added", "notes"}``: the hyperparameters and the
    selection made, the references added for the verdict, and warnings."""
    from ulr.ope import selection

    estimators = list(estimators)
    added = []
    biased = any(e == registry.AUTO or not registry.get(e).unbiased for e in estimators)
    references = registry.references()
    if biased and not any(e in estimators for e in references):
        added = list(references)  # the verdict checks its basis against them
        estimators += added
    auto_names = [f for f in selection.auto_families()
                  if not registry.unmet(f, **model["have"])]
    excluded = [{"estimator": f, "reason": need_sentence([f], n, how="not identified here")}
                for f in selection.auto_families() for n in registry.unmet(f, **model["have"])]
    wants_model = any(registry.get(e).needs_reward_model for e in estimators
                      if e != registry.AUTO) or (registry.AUTO in estimators and any(
                          registry.get(f).needs_reward_model for f in auto_names))
    q_logged = q_target = None
    if wants_model:
        if model["q_pair"] is not None:
            from ulr.ope.reward_models import pair_predictions
            q_logged, q_target = pair_predictions(feedback, pi, model["q_pair"])
        else:
            q_logged, q_target = reward_predictions(feedback, pi, model=model["reward_model"],
                                                    folds=model["folds"], seed=boot["seed"])
    hyper, selected, terms, allow = {}, None, [], np.zeros(len(estimators) + 1)
    for k, e in enumerate(estimators):
        rec = None if e == registry.AUTO else registry.get(e)
        name, h = e, (None if rec is None else registry.hyperparameter_for(e, w, clip=M))
        if rec is not None and rec.tuned:
            pick = selection.select(r, w, q_logged=q_logged, q_target=q_target, families=(e,))
            h, allow[k] = pick.hyperparameter, pick.allowance
        elif e == registry.AUTO:
            pick = selection.select(r, w, q_logged=q_logged, q_target=q_target,
                                    families=auto_names)
            name, h, allow[k] = pick.estimator, pick.hyperparameter, pick.allowance
            selected = {**pick.to_dict(), "excluded": excluded}
            row_h = (registry.hyperparameter_for(name, w, clip=M) if name in estimators
                     else None)
            if row_h is not None and h is not None and row_h != h:
                # one estimator, two settings on one screen: say which is which
                knob = registry.get(name).hyperparameter.name
                knob = selection.SETTING_WORDS.get(knob, knob)
                selected["reason"] += (f" The table's {registry.label(name)} row keeps its "
                                       f"{knob} of {plain(row_h, sig=4)}; the choice uses "
                                       f"{plain(h, sig=4)}.")
        if h is not None and (rec is None or rec.tuned):
            hyper[e] = h
        terms.append((name, h, registry.row_terms(name, r, w, hyperparameter=h,
                                                  q_logged=q_logged, q_target=q_target)))
    terms.append(("logging", None, (r, np.ones_like(r))))
    num = np.vstack([t[2][0] for t in terms])
    den = np.vstack([t[2][1] for t in terms])
    sden = den.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(sden > 0, num.sum(axis=1) / np.where(sden > 0, sden, 1), np.nan)
    ci = est.bootstrap_ratio(num, den, **boot)
    lower, upper = ci.lower, ci.upper
    diff = bootstrap_difference(num, den, **boot)  # target - logging, paired (verdicts)
    dl, du = diff["lower"].to_numpy(), diff["upper"].to_numpy()
    notes = []
    if model["interval"] != "bootstrap":
        lower, upper, dl, du, replaced = _other_intervals(
            terms, r, w, q_logged, q_target, model["interval"], feedback.cluster,
            boot["level"], (lower, upper, dl, du))
        if replaced:
            notes.append(OPEWarning("interval_replaced", replaced_message(
                replaced, model["interval"])))
    # a tuned estimator's interval also allows for the bias its walk could not rule out
    table = pd.DataFrame({"estimator": estimators + ["logging"], "value": value,
                          "lower": lower - allow, "upper": upper + allow, "se": ci.se,
                          "diff_lower": [*(dl - allow[:-1]), np.nan],
                          "diff_upper": [*(du + allow[:-1]), np.nan]})
    return table, {"hyperparameters": hyper, "selected": selected, "added": added,
                   "notes": notes}


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


def _other_intervals(terms, r, w, q_logged, q_target, method, cluster, level, boot):
    """Student t (on impression totals when rows are clustered) or a concentration bound
    (rows taken as independent) for each row of ``terms`` and for its paired difference
    from the logging policy (the last row); rewards assumed in [0, max r]. A
    self-normalized estimator keeps its bootstrap interval under a concentration bound.

    Returns ``(lower, upper, diff_lower, diff_upper, replaced names)``.
    """
    from ulr.ope import intervals as iv

    lower, upper, dl, du = (np.array(b, dtype=float, copy=True) for b in boot)
    replaced = []
    top = max(1.0, float(np.max(r)))
    log_num = terms[-1][2][0]
    codes = np.unique(cluster, return_inverse=True)[1].ravel() if cluster is not None else None
    for k, (name, h, (num, den)) in enumerate(terms):
        last = k == len(terms) - 1
        if method == "t":  # on each estimator's influence terms (SNIPS, SNDR: delta method)
            x = log_num if last else registry.influence_terms(
                name, r, w, hyperparameter=h, q_logged=q_logged, q_target=q_target)[1]
            v = float(num.sum() / den.sum())
            for j, y in enumerate((x,) if last else (x, x - log_num)):
                if codes is not None:  # impression totals
                    half = iv.t_halfwidth(np.bincount(codes, weights=y), np.bincount(codes),
                                          level=level)[1]
                else:
                    half = iv.t_halfwidth(y, level=level)[1]
                c = v if j == 0 else v - float(log_num.mean())
                if j == 0:
                    lower[k], upper[k] = c - half, c + half
                else:
                    dl[k], du[k] = c - half, c + half
            continue
        if last:
            name, h, ww = registry.plain_reference(), None, np.ones_like(w)  # on-policy mean
        else:
            ww = w
        if registry.get(name).self_normalized:
            replaced.append(name)
            continue
        b = iv.interval(name, r, ww, method=method, level=level, hyperparameter=h,
                        q_logged=q_logged, q_target=q_target, reward_range=(0.0, top))
        lower[k], upper[k] = b.lower, b.upper
        if not last:
            dl[k], du[k] = iv.difference_bound(name, r, w, log_num, method=method, level=level,
                                               hyperparameter=h, q_logged=q_logged,
                                               q_target=q_target, reward_range=(0.0, top))
    return lower, upper, dl, du, replaced


def _with_multi_logger(table, feedback, multi, r, t_row, boot: dict):
    """``table`` with the multi-logger estimators inserted before ``logging``, and
    ``variance_ratio`` against pooled IPS for every row; plus per-logger results
    and warnings."""
    ml = evaluate_loggers(r, t_row, feedback.propensity, feedback.logger,
                          labels=feedback.logger_labels,
                          logger_propensity=feedback.logger_propensity, **boot)
    mt = ml.table.set_index("estimator")
    # the single-log estimators share one bootstrap; the combined estimators' is
    # stratified by logger
    pooled = registry.plain_reference()  # IPS: pooled over the loggers
    main_ips = table.loc[table["estimator"] == pooled, "se"]
    se_ips = float(main_ips.iloc[0]) if len(main_ips) else float(mt.loc[pooled, "se"])
    table["variance_ratio"] = (table["se"] / se_ips) ** 2 if se_ips > 0 else np.nan
    table.loc[table["estimator"] == "logging", "variance_ratio"] = np.nan
    add = mt.loc[multi].reset_index()[["estimator", "value", "lower", "upper", "se",
                                       "variance_ratio"]]
    table = pd.concat([table.iloc[:-1], add, table.iloc[-1:]], ignore_index=True)
    warn = [OPEWarning("balanced_missing", ml.missing)] \
        if ml.missing and any(e in ml.unavailable for e in multi) else []
    return table, ml.per_logger, warn


def propensity_message(chk: dict) -> str:
    """One sentence for a failed :func:`ulr.ope.checks.propensity_checks`."""
    what = (f"the uniform policy's mean importance weight is {chk['mean_weight']:.3f} "
            f"(at most {chk['upper']:.3f} with 99.9% confidence), where valid "
            "propensities give at least 1")
    return (f"The propensities do not look like the logging policy's probabilities of the "
            f"logged actions: {what}; position-bias propensities are something else, so these "
            "estimates may be meaningless.")


# --------------------------------------------------------------------------- whole pipeline


TARGETS = ("fitted", "column", "scores", "uniform", "table")


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


def evaluate_log(log, *, action: str = "doc_id", target: str = "fitted",
                 target_column: str | None = None, score_column: str | None = None,
                 temperature: float = 1.0, fit_fraction: float = 0.5,
                 estimators=None, clip: float | None = None,
                 n_bootstrap: int = 1000, level: float = 0.95, folds: int = 2,
                 seed: int = 0, scorer=None, interval: str = "bootstrap",
                 reward_model: str = "linear", reward_column: str | None = None,
                 target_table=None, explicit: bool | None = None,
                 target_name: str = "the target policy", mapping=()) -> OPEResult:
    """Read a log (:class:`ulr.data.log.Log`), build the target policy, and
    :func:`evaluate` it.

    With ``target="fitted"`` the linear scorer is fit on a seeded
    ``fit_fraction`` of the impressions and the policy is evaluated on the
    rest, so the estimates are not optimistic; ``fit_fraction=0`` fits and
    evaluates on all rows (and warns).

    ``target_table``: the target's probability of every action of each context
    (a path, file or DataFrame; :mod:`ulr.ope.target_table`), implying
    ``target="table"``. ``explicit``: the estimators were named (default: when
    ``estimators`` is given); see :func:`evaluate`. ``target_name`` and ``mapping``
    (the log's :func:`ulr.lists.mapping_warnings`) are what the result's verdict weighs
    besides the estimates.
    """
    from ulr.ope.feedback import feedback_from_log

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
        pi, pinfo = target_policy(fb, target=target, temperature=temperature, scores=scores,
                                  fit_rows=fit_rows, scorer=scorer)
    from ulr.ope.reward_models import make_reward_model

    q_pair = None
    if reward_column:  # the user's predictions, averaged per pair
        q_pair = feedback_from_log(log, action=action, score_column=reward_column)[1]
    binary = bool(np.all((eval_fb.reward == 0) | (eval_fb.reward == 1)))
    res = evaluate(eval_fb, pi, estimators=estimators, clip=clip, n_bootstrap=n_bootstrap,
                   level=level, folds=folds, seed=seed, interval=interval, q_pair=q_pair,
                   reward_model=make_reward_model(reward_model, binary=binary, seed=seed),
                   explicit=estimators is not None if explicit is None else explicit,
                   target_name=target_name, mapping=tuple(mapping))
    settings = {**res.settings, "action": action, "target": target, "policy": pinfo,
                "fit_fraction": fit_fraction if target == "fitted" else None,
                "evaluated_rows": eval_fb.n, "log_rows": fb.n,
                "contexts": fb.candidates.n_contexts, "pairs": fb.candidates.n_pairs}
    return OPEResult(table=res.table, diagnostics=res.diagnostics,
                     warnings=res.warnings + extra, settings=settings, per_logger=res.per_logger,
                     target_name=target_name, mapping=tuple(mapping))
