"""Time every ranking metric on 1M queries x 10 documents.

    python benchmarks/bench_metrics.py [--queries N] [--docs D] [--repeat R]

Relevance is graded 0..4 (most documents 0), scores are rounded to two decimals
so there are ties. Rows are grouped by query (the usual layout); the shuffled
layout (queries interleaved, lexsort path) is timed once as well.
Prints the best of ``--repeat`` wall-clock times per metric.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere

from ulr import metrics as M  # noqa: E402


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=1_000_000)
    ap.add_argument("--docs", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    n = args.queries * args.docs
    qids = np.repeat(np.arange(args.queries, dtype=np.int64), args.docs)
    rel = rng.choice(5, size=n, p=[0.6, 0.2, 0.1, 0.06, 0.04])
    scores = np.round(rel * 0.3 + rng.normal(size=n), 2)

    cases = {
        "arp": lambda: M.arp(rel, scores, query_ids=qids),
        "dcg": lambda: M.dcg(rel, scores, query_ids=qids),
        "ndcg@10": lambda: M.ndcg(rel, scores, query_ids=qids, k=10),
        "auc": lambda: M.auc(rel, scores, query_ids=qids),
        "pauc (max_fpr=0.3)": lambda: M.partial_auc(rel, scores, query_ids=qids, max_fpr=0.3),
        "local_auc (u=0.3)": lambda: M.local_auc(rel, scores, query_ids=qids, u=0.3),
        "evaluate (all six)": lambda: M.evaluate(rel, scores, query_ids=qids),
    }
    print(f"{args.queries:,} queries x {args.docs} docs = {n:,} rows; best of {args.repeat}")
    for name, fn in cases.items():
        print(f"  {name:<24s} {best_of(fn, args.repeat):7.3f} s")

    perm = rng.permutation(n)
    t = best_of(lambda: M.auc(rel[perm], scores[perm], query_ids=qids[perm]), 1)
    print(f"  {'auc, shuffled rows':<24s} {t:7.3f} s")


if __name__ == "__main__":
    main()
