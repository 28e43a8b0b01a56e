"""Choosing an off-policy estimator and its hyperparameter from the log alone: SLOPE.

SLOPE (Su, Srinath & Krishnamurthy, "Adaptive estimator selection for
off-policy evaluation", ICML 2020) is Lepski's method: order the candidates
from the widest confidence interval (least bias, e.g. IPS) to the narrowest
(most bias, e.g. the direct method), and walk down the list while each new
estimate stays within the intervals of all the wider ones; stop before the
first that does not. The test used here is the improved one of Tucker & Lee
("Improved estimator selection for off-policy evaluation", 2021), as in Open
Bandit Pipeline: candidate ``i`` is kept when, for every kept ``j``,
``|V_i - V_j| <= cnf_i + (sqrt(6) - 1) cnf_j``, with ``cnf`` the one-sided
Student-t half-width at ``delta`` of the mean of the estimator's per-row terms.

The candidates are every family's hyperparameter grid (clipping ``M``,
switch threshold ``tau``, shrinkage ``lam``) and the plain estimators; the
grids come from the log's weights (:func:`hyperparameter_grid`). Across
families the bias need not grow as the width shrinks, which SLOPE assumes;
the benchmark measures what that costs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from ulr.ope import estimators as est

SLOPE_C = np.sqrt(6) - 1
AUTO_FAMILIES = ("ips", "clipped-ips", "snips", "dr", "sndr", "switch-dr", "dros", "dm")
DELTA = 0.2  # see select()


@dataclass(frozen=True)
class Selection:
    """The chosen estimator, its hyperparameter (``None`` if it has none) and why."""

    estimator: str
    hyperparameter: float | None
    value: float
    reason: str
    candidates: pd.DataFrame  # estimator, hyperparameter, value, cnf, kept (in SLOPE order)

    def to_dict(self) -> dict:
        h = self.hyperparameter
        return {"estimator": self.estimator,
                "hyperparameter": None if h is None or not np.isfinite(h) else float(h),
                "reason": self.reason}


def hyperparameter_grid(weight, *, steps: int = 10) -> np.ndarray:
    """Thresholds from the log's weights: ``max(w) / 2^k`` for ``k < steps``, and the default clip.

    A geometric ladder down from the largest weight, so it spans the weights'
    scale however heavy their tail, plus :func:`ulr.ope.estimators.default_clip`.
    Clipping ``M`` and switch ``tau`` use it directly; DRos uses the squares
    (its shrunk weight ``lam w / (w^2 + lam)`` peaks at ``w = sqrt(lam)``).
    """
    w = np.asarray(weight, dtype=float)
    g = np.unique(np.r_[w.max() / 2.0 ** np.arange(steps), est.default_clip(w)])
    return g[g > 0]


def candidate_list(weight, *, families=AUTO_FAMILIES, q_available: bool = True) -> list:
    """``(estimator, hyperparameter)`` pairs to choose among."""
    grid = hyperparameter_grid(weight)
    per = {"clipped-ips": list(grid), "switch-dr": list(grid), "dros": list(grid ** 2)}
    out = []
    for f in families:
        if f in ("dr", "sndr", "switch-dr", "dros", "dm", "sg-dr") and not q_available:
            continue
        for h in per.get(f, [None]):
            out.append((f, None if h is None else float(h)))
    return out


def student_cnf(num, den=None, *, delta: float = 0.05) -> float:
    """One-sided Student-t half-width ``t_{n-1, 1-delta} s / sqrt(n)`` (ratio: delta method)."""
    num = np.asarray(num, dtype=float)
    n = len(num)
    if den is not None:
        v = num.sum() / den.sum()
        num = (num - v * den) / den.mean()
    return float(student_t.ppf(1 - delta, n - 1) * num.std(ddof=1) / np.sqrt(n))


def slope_index(values, cnfs) -> tuple[int, int | None, list]:
    """SLOPE over candidates (Tucker & Lee's test): ``(chosen, first rejected, order)``.

    Candidates are visited by decreasing ``cnf``; ``order`` is that visiting
    order. Ties keep the given order.
    """
    values = np.asarray(values, dtype=float)
    cnfs = np.asarray(cnfs, dtype=float)
    order = list(np.argsort(-cnfs, kind="stable"))
    kept = []
    for pos, i in enumerate(order):
        if kept:
            j = np.array(kept)
            if not np.all(np.abs(values[j] - values[i]) <= cnfs[i] + SLOPE_C * cnfs[j]):
                return order[pos - 1], i, order
        kept.append(i)
    return order[-1], None, order


def _fmt(e, h):
    if h is None:
        return e
    name = est.HYPERPARAMETER[e]
    return f"{e} ({name} = {h:.4g})"


def select(reward, weight, *, q_logged=None, q_target=None, families=AUTO_FAMILIES,
           candidates=None, delta: float = DELTA) -> Selection:
    """Choose an estimator and hyperparameter by SLOPE (see the module docstring).

    Parameters
    ----------
    reward, weight : arrays (n,) of one log.
    q_logged, q_target : the reward model (as for :func:`ulr.ope.estimators.doubly_robust`);
        without it only the model-free families compete.
    families : estimator families to choose among (default: all but sub-Gaussian).
    candidates : explicit ``(estimator, hyperparameter)`` pairs instead of the grids.
    delta : one-sided error of each candidate's confidence width. OBP uses 0.05;
        0.2 (narrower widths, so the walk stops sooner, before the biased
        candidates) gave the lower RMSE on ``benchmarks/bench_ope_selection.py``.
    """
    if candidates is None:
        candidates = candidate_list(weight, families=families,
                                    q_available=q_logged is not None and q_target is not None)
    if not candidates:
        raise ValueError("no candidate estimators")
    rows = []
    for e, h in candidates:
        num, den = est.row_terms(e, reward, weight, hyperparameter=h, q_logged=q_logged,
                                 q_target=q_target)
        ratio = not np.all(den == 1)
        rows.append({"estimator": e, "hyperparameter": h, "value": num.sum() / den.sum(),
                     "cnf": student_cnf(num, den if ratio else None, delta=delta)})
    table = pd.DataFrame(rows)
    best, rejected, order = slope_index(table["value"], table["cnf"])
    table["kept"] = False
    table.loc[order[:order.index(best) + 1], "kept"] = True
    table = table.iloc[order].reset_index(drop=True)
    b = rows[best]
    reason = ("SLOPE: going from the widest interval to the narrowest, "
              f"{_fmt(b['estimator'], b['hyperparameter'])} is the narrowest "
              f"(half-width {b['cnf']:.3g}) whose estimate agrees with every wider one")
    if rejected is not None:
        r = rows[rejected]
        reason += (f"; the next, {_fmt(r['estimator'], r['hyperparameter'])}, disagrees, a sign of "
                   "its bias")
    else:
        reason += "; all candidates agree, so the narrowest is taken"
    return Selection(estimator=b["estimator"], hyperparameter=b["hyperparameter"],
                     value=float(b["value"]), reason=reason + ".", candidates=table)


# --------------------------------------------------------------------------- benchmark

SINGLE = ("ips", "clipped-ips", "snips", "dr", "sndr", "dm")


def selection_world(*, logging_temperature: float = 0.5, temperature: float = 0.5,
                    model_scale: float = 1.5, seed: int = 4):
    """A simulated world where IPS is heavy-tailed and the reward model misspecified.

    Softmax logging at ``logging_temperature`` of a noisy copy of the click
    model; target: softmax at ``temperature`` of the click model with its
    feature weights rotated (so it favours actions the logger rarely shows).
    The reward model per pair is ``model_scale * mean(q) + 0.3 (q - mean(q))``
    plus noise (sd 0.05), clipped to [0.01, 0.99]: right ordering, wrong level
    and scale. Returns ``(sim, pi, qhat)``.
    """
    from ulr.ope.simulate import simulate_bandit

    sim = simulate_bandit(contexts=20, actions=10, logging="softmax",
                          logging_temperature=logging_temperature, base_rate=0.2, seed=seed)
    pi = sim.policy(np.r_[sim.beta[1:], sim.beta[:1]], temperature=temperature)
    q = sim.q[0]
    noise = np.random.default_rng(seed + 5).standard_normal(len(q))
    qhat = np.clip(model_scale * q.mean() + 0.3 * (q - q.mean()) + 0.05 * noise, 0.01, 0.99)
    return sim, pi, qhat


def selection_benchmark(*, rows: int = 800, draws: int = 100, delta: float = DELTA, seed: int = 4,
                        **world) -> tuple[pd.DataFrame, dict]:
    """RMSE against the truth of SLOPE's choice and of each single estimator, over ``draws`` logs.

    Single estimators at their defaults: IPS, clipped IPS (``M`` =
    :func:`ulr.ope.estimators.default_clip`), SNIPS, DR, SNDR, DM. Returns the
    table (estimator, rmse, bias, ratio to the best single one) and the counts
    of SLOPE's picks per family.
    """
    sim, pi, qhat = selection_world(seed=seed, **world)
    truth = float(sim.true_value(pi))
    cand = sim.candidates
    d = sim.sample(rows, draws=draws, seed=seed + 1)
    w, r = pi[d.pair] / d.propensity, d.reward
    ql, qt = qhat[d.pair], cand.per_context_sum(pi * qhat)[cand.context[d.pair]]
    vals = {"ips": est.ips(r, w), "snips": est.snips(r, w),
            "clipped-ips": np.mean(np.minimum(w, est.default_clip(w)[:, None]) * r, axis=-1),
            "dr": est.doubly_robust(r, w, q_logged=ql, q_target=qt),
            "sndr": est.sndr(r, w, q_logged=ql, q_target=qt), "dm": est.direct_method(qt)}
    picks = [select(r[i], w[i], q_logged=ql[i], q_target=qt[i], delta=delta) for i in range(draws)]
    vals["slope"] = np.array([p.value for p in picks])
    t = pd.DataFrame({"estimator": list(vals),
                      "rmse": [float(np.sqrt(np.mean((v - truth) ** 2))) for v in vals.values()],
                      "bias": [float(np.mean(v) - truth) for v in vals.values()]})
    t["ratio_to_best_single"] = t["rmse"] / t.loc[t["estimator"].isin(SINGLE), "rmse"].min()
    counts = pd.Series([p.estimator for p in picks]).value_counts().to_dict()
    return t, counts
