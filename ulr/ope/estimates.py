"""The estimates table of one off-policy evaluation (split from :mod:`ulr.ope.evaluate`,
issue 53): which estimators run on this input, the target's probability of each logged row,
every single-log estimator's value and interval (bootstrap, Student t or a concentration
bound) with its paired difference from logging, and the multi-logger estimators beside them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ulr.errors import UlrError
from ulr.ope import estimators as est
from ulr.ope import registry
from ulr.ope.diagnostics import (CLI_MEETS, NotIdentified, OPEWarning, need_sentence,
                                 replaced_message)
from ulr.ope.feedback import BanditFeedback, policy_from_target_column
from ulr.ope.loggers import evaluate_loggers
from ulr.ope.reward_models import reward_predictions
from ulr.ope.verdicts import bootstrap_difference
from ulr.text import plain


def split_estimators(estimators, have: dict, *, explicit: bool):
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


def target_rows(feedback: BanditFeedback, pi):
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


def single_log_table(feedback, pi, estimators, r, w, M, model: dict, boot: dict):
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


def with_multi_logger(table, feedback, multi, r, t_row, boot: dict):
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
