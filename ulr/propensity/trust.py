"""``trust-em``: position bias and trust bias together, by EM on the trust-bias click model.

``P(C = 1 | k, R) = beta_k + alpha_k R`` with binary relevance ``R`` per (query, document)
pair (Agarwal et al., WWW 2019; Vardasbi et al., CIKM 2020; the model and its EM:
:mod:`ulr.clickmodels.trust`). Fitted on the (query, doc, position) cell counts every cell
method aggregates, without a prior (as ``em``). The result's ``theta`` is
``alpha_k / alpha_1``; its ``extras`` carry ``alpha`` and ``beta`` by position (absolute),
``beta_relative`` (``beta_k / alpha_1``) and each one's bootstrap interval
(``alpha_lower``, ``alpha_upper``, ...), and ``relevant_share`` (the fitted share of relevant
pairs). IPW divides by ``theta``; the affine correction ``(c - beta_k) / alpha_k``
(Vardasbi et al.) needs ``alpha`` and ``beta``.
"""

from __future__ import annotations

import numpy as np

from ulr import validate
from ulr.errors import check


def _fit(stats, n, c, should_stop=None):
    from ulr.clickmodels.trust import fit_cells
    return fit_cells(stats.pair, stats.position - 1, n, c, n_pairs=stats.n_pairs,
                     k=stats.positions, should_stop=should_stop)


@validate.params(level=validate.level, n_bootstrap=validate.n_bootstrap, seed=validate.seed)
def run(scan, *, positions=None, n_bootstrap: int = 0, seed=0, assume_randomized: bool = False,
        progress=None, level: float = 0.95, should_stop=None):
    from ulr.data.scan import cell_stats
    from ulr.propensity import bootstrap as bs
    from ulr.propensity.aggregate import connected_to_top, position_counts
    from ulr.propensity.result import PropensityResult

    prog = bs.Progress(progress)
    prog(0.02, "aggregating impressions and clicks per (query, doc, position) in SQL")
    stats = cell_stats(scan, positions=positions, groups=n_bootstrap > 0)
    check(should_stop)
    fit = _fit(stats, stats.impressions, stats.clicks, should_stop)
    a1 = fit.alpha[0]
    notes = []
    if not a1 > 0:
        notes.append("relevant and irrelevant results are clicked equally often at position 1, "
                     "so alpha relative to position 1 is undefined.")
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = fit.alpha / a1 if a1 > 0 else np.full(stats.positions, np.nan)
        beta_rel = fit.beta / a1 if a1 > 0 else np.full(stats.positions, np.nan)
    if a1 > 0:
        theta[0] = 1.0
    if not fit.converged:
        notes.append("EM stopped at its iteration cap before the log-likelihood settled; "
                     "treat the estimate with care.")
    linked = connected_to_top(stats)
    if not linked.all():
        notes.append("no chain of query-document pairs links position(s) "
                     f"{', '.join(str(i + 1) for i in np.flatnonzero(~linked))} to position 1; "
                     "there alpha and beta rest on relevance being exactly 0 or 1.")
    extras = {"alpha": fit.alpha.tolist(), "beta": fit.beta.tolist(),
              "beta_relative": beta_rel.tolist(), "relevant_share": fit.pi,
              "converged": fit.converged, "pairs": stats.n_pairs, "cells": len(stats.pair)}
    lower = upper = None
    if n_bootstrap > 0:
        draws = []

        def one(w):
            n, c = stats.groups.totals(w, len(stats.pair))
            f = _fit(stats, n, c, should_stop)
            draws.append((f.alpha, f.beta))
            with np.errstate(divide="ignore", invalid="ignore"):
                return f.alpha / f.alpha[0] if f.alpha[0] > 0 else np.full(len(f.alpha), np.nan)
        samples = bs.replicate(one, n_groups=stats.groups.n_groups, n_bootstrap=n_bootstrap,
                               seed=seed, progress=prog.sub(0.3, 1.0), should_stop=should_stop)
        lower, upper, more = bs.standard_interval(samples, theta, level)
        lower[0] = upper[0] = 1.0
        notes += more
        al = np.vstack([d[0] for d in draws])
        be = np.vstack([d[1] for d in draws])
        with np.errstate(divide="ignore", invalid="ignore"):
            br = np.where(al[:, :1] > 0, be / al[:, :1], np.nan)
        for name, s, est in (("alpha", al, fit.alpha), ("beta", be, fit.beta),
                             ("beta_relative", br, beta_rel)):
            lo, hi, _ = bs.standard_interval(s, est, level)
            if name != "beta_relative":  # click probabilities: the log scale bounds them
                hi = np.minimum(hi, 1.0)  # below by 0 only
            extras[f"{name}_lower"], extras[f"{name}_upper"] = lo.tolist(), hi.tolist()
    return PropensityResult.build(
        method="trust-em", positions=stats.positions, theta=theta, lower=lower, upper=upper,
        absolute=np.clip(fit.alpha + fit.beta, 0.0, 1.0), loglik=fit.loglik,
        rows_used=stats.rows, notes=notes, extras=extras, n_bootstrap=n_bootstrap, level=level,
        **position_counts(stats, positions))
