"""Choosing an off-policy estimator and its hyperparameter from the log alone: SLOPE.

SLOPE (Su, Srinath & Krishnamurthy, "Adaptive estimator selection for
off-policy evaluation", ICML 2020; Tucker & Lee, "Improved estimator
selection for off-policy evaluation", 2021) is Lepski's method. It needs the
candidates in a chain along which the bias can only grow and the variance
only shrink, and walks down the chain while each new estimate agrees with
every earlier one; it keeps the last that does. Each family's hyperparameter
is such a chain, from its unbiased end (the root) to its most biased one:

- clipping: IPS, then clipped IPS with ``M`` decreasing;
- switch: DR, then Switch-DR with ``tau`` decreasing, then DM;
- shrinkage: DR, then DRos with ``lam`` decreasing, then DM;
- SNIPS and SNDR have no hyperparameter: each is a chain of one.

Two families are not one chain (clipping biases IPS down, a reward model
that is too high biases the DR family up), so the walk runs per family and
the families' picks meet in a final comparison, Goldenshluger & Lepski's
("Bandwidth selection in kernel density estimation: oracle inequalities and
adaptive minimax optimality", Ann. Statist. 2011) extension of Lepski's
method to candidates that are not nested: each pick ``c`` gets the bound

    B(c) = max_{j in J(c)} (|V_c - V_j| - kappa se(V_c - V_j))_+  +  kappa se(V_c)
           +  a se(V_c - V_root(c)),
    J(c) = {j : se(V_j) >= se(V_c)}  union  U,

its disagreement beyond noise with the candidates in ``J(c)`` (a lower
estimate of its bias) plus its own noise; the smallest bound wins. The
disagreement bounds ``|b_c - b_j|`` from below, so it estimates ``|b_c|``
when ``b_j = 0``. Goldenshluger & Lepski compare with the more variable
candidates (within a chain, the less biased ones); across families variance
says nothing about bias, so the unbiased candidates ``U`` (IPS, DR, and the
self-normalized SNIPS and SNDR, biased by O(1/n)) are references whatever
their variance. Without them a biased pick of low variance escapes the
check against an unbiased estimate that happens to be less variable: with a
reward model set too high and heavy-tailed weights, DR is noisier than IPS,
Switch-DR's walk accepts a bias of about ``kappa se(DR)``, and IPS, often
less variable than that pick, would never be asked.

The last term (0 for the unbiased candidates ``U``; ``a = ALLOW = 1``) is the
bias the walk could not rule out: agreeing with its chain's unbiased root within
``kappa`` standard errors of their difference bounds a candidate's bias only up to
that much, and one standard error of it is charged. Without
it a biased pick's bound counts its bias as zero whenever the disagreement hides
in the noise, and clipped IPS (clip far below the largest weight), or DM through
Switch-DR and DRos, wins on logs where it is biased by more than the unbiased
estimates' error; a larger ``a`` gives up the worlds where clipped IPS or a tuned DR
is best (``benchmarks/bench_ope_selection.py`` has the figures for both). The same
term widens the chosen estimator's interval (:attr:`Selection.allowance`).

"Agrees" is ``|V_i - V_j| <= kappa se(V_i - V_j)`` for every earlier ``j``,
with ``se(V_i - V_j)`` the standard error of the paired difference (both are
means over the same rows). SLOPE's own test, ``|V_i - V_j| <= cnf_i + cnf_j``
from the intervals' half-widths, bounds the same difference by the triangle
inequality; for neighbours in a chain (the same weights, clipped a little
more) the paired error is far smaller than the sum, so a bias shows sooner.
``kappa = 2`` (a 95% two-sided normal bound) throughout: the deviation bound
of Su et al.'s analysis. Standard errors come from each estimator's per-row
influence terms (:func:`influence_terms`), which for SNIPS and SNDR are the
delta method's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ulr.ope import estimators as est
from ulr.ope import registry
from ulr.text import plain

KAPPA = 2.0
#: standard errors of ``V_c - V_root`` a biased candidate's bound adds (module docstring)
ALLOW = 1.0


def auto_families() -> tuple:
    """The registry's candidates of ``auto`` (records with ``in_auto``)."""
    return tuple(k for k, e in registry.REGISTRY.items() if e.in_auto and e.terms is not None)


def _reference(name: str) -> bool:
    return name in registry.slope_references()  # unbiased, or self-normalized (module doc)


@dataclass(frozen=True)
class Selection:
    """The chosen estimator, its hyperparameter (``None`` if it has none) and why."""

    estimator: str
    hyperparameter: float | None
    value: float
    reason: str
    candidates: pd.DataFrame  # estimator, hyperparameter, value, se, family_pick, bound, chosen
    #: ``ALLOW se(V_chosen - V_root)``: the bias the walk could not rule out against its
    #: chain's unbiased root (0 for a reference); intervals of the choice widen by it
    allowance: float = 0.0

    def to_dict(self) -> dict:
        h = self.hyperparameter
        return {"estimator": self.estimator,
                "hyperparameter": None if h is None or not np.isfinite(h) else float(h),
                "reason": self.reason, "bias_allowance": self.allowance}


def hyperparameter_grid(weight, *, steps: int = 10) -> np.ndarray:
    """Thresholds from the log's weights: ``max(w) / 2^k`` for ``k < steps``, and the default clip.

    A geometric ladder down from the largest weight, so it spans the weights'
    scale however heavy their tail, plus :func:`ulr.ope.estimators.default_clip`.
    Clipping ``M`` and switch ``tau`` use it directly; DRos uses the squares
    (its shrunk weight ``lam w / (w^2 + lam)`` peaks at ``w = sqrt(lam)``).
    """
    return registry.weight_grid(weight, steps=steps)


def candidate_list(weight, *, families=None, q_available: bool = True) -> list:
    """``(estimator, hyperparameter)`` pairs to choose among: each family's record's grid
    (:class:`ulr.ope.registry.Hyperparameter`), or ``None`` when it has no knob."""
    out = []
    for f in (auto_families() if families is None else families):
        e = registry.get(f)
        if e.needs_reward_model and not q_available:
            continue
        hp = e.hyperparameter
        grid = [None] if hp is None or hp.grid is None else list(hp.grid(weight))
        out.extend((f, None if h is None else float(h)) for h in grid)
    return out


def influence_terms(estimator: str, reward, weight, *, hyperparameter=None, q_logged=None,
                    q_target=None) -> tuple[float, np.ndarray]:
    """Estimate ``V`` and per-row terms ``x_i`` whose mean has ``V``'s standard error.

    Linear estimators: their row terms (:func:`ulr.ope.registry.row_terms`).
    SNIPS: the delta method's ``(w_i r_i - V w_i) / mean(w)``. SNDR,
    ``mean(q_t) + C``, ``C = sum w (r - q_l) / sum w``: ``q_t,i + w_i (r_i -
    q_l,i - C) / mean(w)`` (its ``(num, den)`` form carries ``mean(w)`` fixed,
    which would count the weights' noise twice).
    """
    return registry.influence_terms(estimator, reward, weight, hyperparameter=hyperparameter,
                                    q_logged=q_logged, q_target=q_target)


def paired_se(terms) -> tuple[np.ndarray, np.ndarray]:
    """Standard errors of each mean and of each paired difference: ``(se (m,), D (m, m))``.

    ``terms`` (m, n): per-row terms of ``m`` estimators on the same ``n`` rows;
    ``D[i, j] = sd(x_i - x_j) / sqrt(n)`` (ddof 1).
    """
    x = np.asarray(terms, dtype=float)
    n = x.shape[1]
    xc = x - x.mean(axis=1, keepdims=True)
    cov = xc @ xc.T / (n - 1)
    var = np.diag(cov)
    d = np.maximum(var[:, None] + var[None, :] - 2 * cov, 0.0)
    return np.sqrt(np.maximum(var, 0.0) / n), np.sqrt(d / n)


def chains(candidates) -> list[list[int]]:
    """Indices of ``candidates`` in each family's chain, from its root to its most biased.

    A hyperparameter family is ordered by decreasing hyperparameter behind its
    root (IPS or DR, when a candidate) and before DM (switch and shrinkage).
    Every candidate in no such chain is a chain of its own.
    """
    names = [e for e, _ in candidates]
    out, used = [], set()
    chained = {k: e.chain for k, e in registry.REGISTRY.items() if e.chain is not None}
    for fam, (root, end) in chained.items():
        members = sorted((i for i, e in enumerate(names) if e == fam),
                         key=lambda i: -candidates[i][1])
        if not members:
            continue
        head = [i for i, e in enumerate(names) if e == root]
        tail = [i for i, e in enumerate(names) if e == end]
        out.append(head + members + tail)
        used.update(out[-1])
    return out + [[i] for i in range(len(names)) if i not in used]


def lepski_walk(values, diff_se, order, *, kappa: float = KAPPA) -> tuple[int, int | None, int]:
    """SLOPE's walk down one chain: ``(chosen, first rejected or None, whom it disagreed with)``.

    Candidate ``order[k]`` is kept while ``|V_i - V_j| <= kappa diff_se[i, j]``
    for every kept ``j``; the walk stops at the first that fails.
    """
    v = np.asarray(values, dtype=float)
    kept = [order[0]]
    for i in order[1:]:
        gap = np.abs(v[i] - v[kept]) - kappa * diff_se[i, kept]
        if np.any(gap > 0):
            return kept[-1], i, kept[int(np.argmax(gap))]
        kept.append(i)
    return kept[-1], None, kept[-1]


def error_bounds(values, se, diff_se, *, kappa: float = KAPPA,
                 unbiased=None) -> tuple[np.ndarray, np.ndarray]:
    """Goldenshluger-Lepski bound of every candidate and whom its disagreement is with.

    ``B(c) = max_{j in J(c)} (|V_c - V_j| - kappa D[c, j])_+ + kappa se_c`` with
    ``J(c) = {j: se_j >= se_c or unbiased[j]}`` (``unbiased``: a boolean mask,
    default none; see the module docstring); ``against[c]`` is the maximizing
    ``j`` (``c`` itself when none disagrees).
    """
    v, s = np.asarray(values, dtype=float), np.asarray(se, dtype=float)
    ref = np.zeros(len(v), bool) if unbiased is None else np.asarray(unbiased, bool)
    gap = np.abs(v[:, None] - v[None, :]) - kappa * diff_se
    gap = np.where((s[None, :] >= s[:, None]) | ref[None, :], np.maximum(gap, 0.0), 0.0)
    np.fill_diagonal(gap, 0.0)
    against = np.where(gap.max(axis=1) > 0, gap.argmax(axis=1), np.arange(len(v)))
    return gap.max(axis=1) + kappa * s, against


def _fmt(e, h):
    """An estimator as the page and the table name it (one name per estimator: its label,
    never its identifier), with its setting when it has one: "Clipped IPS at clip 20"."""
    if h is None:
        return registry.label(e)
    hp = registry.get(e).hyperparameter.name
    return f"{registry.label(e)} at {SETTING_WORDS.get(hp, hp)} {plain(h, sig=4)}"


#: a hyperparameter's name as a reader sees it (never the code's identifier)
SETTING_WORDS = {"lam": "λ", "tau": "τ"}


def select(reward, weight, *, q_logged=None, q_target=None, families=None,
           candidates=None, kappa: float = KAPPA) -> Selection:
    """Choose an estimator and hyperparameter: SLOPE per family, then the smallest bound.

    Parameters
    ----------
    reward, weight : arrays (n,) of one log.
    q_logged, q_target : the reward model (as for :func:`ulr.ope.estimators.doubly_robust`);
        without it only the model-free families compete.
    families : estimator families to choose among (default: :func:`auto_families`).
    candidates : explicit ``(estimator, hyperparameter)`` pairs instead of the grids.
    kappa : standard errors a difference may reach and still count as noise (see the
        module docstring).
    """
    if candidates is None:
        candidates = candidate_list(weight, families=families,
                                    q_available=q_logged is not None and q_target is not None)
    if not candidates:
        raise ValueError("no candidate estimators")
    if not kappa > 0:
        raise ValueError("kappa must be positive")
    candidates = [(e, None if h is None else float(h)) for e, h in candidates]
    pairs = [influence_terms(e, reward, weight, hyperparameter=h, q_logged=q_logged,
                             q_target=q_target) for e, h in candidates]
    values = np.array([p[0] for p in pairs])
    se, diff_se = paired_se(np.vstack([p[1] for p in pairs]))
    walks = {}
    for chain in chains(candidates):
        pick, rejected, blocker = lepski_walk(values, diff_se, chain, kappa=kappa)
        walks.setdefault(pick, (rejected, blocker))
    picks = list(walks)
    unbiased = np.array([_reference(e) for e, _ in candidates])
    bound, against = error_bounds(values, se, diff_se, kappa=kappa, unbiased=unbiased)
    # the bias a walk accepted is bounded only up to kappa se(V_c - V_root): a biased pick
    # pays for it, so it wins only where its bias is known to be small (module docstring)
    root_of = {i: c[0] for c in chains(candidates) for i in c}
    allow = np.array([0.0 if unbiased[i] or root_of[i] == i else ALLOW * diff_se[i, root_of[i]]
                      for i in range(len(candidates))])
    bound = bound + allow
    best = picks[int(np.argmin(bound[picks]))]
    table = pd.DataFrame({"estimator": [e for e, _ in candidates],
                          "hyperparameter": [h for _, h in candidates], "value": values,
                          "se": se, "bound": bound})
    table["family_pick"] = table.index.isin(picks)
    table["chosen"] = table.index == best
    e, h = candidates[best]
    return Selection(estimator=e, hyperparameter=h, value=float(values[best]),
                     allowance=float(allow[best]),
                     reason=_reason(candidates, best, picks, walks[best], bound, se, against,
                                    kappa),
                     candidates=table)


def _reason(candidates, best, picks, walk, bound, se, against, kappa) -> str:
    name = [_fmt(*c) for c in candidates]
    k = f"{kappa:g}"
    text = (f"SLOPE within each family (from its unbiased end, each estimate kept while it "
            f"stays within {k} standard errors of its difference from every earlier one) "
            f"picked {', '.join(name[i] for i in picks)}. ")
    bias = bound[best] - kappa * se[best]
    versus = (f"{plain(bias, sig=3)} for its disagreement beyond noise with {name[against[best]]}"
              if against[best] != best
              else "nothing, as it agrees with every wider or unbiased estimate")
    text += (f"Of these {name[best]} has the smallest error bound, {plain(bound[best], sig=3)}: "
             f"{k} x its standard error {plain(se[best], sig=3)}, plus {versus}")
    rejected, blocker = walk
    if rejected is not None:
        text += (f"; its family's walk stopped before {name[rejected]}, which differs from "
                 f"{name[blocker]} by more than {k} standard errors, a sign of its bias")
    return text + "."
