"""Regression EM's bias in theta against ``ITEM_PRIOR`` and the leaf rule (issue 54), point fits.

    python benchmarks/regression_em_item_prior.py [--priors none,40,10,3,0.001,leaf]
           [--logs 20] [--sessions 3000] [--seed 7000] [--fixed-leaf]

Each log is ``ulr.simulate.simulate_clicks`` (30 queries x 5 positions, 5 features,
``ranker_noise`` 1: 150 feature vectors, each shown about ``sessions / 30`` times), fitted by
``regression_em.collect``, ``poisson_start(prior=a)`` and ``regression_em(prior=a)``.
``none`` is the code before issue 54's fixes: the GBDT's gamma alone, leaves of 40 rows
and the start's stall rule off; ``leaf`` is the GBDT's gamma alone with the leaf rule
(``regression_em.LEAF_IMPRESSIONS``: ``round(40 m / N)`` rows between 1 and 40, m items,
N impressions) and the stall rule on; a number ``a`` is the item prior ``a`` with the leaf
rule, as ``ulr`` fits (with ``--fixed-leaf``: with leaves of 40 rows, the code between the
prior's change and the leaf rule's). Prints, per setting, the mean of log(theta / truth)
at positions 2..5 over the logs, its standard error, its sd across the logs, the same
mean for the Poisson start alone, the start's mean GBDT fits and the seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from coverage_propensity_interval import table_scan  # noqa: E402
from ulr.propensity import regression_em as RE  # noqa: E402
from ulr.simulate import simulate_clicks  # noqa: E402


RULE = RE.LEAF_IMPRESSIONS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--priors", default="none,40,10,3,0.001,leaf")
    ap.add_argument("--logs", type=int, default=20)
    ap.add_argument("--sessions", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=7000)
    ap.add_argument("--fixed-leaf", action="store_true",
                    help="the numeric priors with leaves of 40 rows (no leaf rule)")
    a = ap.parse_args()
    priors = [p if p in ("none", "leaf") else float(p) for p in a.priors.split(",")]
    err = {p: [] for p in priors}
    start = {p: [] for p in priors}
    fits = {p: [] for p in priors}
    secs = dict.fromkeys(priors, 0.0)
    for i in range(a.logs):
        sim = simulate_clicks(queries=30, positions=5, sessions=a.sessions, features=5,
                              seed=a.seed + i, ranker_noise=1.0)
        truth = sim.relative_theta[1:]
        fs = RE.collect(table_scan(sim.df))
        for p in priors:
            t0 = time.perf_counter()
            prior = p if isinstance(p, float) else None
            RE.LEAF_IMPRESSIONS = None if p == "none" or (prior and a.fixed_leaf) else RULE
            th, g, nf = RE.poisson_start(fs, prior=prior, patience=None if p == "none" else 4)
            fit = RE.regression_em(fs, theta0=th, gamma0=g, prior=prior)
            secs[p] += time.perf_counter() - t0
            fits[p].append(nf)
            start[p].append(np.log(th[1:] / truth))
            err[p].append(np.log(fit.theta[1:] / fit.theta[0] / truth))
    print(f"{a.logs} logs (30 queries x 5 positions, {a.sessions} sessions, seeds {a.seed}..), "
          "log(theta / truth) at positions 2..5:")
    for p in priors:
        e, s = np.array(err[p]), np.array(start[p])

        def row(v, sign=""):
            return ", ".join(f"{x:{sign}.4f}" for x in v)
        print(f"  prior {p if isinstance(p, str) else f'{p:g}':6s} mean {row(e.mean(0), '+')} | SE "
              f"{row(e.std(0, ddof=1) / np.sqrt(len(e)))} | sd {row(e.std(0, ddof=1))} | "
              f"start alone {row(s.mean(0), '+')} | start fits {np.mean(fits[p]):.1f} | "
              f"{secs[p]:.0f} s")


if __name__ == "__main__":
    main()
