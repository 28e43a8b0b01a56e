"""One record per off-policy estimator: what it is, what it needs, how it is computed.

Every place that lists, labels, selects, bounds or judges an estimator reads
:data:`REGISTRY`: the CLI's ``--estimators`` choices, the page's options,
SLOPE's candidate families (:mod:`ulr.ope.selection`), the intervals
(:mod:`ulr.ope.intervals`), the verdict's basis rules
(:mod:`ulr.ope.verdicts`) and the labels. An estimator whose declared needs
the input does not meet is not computed (:func:`unmet`).

Needs (the keys of :data:`NEEDS`):

- ``full_target`` -- the target policy's probability of *every* action of each
  context, not only of the logged one: the direct-method term
  ``sum_a pi(a | x) q(x, a)`` of DM and of every DR variant sums over them.
  Given by a fitted, score or uniform target (a softmax over every candidate)
  or by a target table; a column of the logged actions' probabilities gives it
  only when each context's probabilities add up to 1.
- ``loggers`` -- which logger wrote each row (the multi-logger estimators).

References: see :mod:`ulr.ope.estimators` (each record's ``cite``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ulr.ope import estimators as est

#: what each need asks of the input, in words that name no surface's control
NEEDS = {
    "full_target": "the target's probabilities of every action of each context",
    "loggers": "to know which logger wrote each row",
}


@dataclass(frozen=True)
class Hyperparameter:
    """A tuning knob: its ``name``, the closed range ``[low, high]`` and the candidate
    ``grid`` SLOPE walks (a function of the log's importance weights, largest first)."""

    name: str
    low: float
    high: float
    grid: Callable | None = None

    def check(self, value) -> float:
        """``value`` as a float, or ``ValueError`` naming the range."""
        v = float(value)
        if np.isnan(v) or not self.low <= v <= self.high:
            raise ValueError(f"{self.name} must lie in [{self.low:g}, {self.high:g}]")
        return v


@dataclass(frozen=True)
class Estimator:
    """One off-policy estimator.

    Attributes
    ----------
    name : the identifier (CLI, JSON, URL).
    label : how a page, a slide or a sentence names it.
    family : ``importance`` (IPS and kin), ``model`` (DR, DM and kin) or ``loggers``.
    needs_reward_model : uses ``q(x, a)``.
    needs_full_target : uses the target's probabilities of every action (see module doc).
    unbiased : unbiased whenever the propensities are right (the verdict's references).
    hyperparameter : its knob, or ``None``.
    terms : ``terms(reward, weight, h, q_logged, q_target) -> (num, den)``, per-row
        terms with ``V = sum num / sum den``; ``None`` for the multi-logger ones.
    influence : per-row terms whose mean has the estimate's standard error, or ``None``
        for the generic rule (``num`` when ``den = 1``, else the delta method's).
    self_normalized : ``den`` is not 1 (finite-sample bounds do not apply).
    chain : ``(root, end)`` of its SLOPE chain (e.g. switch-dr: DR ... DM), or ``None``.
    in_auto : a candidate of ``auto``.
    basis_rank : order of preference as the verdict's basis (lower first; ``None``: never).
    needs_loggers : needs a logger column.
    """

    name: str
    label: str
    family: str
    needs_reward_model: bool = False
    needs_full_target: bool = False
    unbiased: bool = False
    hyperparameter: Hyperparameter | None = None
    terms: Callable | None = None
    influence: Callable | None = None
    self_normalized: bool = False
    chain: tuple | None = None
    in_auto: bool = False
    basis_rank: int | None = None
    needs_loggers: bool = False
    default: bool = False

    @property
    def needs(self) -> tuple:
        """The codes of :data:`NEEDS` this estimator declares."""
        return tuple(k for k, on in (("full_target", self.needs_full_target),
                                     ("loggers", self.needs_loggers)) if on)


def weight_grid(weight, *, steps: int = 10):
    """``max(w) / 2^k`` for ``k < steps`` and the default clip (:func:`ulr.ope.selection.hyperparameter_grid`)."""
    w = np.asarray(weight, dtype=float)
    g = np.unique(np.r_[w.max() / 2.0 ** np.arange(steps), est.default_clip(w)])
    return g[g > 0]


def _square_grid(weight):
    return weight_grid(weight) ** 2  # DRos's shrunk weight peaks at w = sqrt(lam)


def _model_terms(weight_fn):
    def terms(r, w, h, ql, qt):
        return qt + weight_fn(w, h) * (r - ql), np.ones_like(w)
    return terms


def _sndr_terms(r, w, h, ql, qt):
    return qt * np.mean(w, axis=-1, keepdims=True) + w * (r - ql), w


def _sndr_influence(r, w, h, ql, qt):
    return est.sndr_terms(r, w, q_logged=ql, q_target=qt)


_CLIP = Hyperparameter("clip", 0.0, np.inf, weight_grid)
_TAU = Hyperparameter("tau", 0.0, np.inf, weight_grid)
_LAM = Hyperparameter("lam", 0.0, np.inf, _square_grid)
def _power_grid(weight):
    """Metelli et al.'s order ``sqrt(log(1/delta) / n)`` at delta = 0.05: one value."""
    return np.array([min(1.0, np.sqrt(np.log(1 / 0.05) / np.shape(weight)[-1]))])


_POWER = Hyperparameter("lam", 0.0, 1.0, _power_grid)

REGISTRY: dict[str, Estimator] = {}


def register(e: Estimator) -> Estimator:
    """Add (or replace) an estimator; every surface lists it from then on."""
    if not isinstance(e, Estimator):
        raise TypeError("register an Estimator record")
    REGISTRY[e.name] = e
    return e


def unregister(name: str) -> None:
    """Remove an estimator (tests register and remove dummies)."""
    REGISTRY.pop(name, None)


for _e in (
    Estimator("ips", "IPS", "importance", unbiased=True, default=True, in_auto=True,
              basis_rank=70, terms=lambda r, w, h, ql, qt: (w * r, np.ones_like(w))),
    Estimator("clipped-ips", "clipped IPS", "importance", hyperparameter=_CLIP, default=True,
              in_auto=True, basis_rank=60, chain=("ips", None),
              terms=lambda r, w, h, ql, qt: (np.minimum(w, h) * r, np.ones_like(w))),
    Estimator("snips", "SNIPS", "importance", self_normalized=True, default=True,
              in_auto=True, basis_rank=10, terms=lambda r, w, h, ql, qt: (w * r, w)),
    Estimator("dr", "DR", "model", needs_reward_model=True, needs_full_target=True,
              unbiased=True, default=True, in_auto=True, basis_rank=20,
              terms=_model_terms(lambda w, h: w)),
    Estimator("dm", "DM", "model", needs_reward_model=True, needs_full_target=True,
              in_auto=True, basis_rank=80, terms=_model_terms(lambda w, h: np.zeros_like(w))),
    Estimator("sndr", "self-normalized DR", "model", needs_reward_model=True,
              needs_full_target=True, self_normalized=True, in_auto=True, basis_rank=30,
              terms=_sndr_terms, influence=_sndr_influence),
    Estimator("switch-dr", "Switch-DR", "model", needs_reward_model=True,
              needs_full_target=True, hyperparameter=_TAU, chain=("dr", "dm"), in_auto=True,
              basis_rank=50, terms=_model_terms(lambda w, h: est.switch_weight(w, tau=h))),
    Estimator("dros", "DR with shrinkage", "model", needs_reward_model=True,
              needs_full_target=True, hyperparameter=_LAM, chain=("dr", "dm"), in_auto=True,
              basis_rank=40, terms=_model_terms(lambda w, h: est.shrink_weight(w, lam=h))),
    Estimator("sg-ips", "sub-Gaussian IPS", "importance", hyperparameter=_POWER,
              terms=lambda r, w, h, ql, qt: (est.power_weight(w, lam=h) * r, np.ones_like(w))),
    Estimator("sg-dr", "sub-Gaussian DR", "model", needs_reward_model=True,
              needs_full_target=True, hyperparameter=_POWER,
              terms=_model_terms(lambda w, h: est.power_weight(w, lam=h))),
    Estimator("wips", "WIPS", "loggers", needs_loggers=True, basis_rank=1),
    Estimator("balanced-ips", "balanced IPS", "loggers", needs_loggers=True, unbiased=True,
              basis_rank=0),
):
    register(_e)

#: what "auto" is called wherever it is named
AUTO = "auto"
AUTO_LABEL = "chosen for me (SLOPE)"
LOGGING_LABEL = "logging policy (on-policy mean)"


class _Labels(Mapping):
    """Read-only name -> label view of the registry (plus ``auto`` and ``logging``)."""

    def _all(self) -> dict:
        return {**{k: e.label for k, e in REGISTRY.items()}, AUTO: AUTO_LABEL,
                "logging": LOGGING_LABEL}

    def __getitem__(self, k):
        return self._all()[k]

    def __iter__(self):
        return iter(self._all())

    def __len__(self):
        return len(self._all())


#: every estimator's label, read live from the registry
LABELS = _Labels()


def label(name: str) -> str:
    """The estimator's label (its name when unknown)."""
    return LABELS.get(name, name)


def names(*, loggers: bool = True) -> tuple:
    """Every registered estimator (the multi-logger ones only with ``loggers``)."""
    return tuple(k for k, e in REGISTRY.items() if loggers or not e.needs_loggers)


def choices() -> tuple:
    """What ``--estimators`` and the page accept: every estimator, then ``auto``."""
    return names() + (AUTO,)


def defaults() -> tuple:
    """The estimators computed when none are named."""
    return tuple(k for k, e in REGISTRY.items() if e.default)


def get(name: str) -> Estimator:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown estimator {name!r}; choose from "
                         f"{', '.join(choices())}") from None


def unmet(name: str, *, full_target: bool, loggers: bool) -> list[str]:
    """The need codes of ``name`` the input does not meet (empty: it may be computed)."""
    have = {"full_target": full_target, "loggers": loggers}
    return [k for k in get(name).needs if not have[k]]


def row_terms(name: str, reward, weight, *, hyperparameter=None, q_logged=None,
              q_target=None) -> tuple[np.ndarray, np.ndarray]:
    """Per-row ``(num, den)`` of a registered estimator: ``V = sum num / sum den``."""
    e = get(name)
    if e.terms is None:
        raise ValueError(f"{name} combines several loggers and has no per-row terms")
    r, w = est.check_rows(reward, weight)
    h = None
    if e.hyperparameter is not None:
        if hyperparameter is None:
            raise ValueError(f"{name} needs its {e.hyperparameter.name}")
        h = e.hyperparameter.check(hyperparameter)
    ql = qt = None
    if e.needs_reward_model:
        if q_logged is None or q_target is None:
            raise ValueError(f"{name} needs a reward model")
        ql, qt = est._model(q_logged, q_target, r)
    return e.terms(r, w, h, ql, qt)


def influence_terms(name: str, reward, weight, *, hyperparameter=None, q_logged=None,
                    q_target=None) -> tuple[float, np.ndarray]:
    """Estimate ``V`` and per-row terms whose mean has ``V``'s standard error.

    The record's ``influence`` when it has one (SNDR: the delta method's
    ``q_t + w (r - q_l - C) / mean(w)``); else ``num`` for a linear estimator and
    ``(num - V den) / mean(den)`` (the delta method) for a ratio.
    """
    num, den = row_terms(name, reward, weight, hyperparameter=hyperparameter,
                         q_logged=q_logged, q_target=q_target)
    value = float(num.sum() / den.sum())
    e = get(name)
    if e.influence is not None:
        return value, e.influence(np.asarray(reward, float), np.asarray(weight, float),
                                  hyperparameter, q_logged, q_target)
    if np.all(den == 1):
        return value, num
    return value, (num - value * den) / den.mean()
