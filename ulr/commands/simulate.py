"""``simulate``: a synthetic click log with ground truth."""

from __future__ import annotations

import time

from ulr.commands.common import parse_floats
from ulr.simulate import simulate_clicks, write_log

ORDER = 10


def register(sub):
    p = sub.add_parser("simulate", help="write a synthetic click log with known theta")
    p.add_argument("--model", choices=["pbm", "cascade"], default="pbm")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--docs-per-query", type=int, default=10)
    p.add_argument("--sessions", type=int, default=10000)
    p.add_argument("--eta", type=float, default=1.0, help="theta_k = (1/k)^eta")
    p.add_argument("--theta", help="explicit examination per position, comma-separated")
    p.add_argument("--randomized-fraction", type=float, default=0.1)
    p.add_argument("--features", type=int, default=5)
    p.add_argument("--eps", type=float, default=0.05, help="click noise")
    p.add_argument("--ranker-noise", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output path (.csv or .parquet)")
    p.set_defaults(run=run)


def run(args) -> dict:
    theta = parse_floats(args.theta, "--theta") if args.theta else None
    t0 = time.perf_counter()
    sim = simulate_clicks(model=args.model, queries=args.queries,
                          docs_per_query=args.docs_per_query, sessions=args.sessions,
                          eta=args.eta, theta=theta, randomized_fraction=args.randomized_fraction,
                          features=args.features, eps=args.eps, ranker_noise=args.ranker_noise,
                          seed=args.seed)
    write_log(sim.df, args.out)
    return {"path": args.out, "rows": len(sim.df), "theta": sim.theta.tolist(),
            "relative_theta": sim.relative_theta.tolist(), "model": args.model,
            "ctr": float(sim.df["click"].mean()), "seconds": time.perf_counter() - t0}
