"""Affine correction vs IPW on a trust-biased simulation (issue 52), with true relevance.

    python benchmarks/bench_affine.py [--seeds 5] [--queries 1000] [--sessions 100000]

Each seed simulates a log with features and graded relevance whose clicks carry trust bias
(``simulate_clicks(model="trust")``: a document is relevant when its grade is above 0;
``P(click) = theta_k (eps+_k R + eps-_k (1 - R))``, ``theta_k = 1 / k``, 10% of sessions in
random order), estimates ``alpha`` and ``beta`` with ``propensity --method trust-em`` and
theta with ``em``, and trains the gbdt learner four ways on 70% of the queries: naive, IPW
with em's theta (what the workbench does today), IPW with trust-em's theta (alpha relative
to position 1) and the affine correction ``(click - beta_k) / alpha_k``. Each ranker is
scored by nDCG@10 on the other 30% against the true relevance the clicks follow (binary;
``--labels graded``: the grades behind it). Prints every seed's figures and
the mean per-query difference affine - IPW with a 95% interval (queries of all seeds pooled,
paired).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def one(seed: int, args, out: Path) -> dict:
    from ulr import propensity
    from ulr.data import ingest
    from ulr.rankers import log_frame
    from ulr.rankers.evaluate import evaluate_scores, held_out_documents, split_queries
    from ulr.rankers.learners import BoostedClickRanker
    from ulr.simulate import simulate_clicks, write_log
    sim = simulate_clicks(model="trust", queries=args.queries, sessions=args.sessions,
                          positions=10, features=5, eta=1.0, randomized_fraction=0.1,
                          ranker_error=args.ranker_error, seed=seed)
    path = out / f"affine_{seed}_{args.queries}_{args.sessions}.parquet"
    write_log(sim.df.drop(columns=["true_theta"]), str(path))
    log = ingest.open_file(path)
    df = log_frame(log)
    train, test = split_queries(df, test_fraction=0.3, seed=seed)
    # the estimates see the training queries only, as the learners do
    tpath = out / f"affine_{seed}_train.parquet"
    write_log(train, str(tpath))
    tlog = ingest.open_file(tpath)
    tr = propensity.estimate(tlog, method="trust-em")
    em = propensity.estimate(tlog, method="em")
    alpha, beta = np.array(tr.extras["alpha"]), np.array(tr.extras["beta"])
    docs, _ = held_out_documents(test)
    if args.labels == "binary":  # the trust model's relevance: any grade above 0
        docs = docs.assign(label=(docs["label"] >= 1).astype(float))
    fits = {"naive": dict(), "IPW (em theta)": dict(theta=em.theta),
            "IPW (trust-em theta)": dict(theta=tr.theta),
            "affine (trust-em)": dict(affine=(alpha, beta))}
    res = {}
    for name, kw in fits.items():
        m = BoostedClickRanker(seed=seed).fit(train, **kw)
        res[name] = evaluate_scores(docs, m.score(docs))["ndcg@10"]
    return res


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--ranker-error", type=float, default=0.8,
                    help="the logging ranker's weight error (simulate_clicks; 0.8 default)")
    ap.add_argument("--labels", choices=("binary", "graded"), default="binary",
                    help="score against the binary relevance the clicks follow (default) or "
                         "the grades 0-4 behind it")
    ap.add_argument("--out", type=Path, default=Path("/tmp"))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    diffs = {"IPW (em theta)": [], "IPW (trust-em theta)": [], "naive": []}
    for seed in range(args.seeds):
        r = one(seed, args, args.out)
        print(f"seed {seed}: " + ", ".join(f"{k} {v.value:.4f}" for k, v in r.items()))
        aff = r["affine (trust-em)"].per_query
        for k in diffs:
            d = (aff - r[k].per_query).dropna()
            diffs[k].append(d.to_numpy())
    print(f"\nnDCG@10 on held-out queries, true {args.labels} relevance; {args.seeds} seeds x "
          f"{args.sessions:,} sessions, {args.queries:,} queries, ranker error "
          f"{args.ranker_error:g}")
    for k, parts in diffs.items():
        d = np.concatenate(parts)
        m, se = d.mean(), d.std(ddof=1) / np.sqrt(d.size)
        print(f"  affine - {k}: {m:+.4f} [{m - 1.96 * se:+.4f}, {m + 1.96 * se:+.4f}] "
              f"(95% interval, {d.size:,} paired queries)")
    print(f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
