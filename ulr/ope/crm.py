"""Counterfactual risk minimization: learn a linear softmax policy from logged feedback.

The policy is ``pi_beta(a|x) = exp(z(x,a) @ beta) / sum_b exp(z(x,b) @ beta)`` over
each context's candidates, with ``z`` the standardized pair features. It is
learned by full-batch gradient ascent with momentum on the IPS or SNIPS
estimate of its value (Swaminathan & Joachims, "Batch learning from logged
bandit feedback through counterfactual risk minimization", JMLR 2015; the
self-normalized variant is their NeurIPS 2015 paper):

``J_IPS = (1/n) sum_i r_i w_i``,  ``J_SNIPS = sum_i r_i w_i / sum_i w_i``,
``w_i = min(pi_beta(a_i|x_i) / p_i, M)``,

minus an optional POEM variance penalty ``lambda * sqrt(Var(r_i w_i) / n)``
and an L2 penalty ``(l2 / 2) |beta|^2``. The gradient uses
``d pi(a|x) / d beta = pi(a|x) (z(x,a) - sum_b pi(b|x) z(x,b))`` (zero where
a weight is clipped).

The policy is learned on a seeded share of the impressions and its value is
estimated, with bootstrap intervals, on the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ulr import validate
from ulr.errors import NeedsFeatures, UlrError, check
from ulr.ope import estimators as est
from ulr.ope.evaluate import OPEResult, evaluate
from ulr.ope.feedback import BanditFeedback, Candidates, softmax_policy
from ulr.ope import settings as ope_settings
from ulr.ope.settings import CRMSettings
from ulr.result import Result, cached_property
from ulr.verdict import Verdict

OBJECTIVES = ope_settings.OBJECTIVES  # its home: ulr.ope.settings


def standardized_features(candidates: Candidates) -> np.ndarray:
    X = candidates.features
    if X.shape[1] == 0:
        raise NeedsFeatures("learning a policy needs feature_* columns; this log has none.")
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def crm_objective(beta, Z, feedback: BanditFeedback, *, objective: str = "snips",
                  l2: float = 0.0, variance_penalty: float = 0.0,
                  clip: float = np.inf) -> tuple[float, np.ndarray]:
    """Objective ``J(beta)`` (to maximize) and its exact gradient (see module docstring)."""
    cand = feedback.candidates
    beta = np.asarray(beta, dtype=float)
    pi = softmax_policy(Z @ beta, cand)
    w_raw = pi[feedback.pair] / feedback.propensity
    active = w_raw < clip
    w = np.minimum(w_raw, clip)
    r = feedback.reward
    n = feedback.n
    zbar = np.add.reduceat(pi[:, None] * Z, cand.starts, axis=0)  # (contexts, d)
    # dw_i / dbeta = active_i w_i (z_{pair_i} - zbar_{context_i}); a weighted sum of these
    # over the rows is summed per pair and per context first, then multiplied by Z and zbar:
    # the same sum without an (n, d) matrix (issue 54: half of policy learning's time on a
    # 1M-row log; the result moves in the 15th digit, the order of the additions)
    aw = active * w_raw

    def gsum(c):
        cw = c * aw
        return (np.bincount(feedback.pair, cw, minlength=len(Z)) @ Z
                - np.bincount(feedback.context, cw, minlength=len(zbar)) @ zbar)
    u = r * w
    if objective == "ips":
        J = u.mean()
        dJ = gsum(r) / n
    elif objective == "snips":
        B = w.sum()
        if B <= 0:
            return 0.0, np.zeros_like(beta)
        J = u.sum() / B
        dJ = gsum(r - J) / B
    else:
        raise UlrError(f"unknown objective {objective!r}; choose ips or snips.")
    if variance_penalty > 0 and n > 1:
        var = u.var(ddof=1)
        if var > 0:
            P = np.sqrt(var / n)
            dvar = 2.0 / (n - 1) * gsum((u - u.mean()) * r)
            J -= variance_penalty * P
            dJ = dJ - variance_penalty * dvar / (2 * P * n)
    J -= 0.5 * l2 * float(beta @ beta)
    dJ = dJ - l2 * beta
    return float(J), dJ


#: how the verdict of a learned policy names it
LEARNED = "the learned policy"


@dataclass(frozen=True)
class CRMResult(Result):
    """A learned policy, its learning curve and its held-out evaluation.

    ``mapping``: the log's :class:`ulr.lists.MappingWarning` s, known when the result is
    built; ``verdict`` (does the learned policy beat the logging policy on the held-out
    rows?) is filled in then, from ``evaluation`` and ``mapping`` (:meth:`_verdict`).
    """

    coef: np.ndarray  # weights on the standardized features
    pi: np.ndarray  # learned policy over the pairs
    curve: pd.DataFrame  # step, objective, train_value, holdout_snips, holdout_ips
    evaluation: OPEResult  # IPS/SNIPS with intervals on the held-out rows (+ logging row)
    settings: dict = field(default_factory=dict)
    coef_path: np.ndarray | None = None  # (len(curve), d) weights at each recorded step
    mapping: tuple = ()

    @cached_property
    def verdict(self) -> Verdict:
        return self._verdict()

    @property
    def evidence(self) -> dict:
        """The held-out rows and clicks the evaluation rests on."""
        return self.evaluation.evidence

    def tables(self) -> dict:
        return {"estimates": self.evaluation.estimates_table(), "curve": self.curve}

    def policy_path(self, candidates: Candidates) -> np.ndarray:
        """The policy over the pairs at each recorded step, (len(curve), n_pairs)."""
        Z = standardized_features(candidates)
        return softmax_policy(self.coef_path @ Z.T, candidates)

    def _verdict(self) -> Verdict:
        """Does the learned policy beat the logging policy on the held-out rows? The
        evaluation's verdict (:func:`ulr.ope.verdicts.ope_verdict`) naming the policy
        :data:`LEARNED`, with this result's ``mapping`` (what :func:`learn_policy` gives
        its evaluation too, so the two verdicts agree)."""
        ev = self.evaluation
        if ev.target_name == LEARNED and tuple(ev.mapping) == tuple(self.mapping):
            return ev.verdict
        return replace(ev, target_name=LEARNED, mapping=self.mapping).verdict

    def to_dict(self) -> dict:
        ev = self.evaluation.to_dict()
        return {"objective": self.settings.get("objective"),
                "coef": dict(zip(self.settings.get("feature_names", []), self.coef.tolist())),
                "estimates": ev["estimates"], "logging": ev["logging"],
                "holdout_rows": ev["n"], "warnings": ev["warnings"], "settings": self.settings,
                "verdict": self.verdict.to_dict()}


def learn_policy(feedback: BanditFeedback, settings: CRMSettings | None = None, *,
                 progress=None, should_stop=None, mapping=(), **options) -> CRMResult:
    """Learn a linear softmax policy by counterfactual risk minimization.

    Parameters
    ----------
    feedback : the logged data to learn on (and, held out, to evaluate on).
    settings : the options (:class:`ulr.ope.settings.CRMSettings`: objective, penalties,
        clip, gradient steps, fit fraction, bootstrap, level, seed; checked when built);
        ``**options`` are the same as keywords, applied on top.
    progress : optional ``callable(step, steps)``.
    should_stop : optional ``callable() -> bool``, asked every gradient step;
        True raises :class:`ulr.errors.Cancelled`.
    mapping : the log's mapping warnings (:func:`ulr.lists.mapping_warnings`), which the
        result's verdict (and its held-out evaluation's) weighs.
    """
    s = validate.settings_of(CRMSettings, settings, options, caller="learn_policy")
    objective, l2, variance_penalty, clip = s.objective, s.l2, s.variance_penalty, s.clip
    steps, learning_rate, momentum = s.steps, s.learning_rate, s.momentum
    fit_fraction, n_bootstrap, level, seed = s.fit_fraction, s.n_bootstrap, s.level, s.seed
    M = np.inf if clip is None else float(clip)
    Z = standardized_features(feedback.candidates)
    fit_rows, eval_rows = feedback.split(fit_fraction, seed=seed)
    train, hold = feedback.subset(fit_rows), feedback.subset(eval_rows)
    if train.reward.sum() == 0:
        raise UlrError("the learning part of the log has no clicks; nothing can be learned.")
    beta = np.zeros(Z.shape[1])
    vel = np.zeros_like(beta)
    rec, path = [], []
    every = max(1, steps // 100)
    kw = dict(objective=objective, l2=l2, variance_penalty=variance_penalty, clip=M)
    for step in range(steps + 1):
        check(should_stop)
        J, dJ = crm_objective(beta, Z, train, **kw)
        if step % every == 0 or step == steps:
            pi = softmax_policy(Z @ beta, feedback.candidates)
            wt = pi[train.pair] / train.propensity
            wh = pi[hold.pair] / hold.propensity
            rec.append((step, J, float(est.snips(train.reward, wt)),
                        float(est.snips(hold.reward, wh)), float(est.ips(hold.reward, wh))))
            path.append(beta.copy())
        if step == steps:
            break
        vel = momentum * vel + learning_rate * dJ
        beta = beta + vel
        if progress is not None:
            progress(step + 1, steps)
    pi = softmax_policy(Z @ beta, feedback.candidates)
    check(should_stop)
    evaluation = evaluate(hold, pi, estimators=("ips", "snips"), n_bootstrap=n_bootstrap,
                          level=level, seed=seed, target_name=LEARNED, mapping=mapping)
    curve = pd.DataFrame(rec, columns=["step", "objective", "train_snips", "holdout_snips",
                                       "holdout_ips"])
    settings = {"objective": objective, "l2": l2, "variance_penalty": variance_penalty,
                "clip": None if clip is None else M, "steps": steps,
                "learning_rate": learning_rate, "momentum": momentum,
                "fit_fraction": fit_fraction, "seed": seed, "train_rows": train.n,
                "holdout_rows": hold.n,
                "feature_names": list(feedback.candidates.feature_names)}
    return CRMResult(coef=beta, pi=pi, curve=curve, evaluation=evaluation, settings=settings,
                     coef_path=np.array(path), mapping=tuple(mapping))
