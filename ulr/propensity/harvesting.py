"""Intervention harvesting: position bias without randomization.

Agarwal, Zaitsev, Wang, Li, Najork & Joachims, "Estimating position bias
without intrusive interventions", WSDM 2019.

When different rankers (or one ranker with per-session noise, as in our
simulated logs) show the same (query, doc) at positions k and k', the
rankers' choice plays the role of a randomized swap: it does not depend on
whether the user will click. Over the *interventional set* of pairs seen at
both positions, with the same weight ``w`` for both positions,

    c_k^{k,k'}  = sum_{(q,d)} w_{qd} * clicks_{qd,k} / impressions_{qd,k}
               ~ theta_k  * sum w_{qd} gamma_{qd}
    c_k'^{k,k'} = sum_{(q,d)} w_{qd} * clicks_{qd,k'} / impressions_{qd,k'}
               ~ theta_k' * sum w_{qd} gamma_{qd},

so each pair of positions gives the ratio theta_k / theta_k'. We weight a
(query, doc) by ``w = n_k n_k' / (n_k + n_k')`` (the harmonic half-sum of its
impressions at the two positions, which down-weights pairs seen once at one
side), and ``N^{k,k'} = sum w`` is the effective number of trials.

All positions are then fitted jointly with the paper's *AllPairs* extremum
estimator: maximize over theta and a symmetric r

    sum_{k != k'} c_k^{k,k'} log(theta_k r_{kk'})
                 + (N^{k,k'} - c_k^{k,k'}) log(1 - theta_k r_{kk'}),

with theta_1 = 1 (L-BFGS-B). No randomized traffic is needed; randomized
sessions, if any, simply count as one more ranker.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from ulr import validate
from ulr.errors import UlrError, check
from ulr.data.scan import CellStats

_P_MIN, _P_MAX = 1e-12, 1.0 - 1e-9


def interventional_sets(stats: CellStats) -> tuple[np.ndarray, np.ndarray]:
    """Weighted clicks ``c[k, k']`` (at k, within the (k, k') set) and trials ``n[k, k']``."""
    k = stats.positions
    seen = stats.impressions > 0
    pair, pos0 = stats.pair[seen], stats.position[seen] - 1
    imp, clk = stats.impressions[seen], stats.clicks[seen]
    per_pair = np.bincount(pair, minlength=stats.n_pairs)
    multi = per_pair[pair] >= 2  # only pairs shown at two or more positions intervene
    pair, pos0, imp, clk = pair[multi], pos0[multi], imp[multi], clk[multi]
    _, row = np.unique(pair, return_inverse=True)
    m = int(row.max()) + 1 if len(row) else 0
    n_mat = np.zeros((m, k))
    c_mat = np.zeros((m, k))
    n_mat[row, pos0] = imp
    c_mat[row, pos0] = clk
    chat = np.zeros((k, k))
    neff = np.zeros((k, k))
    for a in range(k):
        na = n_mat[:, a:a + 1]
        both = (na > 0) & (n_mat > 0)
        ratio = np.divide(n_mat, na + n_mat, out=np.zeros_like(n_mat), where=both)
        chat[a] = c_mat[:, a] @ ratio  # sum n_k' c_k / (n_k + n_k')
        neff[a] = n_mat[:, a] @ ratio  # sum n_k n_k' / (n_k + n_k')
    np.fill_diagonal(chat, 0.0)
    np.fill_diagonal(neff, 0.0)
    return chat, neff


def linked_positions(neff: np.ndarray) -> np.ndarray:
    """Positions connected to position 1 through interventional sets."""
    k = neff.shape[0]
    reach = np.zeros(k, dtype=bool)
    reach[0] = True
    adj = neff > 0
    for _ in range(k):
        new = reach | adj[reach].any(axis=0)
        if (new == reach).all():
            break
        reach = new
    return reach


def all_pairs(chat: np.ndarray, neff: np.ndarray, *, theta0=None) -> tuple[np.ndarray, dict]:
    """AllPairs extremum estimator: relative theta (theta_1 = 1) and fit details."""
    k = chat.shape[0]
    iu, ju = np.triu_indices(k, 1)
    active = neff[iu, ju] > 0
    iu, ju = iu[active], ju[active]
    if len(iu) == 0:
        raise UlrError("no query-document pair was shown at two different positions, so "
                       "there are no interventions to harvest.")
    c_ij, c_ji, n_ij = chat[iu, ju], chat[ju, iu], neff[iu, ju]
    if theta0 is None:
        theta0 = np.ones(k)
        for kk in range(1, k):
            if neff[0, kk] > 0 and chat[0, kk] > 0 and chat[kk, 0] > 0:
                theta0[kk] = chat[kk, 0] / chat[0, kk]
            else:
                theta0[kk] = 1.0 / (kk + 1)
    t0 = np.log(np.clip(theta0[1:], 1e-6, None))
    r0 = (c_ij + c_ji) / np.maximum(n_ij * (theta0[iu] + theta0[ju]), 1e-12)
    x0 = np.concatenate([t0, np.log(np.clip(r0, 1e-9, 0.5))])

    def nll(x):
        lt = np.concatenate([[0.0], x[:k - 1]])
        lr = x[k - 1:]
        lp_i, lp_j = lt[iu] + lr, lt[ju] + lr
        p_i = np.clip(np.exp(lp_i), _P_MIN, _P_MAX)
        p_j = np.clip(np.exp(lp_j), _P_MIN, _P_MAX)
        f = -(c_ij @ np.log(p_i) + (n_ij - c_ij) @ np.log1p(-p_i)
              + c_ji @ np.log(p_j) + (n_ij - c_ji) @ np.log1p(-p_j))
        # d/d log p of [c log p + (n - c) log(1 - p)] = c - (n - c) p / (1 - p)
        g_i = -(c_ij - (n_ij - c_ij) * p_i / (1 - p_i))
        g_j = -(c_ji - (n_ij - c_ji) * p_j / (1 - p_j))
        grad_t = np.bincount(iu, g_i, minlength=k) + np.bincount(ju, g_j, minlength=k)
        grad = np.concatenate([grad_t[1:], g_i + g_j])
        scale = max(float(n_ij.sum()), 1.0)
        return f / scale, grad / scale

    res = minimize(nll, x0, jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-10})
    theta = np.exp(np.concatenate([[0.0], res.x[:k - 1]]))
    return theta, {"converged": bool(res.success), "optimizer_iterations": int(res.nit),
                   "position_pairs": int(len(iu))}


def fit(stats: CellStats, *, theta0=None) -> tuple[np.ndarray, dict]:
    chat, neff = interventional_sets(stats)
    theta, info = all_pairs(chat, neff, theta0=theta0)
    linked = linked_positions(neff)
    theta[~linked] = np.nan
    info["linked"] = linked
    info["effective_trials"] = neff
    return theta, info


@validate.params(level=validate.level, n_bootstrap=validate.n_bootstrap, seed=validate.seed)
def run(scan, *, positions=None, n_bootstrap: int = 0, seed=0, assume_randomized: bool = False,
        progress=None, level: float = 0.95, should_stop=None):
    """Harvest interventions from one aggregate query; bootstrap by reweighting cells."""
    from ulr.propensity import bootstrap as bs
    from ulr.data.scan import cell_stats
    from ulr.propensity.aggregate import position_counts
    from ulr.propensity.result import PropensityResult

    prog = bs.Progress(progress)
    prog(0.02, "aggregating impressions and clicks per (query, doc, position) in SQL")
    stats = cell_stats(scan, positions=positions, groups=n_bootstrap > 0)
    check(should_stop)
    prog(0.3, "harvesting interventions")
    theta, info = fit(stats)
    linked = info["linked"]
    notes = []
    if not linked.all():
        notes.append("no pair of rankers showed a shared query-document pair at position(s) "
                     f"{', '.join(str(i + 1) for i in np.flatnonzero(~linked))} and a position "
                     "linked to 1; their theta is left empty.")
    if not info["converged"]:
        notes.append("the AllPairs optimizer stopped before converging; treat the estimate "
                     "with care.")
    lower = upper = None
    if n_bootstrap > 0:
        start = np.where(np.isfinite(theta), theta, 1.0)

        def one(w):
            t, _ = fit(stats.reweighted(w), theta0=start)
            return t
        samples = bs.replicate(one, n_groups=stats.groups.n_groups, n_bootstrap=n_bootstrap,
                               seed=seed, progress=prog.sub(0.4, 1.0), should_stop=should_stop)
        lower, upper, more = bs.standard_interval(samples, theta, level)
        notes += more
    neff = info["effective_trials"]
    rows = int(round(stats.impressions.sum()))
    return PropensityResult.build(
        method="intervention-harvesting", positions=stats.positions, theta=theta, lower=lower,
        upper=upper, rows_used=rows, notes=notes,
        extras={"position_pairs": info["position_pairs"],
                "effective_trials_vs_top": neff[0].tolist(),
                "converged": info["converged"]},
        n_bootstrap=n_bootstrap, level=level, **position_counts(stats, positions))
