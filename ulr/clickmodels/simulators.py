"""Each click model's simulator hooks, one function per model and simulator (issue 53).

The records of :mod:`ulr.clickmodels.records` point at these; the three simulators
dispatch through the record instead of testing the model's name:

- ``world_*``: :func:`ulr.simulate.simulate_click_model` (documents with attractiveness
  ``a`` and satisfaction ``s``, every draw made by the caller in ``u``);
- ``graded_*``: :func:`ulr.simulate.simulate_clicks` (graded relevance, the PBM, the
  cascade or trust bias over ``g_shown``);
- ``study_*``: the user models of :func:`ulr.study.simulate.simulate_clicks`;
- ``slate_*``: the slate world of :mod:`ulr.ope.slate` (expected clicks, sampled clicks).

The code is the simulators' own, moved here unchanged (same draws in the same order), so
every log is bit for bit what it was. A leaf module: numpy and :mod:`ulr.errors` only.
"""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace

import numpy as np

from ulr.errors import UlrError

RELEVANT_ABOVE = 0.4  # trust: a document is relevant when its attractiveness draw exceeds this


def trust_truth(docs: int, *, theta=None, eps_plus=None, eps_minus=None) -> dict:
    """The trust-bias simulation's per-rank truth: ``theta_k = 1 / k^0.8``,
    ``eps+_k = 0.98 - 0.02 (k - 1)`` and ``eps-_k = 0.35 / k`` unless given; ``alpha_k =
    theta_k (eps+_k - eps-_k)``, ``beta_k = theta_k eps-_k``."""
    r = np.arange(1, docs + 1, dtype=float)
    out = {}
    for name, given, default in (("theta", theta, r ** -0.8),
                                 ("eps_plus", eps_plus, np.clip(0.98 - 0.02 * (r - 1), 0.5, 1)),
                                 ("eps_minus", eps_minus, 0.35 / r)):
        v = default if given is None else np.asarray(given, dtype=float)
        if v.shape != (docs,):
            raise UlrError(f"{name.replace('_', ' ')} needs one value per position ({docs}), "
                           f"got {len(v)}.")
        if np.any(~np.isfinite(v)) or np.any((v < 0) | (v > 1)):
            raise UlrError(f"{name.replace('_', ' ')} values must lie in [0, 1].")
        out[name] = v
    if np.any(out["eps_minus"] > out["eps_plus"]):
        raise UlrError("eps minus (clicks on irrelevant results) must not exceed eps plus at "
                       "any position.")
    out["alpha"] = out["theta"] * (out["eps_plus"] - out["eps_minus"])
    out["beta"] = out["theta"] * out["eps_minus"]
    return out


# --------------------------------------------------------------- simulate_click_model

def world_trust(w: SimpleNamespace) -> tuple[np.ndarray, np.ndarray, dict]:
    """Trust bias (Agarwal et al. 2019): ``P(click) = beta_k + alpha_k R``, ``R`` = the
    document's ``alpha`` above :data:`RELEVANT_ABOVE`. Returns clicks, the examination
    probability of every slot and the truth."""
    tt = w.trust
    relevant = w.alpha > RELEVANT_ABOVE
    truth = {"alpha": w.alpha, "sigma": w.sigma, "relevant": relevant.astype(np.int8),
             **{k: tt[k] for k in ("theta", "eps_plus", "eps_minus")},
             "alpha_rank": tt["alpha"], "beta_rank": tt["beta"]}
    p = tt["beta"][None, :] + tt["alpha"][None, :] * relevant[w.doc]
    click = w.u[:, :, 0] < p
    exam_p = np.broadcast_to(tt["theta"][None, :], (w.S, w.D))
    return click, exam_p, truth


def _world_position(w: SimpleNamespace, *, browsing: bool):
    """PBM ``theta_r = 1 / r^0.8``, or (``browsing``) UBM ``gamma_{r, r'} = 1 / (r -
    r')^0.6``, times 0.9 without a click above."""
    S, D, r, u, a = w.S, w.D, w.r, w.u, w.a
    truth = {"alpha": w.alpha, "sigma": w.sigma}
    click = np.zeros((S, D), dtype=bool)
    exam_p = np.zeros((S, D))
    theta = r ** -0.8
    gamma = np.zeros((D, D))
    for k in range(D):
        gamma[k, 0] = 0.9 * (k + 1) ** -0.6
        gamma[k, 1:k + 1] = (k + 1 - np.arange(1, k + 1)) ** -0.6
    prev = np.zeros(S, dtype=np.int64)
    for k in range(D):
        e = gamma[k, prev] if browsing else theta[k]
        exam_p[:, k] = e if browsing else theta[k]
        click[:, k] = u[:, k, 0] < e * a[:, k]
        prev = np.where(click[:, k], k + 1, prev)
    truth.update(gamma=gamma) if browsing else truth.update(theta=theta)
    return click, exam_p, truth


def _world_cascade(w: SimpleNamespace, *, cont, truth_of):
    """The cascade family, top-down: at rank ``k`` go on with probability ``cont_c`` after
    a click and ``cont_s`` after none, ``(cont_c, cont_s) = cont(k, S, sigma, lam)`` with
    ``lambda_r = 0.7 - 0.03 r``; ``truth_of(lam)`` adds the model's parameters to the truth."""
    S, D, r, u, a, s = w.S, w.D, w.r, w.u, w.a, w.s
    truth = {"alpha": w.alpha, "sigma": w.sigma}
    click = np.zeros((S, D), dtype=bool)
    exam_p = np.zeros((S, D))
    lam = 0.7 - 0.03 * r
    truth.update(truth_of(lam))
    examined = np.ones(S, dtype=bool)
    p_e = np.ones(S)
    for k in range(D):
        exam_p[:, k] = p_e
        click[:, k] = examined & (u[:, k, 0] < a[:, k])
        cont_c, cont_s = cont(k, S, s, lam)
        go = np.where(click[:, k], u[:, k, 1] < cont_c, u[:, k, 2] < cont_s)
        examined = examined & go
        p_e = p_e * (a[:, k] * cont_c + (1 - a[:, k]) * cont_s)
    return click, exam_p, truth


def _stop_at_click(k, S, s, lam):
    """Cascade: stop at the first click, go on after none."""
    return np.zeros(S), np.ones(S)


def _dependent(k, S, s, lam):
    """DCM: go on after a click with ``lambda_k``."""
    return np.full(S, lam[k]), np.ones(S)


def _satisfied(k, S, s, lam, *, g: float):
    """DBN: go on with ``g``, and after a click only when not satisfied (``1 - sigma``)."""
    return g * (1 - s[:, k]), np.full(S, g)


world_pbm = partial(_world_position, browsing=False)
world_ubm = partial(_world_position, browsing=True)
world_cascade = partial(_world_cascade, cont=_stop_at_click, truth_of=lambda lam: {})
world_dcm = partial(_world_cascade, cont=_dependent, truth_of=lambda lam: {"lam": lam})
world_dbn = partial(_world_cascade, cont=partial(_satisfied, g=0.85),
                    truth_of=lambda lam: {"gamma": 0.85})
world_sdbn = partial(_world_cascade, cont=partial(_satisfied, g=1.0),
                     truth_of=lambda lam: {"gamma": 1.0})


# --------------------------------------------------------------- simulate_clicks (graded)

def graded_trust(cfg, rng, g_shown):
    """``g_shown`` is the binary relevance R (:func:`trust_truth`'s eps). Returns clicks,
    the true examination of every slot and theta per position."""
    S, D = g_shown.shape
    exam = cfg.examination()
    tt = trust_truth(D, theta=exam)
    p = tt["beta"][None, :] + tt["alpha"][None, :] * g_shown
    clicks = rng.random((S, D)) < p
    return clicks, np.broadcast_to(exam, (S, D)), exam.copy()


def graded_pbm(cfg, rng, g_shown):
    """``P(click) = theta_k gamma(y)``."""
    S, D = g_shown.shape
    exam = cfg.examination()
    clicks = rng.random((S, D)) < exam[None, :] * g_shown
    return clicks, np.broadcast_to(exam, (S, D)), exam.copy()


def graded_cascade(cfg, rng, g_shown):
    """Scan top-down, click the first attractive document, stop; theta is the average
    probability that the position is examined, ``prod_{j<k} (1 - gamma_j)``."""
    S, D = g_shown.shape
    attractive = rng.random((S, D)) < g_shown
    any_click = attractive.any(axis=1)
    first = np.where(any_click, attractive.argmax(axis=1), D)
    clicks = np.zeros((S, D), dtype=bool)
    rows = np.flatnonzero(any_click)
    clicks[rows, first[rows]] = True
    surv = np.cumprod(1.0 - g_shown, axis=1)
    theta_out = np.concatenate([np.ones((S, 1)), surv[:, :-1]], axis=1).mean(axis=0)
    return clicks, np.broadcast_to(theta_out, (S, D)), theta_out


# --------------------------------------------------------------- the study's user models

def power(k, eta: float) -> np.ndarray:
    """``(1/k)^eta``."""
    return (1.0 / np.asarray(k, dtype=np.float64)) ** float(eta)


def _study_position(g, mask, u, rng, *, eta: float, continuation: float, trust: bool):
    """PBM ``theta_k = (1/k)^eta`` on ``g``, or trust bias ``g + (1 - g) 0.65 / k``."""
    S, K = g.shape
    k = np.arange(1, K + 1)
    theta = power(k, eta)[None, :]
    p = g + (1.0 - g) * (0.65 / k)[None, :] if trust else g
    exam = np.where(mask, np.broadcast_to(theta, (S, K)), 0.0)
    return (u < theta * p) & mask, exam


def study_ubm(g, mask, u, rng, *, eta: float, continuation: float):
    """UBM: examination ``(1 / distance to the last click)^eta``."""
    S, K = g.shape
    click = np.zeros((S, K), dtype=bool)
    exam = np.zeros((S, K))
    last = np.zeros(S, dtype=np.int64)
    for j in range(K):
        e = power(np.where(last > 0, j + 1 - last, j + 1), eta)
        exam[:, j] = np.where(mask[:, j], e, 0.0)
        click[:, j] = mask[:, j] & (u[:, j] < e * g[:, j])
        last = np.where(click[:, j], j + 1, last)
    return click, exam


def _study_cascade(g, mask, u, rng, *, eta: float, continuation: float, stop: bool):
    """Cascade (``stop``: the first click ends the session), or DBN: satisfied after a
    click with probability ``g``, else go on with probability ``continuation``."""
    S, K = g.shape
    click = np.zeros((S, K), dtype=bool)
    exam = np.zeros((S, K))
    looking = np.ones(S, dtype=bool)
    v = rng.random((S, K))
    for j in range(K):
        exam[:, j] = np.where(mask[:, j] & looking, 1.0, 0.0)
        click[:, j] = looking & mask[:, j] & (u[:, j] < g[:, j])
        if stop:
            looking &= ~click[:, j]
        else:
            satisfied = click[:, j] & (v[:, j] < g[:, j])
            looking &= ~satisfied & (rng.random(S) < continuation)
    return click, exam


study_pbm = partial(_study_position, trust=False)
study_trust = partial(_study_position, trust=True)
study_cascade = partial(_study_cascade, stop=True)
study_dbn = partial(_study_cascade, stop=False)


# --------------------------------------------------------------- the slate world

def slate_pbm_expected(theta, a):
    """Expected clicks per slot: ``theta_k a``."""
    return theta[None, :] * a


def slate_cascade_expected(theta, a):
    """Expected clicks per slot: ``a_k prod_{j<k} (1 - a_j)``."""
    before = np.cumprod(1 - a, axis=1) / (1 - a)
    return before * a


def slate_pbm_clicks(theta, a, u):
    return (u < theta[None, :] * a).astype(float)


def slate_cascade_clicks(theta, a, u):
    attracted = u < a
    first = np.argmax(attracted, axis=1)
    out = np.zeros(a.shape)
    hit = attracted.any(axis=1)
    out[np.flatnonzero(hit), first[hit]] = 1.0
    return out
