"""The options of one off-policy evaluation, and of learning a policy, as validated, frozen
settings objects.

:class:`OPESettings` holds every option of :func:`ulr.ope.evaluate.evaluate_log` (what the
target is, which estimators, the interval, the reward model, the bootstrap); the function
takes it as its second argument, beside the inputs that are data (the log, a target table, a
fitted scorer) and the verdict's context (``target_name``, ``mapping``). Each option is
checked once, when the object is built, by the rules declared on the class
(:func:`ulr.validate.params`); :func:`ulr.ope.evaluate.evaluate` declares the same rules for
the options it shares. A refusal is a :class:`ulr.validate.BadOption` with the sentence the
option had before (``unknown interval 'x'; choose from bootstrap, t, hoeffding,
bernstein.``).

The command line (``ulr ope``), the Off-policy page and the audit build one; keyword
arguments still work (``evaluate_log(log, n_bootstrap=200)`` is
``evaluate_log(log, OPESettings(n_bootstrap=200))``, :func:`ulr.validate.settings_of`).

:class:`CRMSettings` does the same for policy learning (:func:`ulr.ope.crm.learn_policy`,
:func:`ulr.ope.study.crm_study`, ``ope --learn``, ``ope-study --learn``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from ulr import validate

#: what the target policy is (:func:`ulr.ope.evaluate.target_policy`)
TARGETS = ("fitted", "column", "scores", "uniform", "table")
#: what the policy chooses per query (:func:`ulr.ope.feedback.feedback_from_log`)
ACTIONS = ("doc_id", "position")


def _intervals():
    from ulr.ope.intervals import INTERVALS  # scipy: read when a value is checked
    return INTERVALS


def _reward_models():
    from ulr.ope.reward_models import REWARD_MODELS
    return REWARD_MODELS


def action(value, *, option: str = "action") -> str:
    """``doc_id`` or ``position``."""
    if not isinstance(value, str) or value not in ACTIONS:
        raise validate.refuse(option, "the action must be 'doc_id' or 'position'.")
    return value


def clip(value, *, option: str = "clip"):
    """The clipping threshold M of ``clipped-ips``: a positive number (``None``: the default
    :func:`ulr.ope.estimators.default_clip`). Returned as given."""
    if value is None:
        return None
    try:
        m = float(value)
    except (TypeError, ValueError):
        m = math.nan
    if isinstance(value, bool) or not math.isfinite(m) or m <= 0:
        raise validate.refuse(option, "the clipping threshold must be a positive number.")
    return value


def folds(value, *, option: str = "folds") -> int:
    """Cross-fitting folds of the reward model: a whole number, at least 1 (1 = none)."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not float(value).is_integer() or value < 1):
        raise validate.refuse(option, "the number of cross-fitting folds must be at least 1.")
    return int(value)


def _fraction(value) -> float:
    try:
        return math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        return math.nan


FIT_FRACTION = "the fit fraction must lie strictly between 0 and 1."


def fit_fraction(value, *, option: str = "fit_fraction"):
    """The share of impressions the fitted target is fit on: in [0, 1) (0 or ``None``: fit
    and evaluate on all rows, with a warning). Returned as given."""
    if value is None or value == 0:
        return value
    if not 0 < _fraction(value) < 1:
        raise validate.refuse(option, FIT_FRACTION)
    return value


def learn_fraction(value, *, option: str = "fit_fraction"):
    """The share of impressions a policy is learned on: strictly between 0 and 1 (the rest
    evaluates it). Returned as given."""
    if not 0 < _fraction(value) < 1:
        raise validate.refuse(option, FIT_FRACTION)
    return value


def estimator_names(value, *, option: str = "estimators"):
    """``None`` (the defaults) or the names, kept as a tuple (the object is frozen); the
    names are checked against the registry when the estimates are built
    (:func:`ulr.ope.estimates.split_estimators`), which knows what the input identifies."""
    return None if value is None else tuple(value)


interval = validate.one_of(_intervals, what="interval")
target = validate.one_of(TARGETS, what="target")
reward_model = validate.one_of(_reward_models, what="reward model")


@validate.params(action=action, target=target, fit_fraction=fit_fraction,
                 estimators=estimator_names, clip=clip, n_bootstrap=validate.required_bootstrap,
                 level=validate.level, folds=folds, seed=validate.seed, interval=interval,
                 reward_model=reward_model)
@dataclass(frozen=True)
class OPESettings:
    """Every option of one off-policy evaluation (:func:`ulr.ope.evaluate.evaluate_log`).

    Attributes
    ----------
    action : what the policy chooses per query, ``doc_id`` or ``position``.
    target : ``fitted`` (softmax of a linear click model fit on ``fit_fraction`` of the
        impressions), ``column``, ``scores``, ``uniform`` or ``table``; ``target_column``,
        ``score_column`` or a target table imply theirs.
    target_column, score_column : the log's column of target probabilities, or of scores.
    temperature : softmax temperature on standardized scores (0 = greedy).
    fit_fraction : share of impressions the fitted target is fit on, in [0, 1).
    estimators : names in :data:`ulr.ope.registry.REGISTRY` and ``auto``; ``None`` is
        :func:`ulr.ope.registry.defaults`.
    clip : threshold M of ``clipped-ips`` (``None``: ``sqrt(n) * mean(w)``, Ionides 2008).
    n_bootstrap, level : bootstrap draws (2 to 10,000) and two-sided confidence level.
    folds : cross-fitting folds of the reward model (1 = none).
    seed : seed of the fit/evaluate split, the folds and the bootstrap.
    interval : ``bootstrap``, ``t``, ``hoeffding`` or ``bernstein``
        (:mod:`ulr.ope.intervals`).
    reward_model : ``linear`` or ``gbdt`` (:mod:`ulr.ope.reward_models`).
    reward_column : the log's column of predicted rewards, used instead of a fitted model.
    explicit : the estimators were asked for by name, so one the input does not identify
        is refused (default: when ``estimators`` is given); see :func:`ulr.ope.evaluate`.
    """

    action: str = "doc_id"
    target: str = "fitted"
    target_column: str | None = None
    score_column: str | None = None
    temperature: float = 1.0
    fit_fraction: float | None = 0.5
    estimators: tuple | None = None
    clip: float | None = None
    n_bootstrap: int = 1000
    level: float = 0.95
    folds: int = 2
    seed: int = 0
    interval: str = "bootstrap"
    reward_model: str = "linear"
    reward_column: str | None = None
    explicit: bool | None = None

    def replace(self, **options) -> OPESettings:
        """These settings with ``options`` changed (checked again)."""
        return validate.settings_of(OPESettings, self, options,
                                    caller="OPESettings.replace")


#: the estimates a policy can be learned by maximizing (:func:`ulr.ope.crm.crm_objective`)
OBJECTIVES = ("ips", "snips")


def objective(value, *, option: str = "objective") -> str:
    """``ips`` or ``snips`` (:data:`OBJECTIVES`)."""
    if not isinstance(value, str) or value not in OBJECTIVES:
        raise validate.refuse(option, f"unknown objective {value!r}; choose ips or snips.")
    return value


STEPPING = "steps >= 1, a positive learning rate and a momentum in [0, 1) are needed."


def steps(value, *, option: str = "steps"):
    """Gradient steps: a whole number, at least 1."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)) and not (
            isinstance(value, float) and value.is_integer()):
        raise validate.refuse(option, STEPPING)
    if value < 1:
        raise validate.refuse(option, STEPPING)
    return int(value)


def learning_rate(value, *, option: str = "learning_rate"):
    """A positive step size. Returned as given."""
    if not _fraction(value) > 0:
        raise validate.refuse(option, STEPPING)
    return value


def momentum(value, *, option: str = "momentum"):
    """The heavy ball's momentum, in [0, 1). Returned as given."""
    if not 0 <= _fraction(value) < 1:
        raise validate.refuse(option, STEPPING)
    return value


def penalty(value, *, option: str = "l2"):
    """An L2 or variance penalty: 0 or more. Returned as given."""
    if not _fraction(value) >= 0:
        raise validate.refuse(option, "the penalties must be >= 0.")
    return value


def weight_clip(value, *, option: str = "clip"):
    """Clip the importance weights inside the objective at this positive value (``None``:
    no clipping). Returned as given."""
    if value is not None and _fraction(value) <= 0:
        raise validate.refuse(option, "the clipping threshold must be positive.")
    return value


@validate.params(objective=objective, l2=penalty, variance_penalty=penalty, clip=weight_clip,
                 steps=steps, learning_rate=learning_rate, momentum=momentum,
                 fit_fraction=learn_fraction, n_bootstrap=validate.required_bootstrap,
                 level=validate.level, seed=validate.seed)
@dataclass(frozen=True)
class CRMSettings:
    """Every option of learning a policy by counterfactual risk minimization
    (:func:`ulr.ope.crm.learn_policy`, :func:`ulr.ope.study.crm_study`).

    Attributes
    ----------
    objective : ``ips`` or ``snips``: the estimate the policy maximizes.
    l2 : L2 penalty on the weights (keeps the policy stochastic).
    variance_penalty : POEM's lambda (0 = none).
    clip : clip the importance weights at this value inside the objective (``None``: no).
    steps, learning_rate, momentum : heavy-ball gradient ascent.
    fit_fraction : share of impressions to learn on, strictly between 0 and 1; the rest
        evaluates.
    n_bootstrap, level : the held-out evaluation's bootstrap draws and confidence level.
    seed : seed of the split and the bootstrap.
    """

    objective: str = "snips"
    l2: float = 0.01
    variance_penalty: float = 0.0
    clip: float | None = None
    steps: int = 200
    learning_rate: float = 0.5
    momentum: float = 0.9
    fit_fraction: float = 0.5
    n_bootstrap: int = 1000
    level: float = 0.95
    seed: int = 0

    def replace(self, **options) -> CRMSettings:
        """These settings with ``options`` changed (checked again)."""
        return validate.settings_of(CRMSettings, self, options,
                                    caller="CRMSettings.replace")
