"""``simulate``: a synthetic click log with ground truth.

Two generators: the position-bias simulator (``--model pbm|cascade``: documents with
features and grades, a logging ranker, an optional randomized share), and, with
``--click-model M``, a log from any click model of :mod:`ulr.clickmodels`
(:func:`ulr.simulate.simulate_click_model`) with its true parameters.
"""

from __future__ import annotations

import json
import time

import numpy as np

from ulr.commands.common import parse_floats
from ulr.errors import UlrError
from ulr.simulate import CLICK_MODELS, simulate_click_model, simulate_clicks, write_log

ORDER = 10


def register(sub):
    p = sub.add_parser("simulate", help="write a synthetic click log with known theta")
    p.add_argument("--model", choices=["pbm", "cascade"], default="pbm")
    p.add_argument("--click-model", choices=CLICK_MODELS, metavar="M",
                   help=f"instead: a log from the click model M ({', '.join(CLICK_MODELS)}), "
                        "sessions in session_id, truth in the output (docs/clickmodels.md)")
    p.add_argument("--orders", type=int, default=0, metavar="N",
                   help="with --click-model: each query's list in one of N fixed orders "
                        "(default 0: a random order per session)")
    p.add_argument("--truth", metavar="PATH", help="with --click-model: also write every true "
                                                   "parameter (alpha, sigma per doc_id) as JSON")
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
    if args.click_model:
        return _click_model(args)
    if args.truth or args.orders:
        raise UlrError("--truth and --orders go with --click-model.")
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


def _click_model(args) -> dict:
    """A click model's log; the result carries its rank-level truth (and ``--truth`` all)."""
    if args.theta:
        raise UlrError("--theta goes with --model; a click model's examination is its own.")
    t0 = time.perf_counter()
    sim = simulate_click_model(args.click_model, sessions=args.sessions, queries=args.queries,
                               docs_per_query=args.docs_per_query, seed=args.seed,
                               orders=args.orders)
    write_log(sim.df, args.out)
    truth = sim.extra["truth"]
    rank_level = {k: np.asarray(v).tolist() for k, v in truth.items()
                  if k not in ("alpha", "sigma")}
    if args.truth:
        full = {**rank_level, "doc_id": list(range(len(truth["alpha"]))),
                "alpha": truth["alpha"].tolist(), "sigma": truth["sigma"].tolist()}
        with open(args.truth, "w") as f:
            json.dump({"model": args.click_model, **full}, f)
    return {"path": args.out, "rows": len(sim.df), "sessions": args.sessions,
            "click_model": args.click_model, "truth": rank_level,
            "examination": sim.theta.tolist(), "truth_path": args.truth,
            "ctr": float(sim.df["click"].mean()), "seconds": time.perf_counter() - t0}
