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

The record is the only description of an estimator: nothing outside it, its tests and
:mod:`ulr.ope.loggers` (the multi-logger estimators' own arithmetic) compares an estimator's
name. Registering one record puts a new estimator in the CLI, the page, ``auto``'s
candidates, the intervals, the simulation studies, the colours and the contract's list
(:func:`contract_markdown`, copied into docs/contract.md; a test checks the copy).

References: each record's ``cite``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ulr.ope import terms as est

#: what each need asks of the input, in words that name no surface's control
NEEDS = {
    "full_target": "the target's probabilities of every action of each context",
    "loggers": "to know which logger wrote each row",
}


@dataclass(frozen=True)
class Hyperparameter:
    """A tuning knob: its ``name``, the closed range ``[low, high]``, the candidate
    ``grid`` SLOPE walks (a function of the log's importance weights, largest first) and
    ``default``: ``None`` when SLOPE picks the value, else the value per log as a function
    of the importance weights (along the last axis), which the caller's ``clip`` option
    replaces (clipped IPS's ``M``)."""

    name: str
    low: float
    high: float
    grid: Callable | None = None
    default: Callable | None = None

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
    default : computed when no estimator is named.
    reference : a reference of the verdict (the least biased estimators every input
        identifies: the verdict must hold for them too), in registry order.
    max_weight : ``max_weight(W, h) -> W'``, the largest weight it can put on a row given
        the largest importance weight ``W`` (the finite-sample bounds' term range), or
        ``None`` for ``W`` itself.
    unreliable_when : the warning codes that make it unreliable as the verdict's basis.
    basis_with_several_loggers : may be the verdict's basis when several loggers wrote the
        log (pooled IPS mixes their propensities: the multi-logger estimators replace it).
    color : its colour on every chart, or ``None`` for the palette's next.
    description : the axis title of a chart of its estimates, or ``None`` for ``label``.
    cite : the paper it comes from.
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
    reference: bool = False
    max_weight: Callable | None = None
    unreliable_when: tuple = ()
    basis_with_several_loggers: bool = True
    color: str | None = None
    description: str | None = None
    cite: str = ""

    @property
    def needs(self) -> tuple:
        """The codes of :data:`NEEDS` this estimator declares."""
        return tuple(k for k, on in (("full_target", self.needs_full_target),
                                     ("loggers", self.needs_loggers)) if on)

    @property
    def tuned(self) -> bool:
        """SLOPE picks its hyperparameter (it has one, without a per-log default)."""
        return self.hyperparameter is not None and self.hyperparameter.default is None


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


_CLIP = Hyperparameter("clip", 0.0, np.inf, weight_grid, default=est.default_clip)
_TAU = Hyperparameter("tau", 0.0, np.inf, weight_grid)
_LAM = Hyperparameter("lam", 0.0, np.inf, _square_grid)


def _power_grid(weight):
    """Metelli et al.'s order ``sqrt(log(1/delta) / n)`` at delta = 0.05: one value."""
    return np.array([min(1.0, np.sqrt(np.log(1 / 0.05) / np.shape(weight)[-1]))])


_POWER = Hyperparameter("lam", 0.0, 1.0, _power_grid)

def _at_most_h(W, h):
    return np.minimum(W, h)  # min(w, M) (clipped IPS), w 1{w <= tau} (Switch-DR)


def _none(W, h):
    return np.zeros_like(W)  # DM puts no weight on a row's reward


def _shrunk_peak(W, h):
    if np.isinf(h):
        return W
    peak = np.minimum(W, np.sqrt(h))  # lam w / (w^2 + lam) rises up to w = sqrt(lam)
    return est.shrink_weight(peak, lam=h)


def _power_max(W, h):
    return est.power_weight(W, lam=h)  # w / (1 - lam + lam w) rises with w


REGISTRY: dict[str, Estimator] = {}


def register(e: Estimator) -> Estimator:
    """Add (or replace) an estimator; every surface lists it from then on."""
    if not isinstance(e, Estimator):
        raise TypeError("register an Estimator record")
    if e.chain is not None and e.hyperparameter is None:  # SLOPE sorts a chain by its knob
        raise ValueError(f"{e.name}: a SLOPE chain orders a hyperparameter's grid; give a "
                         "hyperparameter, or no chain (a chain of its own).")
    REGISTRY[e.name] = e
    return e


def unregister(name: str) -> None:
    """Remove an estimator (tests register and remove dummies)."""
    REGISTRY.pop(name, None)


_DR = "Dudik, Langford & Li, \"Doubly robust policy evaluation and learning\", ICML 2011"
_SG = ("Metelli, Russo & Restelli, \"Subgaussian and differentiable importance sampling for "
       "off-policy evaluation and learning\", NeurIPS 2021")
_MULTI = ("Agarwal, Basu, Schnabel & Joachims, \"Effective evaluation using logged bandit "
          "feedback from multiple loggers\", KDD 2017")

for _e in (
    Estimator("ips", "IPS", "importance", unbiased=True, default=True, in_auto=True,
              basis_rank=70, terms=lambda r, w, h, ql, qt: (w * r, np.ones_like(w)),
              reference=True, unreliable_when=("heavy_tailed",),
              basis_with_several_loggers=False, color="#D55E00",
              description="Inverse propensity scoring estimate",
              cite="Horvitz & Thompson, \"A generalization of sampling without replacement "
                   "from a finite universe\", JASA 1952"),
    Estimator("clipped-ips", "clipped IPS", "importance", hyperparameter=_CLIP, default=True,
              in_auto=True, basis_rank=60, chain=("ips", None),
              terms=lambda r, w, h, ql, qt: (np.minimum(w, h) * r, np.ones_like(w)),
              max_weight=_at_most_h, unreliable_when=("heavy_tailed",), color="#E69F00",
              description="Clipped IPS estimate",
              cite="Strehl, Langford, Li & Kakade, \"Learning from logged implicit exploration "
                   "data\", NeurIPS 2010; default clip: Ionides, \"Truncated importance "
                   "sampling\", JCGS 2008"),
    Estimator("snips", "SNIPS", "importance", self_normalized=True, default=True,
              in_auto=True, basis_rank=10, terms=lambda r, w, h, ql, qt: (w * r, w),
              reference=True, color="#0072B2", description="Self-normalized IPS estimate",
              cite="Swaminathan & Joachims, \"The self-normalized estimator for "
                   "counterfactual learning\", NeurIPS 2015"),
    Estimator("dr", "DR", "model", needs_reward_model=True, needs_full_target=True,
              unbiased=True, default=True, in_auto=True, basis_rank=20,
              terms=_model_terms(lambda w, h: w), color="#009E73",
              description="Doubly robust estimate", cite=_DR),
    Estimator("dm", "DM", "model", needs_reward_model=True, needs_full_target=True,
              in_auto=True, basis_rank=80, terms=_model_terms(lambda w, h: np.zeros_like(w)),
              max_weight=_none, cite=_DR + " (the direct method, their baseline)"),
    Estimator("sndr", "self-normalized DR", "model", needs_reward_model=True,
              needs_full_target=True, self_normalized=True, in_auto=True, basis_rank=30,
              terms=_sndr_terms, influence=_sndr_influence,
              cite="Kallus & Uehara, \"Intrinsically efficient, stable, and bounded off-policy "
                   "evaluation for reinforcement learning\", NeurIPS 2019"),
    Estimator("switch-dr", "Switch-DR", "model", needs_reward_model=True,
              needs_full_target=True, hyperparameter=_TAU, chain=("dr", "dm"), in_auto=True,
              basis_rank=50, terms=_model_terms(lambda w, h: est.switch_weight(w, tau=h)),
              max_weight=_at_most_h,
              cite="Wang, Agarwal & Dudik, \"Optimal and adaptive off-policy evaluation in "
                   "contextual bandits\", ICML 2017"),
    Estimator("dros", "DR with shrinkage", "model", needs_reward_model=True,
              needs_full_target=True, hyperparameter=_LAM, chain=("dr", "dm"), in_auto=True,
              basis_rank=40, terms=_model_terms(lambda w, h: est.shrink_weight(w, lam=h)),
              max_weight=_shrunk_peak,
              cite="Su, Dimakopoulou, Krishnamurthy & Dudik, \"Doubly robust off-policy "
                   "evaluation with shrinkage\", ICML 2020"),
    Estimator("sg-ips", "sub-Gaussian IPS", "importance", hyperparameter=_POWER,
              terms=lambda r, w, h, ql, qt: (est.power_weight(w, lam=h) * r, np.ones_like(w)),
              max_weight=_power_max, cite=_SG),
    Estimator("sg-dr", "sub-Gaussian DR", "model", needs_reward_model=True,
              needs_full_target=True, hyperparameter=_POWER,
              terms=_model_terms(lambda w, h: est.power_weight(w, lam=h)),
              max_weight=_power_max, cite=_SG),
    Estimator("wips", "WIPS", "loggers", needs_loggers=True, basis_rank=1,
              cite=_MULTI + " (weighted IPS)"),
    Estimator("balanced-ips", "balanced IPS", "loggers", needs_loggers=True, unbiased=True,
              basis_rank=0, cite=_MULTI + " (balanced IPS)"),
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


def labels(names) -> str:
    """Estimators in words, as a setting reads them: ``("ips", "clipped-ips")`` ->
    "IPS, clipped IPS"."""
    return ", ".join(label(n) for n in names)


def names(*, loggers: bool = True) -> tuple:
    """Every registered estimator (the multi-logger ones only with ``loggers``)."""
    return tuple(k for k, e in REGISTRY.items() if loggers or not e.needs_loggers)


def choices() -> tuple:
    """What ``--estimators`` and the page accept: every estimator, then ``auto``."""
    return names() + (AUTO,)


def defaults() -> tuple:
    """The estimators computed when none are named."""
    return tuple(k for k, e in REGISTRY.items() if e.default)


def references() -> tuple:
    """The verdict's references (records with ``reference``), in registry order."""
    return tuple(k for k, e in REGISTRY.items() if e.reference)


def plain_reference() -> str:
    """The first reference that is linear and needs nothing (IPS): with unit weights its
    terms are the rewards (the logging policy's on-policy mean), and the multi-logger
    estimators' variance ratios are against it, pooled."""
    return next(k for k, e in REGISTRY.items()
                if e.reference and not e.self_normalized and not e.needs
                and not e.needs_reward_model)


def slope_references() -> tuple:
    """The references of every SLOPE pick's bound: the unbiased estimators and, biased only
    by O(1/n), the self-normalized ones (:mod:`ulr.ope.selection`)."""
    return tuple(k for k, e in REGISTRY.items() if e.unbiased or e.self_normalized)


def multi_logger() -> tuple:
    """The estimators that combine several loggers (records with ``needs_loggers``)."""
    return tuple(k for k, e in REGISTRY.items() if e.needs_loggers)


def single_log() -> tuple:
    """The estimators with per-row terms: what one simulated log (a study) can compute."""
    return tuple(k for k, e in REGISTRY.items() if e.terms is not None and not e.needs_loggers)


def fallback() -> str:
    """What is computed when no estimator asked for is identified: the preferred basis
    (lowest ``basis_rank``) among the references that need nothing."""
    return min((e.basis_rank, k) for k, e in REGISTRY.items()
               if e.reference and not e.needs and e.basis_rank is not None)[1]


def unreliable_by_warning() -> dict:
    """``{warning code: estimators it calls unreliable}`` from the records'
    ``unreliable_when``."""
    out: dict = {}
    for k, e in REGISTRY.items():
        for code in e.unreliable_when:
            out.setdefault(code, ())
            out[code] += (k,)
    return out


def color(name: str) -> str | None:
    """The record's colour (``None`` when unknown or it has none)."""
    e = REGISTRY.get(name)
    return None if e is None else e.color


def description(name: str) -> str | None:
    """The record's chart description (``None`` when unknown or it has none)."""
    e = REGISTRY.get(name)
    return None if e is None else e.description


def hyperparameter_for(name: str, weight, *, clip=None):
    """The hyperparameter ``name`` runs with when SLOPE does not pick it: the caller's
    ``clip`` or its per-log default (arrays along the last axis), or ``None`` (no knob, or
    one SLOPE tunes)."""
    hp = get(name).hyperparameter
    if hp is None or hp.default is None:
        return None
    return clip if clip is not None else hp.default(weight)


def contract_markdown() -> str:
    """The estimators' table of docs/contract.md (a test checks the copy there)."""
    rows = ["| estimator | label | needs | hyperparameter | paper |",
            "|---|---|---|---|---|"]
    for k, e in REGISTRY.items():
        needs = ", ".join(NEEDS[n] for n in e.needs) or "propensities"
        if e.needs_reward_model:
            needs += "; a reward model"
        hp = "" if e.hyperparameter is None else (
            e.hyperparameter.name + (" (SLOPE)" if e.tuned else ""))
        rows.append(f"| `{k}` | {e.label} | {needs} | {hp} | {e.cite} |")
    return "\n".join(rows) + "\n"


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
        ql, qt = est.model_arrays(q_logged, q_target, r)
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
