"""Coverage of the propensity bootstrap's 95% interval on simulated PBM logs (issue 54):
the percentile interval the methods drew until then against the standard interval on the
log scale they draw now, from the same replicates.

    python benchmarks/coverage_propensity_interval.py --method randomization [--logs 400]
           [--sessions 5000] [--queries 30] [--positions 5] [--bootstrap 50] [--seed 7000]

Each log is ``ulr.simulate.simulate_clicks`` (PBM, theta_k = 1/k, a tenth of the sessions
in random order, ``ranker_noise`` 1; 5 features for ``regression-em`` and ``dla``, which
need them); ``propensity.estimate`` runs with ``--bootstrap`` replicates, whose replicates
are caught on their way to :func:`ulr.propensity.bootstrap.standard_interval`, and the
percentile interval of the same replicates is formed beside it. Prints, per position
2..K, the logs in which each interval covers the true theta / theta_1, and the
Binomial(logs, 0.95) range at two-sided 1% per position, then bias against spread on the log
scale: the mean of log(theta / truth) over the logs with its standard error, the sd of log
theta across the logs and the root mean square of the replicates' sd of log theta* (an
interval centred on a biased estimate cannot cover, however wide its replicates; issue 54's
regression EM was 7-15% low at positions 2-5). The test
(tests/propensity/test_propensity_bootstrap_interval.py) runs the two fast methods on
200 logs of another seed range.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import duckdb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scipy.stats import binom  # noqa: E402

from ulr import propensity  # noqa: E402
from ulr.data.scan import Scan  # noqa: E402
from ulr.propensity import bootstrap as bs  # noqa: E402
from ulr.simulate import simulate_clicks  # noqa: E402

BASE = ("query_id", "doc_id", "position", "click", "session_id", "randomized")


def table_scan(df) -> Scan:
    feats = tuple(c for c in df.columns if c.startswith("feature_"))
    cols = BASE + feats
    cur = duckdb.connect()
    cur.register("rows_df", df[list(cols)])
    cur.execute("CREATE TABLE rows_t AS SELECT CAST(query_id AS VARCHAR) AS query_id, "
                "CAST(doc_id AS VARCHAR) AS doc_id, CAST(position AS INTEGER) AS position, "
                "CAST(click AS BOOLEAN) AS click, CAST(session_id AS VARCHAR) AS session_id, "
                "CAST(randomized AS BOOLEAN) AS randomized"
                + "".join(f", CAST({f} AS DOUBLE) AS {f}" for f in feats) + " FROM rows_df")
    return Scan(cur=cur, from_sql="rows_t", params={}, columns=cols, name="sim",
                checked=True, rows=len(df))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", required=True)
    ap.add_argument("--logs", type=int, default=400)
    ap.add_argument("--sessions", type=int, default=5000)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--positions", type=int, default=5)
    ap.add_argument("--bootstrap", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7000)
    a = ap.parse_args()
    caught = []
    standard = bs.standard_interval

    def catch(samples, estimate, level=0.95):
        caught.append((np.array(samples, dtype=float), np.array(estimate, dtype=float)))
        return standard(samples, estimate, level)
    bs.standard_interval = catch
    k = a.positions
    cov = {"percentile": np.zeros(k - 1, int), "standard (log scale)": np.zeros(k - 1, int)}
    err, boot_sd = [], []
    features = 5 if a.method in ("regression-em", "dla") else 0
    t0 = time.perf_counter()
    for i in range(a.logs):
        sim = simulate_clicks(queries=a.queries, positions=k, sessions=a.sessions,
                              features=features, seed=a.seed + i, ranker_noise=1.0)
        truth = sim.relative_theta[1:]
        caught.clear()
        extra = {"interval": "bootstrap"} if a.method == "em" else {}
        res = propensity.estimate(table_scan(sim.df), method=a.method, n_bootstrap=a.bootstrap,
                                  seed=i, level=0.95, weigh_facts=False, **extra)
        samples, _ = caught[0]
        if samples.shape[1] != k:  # em passes the positions with clicks only
            raise SystemExit(f"log {i}: a position without clicks; use more sessions")
        plo, pup, _ = bs.percentile_interval(samples, 0.95)
        err.append(np.log(np.asarray(res.theta[1:], dtype=float) / truth))
        boot_sd.append(np.std(np.log(samples[:, 1:]), axis=0, ddof=1))
        for name, lo, up in (("percentile", plo, pup),
                             ("standard (log scale)", res.lower, res.upper)):
            cov[name] += (lo[1:] <= truth) & (truth <= up[1:])
    lo_n, hi_n = binom.ppf(0.005, a.logs, 0.95), binom.isf(0.005, a.logs, 0.95)
    print(f"{a.method}: {a.logs} logs ({a.queries} queries x {k} positions, {a.sessions} "
          f"sessions, seeds {a.seed}..), B = {a.bootstrap}; covering logs at positions "
          f"2..{k} (Binomial({a.logs}, 0.95) range {lo_n:.0f}..{hi_n:.0f}):")
    for name, c in cov.items():
        print(f"  {name:22s} {c.tolist()}  ({c.sum() / c.size / a.logs:.1%})")
    err, boot_sd = np.array(err), np.array(boot_sd)
    rows = {"mean log(theta/truth)": err.mean(axis=0),
            "  its standard error": err.std(axis=0, ddof=1) / np.sqrt(a.logs),
            "sd of log theta, logs": err.std(axis=0, ddof=1),
            "rms replicate sd": np.sqrt(np.mean(boot_sd ** 2, axis=0))}
    for name, v in rows.items():
        sign = "+" if name.startswith("mean") else ""
        print(f"  {name:22s} {', '.join(f'{x:{sign}.4f}' for x in v)}")
    print(f"  {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
